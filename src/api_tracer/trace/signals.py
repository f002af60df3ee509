"""SIGTERM and SIGHUP under `api-tracer run`: the files are written, then the
program ends by the same signal, with the exit status it has untraced.

A scheduler preempting a job sends SIGTERM; a closed terminal, SIGHUP. Both
end an untraced Python program at once, with no cleanup (no atexit, no
finally). Under `run` (and in the processes --follow-children traces) they
first close the tracing session, which flushes the traces and writes the
summary files, and then end the program by the signal itself. Only where
the program left the signal's default action: a signal it ignores stays
ignored, and a handler it installs later is its own. Hooks are left in
place: the process is ending, and a hook without a session calls through.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

FLUSHED_BY = (signal.SIGTERM, signal.SIGHUP)


def write_files_when_terminated() -> None:
    """Installs the handler for each of FLUSHED_BY still at its default."""
    for signum in FLUSHED_BY:
        if signal.getsignal(signum) is signal.SIG_DFL:
            signal.signal(signum, _write_files_then_end)


def _write_files_then_end(signum: int, frame: Any) -> None:
    from .. import _C

    try:
        _C.stop()  # no tracer lock: the signal may have come while stop() held it
    except Exception as e:  # noqa: BLE001 - said, and the program ends by the signal all the same
        print(f"api-tracer: {e}", file=sys.stderr, flush=True)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
