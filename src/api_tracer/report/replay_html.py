"""The report's pane of a replay report (the JSON lines `api-tracer replay
-o` writes): the verdicts per API (ok, mismatch, vacuous, failed, skipped, unmapped,
refused, invalid), the configs by PaddleAPITest's outcomes (replay/outcomes.py)
with the side an accuracy error is blamed on, every mismatch with the measure that judged it, by how much it
exceeds it and its line, and the configs that did not run, as sortable,
filterable tables."""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

from ..errors import InputError
from ..formats.json_fields import Kind, json_object
from ..frameworks import FRAMEWORKS, framework_of
from ..replay.framework import DEFAULT, replay_framework
from ..replay.judge.across import blamed
from ..replay.outcomes import OUTCOMES, outcome_of
from ..replay.output import counted
from ..replay.results import REPORT_FIELDS, report_line
from .page import Column, code, esc, note, number, sortable_table, tag, text


def excess_shown(excess: float) -> str:
    """How far past its bound a result is, in a table: "3.2x"; an infinite
    excess (a NaN or an infinity on one side only) as "inf: NaN or inf on one side"."""
    return f"{excess:.3g}x" if math.isfinite(excess) else "inf: NaN or inf on one side"


def is_replay_report(first_line: bytes) -> bool:
    """Whether a file whose first line is `first_line` is a replay report."""
    try:
        line = json.loads(first_line)
    except (ValueError, RecursionError):  # (a profile nested past the parser's depth: not one either)
        return False
    return isinstance(line, dict) and all(k in line for k in REPORT_FIELDS)


def read_json_lines(
    path: str,
    data: bytes,
    what: str,
    fields: Tuple[str, ...],
    key: str,
    values: List[str],
    kinds: Optional[Mapping[str, Kind]] = None,
) -> List[Dict[str, Any]]:
    """The JSON objects of a JSON-lines file, each checked to be `what`:
    its `fields` strings, its `key` one of `values`, each field `kinds`
    names (where it has it) of that kind; InputError at the first line
    that is not one (path:line)."""
    return [json_object(path, lineno, raw, what, fields, key, values, kinds) for lineno, raw in json_lines(data)]


def json_lines(data: bytes) -> Iterator[Tuple[int, bytes]]:
    """(number, bytes) of each line of a JSON-lines file that is not blank."""
    return ((lineno, raw) for lineno, raw in enumerate(data.split(b"\n"), 1) if raw.strip())


def check_whole(path: str, data: bytes) -> None:
    """That a JSON-lines file the tools write a whole line at a time ends
    with a newline; InputError at its last line where it does not (cut)."""
    if data and not data.endswith(b"\n"):
        raise InputError(path, "ends inside a line: the file was cut", data.count(b"\n") + 1)


def read_replay_report(path: str, data: bytes) -> List[Dict[str, Any]]:
    """The results of a replay report, each line checked (results.report_line);
    InputError at the first line that is not one (path:line), or where the
    file ends inside a line (a replay killed as it wrote it)."""
    check_whole(path, data)
    results = [report_line(path, lineno, raw) for lineno, raw in json_lines(data)]
    if not results:
        raise InputError(path, "an empty replay report")
    return results


def _float(value: Any) -> float:
    """A report's error value ("inf" for an infinite one, null for none)."""
    if value == "inf":
        return float("inf")
    return float(value) if isinstance(value, (int, float)) else 0.0


def _where(r: Dict[str, Any]) -> str:
    return f"{r.get('file', '')}:{r.get('line', '')}"


def replay_pane(name: str, results: List[Dict[str, Any]], pane: str) -> str:
    """The markup of one replay report's pane; `pane` is its element id."""
    checks = sorted({r.get("check") or "" for r in results} - {""})
    counts = Counter(r["status"] for r in results)
    shown = [s.value for s in counted(",".join(checks) or None)]  # as replay's own summary counts
    summary = (
        f"{len(results):,} configs"
        + (f", checked against {', '.join(checks)}" if checks else "")
        + ": "
        + ", ".join(f"{counts[s]:,} {s}" for s in shown)
    )
    per_api: Dict[str, Counter] = {}
    for r in results:
        per_api.setdefault(r["api"] or "(invalid)", Counter())[r["status"]] += 1
    columns = [Column("API")] + [Column(s, numeric=True) for s in shown] + [Column("configs", numeric=True)]
    rows = [
        [code(api)] + [number(c[s]) for s in shown] + [number(sum(c.values()))]
        for api, c in sorted(per_api.items(), key=lambda kv: (-kv[1]["mismatch"] - kv[1]["failed"], kv[0]))
    ]
    out = [
        tag("h2", esc(f"replay: {name}")),
        tag("p", esc(summary), cls="sub"),
        tag("h3", "Verdicts per API"),
        sortable_table(f"{pane}-apis", columns, rows, noun="APIs"),
    ]
    out += outcomes_section(results, checks, pane)
    mismatches = [r for r in results if r["status"] == "mismatch"]
    if mismatches:
        columns = [
            Column("API"),
            Column("excess", numeric=True),
            Column("measure"),
            Column("worst"),
            Column("max abs", numeric=True),
            Column("max rel", numeric=True),
            Column("where"),
            Column("what"),
            Column("config"),
        ]
        rows = []
        for r in sorted(mismatches, key=lambda r: -_float(r.get("excess"))):
            excess = _float(r.get("excess"))
            rows.append(
                [
                    code(r["api"]),
                    number(excess, excess_shown(excess) if r.get("excess") is not None else "-"),
                    text(r.get("measure") or "-"),
                    text(r.get("worst") or "-"),
                    number(_float(r.get("max_abs_error")), f"{_float(r.get('max_abs_error')):.3g}"),
                    number(_float(r.get("max_rel_error")), f"{_float(r.get('max_rel_error')):.3g}"),
                    text(_where(r)),
                    text(r.get("message", "")),
                    code(r["config"]),
                ]
            )
        out += [
            tag("h3", "Mismatches"),
            note(
                "excess: the worst element's difference over what its measure allows (the error model's "
                "bound, or rtol/atol); above 1 is a mismatch"
            ),
            sortable_table(f"{pane}-mismatches", columns, rows, noun="mismatches"),
        ]
    others = [r for r in results if r["status"] not in ("ok", "mismatch")]
    if others:
        columns = [Column(name) for name in ("status", "API", "error", "message", "where", "config")]
        rows = [
            [
                text(r["status"]),
                code(r["api"]),
                text(r.get("error") or ""),
                text(r.get("message", "")),
                text(_where(r)),
                code(r["config"]),
            ]
            for r in others
        ]
        out += [
            tag("h3", "Not judged ok: vacuous, failed, skipped, unmapped, refused, invalid"),
            sortable_table(f"{pane}-others", columns, rows, noun="configs"),
        ]
    return "".join(out)


def outcomes_section(results: List[Dict[str, Any]], checks: List[str], pane: str) -> List[str]:
    """The configs by outcome, as `replay --outcomes` sorts them, an
    accuracy error with the framework it is blamed on (against another
    framework, where float64 can tell; else its own), and each line that
    did not pass."""
    other = next((c for c in checks if c in FRAMEWORKS), "")
    lines = []
    for r in results:
        framework = framework_of(r["api"] or "") or DEFAULT
        name = outcome_of(r["status"], r.get("error") or "", r.get("message", ""), framework, other)
        blame = ""
        if name == "accuracy_error":
            blame = (blamed(r.get("message", "")) or "float64 cannot tell") if other else _title(framework)
        lines.append((name, blame, r))
    counts = Counter(name for name, _, _ in lines)
    blames: Dict[str, Counter] = {}
    for name, blame, _ in lines:
        if blame:
            blames.setdefault(name, Counter())[blame] += 1
    order = sorted(counts, key=lambda n: OUTCOMES.index(n) if n in OUTCOMES else len(OUTCOMES))
    rows = [
        [
            text(name),
            number(counts[name]),
            text(", ".join(f"{b}: {n}" for b, n in blames.get(name, Counter()).most_common())),
        ]
        for name in order
    ]
    out = [
        tag("h3", "Outcomes, as PaddleAPITest sorts them"),
        note("replay --outcomes DIR writes each outcome's lines to DIR/api_config_OUTCOME.txt"),
        sortable_table(
            f"{pane}-outcomes",
            [Column("outcome"), Column("configs", numeric=True), Column("blamed on")],
            rows,
            noun="outcomes",
        ),
    ]
    failing = [(name, blame, r) for name, blame, r in lines if name != "pass"]
    if failing:
        columns = [Column(c) for c in ("outcome", "blamed on", "where", "config")]
        rows = [[text(name), text(blame), text(_where(r)), code(r["config"])] for name, blame, r in failing]
        out.append(sortable_table(f"{pane}-outcome-lines", columns, rows, noun="configs"))
    return out


def _title(framework: str) -> str:
    return replay_framework(framework).title
