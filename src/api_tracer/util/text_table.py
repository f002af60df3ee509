"""Aligned text tables, as `api-tracer stats` and the layer profile print them."""

from __future__ import annotations

from typing import List, Sequence


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]], sep: str = "  ", rule_sep: str = "  ") -> str:
    """The header, a rule of dashes, then one line per row: the first column
    left-aligned, the others right-aligned, trailing blanks stripped."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return sep.join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    lines: List[str] = [line(headers), rule_sep.join("-" * w for w in widths)]
    return "\n".join(lines + [line(r) for r in rows]) + "\n"
