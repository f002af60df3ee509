"""api-tracer coverage and the report's coverage pane (corpus/coverage.py): on
real traces of a tiny model, the names touched held against the API list
and the operators torch registers, each expectation worked out here from
the set's api_apis.txt, the list file and torch's registry; a list of known
names with exact numbers; damaged input refused by path:line."""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest
import torch
import torch.nn.functional as F

from api_tracer import APITracer
from api_tracer.cli import main
from api_tracer.corpus.coverage import coverage_of
from api_tracer.formats.fileset import FileSet, find_sets
from api_tracer.formats.statistics import read_api_names
from api_tracer.frameworks import dialect_named
from api_tracer.frameworks.dialect import FrameworkDialect
from api_tracer.report import render

API_LIST = dialect_named("torch").api_list_file()
GRAD = "torch._C._set_grad_enabled"  # what torch.no_grad() calls, which level 1 sees: not in the list


def program(tracer: APITracer) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2))
    x = torch.randn(5, 4)
    with tracer:
        y = model(x)
        F.mse_loss(y + 1, torch.zeros_like(y)).backward()
        torch.add(x, x)
        x.sum()
        with torch.no_grad():
            model(x)


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Dict[str, Path]:
    """The program traced at levels 0-3, a set per level ("all"), and a
    directory holding only level 1's set, and one only level 2's."""
    top = tmp_path_factory.mktemp("coverage")
    program(APITracer(output_path=str(top / "all"), levels=[0, 1, 2, 3], merge_output=False))
    dirs = {"all": top / "all"}
    for level in (1, 2):
        d = dirs[f"level{level}"] = top / f"level{level}"
        d.mkdir()
        for f in (top / "all").glob(f"*_level_{level}.*"):
            shutil.copy(f, d / f.name)
    return dirs


# -- the expectations, worked out here -------------------------------------------------------


def listed() -> Set[str]:
    return {line[2:].strip() for line in API_LIST.read_text().splitlines() if line.startswith("- ")}


def registry() -> Set[str]:
    out = set()
    for qualified in torch._C._dispatch_get_all_op_names():
        m = re.fullmatch(r"(\w+)::(\w+)(?:\.(\w+))?", qualified)
        assert m, qualified
        out.add(f"torch.ops.{m[1]}.{m[2]}.{m[3] or 'default'}")
    return out


def touched(directory: Path) -> Set[str]:
    return {line for f in directory.glob("api_apis*.txt") for line in f.read_text().splitlines()}


def module_of(name: str) -> str:
    """The grouping docs/cli.md describes: Tensor methods apart, a class
    with its module, else the name's module."""
    if name.startswith("torch.Tensor."):
        return "torch.Tensor"
    m = re.match(r"torch\.ops\.(\w+)\.", name) or re.match(r"(.+?)\.[A-Z]", name) or re.match(r"(.+)\.", name)
    return ("torch.ops." if name.startswith("torch.ops.") else "") + m[1]


def groups_of(report_part) -> Dict[str, Tuple[List[str], List[str]]]:
    return {g.name: (g.names, g.touched) for g in report_part.groups}


def expected_groups(names: Set[str], hit: Set[str], group) -> Dict[str, Tuple[List[str], List[str]]]:
    out: Dict[str, Tuple[List[str], List[str]]] = {}
    for n in sorted(names):
        members, touched_ = out.setdefault(group(n), ([], []))
        members.append(n)
        if n in hit:
            touched_.append(n)
    return out


# -- real traces --------------------------------------------------------------------------


def test_level_1_against_the_api_list(traces):
    hit, names = touched(traces["level1"]), listed()
    report = coverage_of(find_sets([str(traces["level1"])]))
    assert report.touched == sorted(hit)
    assert (report.apis.total, report.apis.touched) == (len(names), len(hit & names))
    assert groups_of(report.apis) == expected_groups(names, hit, module_of)
    assert report.apis.outside == sorted(hit - names) == [GRAD]
    functional = next(g for g in report.apis.groups if g.name == "torch.nn.functional")
    assert {"torch.nn.functional.linear", "torch.nn.functional.relu", "torch.nn.functional.mse_loss"} <= set(
        functional.touched
    )
    assert "torch.nn.functional.gelu" in functional.untouched
    assert report.operators.touched == 0 and report.operators.total == len(registry())


def test_level_2_against_the_operators(traces):
    hit, ops = touched(traces["level2"]), registry()
    assert hit and all(n.startswith("torch.ops.aten.") for n in hit)
    report = coverage_of(find_sets([str(traces["level2"])]))
    assert (report.operators.total, report.operators.touched) == (len(ops), len(hit))
    assert report.operators.outside == []
    groups = groups_of(report.operators)
    assert groups == expected_groups(ops, hit, lambda n: n.split(".")[2])
    assert groups["aten"][1] == sorted(hit) and "torch.ops.aten.addmm.default" in hit
    assert (report.apis.touched, report.apis.outside) == (0, [])  # operators are not "outside the list"


def test_every_level_names_what_the_list_and_registry_name(traces):
    """Level 0 records the list's own names (a Tensor operator as
    torch.Tensor.__add__), level 1 torch's (torch.Tensor.add, also in the
    list), levels 2 and 3 operators as the registry has them."""
    names, ops = listed(), registry()
    apis = {level: set(read_api_names(FileSet(str(traces["all"]), f"_level_{level}"))) for level in range(4)}
    assert "torch.Tensor.__add__" in apis[0] and "torch.Tensor.add" in apis[1]
    assert apis[0] <= names
    assert apis[1] - names == {GRAD}
    assert apis[2] <= ops and apis[3] <= ops and "torch.ops.aten.mm.default" in apis[3]


MY_LIST = """\
# a list of my own: one name a line
torch.add
torch.linalg.norm

- torch.nn.functional.gelu
torch.nn.functional.relu
torch.Tensor.sum
torch.Tensor.mean
torch.nn.Sequential.forward
torch.nn.Conv2d.forward
torch.ops.aten.mm.default
torch.ops.aten.conv2d.default
torch.add
"""
MY_GROUPS = [  # by size, then name: (group, touched, total, never touched)
    ("torch.Tensor", 1, 2, ["torch.Tensor.mean"]),
    ("torch.nn", 1, 2, ["torch.nn.Conv2d.forward"]),
    ("torch.nn.functional", 1, 2, ["torch.nn.functional.gelu"]),
    ("torch.ops.aten", 1, 2, ["torch.ops.aten.conv2d.default"]),
    ("torch", 1, 1, []),
    ("torch.linalg", 0, 1, ["torch.linalg.norm"]),
]


def run(capsys, *args: str) -> Tuple[int, str, str]:
    code = main(["coverage", *args])
    out, err = capsys.readouterr()
    return code, out, err


def table(text: str, title: str) -> List[List[str]]:
    """The rows of the table under the `== title` line."""
    section = text.split(f"== {title}", 1)[1]
    lines = section.split("\n")[3:]
    return [line.split() for line in lines[: next(i for i, line in enumerate(lines) if line.startswith("all "))]]


def test_a_list_of_known_names(traces, tmp_path, capsys):
    (tmp_path / "mine.txt").write_text(MY_LIST)
    code, out, err = run(capsys, str(traces["all"]), "--list", str(tmp_path / "mine.txt"), "--untouched")
    assert (code, err) == (0, ""), err
    title = f"the list {tmp_path / 'mine.txt'}"
    assert f"== {title}: 5 of 10 touched (50.00%); " in out
    assert table(out, title) == [[g, str(t), str(n), f"{100 * t / n:.2f}%"] for g, t, n, _ in MY_GROUPS]
    for g, _, n, never in MY_GROUPS:
        if never:
            assert f"never touched in {g} ({len(never)} of {n}):\n" + "".join(f"  {x}\n" for x in never) in out
    outside = sorted(
        n for n in touched(traces["all"]) - set(MY_LIST.replace("- ", "").split("\n")) if not n.startswith("torch.ops.")
    )
    assert GRAD in outside and "torch.Tensor.backward" in outside
    assert f"touched outside the API list ({len(outside)}):\n" + "".join(f"  {x}\n" for x in outside) in out


def test_json_agrees_with_the_text(traces, tmp_path, capsys):
    (tmp_path / "mine.txt").write_text(MY_LIST)
    args = (str(traces["all"]), "--list", str(tmp_path / "mine.txt"))
    _, text, _ = run(capsys, *args)
    code, out, err = run(capsys, *args, "--json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data["touched"] == sorted(touched(traces["all"]))
    assert [(s["directory"], s["level"]) for s in data["sets"]] == [(str(traces["all"]), n) for n in range(4)]
    for part, title in (("apis", f"the list {tmp_path / 'mine.txt'}"), ("operators", "the operators torch registers")):
        rows = [
            [g["name"], f"{g['touched']:,}", f"{g['total']:,}", f"{g['percent']:.2f}%"] for g in data[part]["groups"]
        ]
        assert rows == table(text, title)
        assert f"{data[part]['touched']:,} of {data[part]['total']:,} touched" in text
    assert [(g["name"], g["touched"], g["total"], g["untouched"]) for g in data["apis"]["groups"]] == MY_GROUPS
    assert data["operators"]["total"] == len(registry()) and data["operators"]["outside"] == []


def test_top_limits_groups_and_names(traces, capsys):
    code, out, _ = run(capsys, str(traces["level1"]), "--top", "2", "--untouched")
    assert code == 0
    rows = table(out, "the torch dialect's API list")
    assert [r[0] for r in rows] == ["torch", "torch.Tensor", "(8"]  # "(8 more)": the rest added up
    assert sum(int(r[-2].replace(",", "")) for r in rows) == len(listed())
    assert "never touched in torch (" in out and "never touched in torch.nn (" not in out
    assert re.search(r"never touched in torch \([\d,]+ of [\d,]+\):\n  \S+\n  \S+\n  \.\.\. and [\d,]+ more\n", out)


def test_a_dialect_of_another_framework(tmp_path):
    """coverage asks the dialect for its list, its groups and operators."""

    class Geo(FrameworkDialect):
        name = "geo"

        def api_list(self, full: bool = False) -> List[str]:
            return ["geo.area", "geo.Point", "geo.Point.move", "geo.linalg.solve"]

    d = tmp_path / "set"
    d.mkdir()
    (d / "api_statistics.yaml").write_text(
        "Total APIs: 2\nTotal API calls: 3\n\ngeo.area: 2 (66.67%)\ngeo.Point: 1 (33.33%)\n"
    )
    (d / "api_configs.yaml").write_text("geo.Point(1, 2)\ngeo.area(1)\n")
    (d / "api_apis.txt").write_text("geo.Point\ngeo.area\n")
    report = coverage_of(find_sets([str(d)]), Geo())
    assert groups_of(report.apis) == {
        "geo": (["geo.Point", "geo.Point.move", "geo.area"], ["geo.Point", "geo.area"]),
        "geo.linalg": (["geo.linalg.solve"], []),
    }
    assert (report.operators.total, report.operators.groups) == (0, [])
    assert report.apis.source == "the geo dialect's API list"


# -- damaged input ------------------------------------------------------------------------


def one_set(traces, tmp_path: Path) -> Tuple[Path, Path]:
    """A copy of the level-1 set, and its api_apis file."""
    d = tmp_path / "set"
    shutil.copytree(traces["level1"], d)
    return d, d / "api_apis_level_1.txt"


@pytest.mark.parametrize(
    "how,line,message",
    [
        ("not_utf8", 3, "not UTF-8: byte 0xff"),
        ("an_empty_line", 2, "an empty line: not an API name"),
        ("a_config_line", 2, "not an API name (a '(' ends the API"),
        ("a_nul", 2, "not an API name (not printable)"),
        ("a_name_twice", 3, "again: the tracer writes the names sorted"),
        ("out_of_order", 3, "torch.Tensor.backward after torch.zeros_like"),
        ("cut_inside_the_last_line", 9, "ends inside a line: the file was cut"),
    ],
)
def test_a_damaged_apis_file_is_refused_at_its_line(traces, tmp_path, capsys, how, line, message):
    d, apis = one_set(traces, tmp_path)
    lines = apis.read_bytes().split(b"\n")[:-1]
    assert len(lines) == 9
    if how == "not_utf8":
        lines[2] = lines[2][:4] + b"\xff" + lines[2][4:]
    elif how == "an_empty_line":
        lines.insert(1, b"")
    elif how == "a_config_line":
        lines.insert(1, b'torch.Tensor.add(Tensor([2], "float32"))')
    elif how == "a_nul":
        lines[1] = b"torch.Tensor.back\x00ward"
    elif how == "a_name_twice":
        lines.insert(2, lines[1])
    elif how == "out_of_order":
        lines.insert(1, lines[-1])
    data = b"\n".join(lines) + b"\n"
    apis.write_bytes(data[:-3] if how == "cut_inside_the_last_line" else data)
    code, out, err = run(capsys, str(d))
    assert (code, out) == (2, "")
    assert err.startswith(f"api-tracer: {apis}:{line}: ") and message in err and err.count("\n") == 1, err
    assert main(["report", str(d), "-o", str(tmp_path / "r.html")]) == 2
    assert f"{apis}:{line}: " in capsys.readouterr().err and not (tmp_path / "r.html").exists()


def test_lines_are_counted_past_the_first_chunk(tmp_path, capsys):
    """The file is read a chunk (1 MiB) at a time; lines are numbered across."""
    d = tmp_path / "set"
    d.mkdir()
    names = [f"torch.fn_{i:07d}" for i in range(120_000)]  # about 2 MiB
    (d / "api_statistics.yaml").write_text("Total APIs: 0\nTotal API calls: 0\n\n")
    (d / "api_configs.yaml").write_text("")
    (d / "api_apis.txt").write_text("\n".join(names) + "\n")
    assert len(list(read_api_names(FileSet(str(d), "")))) == 120_000
    names[100_000] = "torch.fn_\udcff"
    (d / "api_apis.txt").write_bytes("\n".join(names).encode("utf-8", "surrogateescape") + b"\n")
    code, _, err = run(capsys, str(d))
    assert code == 2 and f"{d / 'api_apis.txt'}:100001: not UTF-8" in err


def test_names_the_statistics_count_are_counted_when_the_file_is_cut(traces, tmp_path, capsys):
    d, apis = one_set(traces, tmp_path)
    lines = apis.read_text().splitlines(keepends=True)
    apis.write_text("".join(lines[:4]))
    code, out, err = run(capsys, str(d), "--json")
    assert code == 0 and json.loads(out)["touched"] == sorted(touched(traces["level1"]))
    assert re.fullmatch(
        rf"api-tracer: warning: {re.escape(str(apis))}: no line of \S+ and 4 more, which "
        rf"{re.escape(str(d / 'api_statistics_level_1.yaml'))}:\d+ counts: the file is cut; "
        r"counted touched\n",
        err,
    ), err


@pytest.mark.parametrize(
    "content,line,message",
    [
        ("torch.add\ntorch.mul  # why\n", 2, "white space inside"),
        ("torch.add\n\ntorch.mul(x)\n", 3, "a '(' ends the API"),
        (b"torch.add\n\xfftorch.mul\n", 2, "not UTF-8"),
        ("# nothing but a comment\n", None, "no API name in the file"),
    ],
)
def test_a_bad_list_is_refused_at_its_line(traces, tmp_path, capsys, content, line, message):
    path = tmp_path / "list.txt"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    code, out, err = run(capsys, str(traces["level1"]), "--list", str(path))
    assert (code, out) == (2, "")
    assert err.startswith(f"api-tracer: {path}{f':{line}' if line else ''}: ") and message in err, err


def test_no_set_and_a_bad_top(tmp_path, traces, capsys):
    code, _, err = run(capsys, str(tmp_path))  # an empty directory
    assert code == 2 and "no file set" in err
    assert run(capsys, str(traces["level1"]), "--top", "-1")[0] == 2


# -- the report ---------------------------------------------------------------------------


def pane_rows(page: str, table_id: str) -> List[List[str]]:
    """The cells' text of each row of the table `table_id`."""
    body = page.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]
    body = body.split("<tbody>", 1)[1]
    return [
        [html.unescape(re.sub(r"<[^>]+>", "", cell)) for cell in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        for row in re.findall(r"<tr>(.*?)</tr>", body)
    ]


def test_the_report_has_the_coverage_table(traces):
    page = render([str(traces["level1"])])
    button = re.search(r'<button type="button" data-group="views" data-pane="(p\d+)"[^>]*>coverage</button>', page)
    assert button, "no coverage pane"
    pane = button[1]
    hit, names = touched(traces["level1"]), listed()
    expected = expected_groups(names, hit, module_of)
    rows = pane_rows(page, f"{pane}-apis")
    assert sorted(r[0] for r in rows) == sorted(expected)
    for name, n_touched, total, percent, bar in rows:
        members, touched_ = expected[name]
        assert (n_touched, total) == (f"{len(touched_):,}", f"{len(members):,}")
        assert percent == f"{100 * len(touched_) / len(members):.2f}%" and bar.startswith(name + ": ")
    members, touched_ = expected["torch.nn.functional"]
    width = re.search(
        r'<title>torch\.nn\.functional: [^<]*</title><rect [^>]*></rect><rect class="bar" x="0" y="2" '
        r'width="([\d.]+)"',
        page,
    )
    assert touched_ and width and float(width[1]) == pytest.approx(160 * len(touched_) / len(members), abs=0.05)
    # the names never touched, per module, and those outside the list
    never = sorted(set(expected["torch.nn.functional"][0]) - hit)
    assert "<pre>" + html.escape("\n".join(never)) + "</pre>" in page
    assert f"Touched outside the API list (1)</summary><pre>{GRAD}</pre>" in page
    aten = sum(1 for o in registry() if o.startswith("torch.ops.aten."))
    assert pane_rows(page, f"{pane}-ops")[0][:3] == ["aten", "0", f"{aten:,}"]
