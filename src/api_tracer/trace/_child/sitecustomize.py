"""Started by Python in the processes a traced program starts, when
`api-tracer run --follow-children` put this folder on PYTHONPATH: runs the
sitecustomize this one shadows, if any, then starts tracing this process."""

import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
_this = sys.modules.pop("sitecustomize")
try:
    import sitecustomize  # noqa: F401  - the next one on the path
except ImportError:
    # None: this module stays sitecustomize (the import running it ends by
    # looking it up, and says "Error in sitecustomize" if it is gone).
    sys.modules["sitecustomize"] = _this

if os.environ.get("API_TRACER_CHILD_OPTIONS"):
    from api_tracer.trace.follow import is_helper, start_tracer

    if not is_helper():  # then trace this process until it exits
        from api_tracer.trace.tracer import APITracer

        start_tracer(APITracer)
