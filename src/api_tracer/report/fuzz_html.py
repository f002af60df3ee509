"""The report's pane of a fuzz campaign (api-tracer fuzz -o DIR, or its
findings.jsonl): what the campaign ran, its findings by kind, and each
finding with its API, oracle, count, status, message, the mutations from
its seed, the reproducer line and its script, where and when it was seen
and rechecked (fuzz/history.py), as a sortable, filterable table; above
it the findings' root-cause classes (fuzz/classes.py)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict
from typing import Any, Dict, List

from ..formats.io import decode
from ..fuzz.classes import CLASSES_FILE, class_of, group
from ..fuzz.findings import FOUND, KINDS, parse_findings, sighting
from .page import Cell, Column, code, dotted, esc, note, number, sortable_table, tag, text

FIELDS = ("kind", "api", "line", "signature")  # what every finding has (fuzz/findings.py's Finding)
MESSAGE_SHOWN = 140  # the characters of a finding's message shown in its row; the rest is one click away


def is_findings(first_line: bytes) -> bool:
    """Whether a file whose first line is `first_line` is a campaign's findings.jsonl."""
    try:
        line = json.loads(first_line)
    except (ValueError, RecursionError):
        return False
    return isinstance(line, dict) and all(k in line for k in FIELDS)


def read_findings(path: str, data: bytes) -> List[Dict[str, Any]]:
    """The findings of a findings.jsonl, each line checked (fuzz/findings.py's
    parse_findings); InputError at the first that is not one (path:line).
    An empty file is a campaign that found nothing."""
    return [asdict(f) for f in parse_findings(path, decode(data, path, 1))]


def fuzz_pane(name: str, findings: List[Dict[str, Any]], state: Dict[str, Any], pane: str) -> str:
    """The markup of one campaign's pane; `state` is its campaign.json ({} if none)."""
    kinds = Counter(f["kind"] for f in findings)
    ran = ""
    if state.get("cases_run") is not None:
        seconds = float(state.get("seconds") or 0)
        rate = f", {state['cases_run'] / seconds:.1f} cases/s" if seconds else ""
        ran = f"{state['cases_run']:,} cases in {seconds:,.0f} s{rate} from {state.get('seeds', '?')} seed lines; "
    summary = ran + f"{len(findings)} findings: " + ", ".join(f"{kinds[k]} {k}" for k in KINDS)
    statuses = Counter(f.get("status") or FOUND for f in findings)
    if set(statuses) - {FOUND}:
        summary += "; since: " + ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
    out = [tag("h2", esc(f"fuzz: {name}")), tag("p", esc(summary), cls="sub")]
    if findings:
        out += [tag("h3", "By root cause"), _classes(findings, pane), tag("h3", "Findings"), _findings(findings, pane)]
    return "".join(out)


def _classes(findings: List[Dict[str, Any]], pane: str) -> str:
    columns = [
        Column("root cause"),
        Column("findings", numeric=True),
        Column("operators"),
        Column("what goes wrong, and the fix it asks for", wide=True),
        Column("representative script"),
    ]
    rows = [
        [
            text(g.cause.title),
            number(len(g.findings)),
            Cell(", ".join(tag("code", esc(op)) for op in g.operators), ", ".join(g.operators)),
            Cell(esc(f"{g.cause.what}; a fix for the class: {g.cause.fix}.")),
            code(g.representative.get("reproducer") or "-"),
        ]
        for g in group(findings)
    ]
    return note(
        f"each class's text for an umbrella report, with its representative's script, is the campaign's {CLASSES_FILE}"
    ) + sortable_table(f"{pane}-classes", columns, rows, noun="classes")


def _history(f: Dict[str, Any]) -> str:
    """Where and when a finding was seen, and its rechecks (fuzz/history.py)."""
    said = f"first seen {sighting(f.get('first_seen') or {})}; last seen {sighting(f.get('last_seen') or {})}"
    for r in f.get("rechecks") or []:
        why = f" ({r['message'][:MESSAGE_SHOWN]})" if r["message"] else ""
        said += f"; rechecked {sighting(r)}: {r['status']}{why}"
    return said


def _findings(findings: List[Dict[str, Any]], pane: str) -> str:
    columns = [
        Column("kind"),
        Column("root cause"),
        Column("API"),
        Column("oracle"),
        Column("count", numeric=True),
        Column("status"),
        Column("what happened: the message, the reproducer line and its script; where and when seen", wide=True),
    ]
    rows = []
    for f in sorted(findings, key=lambda f: (KINDS.index(f["kind"]), f["api"])):
        cause = class_of(f["kind"], f.get("oracle", "run"), f.get("message", ""), f["line"])
        message = str(f.get("message", ""))
        mutation = "; ".join(map(str, f.get("mutation") or [])) or "(the seed itself)"
        script = f.get("reproducer") or ""
        shown = esc(message)
        if len(message) > MESSAGE_SHOWN:  # (the whole of it one click away)
            shown = tag("details", tag("summary", esc(message[:MESSAGE_SHOWN] + "...")) + tag("p", esc(message)))
        body = (
            shown
            + tag("pre", esc(f["line"]))
            + tag("div", esc(f"mutated from {f.get('file', '?')}: {mutation}"), cls="dim")
            + tag("div", tag("code", esc(script)) if script else esc(f"no script: {f.get('no_reproducer') or '-'}"))
            + tag("div", esc(_history(f)), cls="dim")
        )
        rows.append(
            [
                text(f["kind"]),
                text(cause.title),
                dotted(f["api"]),
                text(f.get("oracle", "")),
                number(int(f.get("count") or 0)),
                text(f.get("status") or FOUND),
                Cell(body, message),
            ]
        )
    return note(
        "each reproducer line runs in api-tracer replay (with --isolate for a crash or a hang, --check ORACLE for a "
        "mismatch); its script, in the campaign's directory, shows it with plain torch; its status is its latest "
        "recheck's (api-tracer fuzz --recheck DIR): still failing, fixed or changed, or found where none came since"
    ) + sortable_table(f"{pane}-findings", columns, rows, noun="findings")
