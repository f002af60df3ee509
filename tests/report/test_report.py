"""api-tracer report and Profile.export_html: what the report reads from a
trace directory, what its HTML holds (every string escaped, nothing to
load), the icicle's layout, and the command. tests/report/test_report_browser.py
opens the pages in Chromium."""

from __future__ import annotations

import base64
import hashlib
import html
import html.parser
import json
import re
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from api_tracer import Profile
from api_tracer.cli import main
from api_tracer.formats.fileset import find_sets
from api_tracer.formats.statistics import read_statistics
from api_tracer.report import render
from api_tracer.report.charts import Node, _extents, icicle
from api_tracer.report.profile_html import MEASURES, tree_nodes
from api_tracer.report.trace_views import trace_views
from support import run_cli, user_code_env
from support.report_inputs import HOSTILE, STACK_FILE, make_profile, make_traces

ADD = 'torch.add(Tensor([2, 3], "float32"), Tensor([2, 3], "float32"), alpha=2)'
ADD_ONES = 'torch.add(Tensor([4], "float32"), 1)'


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Dict[str, Path]:
    return make_traces(tmp_path_factory.mktemp("traces"))


def summary(view) -> List[Tuple[str, int, list]]:
    return [(a.name, a.calls, a.configs) for a in view.apis]


# -- what the report reads ------------------------------------------------------------


def test_a_view_per_level_with_configs_counted_from_the_trace(traces):
    views = trace_views(str(traces["split"]))
    assert [v.title for v in views] == ["level 1", "level 2"]
    for view, s in zip(views, find_sets([str(traces["split"])])):
        assert [(a.name, a.calls) for a in view.apis] == read_statistics(s)
        assert view.counted and not view.notes
        for api in view.apis:
            assert sum(n for _, n in api.configs) == api.calls, api.name
    add = next(a for a in views[0].apis if a.name == "torch.add")
    assert add.configs == [(ADD, 3), (ADD_ONES, 1)]
    assert add.tensors == {"args[0]": {"[2, 3] float32": 3, "[4] float32": 1}, "args[1]": {"[2, 3] float32": 3}}
    assert add.dtypes == ["float32"]
    assert add.stacks == []


def test_a_merged_set_is_split_by_the_levels_its_trace_names(traces):
    merged = trace_views(str(traces["merged"]))
    split = trace_views(str(traces["split"]))
    assert [v.title for v in merged] == ["all levels", "level 1", "level 2"]
    assert [summary(v) for v in merged[1:]] == [summary(v) for v in split]
    assert merged[0].calls == sum(v.calls for v in split)
    add = next(a for a in merged[0].apis if a.name == "torch.add")
    assert add.stacks and all(frames[-1].endswith("in program") for frames in add.stacks)


def test_without_a_trace_configs_are_not_counted(traces):
    views = trace_views(str(traces["untraced"]))
    assert [v.title for v in views] == ["level 1", "level 2"]
    add = next(a for a in views[0].apis if a.name == "torch.add")
    assert add.calls == 4 and sorted(add.configs) == [(ADD, None), (ADD_ONES, None)]
    assert add.tensors["args[0]"] == {"[2, 3] float32": 1, "[4] float32": 1}  # configs, not calls
    assert "stream_trace=False" in views[0].notes[0]
    page = render([str(traces["untraced"])])
    assert "configs not counted" in page and "calls are counted per API, not per config" in page


def test_a_trace_cut_by_trace_limit_says_so(traces):
    views = trace_views(str(traces["cut"]))
    assert any("trace_limit (400 bytes)" in n for n in views[1].notes)
    level2 = views[1]
    assert sum(n for a in level2.apis for _, n in a.configs) < level2.calls  # the calls written only


# -- the page ---------------------------------------------------------------------------


class Elements(html.parser.HTMLParser):
    """Every start tag of a page with its attributes, and the text of its
    script elements."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: List[Tuple[str, Dict[str, str]]] = []
        self.scripts: List[str] = []
        self._in_script = False
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def test_strings_from_the_data_are_escaped(traces):
    page = render([str(traces["hostile"])])
    assert html.escape(HOSTILE) in page  # the name, as text
    assert HOSTILE not in page and "<img" not in page and "<b>" not in page and "<i>" not in page
    assert f"{html.escape(STACK_FILE)}:3 in &lt;module&gt;" in page  # a frame of the stacks
    elements = Elements(page)
    assert [t for t, _ in elements.tags].count("script") == 1
    assert not [(t, a) for t, a in elements.tags if any(k.startswith("on") for k in a)]
    assert "document.body.dataset.pwned" not in elements.scripts[0]


def test_the_page_loads_nothing_and_runs_only_its_own_script(traces, tmp_path):
    page = render([str(traces["merged"])])
    elements = Elements(page)
    linked = [
        (t, a)
        for t, a in elements.tags
        if "src" in a or (t == "a" and not a.get("href", "#").startswith("#")) or t in ("link", "iframe")
    ]
    assert linked == []
    assert "url(" not in page and "@import" not in page
    policy = next(a["content"] for t, a in elements.tags if a.get("http-equiv") == "Content-Security-Policy")
    digest = base64.b64encode(hashlib.sha256(elements.scripts[0].encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy and "default-src 'none'" in policy


def test_the_page_has_every_api_and_config(traces):
    page = render([str(traces["split"])])
    for view in trace_views(str(traces["split"])):
        for api in view.apis:
            assert f"<code>{api.name}</code>" in page
            for line, _ in api.configs:
                assert f"<code>{html.escape(line)}</code>" in page


# -- the icicle -------------------------------------------------------------------------


def test_a_container_is_as_wide_as_what_ran_inside_it():
    nodes = [
        Node("root", -1, 10, 0, ""),
        Node("list", 0, 0, 0, ""),
        Node("a", 1, 3, 1, ""),
        Node("b", 1, 4, 1, ""),
        Node("c", 0, -2, 1, ""),
    ]
    assert _extents(nodes) == [10, 7, 3, 4, 0]
    # a parent smaller than its children is widened to hold them
    assert _extents([Node("p", -1, 1, 0, ""), Node("k", 0, 5, 1, "")]) == [5, 5]


def rects(svg: str) -> List[Tuple[float, float, float]]:
    """(x, y, width) of each cell."""
    return [
        (float(x), float(y), float(w))
        for x, y, w in re.findall(r'<rect class="node" x="([\d.]+)" y="(\d+)" width="([\d.]+)"', svg)
    ]


def test_icicle_cells_nest_under_their_parents():
    nodes = [
        Node("root", -1, 100, 0.1, "r"),
        Node("a", 0, 60, 0.5, "a"),
        Node("b", 0, 30, 1, "b"),
        Node("a1", 1, 60, 1, "a1"),
    ]
    cells = rects(icicle(nodes))
    assert len(cells) == 4
    root, *rest = sorted(cells, key=lambda c: (c[1], c[0]))
    assert root[2] == pytest.approx(1180)
    a, b, a1 = rest
    assert (a[2], b[2]) == (pytest.approx(708), pytest.approx(354)) and b[0] == pytest.approx(a[0] + a[2])
    assert a1[0] == a[0] and a1[2] == a[2] and a1[1] > a[1]


# -- profiles -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def profile() -> Profile:
    return make_profile()


def test_the_module_tree_is_the_icicle(profile):
    rows = profile.raw()["rows"]
    nodes = tree_nodes(rows, MEASURES[0])
    assert [n.label for n in nodes] == [r["path"][-1] for r in rows]
    assert [n.parent for n in nodes] == [-1, 0, 0, 0, 3, 3]
    assert [n.value for n in nodes] == [r["cpu_total_ns"] + r["cpu_total_bwd_ns"] for r in rows]
    assert all(0 <= n.shade <= 1 for n in nodes)
    assert nodes[0].tooltip.startswith("Sequential\nforward: 1 calls, self ")
    svg = icicle(nodes)
    assert rects(svg)[0] == (0, 0, pytest.approx(1180))  # the model, the whole width
    # a cell's tooltip is its row's, a cell narrower than a pixel is left out
    titles = re.findall(r"<title>([^\n<]+)", svg)
    assert titles[0] == "Sequential" and set(titles) <= {r["name"] for r in rows}


def test_export_html_is_the_report_of_export_json(profile, tmp_path):
    profile.export_html(str(tmp_path / "a.html"))
    profile.export_json(str(tmp_path / "p.json"))
    assert main(["report", str(tmp_path / "p.json"), "-o", str(tmp_path / "b.html")]) == 0
    a, b = ((tmp_path / name).read_text() for name in ("a.html", "b.html"))

    def body(page: str) -> str:
        return page.split("</header>", 1)[1]

    assert body(a) == body(b)
    for name in ("Sequential.0", "Sequential.2.1", "CPU time, backward", "CPU memory, forward"):
        assert name in a
    assert "CUDA time" not in a  # measured only with use_cuda


def test_report_of_a_trace_and_a_profile(traces, profile, tmp_path):
    profile.export_json(str(tmp_path / "p.json"))
    out = tmp_path / "r.html"
    result = run_cli("report", str(traces["split"]), str(tmp_path / "p.json"), "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"wrote {out} (")
    page = out.read_text()
    assert page.count('<button type="button" data-group="views"') == 4  # level 1, level 2, the profile, coverage
    assert "profile: Sequential" in page and "torch.ops.aten.add.Tensor" in page


@pytest.mark.parametrize(
    "what,message",
    [
        ("missing", "is neither a directory nor a file"),
        ("empty_dir", "no file set"),
        ("not_json", "cannot read"),
        ("other_json", "is not a profile"),
    ],
)
def test_report_refuses_what_it_cannot_read(tmp_path, capsys, what, message):
    (tmp_path / "empty_dir").mkdir()
    (tmp_path / "not_json").write_text("{")
    (tmp_path / "other_json").write_text(json.dumps({"rows": 3}))
    assert main(["report", str(tmp_path / what), "-o", str(tmp_path / "r.html")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_report_of_a_replay_report_shows_its_verdicts(tmp_path):

    configs = tmp_path / "c.yaml"
    configs.write_text(
        "\n".join(
            [
                'torch.ops.replaycheck.twice.default(Tensor([8], "float32"))',
                'torch.ops.replaycheck.twice_wrong_in_float64.default(Tensor([8], "float32"))',
                'torch.ops.replaycheck.outside_domain.default(Tensor([8], "float32"))',
                'torch.mm(Tensor([2, 3], "float32"), Tensor([4, 3], "float32"))',
                "os.system('x')",
            ]
        )
        + "\n"
    )
    env = user_code_env()
    replayed = run_cli(
        "replay",
        str(configs),
        "--import",
        "replaycheck_ops",
        "--check",
        "float64",
        "-o",
        str(tmp_path / "r.jsonl"),
        env=env,
    )
    assert replayed.returncode == 1, replayed.stderr
    out = tmp_path / "r.html"
    result = run_cli("report", str(tmp_path / "r.jsonl"), "-o", str(out))
    assert result.returncode == 0, result.stderr
    page = out.read_text()
    assert "replay: r.jsonl" in page
    assert (
        "5 configs, checked against float64: 1 ok, 1 mismatch, 1 vacuous, 1 failed, 0 skipped, 1 refused, 0 invalid"
        in page
    )
    assert page.count('id="p0-apis"') == 1 and page.count('id="p0-mismatches"') == 1
    mismatches = page[page.index('id="p0-mismatches"') : page.index('id="p0-others"')]
    assert "torch.ops.replaycheck.twice_wrong_in_float64.default" in mismatches and "error model" in mismatches
    assert "twice.default(" not in mismatches
    others = page[page.index('id="p0-others"') :]
    assert all(s in others for s in ("vacuous", "failed", "refused", "cannot be multiplied", "os.system"))
    # by PaddleAPITest's outcomes: a float64 check's accuracy error is its own framework's
    outcomes = page[page.index('id="p0-outcomes"') : page.index('id="p0-outcome-lines"')]
    assert [o for o in ("pass", "accuracy_error", "torch_error", "skip") if f"<td>{o}</td>" in outcomes] == [
        "pass",
        "accuracy_error",
        "torch_error",
        "skip",
    ], outcomes
    assert "<td>torch: 1</td>" in outcomes
    # a damaged line is refused, by its file and line
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    (tmp_path / "bad.jsonl").write_text("\n".join([lines[0], "{not json", *lines[1:]]) + "\n")
    bad = run_cli("report", str(tmp_path / "bad.jsonl"), "-o", str(tmp_path / "b.html"))
    assert bad.returncode == 2 and f"{tmp_path / 'bad.jsonl'}:2: not a line of a replay report" in bad.stderr
    (tmp_path / "status.jsonl").write_text(lines[0].replace('"status": "ok"', '"status": "great"') + "\n")
    bad = run_cli("report", str(tmp_path / "status.jsonl"), "-o", str(tmp_path / "b.html"))
    assert bad.returncode == 2 and "status.jsonl:1: unknown status 'great'" in bad.stderr
