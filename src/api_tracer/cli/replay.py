"""`api-tracer replay FILE`: checks the command line (each flag's error
names it, before any config runs), reads the configs and their value
ranges, runs them (in process or isolated: replay/run.py) and reports
(replay/output.py)."""

from __future__ import annotations

import argparse
import contextlib
import os
from dataclasses import replace
from typing import Any

from ..errors import InputError, UsageError
from ..flags import add_replay_flags, seconds
from ..formats.configs import ranges_beside, read_config_file
from ..formats.io import check_not_an_input, unwritable
from ..formats.summaries import read_value_ranges
from ..frameworks import FRAMEWORKS
from ..replay import user_code
from ..replay.framework import MixedFile, file_framework
from ..replay.outcomes import FILE_PREFIX, outcome_files
from ..replay.output import JsonlReport, JunitReport, Progress, summary
from ..replay.results import Result, Status, first_line
from ..replay.run import (
    DEFAULT_TIMEOUT,
    check_framework,
    checked_options,
    prepare_process,
    run_in_process,
    run_isolated,
)

# The options of a replay this command takes, flags.py's REPLAY defines their flags.
OPTIONS = ("device", "imports", "libraries", "max_bytes", "allow_unsafe", "check", "backward", "rtol", "atol")


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser("replay", help="call the APIs of config lines and report each")
    p.add_argument("file", help="api_configs.yaml, api_trace.txt, or any file of config lines")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (implies --isolate when > 1)")
    p.add_argument("--isolate", action="store_true", help="run configs in worker processes: a crash is reported")
    p.add_argument(
        "--timeout",
        type=seconds,
        metavar="SECONDS",
        help="a config running longer fails and its worker is killed and replaced (implies --isolate; "
        "default 60 under --isolate; 0: no limit)",
    )
    p.add_argument(
        "--value-ranges",
        help="api_value_ranges.yaml to draw integer and floating tensors from (default: the one beside FILE, if any)",
    )
    p.add_argument("-o", "--report", help="a JSON-lines report, one line per config")
    p.add_argument("--junit", help="a JUnit XML report")
    p.add_argument(
        "--outcomes",
        metavar="DIR",
        help="sort the lines into PaddleAPITest's outcome files in DIR (api_config_pass.txt, "
        "api_config_accuracy_error.txt, ...: replay/outcomes.py)",
    )
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument(
        "--dialect",
        choices=sorted(FRAMEWORKS),
        help="the framework of FILE's lines (default: read from their API names)",
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when the policy refused a config too (by default a refused line, the policy working, "
        "is counted and said but fails nothing)",
    )
    add_replay_flags(p.add_argument, OPTIONS)
    return p


def check_readable(path: str, command: str) -> None:
    """A UsageError where `path` is not a regular file (a directory, a FIFO
    or a device is read by no replay)."""
    if not os.path.exists(path):
        raise UsageError(f"{command}: {path}: no such file")
    if not os.path.isfile(path):
        raise UsageError(f"{command}: {path}: not a regular file")


def main(args: Any) -> int:
    check_readable(args.file, "replay")
    if args.jobs < 1:
        raise UsageError("replay: --jobs must be at least 1")
    options = checked_options("replay", **{name: getattr(args, name) for name in OPTIONS}, seed=args.seed)
    if args.value_ranges:
        check_readable(args.value_ranges, "replay")
    configs = read_config_file(args.file)
    try:
        dialect = file_framework(configs, args.dialect)
    except MixedFile as e:
        raise UsageError(f"replay: {e}") from None
    ranges_path = args.value_ranges or ranges_beside(args.file)
    try:
        ranges = read_value_ranges(ranges_path)
    except Exception as e:  # noqa: BLE001 - any way the file is not a value-ranges file
        raise UsageError(f"replay: {ranges_path}: not a value-ranges file ({type(e).__name__}: {e})") from None
    options = replace(options, ranges=ranges, dialect=dialect)
    check_framework(options, "replay")
    inputs = [p for p in (args.file, ranges_path) if p]
    for flag, path in (("-o", args.report), ("--junit", args.junit)):
        if path:
            check_not_an_input("replay", flag, path, inputs)
    if args.report and args.junit and os.path.realpath(args.report) == os.path.realpath(args.junit):
        raise UsageError(f"replay: -o {args.report} and --junit {args.junit} name one file: the reports would mix")
    if args.outcomes and os.path.exists(args.outcomes) and not os.path.isdir(args.outcomes):
        raise UsageError(f"replay: --outcomes {args.outcomes}: not a folder")
    for path in inputs if args.outcomes else ():  # (its outcome files are replaced: never an input)
        if os.path.realpath(os.path.dirname(os.path.abspath(path))) == os.path.realpath(args.outcomes) and (
            os.path.basename(path).startswith(FILE_PREFIX)
        ):
            raise UsageError(f"replay: --outcomes {args.outcomes}: it holds {path}, an input, which it would replace")
    if args.junit and unwritable(args.junit):
        raise UsageError(f"replay: --junit {args.junit}: {unwritable(args.junit)}")
    try:  # opened now, its first bytes written: a full disk is said before any config runs
        junit = JunitReport(args.junit) if args.junit else None
    except InputError as e:  # (a FIFO no process reads)
        raise UsageError(f"replay: --junit {args.junit}: {e.message}") from None
    except OSError as e:
        raise UsageError(f"replay: --junit {args.junit}: {e.strerror or e}") from None
    try:
        report = JsonlReport(args.report) if args.report else None
    except InputError as e:
        raise UsageError(f"replay: -o {args.report}: {e.message}") from None
    except OSError as e:
        raise UsageError(f"replay: -o {args.report}: {e.strerror}") from None
    try:  # here first: a module that does not import is said before any config runs
        prepare_process(options)
    except Exception as e:  # noqa: BLE001 - the user's code: whatever it raises
        raise UsageError(f"replay: loading the user's code: {type(e).__name__}: {first_line(e)}") from None
    progress = Progress(len(configs), args.check)

    try:
        outcomes = outcome_files(args.outcomes, dialect, args.check if args.check in FRAMEWORKS else "")
    except OSError as e:
        raise UsageError(f"replay: --outcomes {args.outcomes}: {e.strerror or e}") from None

    def on_result(r: Result) -> None:
        progress(r)
        if report:
            report(r)
        if outcomes:
            outcomes(r)

    timeout = DEFAULT_TIMEOUT if args.timeout is None else args.timeout or None
    try:
        with report or contextlib.nullcontext(), outcomes or contextlib.nullcontext():
            if args.isolate or args.jobs > 1 or args.timeout:
                results = run_isolated(configs, args.jobs, options, on_result, timeout)
            else:
                results = run_in_process(
                    configs, options, on_result, report_fd=report.file.fileno() if report else None
                )
    except OSError as e:  # the report could not be written (a full disk): said, not a traceback
        written = f"--outcomes {args.outcomes}" if outcomes and e.filename in outcomes.paths() else f"-o {args.report}"
        raise UsageError(f"replay: {written}: {e.strerror or e}") from None
    progress.finish()
    print(summary(results, args.allow_unsafe, args.check, user_code.loaded(), dialect), end="")
    if outcomes:
        print(f"  sorted as PaddleAPITest sorts them, into {args.outcomes}: {outcomes.said()}")
    if junit:
        try:
            junit.write(results)
        except OSError as e:
            raise UsageError(f"replay: --junit {args.junit}: {e.strerror or e}") from None
    return 1 if any(r.status in failing(args.strict) for r in results) else 0


def failing(strict: bool) -> tuple:
    """The statuses that make replay exit 1: a refused line only when strict."""
    return (Status.MISMATCH, Status.FAILED, Status.INVALID) + ((Status.REFUSED,) if strict else ())
