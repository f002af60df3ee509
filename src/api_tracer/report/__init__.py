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
by kind and in a table.
Each trace directory also gives a coverage pane (coverage.py): per module
of the API list, and per namespace of the registered operators, the share
touched as a table with a bar, and the names touched and never touched.

The page needs nothing at view time: its charts are SVG drawn here, its
style and its one script (report.js, about a hundred lines of plain
JavaScript for sorting, filtering and switching panes) are inlined, and its
Content Security Policy lets nothing load.
"""
from __future__ import annotations

import errno
import json
import os
import stat
from typing import Any, Dict, List, Sequence, Tuple

from ..coverage import CoverageReport, coverage_of
from ..errors import InputError, UsageError
from ..filesets import find_sets, open_regular
from .page import esc, page, switch
from ..fuzz.campaign import STATE as CAMPAIGN_STATE  # (a directory holding it is a fuzz campaign)
from ..fuzz.findings import FINDINGS
from .coverage_html import coverage_pane
from .diff_html import diff_pane, is_diff, read_diff
from .fuzz_html import fuzz_pane, is_findings, read_findings
from .profile_html import is_profile, profile_pane
from .replay_html import is_replay_report, read_replay_report, replay_pane
from .trace_html import view_pane
from .trace_views import trace_views

TITLE = "api_tracer report"


def render(trace_dirs: Sequence[str] = (), profiles: Sequence[Tuple[str, Dict[str, Any]]] = (),
           replays: Sequence[Tuple[str, List[Dict[str, Any]]]] = (),
           campaigns: Sequence[Tuple[str, List[Dict[str, Any]], Dict[str, Any]]] = (),
           diffs: Sequence[Tuple[str, List[Dict[str, Any]]]] = ()) -> str:
    """The report's HTML: a pane per view of each trace directory, one per
    (name, Profile.raw() data) profile, one per (name, results) replay
    report, one per (name, findings, campaign state) fuzz campaign, one per
    (name, lines) diff, and last the coverage of each trace directory
    (coverage.py)."""
    panes: List[Tuple[str, str, str]] = []
    coverages: List[Tuple[str, CoverageReport]] = []
    for directory in trace_dirs:
        sets = find_sets([directory])
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
            raise InputError(name, f"not a profile as Profile.export_json writes it ({type(e).__name__}: {e})") \
                from None
        panes.append((pane, f"profile: {data.get('root', name)}", markup))
    for name, results in replays:
        pane = f"p{len(panes)}"
        panes.append((pane, f"replay: {os.path.basename(name)}", replay_pane(name, results, pane)))
    for name, findings, state in campaigns:
        pane = f"p{len(panes)}"
        panes.append((pane, f"fuzz: {os.path.basename(os.path.normpath(name))}", fuzz_pane(name, findings, state, pane)))
    for name, lines in diffs:
        pane = f"p{len(panes)}"
        panes.append((pane, f"diff: {os.path.basename(name)}", diff_pane(name, lines, pane)))
    for title, coverage in coverages:
        pane = f"p{len(panes)}"
        panes.append((pane, title, coverage_pane(coverage, title, pane)))
    sources = ([f"trace {d}" for d in trace_dirs] + [f"profile {n}" for n, _ in profiles]
               + [f"replay report {n}" for n, _ in replays] + [f"fuzz campaign {n}" for n, _, _ in campaigns]
               + [f"diff {n}" for n, _ in diffs])
    subtitle = esc("From " + ", ".join(sources) + ".")
    return page(TITLE, subtitle, switch("views", panes))


def check_output(path: str) -> None:
    """That the page can be written at `path`, as far as that can be known
    before the work: not a directory, in a directory that exists and can be
    written."""
    if os.path.isdir(path):
        raise InputError(path, "a directory: the report is one HTML file")
    parent = os.path.dirname(path) or os.curdir
    if not os.path.exists(parent):
        probe = parent
        while not os.path.exists(probe):
            probe = os.path.dirname(probe) or os.curdir
        if not os.path.isdir(probe):
            raise InputError(path, f"cannot write here: {probe} is not a directory")
        raise InputError(path, f"cannot write here: no directory {parent}")
    if not os.path.isdir(parent):
        raise InputError(path, f"cannot write here: {parent} is not a directory")
    if os.path.exists(path) and not stat.S_ISREG(os.stat(path).st_mode):
        if not os.access(path, os.W_OK):
            raise InputError(path, "cannot write: permission denied")
        return
    directory = os.path.dirname(os.path.realpath(path))  # where _write puts the page, then renames it
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InputError(path, f"cannot write here: {directory} cannot be written (permission denied)")


def _write(path: str, data: bytes) -> None:
    """`data` into `path`, or an OSError. A regular file (or a new one) is
    written beside and renamed over it, so that a write that fails (a full
    disk) leaves no half a page; anything else (a device, /dev/stdout, a
    FIFO a process reads) is written as it is, a FIFO no process reads
    being an error rather than a wait."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is None or stat.S_ISREG(mode):
        target = os.path.realpath(path)
        temporary = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.tmp")
        try:
            with open(temporary, "wb") as f:
                f.write(data)
            os.replace(temporary, target)
        except OSError:
            try:
                os.unlink(temporary)
            except OSError:
                pass
            raise
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        if e.errno == errno.ENXIO:
            raise OSError(e.errno, "a FIFO no process reads", path) from None
        raise
    try:
        os.set_blocking(fd, True)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def write_report(path: str, trace_dirs: Sequence[str] = (),
                 profiles: Sequence[Tuple[str, Dict[str, Any]]] = (),
                 replays: Sequence[Tuple[str, List[Dict[str, Any]]]] = (),
                 campaigns: Sequence[Tuple[str, List[Dict[str, Any]], Dict[str, Any]]] = (),
                 diffs: Sequence[Tuple[str, List[Dict[str, Any]]]] = ()) -> int:
    """Writes the page (an OSError where it cannot be written); its size in
    bytes."""
    data = render(trace_dirs, profiles, replays, campaigns, diffs).encode("utf-8")
    _write(path, data)
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
    """A fuzz campaign's directory: (name, its findings, its state)."""
    path = os.path.join(directory, CAMPAIGN_STATE)
    try:
        state = json.loads(read_file(path).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise InputError(path, f"not a campaign's state (JSON: {e})") from None
    if not isinstance(state, dict):
        raise InputError(path, "not a campaign's state (a JSON object)")
    findings_path = os.path.join(directory, FINDINGS)
    findings = read_findings(findings_path, read_file(findings_path)) if os.path.exists(findings_path) else []
    return directory, findings, state


def report_command(inputs: Sequence[str], output: str) -> str:
    """`api-tracer report`: each input is a trace directory, a profile's
    JSON file, a replay report, a fuzz campaign's findings or a diff (JSON
    lines). Returns what it wrote, for
    the command to say."""
    check_output(output)
    trace_dirs, profiles, replays, campaigns, diffs = [], [], [], [], []
    for item in inputs:
        if os.path.isdir(item) and os.path.isfile(os.path.join(item, CAMPAIGN_STATE)):
            campaigns.append(read_campaign(item))
        elif os.path.isdir(item):
            trace_dirs.append(item)
        elif os.path.isfile(item):
            raw = read_file(item)
            first = raw.split(b"\n", 1)[0]
            if is_replay_report(first):
                replays.append((item, read_replay_report(item, raw)))
            elif is_findings(first):
                campaigns.append((item, read_findings(item, raw), {}))
            elif is_diff(first):
                diffs.append((item, read_diff(item, raw)))
            else:
                profiles.append((item, read_profile(item, raw)))
        else:
            raise UsageError(f"report: {item} is neither a directory nor a file")
    try:
        size = write_report(output, trace_dirs, profiles, replays, campaigns, diffs)
    except OSError as e:
        raise InputError(output, f"cannot write: {e.strerror or e}") from None
    return f"wrote {output} ({size:,} bytes)"
