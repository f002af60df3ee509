"""`api-tracer export --format FORMAT CONFIGS -o FILE`: config lines
written in another tool's format (corpus/export.py; the formats are the
frameworks', frameworks/NAME/__init__.py)."""

from __future__ import annotations

import argparse
from typing import Any

from ..corpus.export import export
from ..frameworks import exports


def add_parser(sub: Any) -> argparse.ArgumentParser:
    known = exports()
    p = sub.add_parser(
        "export",
        help="write config lines in another tool's format (PyTorch's operator inputs, PaddleAPITest's config lines)",
    )
    p.add_argument("configs", metavar="CONFIGS", help="a file of config lines (any file replay reads)")
    p.add_argument(
        "--format",
        required=True,
        choices=list(known),
        help="; ".join(f"{name}: {form.help}" for name, form in known.items()),
    )
    p.add_argument("-o", "--output", required=True, help="the file to write")
    return p


def main(args: Any) -> int:
    print(export(args.configs, args.format, args.output))
    return 0
