"""api-tracer report INPUT... -o report.html: one self-contained HTML file
of trace directories and layer profiles, for people to look at.

A trace directory gives a pane per level of each of its file sets (the APIs
by calls as a chart and a sortable, filterable table; per API its configs,
shapes and dtypes, stacks); a profile (the JSON of Profile.export_json, or
a Profile's raw()) gives its module tree as an icicle and a table; a
replay report (the JSON lines of `api-tracer replay -o`) gives its
verdicts per API, its mismatches by how far they exceed their measure, and
the configs that did not run; a fuzz campaign (its directory, or its
findings.jsonl) gives what it ran and its findings with their reproducers;
a diff (the JSON lines of `api-tracer diff --json`) gives its differences
by kind and in a table; a benchmark run (`api-tracer bench -o`) gives its
configs by what they cost a program, and each run after the first is
compared against the first, its baseline, config by config.
Each trace directory also gives a coverage pane (corpus/coverage.py): per module
of the API list, and per namespace of the registered operators, the share
touched as a table with a bar, and the names touched and never touched.

The page needs nothing at view time: its charts are SVG drawn here, its
style and its one script (report.js, about a hundred lines of plain
JavaScript for sorting, filtering and switching panes) are inlined, and its
Content Security Policy lets nothing load.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ..corpus.coverage import CoverageReport, coverage_of
from ..errors import InputError, UsageError
from ..formats.fileset import OUTPUT_FILES, FileSet, find_sets
from ..formats.io import open_regular, replace_atomically, unwritable
from ..fuzz.findings import FINDINGS
from ..fuzz.state import STATE as CAMPAIGN_STATE  # (a directory holding it is a fuzz campaign)
from ..fuzz.state import read_state
from ..timing.compare import compare
from ..timing.output import weigh
from ..timing.results import Run
from .bench_html import bench_pane, comparison_pane
from .coverage_html import coverage_pane
from .diff_html import diff_pane
from .fuzz_html import fuzz_pane, read_findings
from .page import esc, page, switch
from .profile_html import is_profile, profile_pane
from .replay_html import replay_pane
from .trace_html import view_pane
from .trace_views import trace_views

TITLE = "api_tracer report"


def render(
    trace_dirs: Sequence[str] = (),
    profiles: Sequence[Tuple[str, Dict[str, Any]]] = (),
    replays: Sequence[Tuple[str, List[Dict[str, Any]]]] = (),
    campaigns: Sequence[Tuple[str, List[Dict[str, Any]], Dict[str, Any]]] = (),
    diffs: Sequence[Tuple[str, List[Dict[str, Any]]]] = (),
    found_sets: Optional[Mapping[str, List[FileSet]]] = None,
    benches: Sequence[Run] = (),
) -> str:
    """The report's HTML: a pane per view of each trace directory, one per
    (name, Profile.raw() data) profile, one per (name, results) replay
    report, one per (name, findings, campaign state) fuzz campaign, one per
    (name, lines) diff, one per benchmark run and one per comparison of a
    run after the first against the first, and last the coverage of each trace directory
    (corpus/coverage.py). `found_sets`: the sets of each trace directory,
    where the caller found them already (else they are found here)."""
    panes: List[Tuple[str, str, str]] = []
    coverages: List[Tuple[str, CoverageReport]] = []
    for directory in trace_dirs:
        sets = found_sets[directory] if found_sets is not None else find_sets([directory])
        views = trace_views(directory, sets)
        if not views:
            raise UsageError(f"report: no file set (api_statistics*.yaml) under {directory}")
        prefix = f"{os.path.basename(os.path.normpath(directory))}: " if len(trace_dirs) > 1 else ""
        for view in views:
            view.title = prefix + view.title
            pane = f"p{len(panes)}"
            panes.append((pane, view.title, view_pane(view, pane)))
        coverages.append((prefix + "coverage", coverage_of(sets)))
    for name, data in profiles:
        pane = f"p{len(panes)}"
        try:
            markup = profile_pane(data, pane)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as e:
            # a JSON with the profile's top fields, but rows of another shape
            raise InputError(
                name, f"not a profile as Profile.export_json writes it ({type(e).__name__}: {e})"
            ) from None
        panes.append((pane, f"profile: {data.get('root', name)}", markup))
    for name, results in replays:
        pane = f"p{len(panes)}"
        panes.append((pane, f"replay: {os.path.basename(name)}", replay_pane(name, results, pane)))
    for name, findings, state in campaigns:
        pane = f"p{len(panes)}"
        panes.append(
            (pane, f"fuzz: {os.path.basename(os.path.normpath(name))}", fuzz_pane(name, findings, state, pane))
        )
    for name, lines in diffs:
        pane = f"p{len(panes)}"
        panes.append((pane, f"diff: {os.path.basename(name)}", diff_pane(name, lines, pane)))
    for i, run in enumerate(benches):
        weigh(run)  # (by the sources beside its configs, or their lines)
        pane = f"p{len(panes)}"
        panes.append((pane, f"bench: {os.path.basename(run.path)}", bench_pane(run, pane)))
        if i:
            pane = f"p{len(panes)}"
            title = f"bench: {os.path.basename(run.path)} against {os.path.basename(benches[0].path)}"
            panes.append((pane, title, comparison_pane(compare(benches[0], run), pane)))
    for title, coverage in coverages:
        pane = f"p{len(panes)}"
        panes.append((pane, title, coverage_pane(coverage, title, pane)))
    sources = (
        [f"trace {d}" for d in trace_dirs]
        + [f"profile {n}" for n, _ in profiles]
        + [f"replay report {n}" for n, _ in replays]
        + [f"fuzz campaign {n}" for n, _, _ in campaigns]
        + [f"diff {n}" for n, _ in diffs]
        + [f"benchmark run {run.path}" for run in benches]
    )
    subtitle = esc("From " + ", ".join(sources) + ".")
    return page(TITLE, subtitle, switch("views", panes))


def files_read(
    found_sets: Mapping[str, List[FileSet]], campaign_dirs: Sequence[str], files: Sequence[str]
) -> List[str]:
    """Every file the report reads of its inputs: each file of each set of
    each trace directory, each campaign's state and findings, each file
    named (a profile, a replay report, a campaign's findings, a diff)."""
    return (
        [s.path(name) for sets in found_sets.values() for s in sets for name in OUTPUT_FILES]
        + [os.path.join(d, name) for d in campaign_dirs for name in (CAMPAIGN_STATE, FINDINGS)]
        + list(files)
    )


def check_output(path: str) -> None:
    """That the page can be written at `path`, as far as that can be known
    before the work (formats/io.py: unwritable)."""
    why = unwritable(path)
    if why == "is a directory":
        raise InputError(path, "a directory: the report is one HTML file")
    if why:
        raise InputError(path, f"cannot write here: {why}")


def write_report(path: str, *inputs: Any, **named_inputs: Any) -> int:
    """Writes the page render(*inputs, **named_inputs) makes to `path` (an
    OSError where it cannot be written); its size in bytes."""
    data = render(*inputs, **named_inputs).encode("utf-8")
    replace_atomically(path, data)
    return len(data)


def read_file(path: str) -> bytes:
    try:
        with open_regular(path) as f:
            return f.read()
    except InputError as e:
        raise UsageError(f"report: cannot read {path}: {e.message}") from None
    except OSError as e:
        raise UsageError(f"report: cannot read {path}: {e}") from None


def read_profile(path: str, raw: bytes = b"") -> Dict[str, Any]:
    try:
        data = json.loads((raw or read_file(path)).decode("utf-8"))
    except (ValueError, RecursionError) as e:
        raise UsageError(f"report: cannot read {path}: {e}") from None
    if not is_profile(data):
        raise UsageError(f"report: {path} is not a profile (the JSON of Profile.export_json)")
    return data


def read_campaign(directory: str) -> Tuple[str, List[Dict[str, Any]], Dict[str, Any]]:
    """A fuzz campaign's directory: (name, its findings, its state: {}
    for findings merged from several, fuzz --merge's, which have none)."""
    state_path = os.path.join(directory, CAMPAIGN_STATE)
    state = asdict(read_state(state_path)) if os.path.exists(state_path) else {}  # (checked: fuzz/campaign.py)
    findings_path = os.path.join(directory, FINDINGS)
    findings = read_findings(findings_path, read_file(findings_path)) if os.path.exists(findings_path) else []
    return directory, findings, state
