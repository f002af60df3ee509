"""The HTML report in a real browser, headless Chromium (tests/support/browser.py):
no string of the data runs as script, the page's own script runs under its
Content Security Policy, and its tables sort, filter and link as they
should. The screenshots it takes are kept in tests/artifacts/report/
(ignored by git), and the test prints where."""

from __future__ import annotations

from pathlib import Path
from typing import Dict

import pytest

from api_tracer.report import read_profile, write_report
from api_tracer.report.trace_views import trace_views
from support import TESTS
from support.browser import Browser, dump_dom
from support.report_inputs import HOSTILE, make_profile, make_traces

ARTIFACTS = TESTS / "artifacts" / "report"  # (ignored by git: .gitignore)


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Dict[str, Path]:
    return make_traces(tmp_path_factory.mktemp("traces"))


def test_no_string_of_the_data_runs(traces, tmp_path):
    page = tmp_path / "hostile.html"
    write_report(str(page), [str(traces["hostile"])])
    dom = dump_dom(page)
    assert '<html lang="en" class="js">' in dom  # the page's own script ran, its hash allowed it
    assert "data-pwned" not in dom  # what HOSTILE and the stack file would run did not
    assert "<img" not in dom and "<b>" not in dom
    as_text = HOSTILE.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")  # how a DOM writes text
    assert dom.count(as_text) >= 2  # the API table and the API's details; the chart's label is cut


def first_cell(browser: Browser, table: str) -> str:
    return browser.text(browser.find(f"#{table} tbody tr td"))


def test_tables_sort_filter_and_link(traces, tmp_path):
    trace = str(traces["split"])
    level1 = trace_views(trace)[0]
    profile = tmp_path / "p.json"
    make_profile().export_json(str(profile))
    page = tmp_path / "report.html"
    write_report(str(page), [trace], [(str(profile), read_profile(str(profile)))])
    shots = []
    with Browser(width=1280, height=900) as b:
        b.open(page)
        rows = b.find_all("#p0-apis tbody tr")
        assert len(rows) == len(level1.apis)
        shots.append(b.screenshot(ARTIFACTS / "trace.png"))

        calls, api = b.find_all("#p0-apis th")[1], b.find_all("#p0-apis th")[0]
        b.click(calls)  # most calls first
        assert first_cell(b, "p0-apis") == level1.apis[0].name == "torch.add"
        b.click(calls)  # fewest first: of the APIs of one call, the first in the table's order
        assert first_cell(b, "p0-apis") == next(a.name for a in level1.apis if a.calls == 1)
        b.click(api)  # by name
        assert first_cell(b, "p0-apis") == min((a.name for a in level1.apis), key=str.lower)
        assert b.run("return document.querySelector('#p0-apis th').getAttribute('aria-sort')") == "ascending"

        b.type(b.find("input[data-table='p0-apis']"), "relu")
        assert b.text(b.find("[data-count='p0-apis']")) == f"1 of {len(level1.apis)} APIs"
        shown = [b.text(r) for r in b.find_all("#p0-apis tbody tr")]
        assert [row.split(" ")[0] for row in shown if row] == ["torch.nn.functional.relu"]

        link = next(a for a in b.find_all("#p0-apis a") if b.text(a) == "torch.nn.functional.relu")
        details = f"p0-api-{[a.name for a in level1.apis].index('torch.nn.functional.relu')}"
        assert b.run(f"return document.getElementById('{details}').open") is False
        b.click(link)  # opens the API's details
        assert b.run(f"return document.getElementById('{details}').open") is True

        assert b.text(b.find("#p1 h2")) == ""  # level 2 is not shown until its button is pressed
        b.click(b.find("button[data-pane='p1']"))
        assert b.text(b.find("#p1 h2")) == "level 2" and b.text(b.find("#p0 h2")) == ""

        b.click(b.find("button[data-pane='p2']"))
        assert b.text(b.find("#p2 h2")) == "Layer profile: Sequential"
        cells = b.run("return document.querySelectorAll('#p2-m0 rect.node').length")
        assert cells >= 1 and len(b.find_all("#p2-rows tbody tr")) == 6
        shots.append(b.screenshot(ARTIFACTS / "profile.png"))
        b.click(b.find("button[data-pane='p2-m2']"))  # CPU time, backward
        assert b.text(b.find("#p2-m2 .legend")).startswith("Width: CPU time, backward.")
        assert b.text(b.find("#p2-m0 .legend")) == ""
    print(f"\nscreenshots: {', '.join(map(str, shots))}")
    for shot in shots:
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
