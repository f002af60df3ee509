"""`api-tracer stats DIR`: a file set summarized as tables (corpus/stats.py)."""

from __future__ import annotations

import argparse
from typing import Any

from ..corpus.stats import stats_table


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser("stats", help="summarize a file set as a table")
    p.add_argument("dir", help="a directory holding one or more file sets")
    p.add_argument("--top", type=int, default=20, help="how many APIs to list (default 20)")
    return p


def main(args: Any) -> int:
    print(stats_table(args.dir, args.top), end="")
    return 0
