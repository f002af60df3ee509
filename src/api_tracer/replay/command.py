"""`api-tracer replay FILE`: checks the command line, reads the configs
and their value ranges, runs them (in process or isolated) and reports."""
from __future__ import annotations

import contextlib
import os
from typing import Any, List

from ..errors import UsageError
from .check import reference
from .configs import Result, Status, first_line, ranges_beside, read_configs, read_value_ranges
from .frameworks import MixedFile, file_framework
from .memory import available_bytes
from .options import ReplayOptions
from .report import JsonlReport, JunitReport, Progress, summary
from .run import DEFAULT_TIMEOUT, quiet_imports, run_in_process, run_isolated
from . import user_code


def check_device(device: str, flag: str) -> None:
    """A UsageError, naming `flag`, unless torch knows `device` and can reach it."""
    try:
        available_bytes(device)
    except Exception as e:  # noqa: BLE001 - a device torch does not know, or cannot reach
        raise UsageError(f"replay: {flag}: {first_line(e)}") from None


def check_flags(args: Any) -> None:
    """--check's mode and device; --backward, --rtol and --atol only with it."""
    if not args.check:
        for flag, given in (("--backward", args.backward), ("--rtol", args.rtol is not None),
                            ("--atol", args.atol is not None)):
            if given:
                raise UsageError(f"replay: {flag} needs --check")
        return
    try:
        side = reference(args.check, args.device)
    except ValueError as e:
        raise UsageError(f"replay: --check: {e}") from None
    check_device(side.device, f"--check {args.check}")
    for flag, value in (("--rtol", args.rtol), ("--atol", args.atol)):
        if value is not None and not value >= 0:
            raise UsageError(f"replay: {flag} must be at least 0")


def check_paddle_flags(args: Any) -> None:
    """What Paddle's replay does not take (paddle_replay.unsupported): a
    UsageError before any config runs."""
    from .paddle_replay import CHECKS

    if args.device != "cpu":
        raise UsageError(f"replay: --device {args.device}: Paddle's configs replay on the CPU")
    if args.check and args.check not in CHECKS:
        raise UsageError(f"replay: --check {args.check}: Paddle's configs are checked by {' or '.join(CHECKS)}")
    if args.backward:
        raise UsageError("replay: --backward: Paddle's configs are judged by their outputs only")


def check_writable(path: str, flag: str) -> None:
    """A UsageError, naming `flag`, where the file `path` cannot be made:
    asked before any config runs (the report comes after all of them)."""
    directory = os.path.dirname(os.path.abspath(path))
    why = ("is a directory" if os.path.isdir(path) else
           f"{directory} is not a directory" if not os.path.isdir(directory) else
           f"{directory} is not writable" if not os.access(directory, os.W_OK) else
           "is not writable" if os.path.exists(path) and not os.access(path, os.W_OK) else "")
    if why:
        raise UsageError(f"replay: {flag} {path}: {why}")


def check_readable(path: str) -> None:
    """A UsageError where `path` is not a regular file (a directory, a FIFO
    or a device is read by no replay)."""
    if not os.path.exists(path):
        raise UsageError(f"replay: {path}: no such file")
    if not os.path.isfile(path):
        raise UsageError(f"replay: {path}: not a regular file")


def check_not_input(path: str, flag: str, inputs: List[str]) -> None:
    """A UsageError where the output `path` is one of the files replay reads."""
    for given in inputs:
        if os.path.exists(path) and os.path.exists(given) and os.path.samefile(path, given):
            raise UsageError(f"replay: {flag} {path}: it is {given}, which replay reads")


def replay_command(args: Any) -> int:
    check_readable(args.file)
    if args.jobs < 1:
        raise UsageError("replay: --jobs must be at least 1")
    check_device(args.device, f"--device {args.device}")
    check_flags(args)
    if args.value_ranges:
        check_readable(args.value_ranges)
    try:
        configs = read_configs(args.file)
    except OSError as e:
        raise UsageError(f"replay: {args.file}: {e.strerror}") from None
    try:
        dialect = file_framework(configs, getattr(args, "dialect", None))
    except MixedFile as e:
        raise UsageError(f"replay: {e}") from None
    if dialect == "paddle":
        check_paddle_flags(args)
    ranges_path = args.value_ranges or ranges_beside(args.file)
    try:
        ranges = read_value_ranges(ranges_path)
    except Exception as e:  # noqa: BLE001 - any way the file is not a value-ranges file
        raise UsageError(f"replay: {ranges_path}: not a value-ranges file ({type(e).__name__}: {e})") from None
    inputs = [p for p in (args.file, ranges_path) if p]
    for flag, path in (("-o", args.report), ("--junit", args.junit)):
        if path:
            check_not_input(path, flag, inputs)
    if args.junit:
        check_writable(args.junit, "--junit")
    try:  # opened now, its first bytes written: a full disk is said before any config runs
        junit = JunitReport(args.junit) if args.junit else None
    except OSError as e:
        raise UsageError(f"replay: --junit {args.junit}: {e.strerror or e}") from None
    try:
        report = JsonlReport(args.report) if args.report else None
    except OSError as e:
        raise UsageError(f"replay: -o {args.report}: {e.strerror}") from None
    options = ReplayOptions(device=args.device, ranges=ranges, seed=args.seed, allow_unsafe=args.allow_unsafe,
                            max_bytes=args.max_bytes, check=args.check, backward=args.backward, rtol=args.rtol,
                            atol=args.atol, imports=tuple(args.imports or ()),
                            libraries=tuple(args.libraries or ()), dialect=dialect)
    try:  # here first: a module that does not import is said before any config runs
        quiet_imports(options)
        user_code.load(options.imports, options.libraries)
    except Exception as e:  # noqa: BLE001 - the user's code: whatever it raises
        raise UsageError(f"replay: loading the user's code: {type(e).__name__}: {first_line(e)}") from None
    progress = Progress(len(configs), args.check)

    def on_result(r: Result) -> None:
        progress(r)
        if report:
            report(r)

    timeout = DEFAULT_TIMEOUT if args.timeout is None else args.timeout or None
    try:
        with report or contextlib.nullcontext():
            if args.isolate or args.jobs > 1 or args.timeout:
                results = run_isolated(configs, args.jobs, options, on_result, timeout)
            else:
                results = run_in_process(configs, options, on_result,
                                         report_fd=report.file.fileno() if report else None)
    except OSError as e:  # the report could not be written (a full disk): said, not a traceback
        raise UsageError(f"replay: -o {args.report}: {e.strerror or e}") from None
    progress.finish()
    print(summary(results, args.allow_unsafe, args.check, user_code.loaded(), dialect), end="")
    if junit:
        try:
            junit.write(results)
        except OSError as e:
            raise UsageError(f"replay: --junit {args.junit}: {e.strerror or e}") from None
    return 1 if any(r.status in (Status.MISMATCH, Status.FAILED, Status.INVALID) for r in results) else 0
