"""api-tracer report INPUT... -o report.html: one self-contained HTML file
of trace directories and layer profiles, for people to look at.

A trace directory gives a pane per level of each of its file sets (the APIs
by calls as a chart and a sortable, filterable table; per API its configs,
shapes and dtypes, stacks); a profile (the JSON of Profile.export_json, or
a Profile's raw()) gives its module tree as an icicle and a table.

The page needs nothing at view time: its charts are SVG drawn here, its
style and its one script (report.js, about a hundred lines of plain
JavaScript for sorting, filtering and switching panes) are inlined, and its
Content Security Policy lets nothing load.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Sequence, Tuple

from ..errors import UsageError
from .page import esc, page, switch
from .profile_html import is_profile, profile_pane
from .trace_html import view_pane
from .trace_views import trace_views

TITLE = "api_tracer report"


def render(trace_dirs: Sequence[str] = (), profiles: Sequence[Tuple[str, Dict[str, Any]]] = ()) -> str:
    """The report's HTML: a pane per view of each trace directory, and one
    per (name, Profile.raw() data) profile."""
    panes: List[Tuple[str, str, str]] = []
    for directory in trace_dirs:
        views = trace_views(directory)
        if not views:
            raise UsageError(f"report: no file set (api_statistics*.yaml) under {directory}")
        prefix = f"{os.path.basename(os.path.normpath(directory))}: " if len(trace_dirs) > 1 else ""
        for view in views:
            view.title = prefix + view.title
            pane = f"p{len(panes)}"
            panes.append((pane, view.title, view_pane(view, pane)))
    for name, data in profiles:
        pane = f"p{len(panes)}"
        panes.append((pane, f"profile: {data.get('root', name)}", profile_pane(data, pane)))
    sources = [f"trace {d}" for d in trace_dirs] + [f"profile {n}" for n, _ in profiles]
    subtitle = esc("From " + ", ".join(sources) + ".")
    return page(TITLE, subtitle, switch("views", panes))


def write_report(path: str, trace_dirs: Sequence[str] = (),
                 profiles: Sequence[Tuple[str, Dict[str, Any]]] = ()) -> None:
    html = render(trace_dirs, profiles)
    with open(path, "w", encoding="utf-8") as f:
        f.write(html)


def read_profile(path: str) -> Dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise UsageError(f"report: cannot read {path}: {e}") from None
    if not is_profile(data):
        raise UsageError(f"report: {path} is not a profile (the JSON of Profile.export_json)")
    return data


def report_command(inputs: Sequence[str], output: str) -> str:
    """`api-tracer report`: each input is a trace directory or a profile's
    JSON file. Returns what it wrote, for the command to say."""
    trace_dirs, profiles = [], []
    for item in inputs:
        if os.path.isdir(item):
            trace_dirs.append(item)
        elif os.path.isfile(item):
            profiles.append((item, read_profile(item)))
        else:
            raise UsageError(f"report: {item} is neither a directory nor a file")
    write_report(output, trace_dirs, profiles)
    return f"wrote {output} ({os.path.getsize(output):,} bytes)"
