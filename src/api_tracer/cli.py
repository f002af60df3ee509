"""The command line: api-tracer run | merge | replay | stats.

    api-tracer run [--levels 1,2] [-o DIR] [--merge] [--stack short] script.py ARGS...
    api-tracer run -m package.module ARGS...
    api-tracer merge DIR... -o OUT
    api-tracer replay FILE [--device cpu] [--jobs N] [--isolate] [-o REPORT.jsonl] [--junit REPORT.xml]
    api-tracer stats DIR

Also `python -m api_tracer ...`. Errors in the command line or its inputs
are printed as `api-tracer: ...` with exit code 2; `run` exits as the traced
program does.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, List, Optional, Set, Tuple

from .errors import UsageError
from .options import NESTINGS, SNAPSHOT_INTERVAL, STACK_FORMATS, TRACE_LIMIT


def _levels(text: str) -> List[int]:
    try:
        levels = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"levels must be comma-separated integers, not {text!r}") from None
    if not levels:
        raise argparse.ArgumentTypeError("levels: give at least one level")
    return levels


def byte_count(text: str) -> int:
    """A number of bytes: 1048576, 512K, 64M, 1G, 2T (powers of 1024)."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    number, unit = text[:-1], text[-1:].upper()
    if unit not in units or unit == "":
        number, unit = text, ""
    try:
        value = int(number) * units[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of bytes (e.g. 1048576, 512M, 1G), not {text!r}") \
            from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"a number of bytes is 0 or more, not {text!r}")
    return value


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds (0 or more), not {text!r}")
    return value


def build_parser() -> Tuple[argparse.ArgumentParser, Set[str]]:
    """The parser, and run's options that take a value (what follows them
    is not the program yet)."""
    parser = argparse.ArgumentParser(prog="api-tracer", description="Trace, merge, replay and summarize API calls.")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="trace a Python program without editing it")
    run_value_options: Set[str] = set()

    def run_option(*flags: str, **kwargs: Any) -> None:
        action = run.add_argument(*flags, **kwargs)
        if action.nargs != 0:
            run_value_options.update(action.option_strings)

    run_option("--levels", type=_levels, default=[1], help="comma-separated levels (default 1)")
    run_option("-o", "--output", default="trace_output", help="output directory (default trace_output)")
    run_option("--merge", action="store_true", help="one file set for all levels")
    run_option("--stack", choices=STACK_FORMATS, help="record call stacks in this format")
    run_option("--nesting", choices=NESTINGS, default=NESTINGS[0],
               help="which operator calls level 3 keeps")
    run_option("--value-ranges", action="store_true", help="keep integer tensors' value ranges")
    run_option("--include", action="append", help="API-name pattern to record (repeatable)")
    run_option("--exclude", action="append", help="API-name pattern not to record (repeatable)")
    run_option("--snapshot-interval", type=seconds, default=SNAPSHOT_INTERVAL, metavar="SECONDS",
               help=f"rewrite the summary files this often, so a killed job keeps them (default {SNAPSHOT_INTERVAL:g}; "
                    "0: at stop only)")
    run_option("--trace-limit", type=byte_count, default=TRACE_LIMIT, metavar="BYTES",
               help="the most bytes api_trace.* of a file set take (default 1G; 0: no limit)")
    run_option("--follow-children", action="store_true",
               help="trace the processes the program starts too, each into DIR/rank-N or DIR/pid-N")
    run_option("-m", dest="module", help="run a module as a script (like python -m); what follows is its")
    run_option("target", nargs="*", help="script.py and its arguments")

    merge = sub.add_parser("merge", help="merge file sets (runs, ranks) into one")
    merge.add_argument("dirs", nargs="+", help="directories holding file sets (searched recursively)")
    merge.add_argument("-o", "--output", required=True, help="directory of the merged set")

    replay = sub.add_parser("replay", help="call the APIs of config lines and report each")
    replay.add_argument("file", help="api_configs.yaml, api_trace.txt, or any file of config lines")
    replay.add_argument("--device", default="cpu", help="device of the tensors made (default cpu)")
    replay.add_argument("--jobs", type=int, default=1, help="worker processes (implies --isolate when > 1)")
    replay.add_argument("--isolate", action="store_true", help="run configs in worker processes: a crash is reported")
    replay.add_argument("--value-ranges", help="api_value_ranges.yaml to draw integer tensors from "
                                               "(default: the one beside FILE, if any)")
    replay.add_argument("-o", "--report", help="a JSON-lines report, one line per config")
    replay.add_argument("--junit", help="a JUnit XML report")
    replay.add_argument("--seed", type=int, default=0, help="random seed (default 0)")

    stats = sub.add_parser("stats", help="summarize a file set as a table")
    stats.add_argument("dir", help="a directory holding one or more file sets")
    stats.add_argument("--top", type=int, default=20, help="how many APIs to list (default 20)")
    return parser, run_value_options


def split_run_argv(argv: List[str], value_options: Set[str]) -> Tuple[List[str], List[str]]:
    """`run [options] script.py ARGS` or `run [options] -m module ARGS`:
    everything from the script (or after the module) on is the program's,
    --help and all."""
    i = 1
    while i < len(argv):
        arg = argv[i]
        if arg == "-m":
            return argv[:i + 2], argv[i + 2:]
        if arg == "--":
            return argv[:i], argv[i + 1:]
        if not arg.startswith("-") or arg == "-":
            return argv[:i], argv[i:]
        i += 2 if arg in value_options else 1
    return argv, []


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    program: List[str] = []
    parser, run_value_options = build_parser()
    if argv and argv[0] == "run":
        argv, program = split_run_argv(argv, run_value_options)
    args = parser.parse_args(argv)
    if args.command == "run":
        args.target = program
    try:
        if args.command == "run":
            from .run import run_program

            return run_program(args)
        if args.command == "merge":
            from .merge import merge_sets

            report = merge_sets(args.dirs, args.output)
            print(report)
            return 0
        if args.command == "replay":
            from .replay import replay_command

            return replay_command(args)
        if args.command == "stats":
            from .stats import stats_table

            print(stats_table(args.dir, args.top), end="")
            return 0
        raise AssertionError(f"unhandled command {args.command!r}")  # the parser allows no other
    except UsageError as e:
        print(f"api-tracer: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
