"""`api-tracer bench CONFIGS`: each config's call timed (timing/), its
results written as they come (-o), then the configs by what they cost a
program, and with --compare against a baseline run, those slower and
faster beyond the noise. `api-tracer bench --compare BASE.jsonl NEW.jsonl`
compares two results files without timing anything. Exit 1 where a config
failed or was invalid (as replay), 2 for bad input."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from typing import Any, Optional

from ..errors import InputError, UsageError
from ..flags import add_replay_flags, count, seconds
from ..formats.fileset import set_file_beside
from ..formats.io import check_not_an_input, open_output
from ..formats.sources import SOURCES, calls_of
from ..frameworks import FRAMEWORKS
from ..replay.keyed import _file_digest
from ..replay.output import Progress
from ..replay.results import Status
from ..replay.run import DEFAULT_TIMEOUT, checked_options, prepare_process
from ..timing.compare import FALSE_DISCOVERIES, compare
from ..timing.measure import CLOCKS, BenchOptions, environment
from ..timing.output import change_json, comparison_table, run_table, summary_json, untimed_configs, weigh, weighted
from ..timing.results import Header, Run, Timing, looks_like_results, read_header, read_summaries, read_timings
from ..timing.run import Plan, plan, time_configs
from .replay import check_readable, file_options

# The options of a replay this command takes (flags.py's REPLAY defines their flags).
OPTIONS = ("device", "imports", "libraries", "max_bytes", "allow_unsafe")
# A round's wall time, at most, over its --max-time (twice with --backward): its blocks past --max-time
# by one block at most, the call made once to check it and once to count its FLOPs, the warm-up, a
# loaded machine's wall clock against its CPU clock. --timeout must leave it that.
ROUND_SHARE = 3.0


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser("bench", help="time each config's call, weigh it by its calls, compare two runs")
    p.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="a file of config lines to time; or, with --compare, the results file of a run to compare",
    )
    p.add_argument("-o", "--results", help="the results, JSON lines written as they come (default: none kept)")
    p.add_argument("--resume", action="store_true", help="go on with -o's results: time only what they lack")
    p.add_argument("--compare", metavar="BASELINE", help="a run's results to compare these against")
    p.add_argument("--rounds", type=count, default=BenchOptions.rounds, help="rounds of each config (default 5)")
    p.add_argument("--threads", type=count, default=BenchOptions.threads, help="torch's threads (default 1)")
    p.add_argument(
        "--min-time",
        type=seconds,
        default=BenchOptions.min_time,
        help="seconds of calls a round runs at least (default 0.05)",
    )
    p.add_argument(
        "--max-time",
        type=seconds,
        default=BenchOptions.max_time,
        help="seconds of calls a round runs at most, however its blocks spread (default 1)",
    )
    p.add_argument("--backward", action="store_true", help="time the backward of each call too")
    p.add_argument(
        "--clock",
        choices=CLOCKS,
        default=BenchOptions.clock,
        help="what a time is: the CPU time of the timing process (default: steady on a shared machine) or the wall "
        "clock's (latency; always on a CUDA device)",
    )
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1: more share the CPUs they time)")
    p.add_argument(
        "--timeout",
        type=seconds,
        metavar="SECONDS",
        help=f"a round running longer fails and its worker is replaced (default {DEFAULT_TIMEOUT:g}; 0: no limit)",
    )
    p.add_argument("--sources", help=f"the {SOURCES} whose calls weigh each config (default: the one beside FILE)")
    p.add_argument("--value-ranges", help="api_value_ranges.yaml to draw tensors from (default: the one beside FILE)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the inputs (default 0)")
    p.add_argument("--dialect", choices=sorted(FRAMEWORKS), help="the framework of FILE's lines")
    p.add_argument("--top", type=count, default=20, help="configs and APIs the tables show (default 20)")
    p.add_argument("--json", action="store_true", help="print JSON lines (one per config) instead of tables")
    add_replay_flags(p.add_argument, OPTIONS)
    return p


def main(args: Any) -> int:
    for path in args.files:
        check_readable(path, "bench")
    baseline = _baseline(args)
    if args.compare and len(args.files) == 1 and looks_like_results(args.files[0]):
        _show(args, read(args.files[0]), baseline)
        return 0  # (a comparison times nothing: a failure in a run it reads is not its own)
    if len(args.files) != 1:
        raise UsageError("bench: give one file of configs to time (two results files only with --compare)")
    run = _time(args)
    _show(args, run, baseline)
    return 1 if any(s.status in (Status.FAILED, Status.INVALID) for s in run.configs.values()) else 0


def read(path: str) -> Run:
    try:
        return read_summaries(path)
    except InputError as e:
        raise UsageError(f"bench: {e}") from None


def _baseline(args: Any) -> Optional[Run]:
    if not args.compare:
        return None
    check_readable(args.compare, "bench")
    return read(args.compare)


def _show(args: Any, run: Run, baseline: Optional[Run]) -> None:
    try:
        weigh(run, args.sources)
    except InputError as e:
        raise UsageError(f"bench: {e}") from None
    if args.json:
        for s in weighted(run).configs + untimed_configs(run):
            print(summary_json(s))
    else:
        print(run_table(run, args.top), end="")
    if baseline is not None:
        cmp = compare(baseline, run, FALSE_DISCOVERIES)
        if args.json:
            for c in cmp.changes:
                print(change_json(c))
        else:
            print("\n" + comparison_table(cmp, args.top), end="")


def _time(args: Any) -> Run:
    path = args.files[0]
    if args.rounds < 1:
        raise UsageError("bench: --rounds must be at least 1")
    if args.threads < 1:
        raise UsageError("bench: --threads must be at least 1")
    if args.jobs < 1:
        raise UsageError("bench: --jobs must be at least 1")
    if not args.max_time > 0:
        raise UsageError("bench: --max-time must be above 0")
    if args.max_time < args.min_time:
        raise UsageError(f"bench: --max-time {args.max_time:g} is below --min-time {args.min_time:g}")
    if args.resume and not args.results:
        raise UsageError("bench: --resume needs -o RESULTS, the results it goes on with")
    timeout = DEFAULT_TIMEOUT if args.timeout is None else args.timeout or None
    least = ROUND_SHARE * (2 if args.backward else 1) * args.max_time
    if timeout is not None and timeout < least:
        raise UsageError(
            f"bench: --timeout {timeout:g} is too short for --max-time {args.max_time:g}"
            f"{' with --backward' if args.backward else ''}: a round may take {least:g} s (a wall clock's, its "
            "check and warm-up calls beside the timed ones); give --timeout at least that, or 0 for none"
        )
    options = checked_options("bench", **{name: getattr(args, name) for name in OPTIONS}, seed=args.seed)
    options, ranges_path = file_options("bench", path, options, args.dialect, args.value_ranges)
    sources = args.sources or set_file_beside(path, SOURCES)
    if sources:  # (read before any timing: a bad one ends the run before, not after, its hours)
        try:
            calls_of(sources)
        except InputError as e:
            raise UsageError(f"bench: {e}") from None
    if args.results:
        inputs = [path, ranges_path, sources, args.compare]
        check_not_an_input("bench", "-o", args.results, [p for p in inputs if p])
        if os.path.exists(args.results) and not os.path.isfile(args.results):
            raise UsageError(f"bench: -o {args.results}: not a regular file (the results are read back at the end)")
    bench = BenchOptions(
        args.rounds, args.threads, args.min_time, args.max_time, backward=args.backward, clock=args.clock
    )
    header = Header(
        {**bench.settings(options, _file_digest(ranges_path)), "configs": os.path.abspath(path)},
        environment(options.device),
    )
    plan_ = Plan()
    if args.resume:
        _read_back(args.results, header, plan_)
    try:
        prepare_process(options)
    except Exception as e:  # noqa: BLE001 - the user's code: whatever it raises
        raise UsageError(f"bench: loading the user's code: {type(e).__name__}: {e}") from None
    try:
        plan(path, header, plan_)
    except InputError as e:
        raise UsageError(f"bench: {e}") from None
    out_path = args.results or _scratch()
    try:
        out = open_output(out_path, append=args.resume)
    except InputError as e:
        raise UsageError(f"bench: -o {out_path}: {e.message}") from None
    progress = Progress(plan_.left(args.rounds))

    def on_timing(t: Timing) -> None:
        progress(t)
        if t.status != Status.OK and progress.total is not None:  # (a config that fails is not timed again)
            progress.total -= args.rounds - 1 - t.round
        out.write(t.to_json() + "\n")
        out.flush()

    try:
        with out:
            if not args.resume:
                out.write(header.to_json() + "\n")
                out.flush()
            time_configs(path, header, options, bench, plan_, on_timing, args.jobs, timeout)
        progress.finish()
        return read(out_path)
    finally:
        if not args.results:
            os.unlink(out_path)


def _scratch() -> str:
    fd, path = tempfile.mkstemp(prefix="api-tracer-bench-", suffix=".jsonl")
    os.close(fd)
    return path


def _read_back(path: str, header: Header, plan_: Plan) -> None:
    if not os.path.isfile(path):
        raise UsageError(f"bench: --resume: -o {path}: no such file (a first run has no --resume)")
    try:
        kept = read_header(path)
    except InputError as e:
        raise UsageError(f"bench: --resume: {e}") from None
    differs = header.differences(kept)
    env = [k for k in ("torch", "device", "host") if kept.environment.get(k) != header.environment.get(k)]
    differs += [f"{k} {kept.environment.get(k)!r} there, {header.environment.get(k)!r} here" for k in env]
    if differs:
        raise UsageError(
            f"bench: --resume: {path} was timed otherwise ({'; '.join(differs)}): resume it with the same "
            "flags and environment, or write new results"
        )
    try:  # (each line checked, a last one cut short cut off, once the run is known to be this one)
        read_timings(path, plan_.kept, repair=True)
    except InputError as e:
        raise UsageError(f"bench: --resume: {e}") from None
    print(f"bench: {len(plan_.done)} rounds held already in {path}", file=sys.stderr)
