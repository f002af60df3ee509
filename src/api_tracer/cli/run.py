"""api-tracer run: trace a program without editing it.

The program runs as `python script.py ARGS` (or `python -m module ARGS`)
would run it: same sys.argv, sys.path[0] and __main__, same output, same
exception and traceback (the tracer's own frames left out), same exit code.
The files are complete whatever way the program ends: normally, through
sys.exit, an uncaught exception, Ctrl-C, SIGTERM or SIGHUP (signals.py).
"""

from __future__ import annotations

import argparse
import builtins
import importlib.machinery
import os
import runpy
import signal
import sys
import types
from typing import Any, Callable, List, Optional, Tuple

from ..errors import UsageError
from ..frameworks import FRAMEWORKS, dialect_named
from ..trace.options import add_run_flags, from_run_flags
from ..trace.signals import write_files_when_terminated
from ..util import PACKAGE_DIR


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """`run`'s flags: every option of the tracer that has one (trace/options.py
    derives them), and the program. The parser notes the flags that take a
    value (`value_options`), for split_argv."""
    run = sub.add_parser("run", help="trace a Python program without editing it")
    run.value_options = set()

    def run_option(*flags: str, **kwargs: Any) -> None:
        action = run.add_argument(*flags, **kwargs)
        if action.nargs != 0:
            run.value_options.update(action.option_strings)

    add_run_flags(run_option)
    run_option(
        "--dialect",
        choices=sorted(FRAMEWORKS),
        default="torch",
        help="the framework the program uses, whose API level 0 wraps (default: torch)",
    )
    run_option(
        "--follow-children",
        action="store_true",
        help="trace the processes the program starts too, each into DIR/rank-N or DIR/pid-N",
    )
    run_option("-m", dest="module", help="run a module as a script (like python -m); what follows is its")
    run_option("target", nargs="*", help="script.py and its arguments")
    return run


def split_argv(argv: List[str], parser: argparse.ArgumentParser) -> Tuple[List[str], List[str]]:
    """`run [options] script.py ARGS` or `run [options] -m module ARGS`:
    everything from the script (or after the module) on is the program's,
    --help and all."""
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "-m":
            return argv[: i + 2], argv[i + 2 :]
        if arg == "--":
            return argv[:i], argv[i + 1 :]
        if not arg.startswith("-") or arg == "-":
            return argv[:i], argv[i:]
        i += 2 if arg in parser.value_options else 1  # type: ignore[attr-defined]
    return argv, []


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
    ours = PACKAGE_DIR
    runpy_files = {runpy.__file__, "<frozen runpy>"}
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if not (name.startswith(ours) or name in runpy_files):
            break
        tb = tb.tb_next
    return tb


def main(args: Any) -> int:
    from ..trace.tracer import APITracer

    program = _program(args)
    try:
        if args.levels is None:  # the dialect's
            args.levels = dialect_named(args.dialect).run_levels()
        options = dict(from_run_flags(args).asdict(), dialect=args.dialect)
        tracer = APITracer(**options)
    except ValueError as e:
        raise UsageError(f"run: {e}") from None
    if args.follow_children:
        from ..trace.follow import follow_children

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
