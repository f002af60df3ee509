"""Where configs came from: api_config_sources.yaml as the tracer writes
it, as merge keeps it, and as damaged files are refused."""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from api_tracer import APITracer
from api_tracer.cli import main
from api_tracer.formats.sources import MAX_LISTED

SOURCES = "api_config_sources.yaml"


def trace(directory: Path, label, calls) -> Path:
    """A level-1 set of `calls` (functions of x) under `label`."""
    x = torch.ones(2, 3)
    with APITracer(output_path=str(directory), levels=[1], merge_output=True, label=label):
        for call in calls:
            call(x)
    return directory


def sources(directory: Path) -> dict:
    return yaml.safe_load((directory / SOURCES).read_text())


def by_config(directory: Path) -> dict:
    return {e["config"]: e for e in sources(directory)["configs"]}


ADD = lambda x: torch.add(x, x)  # noqa: E731 - workloads of one line, named
MUL = lambda x: torch.mul(x, 2)  # noqa: E731 - workloads of one line, named
SUM = lambda x: torch.sum(x)  # noqa: E731 - workloads of one line, named


def test_a_labelled_set_counts_each_config_as_its_trace_does(tmp_path):
    d = trace(tmp_path / "a", "bert", [ADD, ADD, MUL, ADD, SUM])
    in_trace = collections.Counter((d / "api_trace.txt").read_text().splitlines())
    data = sources(d)
    assert data["labels"] == [{"label": "bert", "calls": 5}]
    assert {e["config"]: e["calls"] for e in data["configs"]} == in_trace
    assert all(e["sources"] == 1 and e["from"] == {"bert": e["calls"]} for e in data["configs"])
    assert [e["config"] for e in data["configs"]] == (d / "api_configs.yaml").read_text().splitlines()


def test_no_label_no_file_and_run_labels_by_the_program(tmp_path):
    assert not (trace(tmp_path / "a", None, [ADD]) / SOURCES).exists()
    script = tmp_path / "train_model.py"
    script.write_text("import torch\ntorch.add(torch.ones(2), 1)\n")
    assert main(["run", "--merge", "-o", str(tmp_path / "r"), str(script)]) == 0
    assert sources(tmp_path / "r")["labels"][0]["label"] == "train_model.py"
    with pytest.raises(ValueError, match="label"):
        APITracer(output_path=str(tmp_path / "x"), label="two\nlines")


def test_merge_keeps_every_source_with_its_calls(tmp_path, capsys):
    a = trace(tmp_path / "in" / "a", "bert", [ADD, ADD, MUL])
    b = trace(tmp_path / "in" / "b", "gpt", [ADD, SUM, SUM])
    assert main(["merge", str(tmp_path / "in"), "-o", str(tmp_path / "m")]) == 0
    merged = by_config(tmp_path / "m")
    expected = collections.defaultdict(collections.Counter)
    for d, label in ((a, "bert"), (b, "gpt")):
        for line in (d / "api_trace.txt").read_text().splitlines():
            expected[line][label] += 1
    assert set(merged) == set(expected)
    for config, counts in expected.items():
        assert merged[config]["from"] == dict(counts) and merged[config]["sources"] == len(counts)
        assert merged[config]["calls"] == sum(counts.values())
    assert sorted(merged) == (tmp_path / "m" / "api_configs.yaml").read_text().splitlines()
    # one set merged alone is the same file, byte for byte: the C++ and the merge's writers agree
    assert main(["merge", str(a), "-o", str(tmp_path / "alone")]) == 0
    assert (tmp_path / "alone" / SOURCES).read_bytes() == (a / SOURCES).read_bytes()


def test_sources_beyond_the_bound_are_counted_and_shared_ones_bounded(tmp_path):
    labels = [f"model{i}" for i in range(MAX_LISTED + 2)]
    for i, label in enumerate(labels):  # model{i} calls add i + 1 times
        trace(tmp_path / "in" / label, label, [ADD] * (i + 1))
    assert main(["merge", str(tmp_path / "in"), "-o", str(tmp_path / "m")]) == 0
    (entry,) = [e for e in sources(tmp_path / "m")["configs"] if e["config"].startswith("torch.add")]
    assert entry["sources"] == len(labels) and "at_most" not in entry
    assert entry["from"] == {label: i + 1 for i, label in enumerate(labels) if i >= len(labels) - MAX_LISTED}
    # merged again with one of its own sources: how many distinct ones is no longer known exactly
    assert main(["merge", str(tmp_path / "m"), str(tmp_path / "in" / "model0"), "-o", str(tmp_path / "m2")]) == 0
    (again,) = [e for e in sources(tmp_path / "m2")["configs"] if e["config"].startswith("torch.add")]
    assert again["at_most"] is True and again["sources"] == len(labels)  # the bound: no more than the labels
    # with a new source instead, it is
    trace(tmp_path / "new", "other", [ADD])
    assert main(["merge", str(tmp_path / "m"), str(tmp_path / "new"), "-o", str(tmp_path / "m3")]) == 0
    (more,) = [e for e in sources(tmp_path / "m3")["configs"] if e["config"].startswith("torch.add")]
    assert more["sources"] == len(labels) + 1 and "at_most" not in more


def test_a_set_without_label_merges_without_sources_and_says_so(tmp_path, capsys):
    trace(tmp_path / "in" / "a", "bert", [ADD])
    trace(tmp_path / "in" / "b", None, [MUL])
    assert main(["merge", str(tmp_path / "in"), "-o", str(tmp_path / "m")]) == 0
    assert "no api_config_sources.yaml (traced without a label)" in capsys.readouterr().err
    assert not (tmp_path / "m" / SOURCES).exists()
    assert len((tmp_path / "m" / "api_configs.yaml").read_text().splitlines()) == 2


def _edit_line(n: int, old: str, new: str):
    def edit(text: str) -> str:
        lines = text.split("\n")
        assert old in lines[n - 1], (old, lines[n - 1])
        lines[n - 1] = lines[n - 1].replace(old, new, 1)
        return "\n".join(lines)

    return edit


# (damage, the line named, a part of the message); line 4 is the first config
DAMAGE = {
    "calls_not_adding_up": (_edit_line(4, '"calls": 1,', '"calls": 2,'), 4, "calls: 2, but its 1 sources made 1"),
    "a_source_not_among_the_labels": (_edit_line(4, '"from": {"bert"', '"from": {"gpt"'), 4, "not among the labels"),
    "not_json": (_edit_line(4, '"calls":', '"calls"'), 4, "not a record as the tracer writes it"),
    "a_key_twice": (_edit_line(4, '"sources": 1,', '"sources": 1, "sources": 1,'), 4, "a key given twice"),
    "nan_calls": (_edit_line(4, '"calls": 1,', '"calls": NaN,'), 4, "not a value of the format"),
    "negative_calls": (_edit_line(4, '"calls": 1,', '"calls": -1,'), 4, "a count is 0 or more"),
    "a_bool_for_calls": (_edit_line(4, '"calls": 1,', '"calls": true,'), 4, "calls must be a whole number from 1"),
    "huge_calls": (_edit_line(4, '"calls": 1,', f'"calls": {2**64},'), 4, "2^64 - 1"),
    "another_field": (_edit_line(4, '"sources": 1,', '"sources": 1, "x": 1,'), 4, "a record has the fields"),
    "deep_nesting": (_edit_line(4, '"from": {', '"from": ' + "[" * 100000), 4, "not a record"),
    "labels_not_adding_up": (_edit_line(2, '"calls": 3}', '"calls": 4}'), 3, "add up to 3, the labels' to 4"),
    "crlf": (lambda t: t.replace("\n", "\r\n"), 1, "a carriage return"),
    "cut": (lambda t: t[:-5], 6, "ends inside a line"),
    "no_configs_head": (lambda t: t.replace("configs:\n", ""), 3, "a record has the fields label, calls, not config"),
    "no_labels_head": (lambda t: t.replace("labels:\n", ""), 1, "expected 'labels:'"),
    "sources_beyond_the_labels": (_edit_line(4, '"sources": 1,', '"sources": 2,'), 4, "more than the 1 labels"),
    "sources_beyond_them_at_most": (
        _edit_line(4, '"sources": 1,', f'"sources": {2**63}, "at_most": true,'),
        4,
        "more than the 1 labels",
    ),
    "a_config_without_its_api": (_edit_line(4, '"config": "torch', '"config": "(torch'), 4, "no API before"),
    "a_config_with_a_newline": (_edit_line(4, '"config": "torch', '"config": "\\ntorch'), 4, "control character"),
    "many_keys": (
        _edit_line(4, '"sources": 1,', "".join(f'"k{i}": 1, ' for i in range(200000)) + '"sources": 1,'),
        4,
        "more fields than a record has",
    ),
    "configs_head_without_configs": (
        lambda t: t[: t.index("configs:\n") + len("configs:\n")],
        3,
        "'configs:' with no config after it",
    ),
    "only_labels": (lambda t: t[: t.index("configs:")], None, "no 'configs:' after the labels"),
}


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_damaged_sources_are_refused_by_path_and_line_and_out_is_untouched(tmp_path, capsys, how):
    d = trace(tmp_path / "in" / "a", "bert", [ADD, MUL, SUM])
    path = d / SOURCES
    edit, line, message = DAMAGE[how]
    text = path.read_text()
    assert text.count("\n") == 6
    path.write_bytes(edit(text).encode())
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert main(["merge", str(d), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    where = f"{path}:{line}" if line else f"{path}: "
    assert err.startswith(f"api-tracer: {where}") and message in err, err
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


def test_files_of_two_sets_are_not_merged_as_one(tmp_path, capsys):
    a = trace(tmp_path / "a", "bert", [ADD, MUL])
    b = trace(tmp_path / "b", "bert", [ADD, ADD, SUM])
    shutil.copy(b / SOURCES, a / SOURCES)  # counts of another set
    assert main(["merge", str(a), "-o", str(tmp_path / "m")]) == 2
    assert "differs from" in capsys.readouterr().err
    shutil.copy(b / "api_configs.yaml", a / "api_configs.yaml")  # both of another set, statistics not
    assert main(["merge", str(a), "-o", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"api-tracer: {a / SOURCES}: ") and "the files are not of one set" in err


def test_configs_out_of_order_are_refused(tmp_path, capsys):
    d = trace(tmp_path / "a", "bert", [ADD, MUL, SUM])
    for name, first in ((SOURCES, 3), ("api_configs.yaml", 0)):  # the same swap in both files
        lines = (d / name).read_text().splitlines(keepends=True)
        lines[first], lines[first + 1] = lines[first + 1], lines[first]
        (d / name).write_text("".join(lines))
    assert main(["merge", str(d), "-o", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"api-tracer: {d / SOURCES}:5: the config is out of order (after line 4)"), err


# -- diff ---------------------------------------------------------------------------------------


def diff_json(capsys, a: Path, b: Path, *flags: str):
    code = main(["diff", str(a), str(b), "--json", *flags])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return code, [r for r in lines if r["kind"] != "summary"], [r for r in lines if r["kind"] == "summary"]


def test_diff_says_what_is_new_gone_and_counted_otherwise(tmp_path, capsys):
    a = trace(tmp_path / "a", "v1", [ADD, ADD, MUL])
    b = trace(tmp_path / "b", "v2", [ADD, SUM, SUM, SUM])
    code, records, summary = diff_json(capsys, a, b)
    assert code == 0
    before = collections.Counter((a / "api_trace.txt").read_text().splitlines())
    after = collections.Counter((b / "api_trace.txt").read_text().splitlines())
    want = {("new", c, None, after[c]) for c in after if c not in before}
    want |= {("gone", c, before[c], None) for c in before if c not in after}
    want |= {("changed", c, before[c], after[c]) for c in before if c in after and before[c] != after[c]}
    got = {(r["kind"], r["name"], r["a"], r["b"]) for r in records if r["what"] == "configs"}
    assert got == want and len(want) == 3
    apis = {(r["kind"], r["name"]) for r in records if r["what"] == "apis"}
    assert apis == {("new", "torch.sum"), ("gone", "torch.mul"), ("changed", "torch.add")}
    assert {s["what"]: (s["in_a"], s["in_b"], s["new"], s["gone"], s["changed"]) for s in summary} == {
        "apis": (2, 2, 1, 1, 1),
        "configs": (2, 2, 1, 1, 1),
    }
    # the text says the same, and --fail-on turns it into the exit status
    assert main(["diff", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert "configs: 1 new, 1 gone, 1 changed (A has 2, B 2)" in text
    assert 'changed torch.add(Tensor([2, 3], "float32"), Tensor([2, 3], "float32"))  (2 -> 1 calls)' in text
    for fail_on in ("new", "gone", "any"):
        assert main(["diff", str(a), str(b), "--fail-on", fail_on]) == 1
    assert main(["diff", str(a), str(a), "--fail-on", "any"]) == 0
    capsys.readouterr()


def test_diff_of_unlabelled_sets_knows_new_and_gone_only(tmp_path, capsys):
    a = trace(tmp_path / "a", None, [ADD, ADD])
    b = trace(tmp_path / "b", None, [ADD, MUL])
    code, records, summary = diff_json(capsys, a, b, "--fail-on", "gone")
    assert code == 0
    assert [(r["what"], r["kind"]) for r in records] == [("apis", "changed"), ("apis", "new"), ("configs", "new")]
    assert [s["counted"] for s in summary] == [True, False]


def test_diff_refuses_what_it_cannot_compare(tmp_path, capsys):
    a = trace(tmp_path / "a", "x", [ADD])
    trace(tmp_path / "two" / "1", "x", [ADD])
    trace(tmp_path / "two" / "2", "x", [MUL])
    assert main(["diff", str(a), str(tmp_path / "two")]) == 2
    assert "holds 2 sets of merged levels" in capsys.readouterr().err
    lines = (a / SOURCES).read_text().splitlines(keepends=True)
    (a / SOURCES).write_text("".join(lines[:3]) + lines[3].replace('"calls": 1', '"calls": x'))
    assert main(["diff", str(a), str(a)]) == 2
    assert capsys.readouterr().err.startswith(f"api-tracer: {a / SOURCES}:4")


# -- stats and report ------------------------------------------------------------------------


def test_stats_and_report_say_where_configs_came_from(tmp_path, capsys):
    trace(tmp_path / "in" / "a", "bert", [ADD, ADD, MUL])
    trace(tmp_path / "in" / "b", "gpt", [ADD, SUM])
    trace(tmp_path / "in" / "c", "t5", [ADD])
    assert main(["merge", str(tmp_path / "in"), "-o", str(tmp_path / "m")]) == 0
    capsys.readouterr()
    assert main(["stats", str(tmp_path / "m")]) == 0
    out = capsys.readouterr().out
    assert "sources: 3: bert (3 calls), gpt (2 calls), t5 (1 calls)" in out
    assert "configs by their number of sources: 1: 2, 2-3: 1 (2 of 3 from one source only)" in out
    add = 'torch.add(Tensor([2, 3], "float32"), Tensor([2, 3], "float32"))'
    assert [line.split()[-2:] for line in out.splitlines() if line.startswith(add)] == [["3", "4"]]
    # the report: the sources, and a diff's pane
    b = trace(tmp_path / "b", "bert", [ADD, SUM])
    diff_file = tmp_path / "d.jsonl"
    assert main(["diff", str(tmp_path / "in" / "a"), str(b), "--json"]) == 0
    diff_file.write_text(capsys.readouterr().out)
    page = tmp_path / "r.html"
    assert main(["report", str(tmp_path / "m"), str(diff_file), "-o", str(page)]) == 0
    html = page.read_text()
    assert "Where the configs came from" in html and "3 sources; 2 of 3 configs from one source only" in html
    assert "diff: d.jsonl" in html and "torch.sum(Tensor([2, 3], &quot;float32&quot;))" in html
    # a diff cut before its summary lines is refused
    diff_file.write_text("\n".join(diff_file.read_text().splitlines()[:1]) + "\n")
    assert main(["report", str(diff_file), "-o", str(page)]) == 2
    assert "no summary line: the diff was cut" in capsys.readouterr().err


def _labelled_set(directory: Path, labels: dict, records: list) -> Path:
    """A set of level-1 configs `records` ((config, calls, sources, from)),
    its statistics and configs file made to agree with them."""
    directory.mkdir(parents=True)
    head = "".join(f'- {{"label": "{k}", "calls": {v}}}\n' for k, v in labels.items())
    body = "".join(
        f'- {{"config": {json.dumps(c)}, "calls": {n}, "sources": {k}, "from": {json.dumps(f)}}}\n'
        for c, n, k, f in records
    )
    (directory / SOURCES).write_text(f"labels:\n{head}configs:\n{body}")
    (directory / "api_configs.yaml").write_text("".join(c + "\n" for c, *_ in records))
    per_api = collections.Counter()
    for c, n, *_ in records:
        per_api[c[: c.index("(")]] += n
    total = sum(per_api.values())
    (directory / "api_statistics.yaml").write_text(
        f"Total APIs: {len(per_api)}\nTotal API calls: {total}\n\n"
        + "".join(f"{api}: {n} ({100.0 * n / total:.2f}%)\n" for api, n in per_api.most_common())
    )
    (directory / "api_apis.txt").write_text("".join(api + "\n" for api in sorted(per_api)))
    return directory


@pytest.mark.parametrize(
    "labels,record,message",
    [
        ({"a": 10}, ("f(1)", 10, 5, {"a": 2}), "more than the 1 labels"),
        ({x: 2 for x in "abcde"}, ("f(1)", 10, 5, {"a": 6}), "from lists 1 of its 5 sources: the first 3 are listed"),
        ({"a": 1, "b": 9}, ("f(1)", 10, 2, {"a": 1}), "from lists 1 of its 2 sources"),
        ({x: 5 for x in "abcd"}, ("f(1)", 20, 4, {"a": 2, "b": 2, "c": 2}), "each at most as many as the last listed"),
    ],
)
def test_records_that_cannot_be_are_refused(tmp_path, capsys, labels, record, message):
    d = _labelled_set(tmp_path / "s", labels, [record])
    assert main(["merge", str(d), "-o", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"api-tracer: {d / SOURCES}:") and message in err, err


def test_labels_out_of_order_are_refused(tmp_path, capsys):
    d = _labelled_set(tmp_path / "s", {"b": 1, "a": 1}, [("f(1)", 2, 2, {"a": 1, "b": 1})])
    assert main(["diff", str(d), str(d)]) == 2
    assert f"{d / SOURCES}:3: the labels are out of order" in capsys.readouterr().err


@pytest.mark.parametrize("what", ["fifo", "directory", "dev_zero"])
def test_a_configs_file_that_is_not_a_file_is_refused_not_waited_on(tmp_path, what):
    d = trace(tmp_path / "a", "m", [ADD])
    configs = d / "api_configs.yaml"
    configs.unlink()
    if what == "fifo":
        os.mkfifo(configs)
    elif what == "directory":
        configs.mkdir()
    else:
        configs.symlink_to("/dev/zero")
    done = subprocess.run(
        [sys.executable, "-m", "api_tracer", "merge", str(d), "-o", str(tmp_path / "m")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and f"{configs}: " in done.stderr and "not a regular file" in done.stderr, done.stderr


def test_shared_sources_never_count_past_the_labels(tmp_path):
    labels = {x: 2 for x in "abcde"}
    record = ("f(1)", 10, 5, {"a": 2, "b": 2, "c": 2})
    _labelled_set(tmp_path / "in" / "x", labels, [record])
    _labelled_set(tmp_path / "in" / "y", labels, [record])
    assert main(["merge", str(tmp_path / "in"), "-o", str(tmp_path / "m")]) == 0
    (entry,) = sources(tmp_path / "m")["configs"]
    assert entry["at_most"] is True and entry["sources"] == 5 and entry["calls"] == 20
    assert main(["merge", str(tmp_path / "m"), str(tmp_path / "m"), "-o", str(tmp_path / "m2")]) == 0
    assert sources(tmp_path / "m2")["configs"][0]["sources"] == 5


def test_a_programs_name_is_made_a_label(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/x/a\tb.py"])
    trace(tmp_path / "a", True, [ADD])
    assert sources(tmp_path / "a")["labels"][0]["label"] == "a?b.py"
    assert main(["merge", str(tmp_path / "a"), "-o", str(tmp_path / "m")]) == 0


def test_diff_counts_a_level_only_one_side_has(tmp_path, capsys):
    x = torch.ones(2)
    for name, levels in (("a", [1]), ("b", [1, 2])):
        with APITracer(output_path=str(tmp_path / name), levels=levels, label=name):
            torch.add(x, 1)
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b"), "--fail-on", "new"]) == 1
    assert "== level 2: only in B" in capsys.readouterr().out
    assert main(["diff", str(tmp_path / "b"), str(tmp_path / "a"), "--fail-on", "new"]) == 0
    assert main(["diff", str(tmp_path / "b"), str(tmp_path / "a"), "--fail-on", "gone"]) == 1
    with pytest.raises(SystemExit):  # argparse: a bad value of a flag
        main(["diff", str(tmp_path / "a"), str(tmp_path / "b"), "--limit", "-1"])
