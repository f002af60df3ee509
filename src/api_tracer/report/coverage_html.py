"""The report's coverage pane of a trace directory (corpus/coverage.py): per API
list and operator registry, its modules (namespaces) as a sortable table
with a bar of the share touched, and behind each module's name the names
touched and never touched; then the names touched outside it."""

from __future__ import annotations

from typing import List, Optional

from ..corpus.coverage import Coverage, CoverageReport, Group, percent_text, sets_summary
from .page import Cell, Column, code, esc, number, sortable_table, tag

BAR = 160  # px: the width of a bar at 100%


def meter(p: Optional[float], tooltip: str) -> str:
    """A bar as wide as `p` percent of BAR, on a grey track, as SVG."""
    width = BAR * (p or 0.0) / 100.0
    return tag(
        "svg",
        tag("title", esc(tooltip))
        + tag("rect", x=0, y=2, width=BAR, height=10, fill="#e6e9ef")
        + tag("rect", cls="bar", x=0, y=2, width=f"{width:.1f}", height=10),
        width=BAR,
        height=14,
        viewBox=f"0 0 {BAR} 14",
        style="margin:0",
        role="img",
        aria_label=f"{percent_text(p)} touched",
    )


def _touched(g: Group) -> str:
    return f"{len(g.touched):,} of {len(g.names):,} touched ({percent_text(g.percent)})"


def group_table(c: Coverage, table_id: str) -> str:
    columns = [
        Column(c.unit),
        Column("touched", numeric=True),
        Column("total", numeric=True),
        Column("percent", numeric=True),
        Column("coverage", numeric=True),
    ]
    rows = [
        [
            code(g.name),
            number(len(g.touched), f"{len(g.touched):,}"),
            number(len(g.names), f"{len(g.names):,}"),
            number(round(g.percent or 0.0, 4), percent_text(g.percent)),
            Cell(meter(g.percent, f"{g.name}: {_touched(g)}"), round(g.percent or 0.0, 4)),
        ]
        for g in c.groups
    ]
    return sortable_table(table_id, columns, rows, noun=f"{c.unit}s")


def _names(title: str, names: List[str]) -> str:
    return tag("h4", esc(f"{title} ({len(names):,})")) + tag("pre", esc("\n".join(names))) if names else ""


def group_details(c: Coverage) -> str:
    """Per group, behind its name, its names touched and never touched."""
    return "".join(
        tag(
            "details",
            tag("summary", tag("code", esc(g.name)) + " " + esc(f"— {_touched(g)}"))
            + _names("Touched", g.touched)
            + _names("Never touched", g.untouched),
        )
        for g in c.groups
    )


def coverage_section(c: Coverage, table_id: str) -> str:
    summary = (
        f"{c.touched:,} of {c.total:,} touched ({percent_text(c.percent)}); "
        f"{len(c.outside):,} touched outside the {c.what}"
    )
    outside = ""
    if c.outside:
        outside = tag(
            "details",
            tag("summary", esc(f"Touched outside the {c.what} ({len(c.outside):,})"))
            + tag("pre", esc("\n".join(c.outside))),
        )
    return (
        tag("h3", esc(c.source[:1].upper() + c.source[1:]))
        + tag("p", esc(summary), cls="sub")
        + group_table(c, table_id)
        + tag("h4", esc(f"Names touched and never touched, per {c.unit}"))
        + group_details(c)
        + outside
    )


def coverage_pane(report: CoverageReport, title: str, pane: str) -> str:
    """The markup of a trace directory's coverage pane; `pane` is its
    element id, the prefix of its ids."""
    return (
        tag("h2", esc(title))
        + tag("p", esc(sets_summary(report)), cls="sub")
        + coverage_section(report.apis, f"{pane}-apis")
        + coverage_section(report.operators, f"{pane}-ops")
    )
