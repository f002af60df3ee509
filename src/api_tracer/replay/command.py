"""`api-tracer replay FILE`: checks the command line, reads the configs
and their value ranges, runs them (in process or isolated) and reports."""
from __future__ import annotations

import contextlib
import os
from typing import Any

from ..errors import UsageError
from .check import reference
from .configs import Result, Status, first_line, ranges_beside, read_configs, read_value_ranges
from .memory import available_bytes
from .options import ReplayOptions
from .report import JsonlReport, Progress, summary, write_junit
from .run import DEFAULT_TIMEOUT, run_in_process, run_isolated


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


def replay_command(args: Any) -> int:
    if not os.path.isfile(args.file):
        raise UsageError(f"replay: {args.file}: no such file")
    if args.jobs < 1:
        raise UsageError("replay: --jobs must be at least 1")
    check_device(args.device, f"--device {args.device}")
    check_flags(args)
    if args.value_ranges and not os.path.isfile(args.value_ranges):
        raise UsageError(f"replay: {args.value_ranges}: no such file")
    try:
        configs = read_configs(args.file)
    except OSError as e:
        raise UsageError(f"replay: {args.file}: {e.strerror}") from None
    ranges_path = args.value_ranges or ranges_beside(args.file)
    try:
        ranges = read_value_ranges(ranges_path)
    except Exception as e:  # noqa: BLE001 - any way the file is not a value-ranges file
        raise UsageError(f"replay: {ranges_path}: not a value-ranges file ({type(e).__name__}: {e})") from None
    if args.junit:
        check_writable(args.junit, "--junit")
    try:
        report = JsonlReport(args.report) if args.report else None
    except OSError as e:
        raise UsageError(f"replay: -o {args.report}: {e.strerror}") from None
    options = ReplayOptions(device=args.device, ranges=ranges, seed=args.seed, allow_unsafe=args.allow_unsafe,
                            max_bytes=args.max_bytes, check=args.check, backward=args.backward, rtol=args.rtol,
                            atol=args.atol)
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
    print(summary(results, args.allow_unsafe, args.check), end="")
    if args.junit:
        try:
            write_junit(results, args.junit)
        except OSError as e:
            raise UsageError(f"replay: --junit {args.junit}: {e.strerror or e}") from None
    return 1 if any(r.status in (Status.MISMATCH, Status.FAILED, Status.INVALID) for r in results) else 0
