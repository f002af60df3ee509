"""The files: the tracer's file sets and files of config lines, read back checked."""
