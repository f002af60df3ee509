"""The report's pane of a fuzz campaign (api-tracer fuzz -o DIR, or its
findings.jsonl): what the campaign ran, its findings by kind, and each
finding with its API, oracle, count, message, the mutations from its seed,
the reproducer line and its script, as a sortable, filterable table."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict
from typing import Any, Dict, List

from ..formats.io import decode
from ..fuzz.findings import KINDS, parse_findings
from .page import Column, code, esc, note, number, sortable_table, tag, text

FIELDS = ("kind", "api", "line", "signature")  # what every finding has (fuzz/findings.py's Finding)


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
    columns = [
        Column("kind"),
        Column("API"),
        Column("oracle"),
        Column("count", numeric=True),
        Column("message"),
        Column("mutation"),
        Column("seed"),
        Column("reproducer"),
        Column("script"),
    ]
    rows = [
        [
            text(f["kind"]),
            code(f["api"]),
            text(f.get("oracle", "")),
            number(int(f.get("count") or 0)),
            text(str(f.get("message", ""))[:500]),
            text("; ".join(map(str, f.get("mutation") or [])) or "(the seed itself)"),
            text(f.get("file", "")),
            code(f["line"]),
            code(f["reproducer"]) if f.get("reproducer") else text(f.get("no_reproducer") or "-"),
        ]
        for f in sorted(findings, key=lambda f: (KINDS.index(f["kind"]), f["api"]))
    ]
    out = [tag("h2", esc(f"fuzz: {name}")), tag("p", esc(summary), cls="sub")]
    if rows:
        out += [
            note(
                "each reproducer is a config line: api-tracer replay shows it failing again (with --isolate "
                "for a crash or a hang, --check ORACLE for a mismatch); its script, in the campaign's directory, "
                "shows it with plain torch"
            ),
            sortable_table(f"{pane}-findings", columns, rows, noun="findings"),
        ]
    return "".join(out)
