"""The report's pane of a diff (the JSON lines `api-tracer diff --json`
writes): per set, the APIs and configs new, gone and changed, as a bar
chart of the counts and a sortable, filterable table of each difference."""

from __future__ import annotations

from collections import Counter
from typing import Any, Dict, List, Tuple

from ..corpus.diff import KINDS, SECTIONS, SUMMARY
from ..errors import InputError
from ..formats.json_fields import BOOLEAN, COUNT, STRING, check_fields, one_of, optional
from .charts import bar_chart
from .page import Column, esc, note, number, sortable_table, tag, text
from .replay_html import check_whole, json_lines, read_json_lines

FIELDS = ("set", "what", "kind")  # what every line of a diff has
ROWS = 5000  # differences the table lists; the counts are of all

# What the other fields of each line hold (corpus/diff.py's Sink and cli/diff.py write them).
DIFFERENCE = {"what": one_of(*SECTIONS), "name": STRING, "a": optional(COUNT), "b": optional(COUNT)}
COUNTS = ("in_a", "in_b") + KINDS  # what every summary line has
SUMMARY_KINDS = {"what": one_of(*SECTIONS), **{k: COUNT for k in COUNTS + ("sections",)}, "counted": BOOLEAN}

WHAT = "a line of a diff"
CUT = "the diff was cut (api-tracer diff --json ends with a summary line per section)"


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
    """The lines of a diff, each checked (check_line), then checked to be
    whole (check_sections); InputError (path[:line]) at the first that is
    not, or where the file was cut."""
    check_whole(path, data)
    lines = read_json_lines(path, data, WHAT, FIELDS, "kind", list(KINDS + (SUMMARY,)))
    numbered = list(zip((lineno for lineno, _ in json_lines(data)), lines))
    for lineno, line in numbered:
        check_line(path, lineno, line)
    check_sections(path, numbered)
    return lines


def check_line(path: str, lineno: int, line: Dict[str, Any]) -> None:
    """One line of a diff: a difference (its name, its calls in A and B:
    a count, or null where absent or not known; none in A of a new one,
    none in B of a gone one), or a section's summary (its counts, at most
    what each side has)."""
    if line["kind"] == SUMMARY:
        check_fields(line, SUMMARY_KINDS, path, WHAT, lineno)
        missing = [k for k in COUNTS if k not in line]
        if missing:
            raise InputError(path, f"a summary line without {', '.join(missing)}", lineno)
        if line["gone"] + line["changed"] > line["in_a"] or line["new"] + line["changed"] > line["in_b"]:
            raise InputError(path, "a summary that counts more gone or changed than A has, or new than B", lineno)
        return
    check_fields(line, DIFFERENCE, path, WHAT, lineno)
    if "name" not in line:
        raise InputError(path, "a difference without its name", lineno)
    side = {"new": "a", "gone": "b"}.get(line["kind"])
    if side and line.get(side) is not None:
        raise InputError(path, f"a {line['kind']} difference with calls in {side.upper()}", lineno)


def check_sections(path: str, lines: List[Tuple[int, Dict[str, Any]]]) -> None:
    """That a diff is whole, as `diff --json` writes it: its differences,
    then one summary line per section (set, what), each counting its
    section's differences of each kind, each set with its APIs and its
    configs, as many as each summary's `sections` says (where it says:
    diffs written before it did are checked without it)."""
    summaries: Dict[Tuple[str, str], Tuple[int, Dict[str, Any]]] = {}
    listed: Counter = Counter()  # (set, what, kind) -> differences
    first_of: Dict[Tuple[str, str], int] = {}  # (set, what) -> the line of its first difference
    for lineno, line in lines:
        section = (line["set"], line["what"])
        if line["kind"] != SUMMARY:
            if summaries:
                raise InputError(path, "a difference after the summary lines: two diffs in one file", lineno)
            listed[section + (line["kind"],)] += 1
            first_of.setdefault(section, lineno)
        elif section in summaries:
            raise InputError(path, f"a second summary of {section[0]}: {section[1]}", lineno)
        else:
            summaries[section] = (lineno, line)
    if not summaries:
        raise InputError(path, f"no summary line: {CUT}")
    for (where, what), lineno in first_of.items():
        if (where, what) not in summaries:
            raise InputError(path, f"a difference of {where}: {what}, which no summary line counts: {CUT}", lineno)
    for (where, what), (lineno, line) in summaries.items():
        for kind in KINDS:
            if line[kind] != listed[(where, what, kind)]:
                raise InputError(
                    path, f"counts {line[kind]} {kind}, but the diff lists {listed[(where, what, kind)]}", lineno
                )
        other = {"apis": "configs", "configs": "apis"}.get(what)
        if other and (where, other) not in summaries:
            raise InputError(path, f"no summary line of {where}: {other}, beside this one: {CUT}", lineno)
    said = {line.get("sections") for _, line in summaries.values()}
    last = max(n for n, _ in summaries.values())
    if len(said) > 1:
        raise InputError(path, "summary lines that say different numbers of sections: two diffs in one file", last)
    sections = said.pop()
    if sections is not None and sections != len(summaries):
        raise InputError(path, f"{len(summaries)} summary lines of the {sections} its sections have: {CUT}", last)


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
