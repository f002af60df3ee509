"""The command line: api-tracer run | merge | replay | fuzz | stats | coverage | report.

    api-tracer run [--dialect paddle] [--levels 1,2] [-o DIR] [--merge] [--stack short] script.py ARGS...
    api-tracer run -m package.module ARGS...
    api-tracer merge DIR... -o OUT
    api-tracer replay FILE [--device cpu] [--jobs N] [--isolate] [--allow-unsafe] [--max-bytes 8G] [--dialect paddle]
                       [--import MODULE]... [--load-library PATH]...
                       [--check float64|device:DEVICE|compile|repeat|layout [--backward] [--rtol R] [--atol A]]
                       [-o REPORT.jsonl] [--junit REPORT.xml]
    api-tracer fuzz CONFIGS... [-o DIR] [--time SECONDS | --budget N] [--jobs N] [--seed S]
                    [--mutate shape,dtype,layout,value,scalar] [--oracle crash,hang,error,float64,layout,repeat,...]
                    [--import MODULE]... [--load-library PATH]... [--timeout SECONDS] [--max-bytes B] [--resume]
    api-tracer diff A B [--json] [--fail-on new|gone|any] [--limit N]
    api-tracer stats DIR
    api-tracer coverage DIR... [--list FILE] [--json] [--untouched] [--top N]
    api-tracer report [DIR] [PROFILE.json] [REPLAY.jsonl] -o report.html
    api-tracer export --format operator-inputs|paddleapitest CONFIGS -o FILE

Also `python -m api_tracer ...`. Errors in the command line or its inputs
are printed as `api-tracer: ...` with exit code 2 (a file merge, stats,
coverage or report cannot read or write as `api-tracer: PATH[:LINE]: what is wrong`;
what they repaired as `api-tracer: warning: ...`); `run` exits as the
traced program does.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, List, Optional, Set, Tuple

from .diff import FAIL_ON as DIFF_FAIL_ON
from .errors import UsageError
from .dialect import DIALECTS
from .options import add_run_flags, byte_count, count, seconds


# Their bad input is `api-tracer: PATH[:LINE]: ...`, exit 2.
READING_COMMANDS = ("merge", "diff", "stats", "coverage", "report", "export")


def build_parser() -> Tuple[argparse.ArgumentParser, Set[str]]:
    """The parser, and run's options that take a value (what follows them
    is not the program yet)."""
    parser = argparse.ArgumentParser(prog="api-tracer",
                                     description="Trace, merge, replay, summarize and report API calls.")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="trace a Python program without editing it")
    run_value_options: Set[str] = set()

    def run_option(*flags: str, **kwargs: Any) -> None:
        action = run.add_argument(*flags, **kwargs)
        if action.nargs != 0:
            run_value_options.update(action.option_strings)

    add_run_flags(run_option)
    run_option("--dialect", choices=sorted(DIALECTS), default="torch",
               help="the framework the program uses, whose API level 0 wraps (default: torch)")
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
    replay.add_argument("--timeout", type=seconds, metavar="SECONDS",
                        help="a config running longer fails and its worker is killed and replaced (implies "
                             "--isolate; default 60 under --isolate; 0: no limit)")
    replay.add_argument("--import", dest="imports", action="append", metavar="MODULE",
                        help="import MODULE (your operators' registration) into every replaying process first "
                             "(repeatable); its operator namespaces are then allowed")
    replay.add_argument("--load-library", dest="libraries", action="append", metavar="PATH",
                        help="load the shared library PATH (torch.ops.load_library) likewise (repeatable)")
    replay.add_argument("--value-ranges", help="api_value_ranges.yaml to draw integer and floating tensors from "
                                               "(default: the one beside FILE, if any)")
    replay.add_argument("-o", "--report", help="a JSON-lines report, one line per config")
    replay.add_argument("--junit", help="a JUnit XML report")
    replay.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    replay.add_argument("--dialect", choices=sorted(DIALECTS),
                        help="the framework of FILE's lines (default: read from their API names)")
    replay.add_argument("--max-bytes", type=byte_count, help="skip configs whose tensor arguments need more (8G, 512M, "
                                                        "...; default half the free memory of --device)")
    replay.add_argument("--allow-unsafe", action="store_true",
                        help="call any torch callable a line names, not only what computes (trusted files only)")
    replay.add_argument("--check", metavar="MODE",
                        help="compare each config's outputs against the same call on float64 copies of its floating "
                             "inputs (float64, judged by an error model), on another device (device:cuda), compiled "
                             "(compile), made again from the same seed, bitwise (repeat), or on contiguous copies of "
                             "its strided inputs (layout)")
    replay.add_argument("--backward", action="store_true",
                        help="with --check: compare the gradients of the floating inputs too")
    replay.add_argument("--rtol", type=float, help="with --check: the relative tolerance, instead of the dtype's")
    replay.add_argument("--atol", type=float, help="with --check: the absolute tolerance, instead of the dtype's")

    from .fuzz.command import add_flags as add_fuzz_flags

    add_fuzz_flags(sub.add_parser("fuzz", help="mutate config lines into cases and find crashes, hangs, unclean "
                                              "errors and wrong results"))

    diff = sub.add_parser("diff", help="what changed between two traces: APIs and configs new, gone, or called "
                                       "a different number of times")
    diff.add_argument("a", metavar="A", help="the trace before (a directory of file sets, one per level)")
    diff.add_argument("b", metavar="B", help="the trace after")
    diff.add_argument("--json", action="store_true",
                      help="every difference as a JSON object a line, then a summary line per section")
    diff.add_argument("--fail-on", choices=DIFF_FAIL_ON,
                      help="exit with 1 where there are differences of this kind (any: changed counts too)")
    diff.add_argument("--limit", type=count, default=20, help="how many of each kind the text lists (default 20)")

    stats = sub.add_parser("stats", help="summarize a file set as a table")
    stats.add_argument("dir", help="a directory holding one or more file sets")
    stats.add_argument("--top", type=int, default=20, help="how many APIs to list (default 20)")

    coverage = sub.add_parser("coverage", help="which APIs of the API list, and which operators, traces touch")
    coverage.add_argument("dirs", nargs="+", metavar="DIR", help="directories holding file sets (searched recursively)")
    coverage.add_argument("--list", dest="list_path", metavar="FILE",
                          help="the API names to cover, one a line (default: the dialect's API list)")
    coverage.add_argument("--json", action="store_true", help="everything, every name included, as JSON")
    coverage.add_argument("--untouched", action="store_true", help="list the names never touched, per group")
    coverage.add_argument("--top", type=int, metavar="N",
                          help="the N largest groups of each table, and N names of each list (default: all)")

    report = sub.add_parser("report", help="one self-contained HTML file of traces, profiles and replay reports")
    report.add_argument("inputs", nargs="+", metavar="INPUT",
                        help="a trace directory (its file sets, searched recursively), a profile's JSON "
                             "(Profile.export_json), a replay report (replay -o REPORT.jsonl), a fuzz campaign "
                             "or a diff (diff --json > DIFF.jsonl)")
    report.add_argument("-o", "--output", required=True, help="the HTML file to write")

    from .export import add_flags as add_export_flags

    add_export_flags(sub.add_parser("export", help="write config lines in another tool's format (PyTorch's "
                                                   "operator inputs, PaddleAPITest's config lines)"))
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
        if args.command == "fuzz":
            from .fuzz.command import fuzz_command

            return fuzz_command(args)
        if args.command == "diff":
            from .diff import diff_command

            return diff_command(args)
        if args.command == "stats":
            from .stats import stats_table

            print(stats_table(args.dir, args.top), end="")
            return 0
        if args.command == "coverage":
            from .coverage import coverage_command

            print(coverage_command(args.dirs, args.list_path, args.json, args.untouched, args.top), end="")
            return 0
        if args.command == "report":
            from .report import report_command

            print(report_command(args.inputs, args.output))
            return 0
        if args.command == "export":
            from .export import export_command

            print(export_command(args))
            return 0
        raise AssertionError(f"unhandled command {args.command!r}")  # the parser allows no other
    except UsageError as e:
        print(f"api-tracer: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        # merge, stats, coverage and report name a file they cannot read or write
        # themselves (filesets.py); one they did not foresee is said the
        # same way, not as a traceback.
        if args.command not in READING_COMMANDS:
            raise
        where = f"{e.filename}: " if e.filename else ""
        print(f"api-tracer: {where}{e.strerror or e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
