"""The command line: api-tracer run | merge | replay | collect | fuzz | repro | bench | diff | stats | coverage |
report | export.

    api-tracer run [--dialect paddle] [--levels 1,2] [-o DIR] [--merge] [--stack short] script.py ARGS...
    api-tracer run -m package.module ARGS...
    api-tracer merge DIR... -o OUT
    api-tracer replay FILE [--device cpu] [--jobs N] [--isolate] [--allow-unsafe] [--max-bytes 8G] [--dialect paddle]
                       [--import MODULE]... [--load-library PATH]...
                       [--check float64|device:DEVICE|compile|repeat|layout [--backward] [--rtol R] [--atol A]]
                       [-o REPORT.jsonl [--resume]] [--junit REPORT.xml] [--shard I/N] [--ray [ADDRESS]]
    api-tracer collect REPORT... -o REPORT [--junit REPORT.xml]
    api-tracer fuzz CONFIGS... [-o DIR] [--time SECONDS | --budget N] [--jobs N] [--seed S]
                    [--mutate shape,dtype,layout,value,scalar] [--oracle crash,hang,error,float64,layout,repeat,...]
                    [--import MODULE]... [--load-library PATH]... [--timeout SECONDS] [--max-bytes B] [--resume]
                    [--cases N] [--shard I/N | --ray [ADDRESS] [--shards N]]
    api-tracer repro CONFIGS|CAMPAIGN [-o DIR] [--line N] [--check MODE] [--import MODULE]... [--seed S]
    api-tracer bench CONFIGS [-o RESULTS.jsonl [--resume]] [--rounds N] [--threads N] [--clock cpu|wall] [--backward]
                     [--jobs N] [--timeout SECONDS] [--sources FILE] [--compare BASELINE.jsonl] [--json]
    api-tracer bench --compare BASELINE.jsonl RESULTS.jsonl
    api-tracer diff A B [--json] [--fail-on new|gone|any] [--limit N]
    api-tracer stats DIR
    api-tracer coverage DIR... [--list FILE] [--json] [--untouched] [--top N]
    api-tracer report [DIR] [PROFILE.json] [REPLAY.jsonl] -o report.html
    api-tracer export --format operator-inputs|paddleapitest CONFIGS -o FILE

Also `python -m api_tracer ...`. Each command is a module of this package
that exposes `add_parser(subparsers)` (its flags) and `main(args) -> int`
(its exit status); the work is in the stage's package. Errors in the
command line or its inputs are printed as `api-tracer: ...` with exit code
2 (a file a command cannot read or write as `api-tracer: PATH[:LINE]: what
is wrong`; what it repaired as `api-tracer: warning: ...`); `run` exits as
the traced program does.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any, Dict, List, Optional, Tuple

from ..errors import PROG, UsageError

# The commands, in the order --help lists them: each the module of this
# package of its name.
COMMANDS = (
    "run",
    "merge",
    "replay",
    "collect",
    "fuzz",
    "repro",
    "bench",
    "diff",
    "stats",
    "coverage",
    "report",
    "export",
)


def command(name: str) -> Any:
    """The module of command `name`."""
    return importlib.import_module(f"{__name__}.{name}")


def build_parser() -> Tuple[argparse.ArgumentParser, Dict[str, argparse.ArgumentParser]]:
    """The parser, and each command's own."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Trace, merge, replay, fuzz, summarize and report API calls."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    return parser, {name: command(name).add_parser(sub) for name in COMMANDS}


def main(argv: Optional[List[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser, parsers = build_parser()
    program: List[str] = []
    if argv and argv[0] == "run":  # what follows the script is the program's, --help and all
        argv, program = command("run").split_argv(argv, parsers["run"])
    args = parser.parse_args(argv)
    if args.command == "run":
        args.target = program
    try:
        return command(args.command).main(args)
    except UsageError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        # A file a command did not foresee it cannot read or write is said
        # as one it foresaw is, not as a traceback (`run`'s are the program's).
        if args.command == "run":
            raise
        where = f"{e.filename}: " if e.filename else ""
        print(f"{PROG}: {where}{e.strerror or e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
