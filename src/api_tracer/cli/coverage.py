"""`api-tracer coverage DIR...`: which APIs of the API list, and which
operators, traces touch (corpus/coverage.py)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..corpus.coverage import coverage_of_dirs, report_json, report_text
from ..errors import UsageError
from ..frameworks import FRAMEWORKS, dialect_named


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser("coverage", help="which APIs of the API list, and which operators, traces touch")
    p.add_argument("dirs", nargs="+", metavar="DIR", help="directories holding file sets (searched recursively)")
    p.add_argument(
        "--list",
        dest="list_path",
        metavar="FILE",
        help="the API names to cover, one a line (default: the dialect's API list)",
    )
    p.add_argument(
        "--dialect",
        choices=sorted(FRAMEWORKS),
        help="the framework whose API list and operators are covered (default: the one the sets' APIs name)",
    )
    p.add_argument("--json", action="store_true", help="everything, every name included, as JSON")
    p.add_argument("--untouched", action="store_true", help="list the names never touched, per group")
    p.add_argument(
        "--top",
        type=int,
        metavar="N",
        help="the N largest groups of each table, and N names of each list (default: all)",
    )
    return p


def main(args: Any) -> int:
    if args.top is not None and args.top < 0:
        raise UsageError(f"coverage: --top {args.top}: not a count (0: all)")
    dialect = dialect_named(args.dialect) if args.dialect else None
    report = coverage_of_dirs(args.dirs, dialect, list_path=args.list_path)
    print(
        json.dumps(report_json(report), indent=1) if args.json else report_text(report, args.untouched, args.top),
        end="\n" if args.json else "",
    )
    return 0
