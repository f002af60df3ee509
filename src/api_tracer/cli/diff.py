"""`api-tracer diff A B`: what changed between two traces (corpus/diff.py),
as text or JSON lines, and an exit status for CI (--fail-on)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..corpus.diff import FAIL_ON, SUMMARY, Sink, changed, diff, text
from ..flags import count


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "diff",
        help="what changed between two traces: APIs and configs new, gone, or called a different number of times",
    )
    p.add_argument("a", metavar="A", help="the trace before (a directory of file sets, one per level)")
    p.add_argument("b", metavar="B", help="the trace after")
    p.add_argument(
        "--json", action="store_true", help="every difference as a JSON object a line, then a summary line per section"
    )
    p.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        help="exit with 1 where there are differences of this kind (any: changed counts too)",
    )
    p.add_argument("--limit", type=count, default=20, help="how many of each kind the text lists (default 20)")
    return p


def main(args: Any) -> int:
    json_out = sys.stdout if args.json else None
    sink = Sink(args.limit, json_out)
    diff(args.a, args.b, sink)
    if json_out is not None:
        for where, what, t in sink.tallies:
            record = {
                "set": where,
                "what": what,
                "kind": SUMMARY,
                "in_a": t.total_a,
                "in_b": t.total_b,
                "counted": t.counted,
                **t.counts,
                "sections": len(sink.tallies),  # the summary lines the diff ends with: a cut among them is told
            }
            json_out.write(json.dumps(record, ensure_ascii=False) + "\n")
    else:
        print(text(args.a, args.b, sink), end="")
    return 1 if args.fail_on and changed(sink, args.fail_on) else 0
