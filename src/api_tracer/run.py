"""api-tracer run: trace a program without editing it.

The program runs as `python script.py ARGS` (or `python -m module ARGS`)
would run it: same sys.argv, sys.path[0] and __main__, same output, same
exception and traceback (the tracer's own frames left out), same exit code.
The files are complete whatever way the program ends: normally, through
sys.exit, an uncaught exception, Ctrl-C, SIGTERM or SIGHUP (signals.py).
"""
from __future__ import annotations

import builtins
import importlib.machinery
import os
import runpy
import signal
import sys
import types
from typing import Any, Callable, Dict, Optional

from .errors import UsageError
from .dialect import dialect_named
from .options import from_run_flags
from .signals import write_files_when_terminated

HERE = os.path.dirname(os.path.abspath(__file__))


def _program(args: Any) -> Callable[[], Any]:
    if args.module:
        sys.argv = [args.module, *args.target]
        sys.path[0] = os.getcwd()
        return lambda: runpy.run_module(args.module, run_name="__main__", alter_sys=True)
    if not args.target:
        raise UsageError("run: give a script (or -m module) to trace")
    script = args.target[0]
    if not os.path.isfile(script):
        raise UsageError(f"run: can't open file {script!r}: no such file")
    sys.argv = list(args.target)
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    return lambda: _run_script(script)


def _run_script(script: str) -> None:
    """Runs a script as the interpreter runs its main script: a fresh
    __main__ module whose __file__ is absolute, left in sys.modules for the
    program's own atexit handlers and for multiprocessing's spawn."""
    path = os.path.abspath(script)
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__file__ = path
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


def _program_traceback(tb: Optional[types.TracebackType]) -> Optional[types.TracebackType]:
    """The traceback without the leading frames of the tracer and of runpy."""
    ours = os.path.join(HERE, "")
    runpy_files = {runpy.__file__, "<frozen runpy>"}
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if not (name.startswith(ours) or name in runpy_files):
            break
        tb = tb.tb_next
    return tb


def run_program(args: Any) -> int:
    from .tracer import APITracer

    program = _program(args)
    try:
        if args.levels is None:  # the dialect's
            args.levels = dialect_named(args.dialect).run_levels()
        options = dict(from_run_flags(args).asdict(), dialect=args.dialect)
        tracer = APITracer(**options)
    except ValueError as e:
        raise UsageError(f"run: {e}") from None
    if args.follow_children:
        from .follow import follow_children

        follow_children(options)
    write_files_when_terminated()
    try:
        tracer.start()
    except OSError as e:
        raise UsageError(f"run: {e}") from None
    try:
        program()
    except SystemExit:
        tracer.stop()
        raise
    except BaseException as e:  # noqa: BLE001 - reported as Python reports it
        tracer.stop()
        tb = _program_traceback(e.__traceback__)
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        if isinstance(e, KeyboardInterrupt):
            # Python ends on an uncaught Ctrl-C by the signal itself.
            sys.stdout.flush()
            sys.stderr.flush()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        return 1
    tracer.stop()
    return 0
