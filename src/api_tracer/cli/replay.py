"""`api-tracer replay FILE`: checks the command line (each flag's error
names it, before any config runs), reads the configs and their value
ranges, runs them (in process or isolated: replay/run.py) and reports
(replay/output.py)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from dataclasses import replace
from typing import Any, Optional, Tuple

from ..errors import InputError, UsageError
from ..flags import add_replay_flags, seconds, shard_pair
from ..formats.configs import ranges_beside, stream_config_file
from ..formats.io import check_not_an_input, unwritable
from ..formats.summaries import read_value_ranges
from ..frameworks import FRAMEWORKS
from ..replay import user_code
from ..replay.framework import MixedFile, file_framework
from ..replay.keyed import (
    Counts,
    KeySet,
    RunIdentity,
    Shard,
    check_resumable,
    key_text,
    keyed_configs,
    read_back,
    write_identity,
)
from ..replay.on_ray import import_ray, run_on_ray
from ..replay.options import ReplayOptions
from ..replay.outcomes import FILE_PREFIX, outcome_files
from ..replay.output import JsonlReport, JunitReport, Progress, Tally, summary
from ..replay.results import Result, Status, first_line
from ..replay.run import (
    DEFAULT_TIMEOUT,
    check_framework,
    checked_options,
    prepare_process,
    run_in_process,
    run_stream,
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
        "--shard",
        type=shard_pair,
        metavar="I/N",
        help="replay only the configs of shard I of N (0 <= I < N): those whose key is I modulo N, the same every "
        "time, so that N copies of the command (an array job) replay each config once between them",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="go on with the report -o names: replay only the configs it does not hold, and append",
    )
    p.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="run on a Ray cluster: 'auto' (the one this machine is in), an address, or none (a local one, "
        "started for the run); --jobs is then each batch's worker processes (default 1)",
    )
    p.add_argument("--batch", type=int, default=32, help="configs a Ray task (with --ray; default 32)")
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when the policy refused a config too (by default a refused line, the policy working, "
        "is counted and said but fails nothing)",
    )
    add_replay_flags(p.add_argument, OPTIONS)
    return p


def file_options(
    command: str, path: str, options: ReplayOptions, dialect: Optional[str], value_ranges: Optional[str]
) -> Tuple[ReplayOptions, Optional[str]]:
    """The options the configs of the file at `path` run with, and the
    value-ranges file they are drawn from: its framework (`dialect`, or
    read from its lines: a file of two is refused) and its value ranges
    (`value_ranges`, or the file beside it), the framework checked to take
    the options; a UsageError said as `command`'s."""
    if value_ranges:
        check_readable(value_ranges, command)
    try:
        framework = file_framework(stream_config_file(path), dialect)
    except MixedFile as e:
        raise UsageError(f"{command}: {e}") from None
    ranges_path = value_ranges or ranges_beside(path)
    try:
        ranges = read_value_ranges(ranges_path)
    except Exception as e:  # noqa: BLE001 - any way the file is not a value-ranges file
        raise UsageError(f"{command}: {ranges_path}: not a value-ranges file ({type(e).__name__}: {e})") from None
    options = replace(options, ranges=ranges, dialect=framework)
    check_framework(options, command)
    return options, ranges_path


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
    if args.batch < 1:
        raise UsageError("replay: --batch must be at least 1")
    shard = Shard(*args.shard) if args.shard else Shard()
    if args.resume and not args.report:
        raise UsageError("replay: --resume needs -o REPORT, the report it goes on with")
    if args.ray is not None:
        import_ray("replay")  # (said before any config runs, where it is not installed)
    options = checked_options("replay", **{name: getattr(args, name) for name in OPTIONS}, seed=args.seed)
    options, ranges_path = file_options("replay", args.file, options, args.dialect, args.value_ranges)
    dialect = options.dialect
    identity = RunIdentity.of(options, ranges_path, shard)
    check_outputs(args, [p for p in (args.file, ranges_path) if p])
    if args.resume:
        check_resumable(args.report, identity, "replay")
        try:  # each line checked (a last one cut short cut off) before any output is opened or replaced
            for _ in read_back(args.report, lambda r: None):
                pass
        except InputError as e:
            raise UsageError(f"replay: --resume: {e}") from None
    try:  # before any output is opened (on Ray's nodes too, later): user code that does not import loses nothing
        prepare_process(options)
    except Exception as e:  # noqa: BLE001 - the user's code: whatever it raises
        raise UsageError(f"replay: loading the user's code: {type(e).__name__}: {first_line(e)}") from None
    try:  # opened now, its first bytes written: a full disk is said before any config runs
        junit = JunitReport(args.junit) if args.junit else None
    except InputError as e:  # (a FIFO no process reads)
        raise UsageError(f"replay: --junit {args.junit}: {e.message}") from None
    except OSError as e:
        raise UsageError(f"replay: --junit {args.junit}: {e.strerror or e}") from None
    try:
        report = JsonlReport(args.report, append=args.resume) if args.report else None
        if report and os.path.isfile(args.report):  # (not complete until the run's end says so)
            write_identity(args.report, identity)
    except InputError as e:
        raise UsageError(f"replay: -o {args.report}: {e.message}") from None
    except OSError as e:
        raise UsageError(f"replay: -o {args.report}: {e.strerror}") from None
    try:
        outcomes = outcome_files(args.outcomes, dialect, args.check if args.check in FRAMEWORKS else "")
    except OSError as e:
        raise UsageError(f"replay: --outcomes {args.outcomes}: {e.strerror or e}") from None

    tally, digest, done, counts = Tally(), identity.digest(), KeySet(), Counts()
    nodes = [0]
    total = None
    if sys.stderr.isatty() and os.path.getsize(args.file) < PROGRESS_COUNTED:  # (a bar needs the total)
        total = sum(1 for _ in keyed_configs(args.file, digest, shard, Counts()))
    progress = Progress(total, args.check, where=lambda: f"{nodes[0]} nodes" if nodes[0] else "")

    def earlier(r: Result) -> None:  # a result the report held already (--resume)
        counts.earlier += 1
        tally(r)
        if junit:
            junit.add(r)
        if outcomes:
            outcomes(r)

    def on_result(r: Result) -> None:
        progress(r)
        tally(r)
        if report:
            report(r)
        if junit:
            junit.add(r)
        if outcomes:
            outcomes(r)

    timeout = DEFAULT_TIMEOUT if args.timeout is None else args.timeout or None
    lost: list = []
    why: list = []
    try:
        with report or contextlib.nullcontext(), outcomes or contextlib.nullcontext():
            if args.resume:
                for key in read_back(args.report, earlier):
                    done.add(key)
                if progress.total is not None:
                    progress.total -= counts.earlier
            tasks = ((key_text(k), c) for k, c in keyed_configs(args.file, digest, shard, counts, done))
            if args.ray is not None:
                lost, why = run_on_ray(
                    tasks,
                    args.ray,
                    options,
                    on_result,
                    jobs=args.jobs,
                    batch=args.batch,
                    timeout=timeout,
                    nodes=lambda n: nodes.__setitem__(0, n),
                )
            elif args.isolate or args.jobs > 1 or args.timeout:
                run_stream(tasks, args.jobs, options, lambda key, r: on_result(keyed(r, key)), timeout)
            else:
                run_in_process(
                    tasks, options, on_result, report_fd=report.file.fileno() if report else None, keyed=True
                )
    except InputError as e:  # the file of configs cannot be read on (said, naming it)
        raise UsageError(f"replay: {e}") from None
    except OSError as e:  # the report could not be written (a full disk): said, not a traceback
        written = f"--outcomes {args.outcomes}" if outcomes and e.filename in outcomes.paths() else f"-o {args.report}"
        raise UsageError(f"replay: {written}: {e.strerror or e}") from None
    progress.finish()
    print(summary(tally, args.allow_unsafe, args.check, user_code.loaded(), dialect, args.report), end="")
    print(shared_out(counts, shard, args.resume), end="")
    if outcomes:
        print(f"  sorted as PaddleAPITest sorts them, into {args.outcomes}: {outcomes.said()}")
    if junit:
        try:
            junit.write()
        except OSError as e:
            raise UsageError(f"replay: --junit {args.junit}: {e.strerror or e}") from None
    if lost:
        first = lost[0][1]
        print(
            f"  LOST {len(lost)} configs with their batches, past Ray's retries ({why[0]}; the first "
            f"{first.file}:{first.line}): rerun with --resume to replay them",
        )
        return 1
    if report and os.path.isfile(args.report):  # every config of the shard reported: the run is complete
        write_identity(args.report, identity, complete=True)
    return 1 if tally.failed(failing(args.strict)) else 0


# A file of configs under this many bytes is counted first on a terminal, for the progress bar's total.
PROGRESS_COUNTED = 64 << 20


def keyed(r: Result, key: str) -> Result:
    r.key = key
    return r


def shared_out(counts: Counts, shard: Shard, resumed: bool) -> str:
    """What a summary says of how the lines were shared out, where it is not
    plain: repeats dropped, other shards' configs, a report's earlier ones."""
    said = []
    if counts.repeats:
        said.append(f"{counts.repeats} repeated lines replayed once")
    if shard.count > 1:
        said.append(f"shard {shard}: {counts.elsewhere} configs of the other shards left to them")
    if resumed:
        said.append(f"{counts.earlier} configs the report held already, {counts.given} replayed now")
    return "".join(f"  {s}\n" for s in said)


def check_outputs(args: Any, inputs: list) -> None:
    """A UsageError where a report would replace an input, or another report."""
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


def failing(strict: bool) -> tuple:
    """The statuses that make replay exit 1: a refused line only when strict."""
    return (Status.MISMATCH, Status.FAILED, Status.INVALID) + ((Status.REFUSED,) if strict else ())
