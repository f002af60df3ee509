"""`api-tracer merge DIR... -o OUT`: one file set from many runs or ranks
(corpus/merge.py)."""

from __future__ import annotations

import argparse
from typing import Any

from ..corpus.merge import merge_sets


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser("merge", help="merge file sets (runs, ranks) into one")
    p.add_argument("dirs", nargs="+", help="directories holding file sets (searched recursively)")
    p.add_argument("-o", "--output", required=True, help="directory of the merged set")
    return p


def main(args: Any) -> int:
    print(merge_sets(args.dirs, args.output))
    return 0
