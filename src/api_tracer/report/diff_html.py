"""The report's pane of a diff (the JSON lines `api-tracer diff --json`
writes): per set, the APIs and configs new, gone and changed, as a bar
chart of the counts and a sortable, filterable table of each difference."""

from __future__ import annotations

from typing import Any, Dict, List

from ..corpus.diff import KINDS, SUMMARY
from ..errors import InputError
from .charts import bar_chart
from .page import Column, esc, note, number, sortable_table, tag, text
from .replay_html import read_json_lines

FIELDS = ("set", "what", "kind")  # what every line of a diff has
ROWS = 5000  # differences the table lists; the counts are of all


def is_diff(first_line: bytes) -> bool:
    """Whether a file whose first line is `first_line` is a diff's JSON lines."""
    import json

    try:
        line = json.loads(first_line)
    except (ValueError, RecursionError):
        return False
    return (
        isinstance(line, dict)
        and all(isinstance(line.get(k), str) for k in FIELDS)
        and (line["kind"] in KINDS + (SUMMARY,))
    )


def read_diff(path: str, data: bytes) -> List[Dict[str, Any]]:
    """The lines of a diff, each checked; InputError (path:line) at the
    first that is not one, or where the summary lines are missing."""
    lines = read_json_lines(path, data, "a line of a diff", FIELDS, "kind", list(KINDS + (SUMMARY,)))
    for lineno, line in enumerate(lines, 1):
        counts = ("in_a", "in_b") + KINDS if line["kind"] == SUMMARY else ()
        if any(not isinstance(line.get(k), int) or isinstance(line.get(k), bool) for k in counts):
            raise InputError(path, f"a summary line has the counts {', '.join(counts)}", lineno)
        if line["kind"] != SUMMARY and not isinstance(line.get("name"), str):
            raise InputError(path, "a difference has its name", lineno)
    if not any(line["kind"] == SUMMARY for line in lines):
        raise InputError(path, "no summary line: the diff was cut (api-tracer diff --json ends with them)")
    return lines


def _calls(value: Any) -> str:
    return "-" if value is None else f"{value:,}"


def diff_pane(name: str, lines: List[Dict[str, Any]], pane: str) -> str:
    summaries = [line for line in lines if line["kind"] == SUMMARY]
    differences = [line for line in lines if line["kind"] != SUMMARY]
    bars = bar_chart(
        [
            (f"{s['set']}: {s['what']} {kind}", s[kind], f"{s[kind]:,} {s['what']} {kind}")
            for s in summaries
            for kind in KINDS
        ]
    )
    heads = [
        tag(
            "li",
            esc(
                f"{s['set']}: {s['what']}: A has {s['in_a']:,}, B {s['in_b']:,}"
                + ("" if s.get("counted", True) else " (calls not known: traced without a label)")
            ),
        )
        for s in summaries
    ]
    columns = [
        Column("set"),
        Column("what"),
        Column("kind"),
        Column("A calls", numeric=True),
        Column("B calls", numeric=True),
        Column("name"),
    ]
    rows = [
        [
            text(d["set"]),
            text(d["what"]),
            text(d["kind"]),
            number(d.get("a") or 0, _calls(d.get("a"))),
            number(d.get("b") or 0, _calls(d.get("b"))),
            text(d["name"]),
        ]
        for d in differences[:ROWS]
    ]
    cut = (
        note(esc(f"The table lists the first {ROWS:,} of the {len(differences):,} differences."))
        if len(differences) > ROWS
        else ""
    )
    return (
        tag("h2", esc(f"diff: {name}"))
        + tag("ul", "".join(heads))
        + tag("h3", "Differences by kind")
        + bars
        + tag("h3", "Differences")
        + cut
        + sortable_table(f"{pane}-diff", columns, rows, noun="differences")
    )
