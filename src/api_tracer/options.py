"""The tracer's option values and defaults, for APITracer and the command
line alike (a module of its own: the command line reads it without
loading torch)."""

STACK_FORMATS = ("short", "full", "api")
NESTINGS = ("outermost", "all", "innermost")
SNAPSHOT_INTERVAL = 30.0  # seconds between snapshots of the summary files
TRACE_LIMIT = 1 << 30  # bytes of api_trace.* per file set
