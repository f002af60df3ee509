"""Damaged result files against the command that reads them: a replay
report (`replay -o`) and a diff (`diff --json`), which `report` reads
(docs/cli.md, "report"). The sibling of test_damaged_inputs.py, which
damages file sets.

Each file is made by the command that writes it, then damaged one way at a
time: cut at each line boundary and inside a line, junk, bytes that are
not UTF-8, and each field of a line given a value of another kind (a
string for a count, a list for a string, a number past what a float holds,
a negative count, null). `report` must end as docs/cli.md says: exit 2 with
one line `api-tracer: FILE[:LINE]: ...` naming the file (and the damaged
line), or exit 0 where the damage leaves a file as the tool writes it (a
replay report cut between two lines is a shorter report); never a
traceback. A diff cut anywhere is refused: its summary lines count its
differences, and say how many of them there are.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest
import torch

from api_tracer import APITracer
from api_tracer.cli import main
from support import CLI, user_code_env

CONFIGS = [
    'torch.ops.replaycheck.twice.default(Tensor([8], "float32"))',  # ok
    'torch.ops.replaycheck.twice_wrong_in_float64.default(Tensor([8], "float32"))',  # mismatch
    'torch.ops.replaycheck.outside_domain.default(Tensor([8], "float32"))',  # vacuous
    'torch.mm(Tensor([2, 3], "float32"), Tensor([4, 3], "float32"))',  # failed
    "os.system('x')",  # refused
    "torch.add(1,",  # invalid
]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Dict[str, bytes]:
    """A replay report and a diff, as the commands write them. The replay
    runs in a fresh process (its --import registers the replaycheck
    operators, which this process may hold already: then none would be the
    user's, and each refused), while the diff runs here (api_tracer.cli.main,
    as `report` does below) on two output sets traced here."""
    top = tmp_path_factory.mktemp("results")
    (top / "c.yaml").write_text("\n".join(CONFIGS) + "\n")
    argv = [*CLI, "replay", str(top / "c.yaml"), "--import", "replaycheck_ops", "--check", "float64"]
    replaying = subprocess.Popen(
        [*argv, "-o", str(top / "r.jsonl")], env=user_code_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        with APITracer(output_path=str(top / "a"), levels=[1, 2], label="a"):
            x = torch.ones(2, 3)
            torch.add(x, x)
            torch.mul(x, 2)
        with APITracer(output_path=str(top / "b"), levels=[0, 1, 2], label="b"):
            x = torch.ones(2, 3)
            torch.add(x, x)
            torch.add(x, x)
            torch.sub(x, 1)
        diffed, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(diffed), contextlib.redirect_stderr(err):
            code = main(["diff", str(top / "a"), str(top / "b"), "--json"])
        assert code == 0, err.getvalue()
        _, stderr = replaying.communicate(timeout=600)
    finally:
        if replaying.poll() is None:
            replaying.kill()
            replaying.wait()
    assert replaying.returncode == 1, stderr.decode()
    return {"replay": (top / "r.jsonl").read_bytes(), "diff": diffed.getvalue().encode()}


def test_the_files_hold_what_the_damage_needs(results):
    replay = [json.loads(line) for line in results["replay"].splitlines()]
    assert [r["status"] for r in replay] == ["ok", "mismatch", "vacuous", "failed", "refused", "invalid"]
    diff = [json.loads(line) for line in results["diff"].splitlines()]
    summaries = [d for d in diff if d["kind"] == "summary"]
    assert {d["what"] for d in diff} == {"level", "apis", "configs"}
    assert len(summaries) == 5 and {d["sections"] for d in summaries} == {5}
    assert {d["kind"] for d in diff} == {"new", "gone", "changed", "summary"}


# -- the damage -----------------------------------------------------------------------------

Lines = List[Dict[str, Any]]


def lines_of(data: bytes) -> List[bytes]:
    return data.splitlines(keepends=True)


def line_where(lines: Lines, test: Callable[[Dict[str, Any]], bool]) -> int:
    """The index of the first line that passes `test`."""
    return next(i for i, line in enumerate(lines) if test(line))


def set_field(data: bytes, test: Callable[[Dict[str, Any]], bool], key: str, value: Any) -> Tuple[bytes, int]:
    """The first line that passes `test` with `key` set to `value` (a
    string of JSON, written as it is: 1e400 is no Python float); the
    damaged file, and the line's number."""
    lines = [json.loads(line) for line in lines_of(data)]
    i = line_where(lines, test)
    raws = lines_of(data)
    record = dict(lines[i], **{key: "\0"})
    raws[i] = json.dumps(record).replace('"\\u0000"', value).encode() + b"\n"
    return b"".join(raws), i + 1


# Values of another kind, per kind of field, as JSON text.
WRONG = {
    "string": ['["x"]', "7", "null", '{"a": 1}'],
    "section": ['"nothing"', "7", "null"],
    "count": ['"abc"', "1e400", "1" + "0" * 400, "-1", "1.5", "true", '["x"]'],
    "seconds": ['"abc"', "1e400", "1" + "0" * 400, "-1", "true", '["x"]'],
    "measure": ['"abc"', "1" + "0" * 400, "NaN", "Infinity", '["x"]', "true"],
    "object": ['"abc"', "[1]", '{"a": 1}'],
    "boolean": ['"yes"', "1", "null"],
}

REPLAY_FIELDS = {  # field -> (its kind, a test of the line to damage)
    "config": ("string", lambda r: True),
    "api": ("string", lambda r: True),
    "status": ("string", lambda r: True),
    "file": ("string", lambda r: True),
    "message": ("string", lambda r: r["status"] == "failed"),
    "error": ("string", lambda r: r["status"] == "failed"),
    "check": ("string", lambda r: r["status"] == "mismatch"),
    "worst": ("string", lambda r: r["status"] == "mismatch"),
    "measure": ("string", lambda r: r["status"] == "mismatch"),
    "compared": ("string", lambda r: r["status"] == "mismatch"),
    "line": ("count", lambda r: r["status"] == "mismatch"),
    "column": ("count", lambda r: r["status"] == "invalid"),
    "seconds": ("seconds", lambda r: r["status"] == "mismatch"),
    "excess": ("measure", lambda r: r["status"] == "mismatch"),
    "max_abs_error": ("measure", lambda r: r["status"] == "mismatch"),
    "max_rel_error": ("measure", lambda r: r["status"] == "mismatch"),
    "rtol": ("measure", lambda r: r["status"] == "mismatch"),
    "hashes": ("object", lambda r: r["status"] == "mismatch"),
}


def summary(d: Dict[str, Any]) -> bool:
    return d["kind"] == "summary"


DIFF_FIELDS = {
    "set": ("string", lambda d: True),
    "what": ("section", lambda d: not summary(d)),
    "name": ("string", lambda d: not summary(d)),
    "a": ("count", lambda d: d["kind"] == "changed"),
    "b": ("count", lambda d: d["kind"] == "new" and d["what"] == "configs"),
    **{k: ("count", summary) for k in ("in_a", "in_b", "new", "gone", "changed", "sections")},
    "counted": ("boolean", summary),
}

FIELD_CASES = [
    (which, key, value)
    for which, fields in (("replay", REPLAY_FIELDS), ("diff", DIFF_FIELDS))
    for key, (kind, _) in fields.items()
    for value in WRONG[kind]
]
# the issue's: what made report raise, before
assert {("diff", "a", '"abc"'), ("replay", "check", '["x"]')} <= set(FIELD_CASES)


@pytest.mark.parametrize("which,key,value", FIELD_CASES, ids=[f"{w}-{k}-{v[:12]}" for w, k, v in FIELD_CASES])
def test_a_field_of_another_kind(results, tmp_path, capsys, which, key, value):
    fields = REPLAY_FIELDS if which == "replay" else DIFF_FIELDS
    data, lineno = set_field(results[which], fields[key][1], key, value)
    path = tmp_path / f"{which}.jsonl"
    path.write_bytes(data)
    code, err = report(capsys, path, tmp_path)
    # the first line of each is told by its kind: a damaged one may make the file none of them
    first = lineno == 1 and key in ("config", "api", "status", "set", "what")
    check_refused(code, err, path, None if first else lineno, tmp_path)


def generic_cases(which: str, data: bytes) -> List[Tuple[str, int]]:
    """(how, where) of each generic damage to the file."""
    n = len(lines_of(data))
    return (
        [("cut_at_line", i) for i in range(1, n)]
        + [("cut_inside_line", i) for i in range(n)]
        + [("cut_before_the_last_newline", 0), ("junk_line", n // 2), ("not_utf8", n // 2), ("crlf", 0)]
        + [("blank_line", n // 2), ("a_line_twice", n // 2), ("two_files_joined", 0)]
    )


def damage(data: bytes, how: str, i: int) -> bytes:
    lines = lines_of(data)
    if how == "cut_at_line":
        return b"".join(lines[:i])
    if how == "cut_inside_line":
        return b"".join(lines[:i]) + lines[i][: max(1, len(lines[i]) // 2)]
    if how == "cut_before_the_last_newline":
        return data[:-1]
    if how == "junk_line":
        return b"".join(lines[:i] + [b"}{ ]] junk: [\x00\n"] + lines[i:])
    if how == "not_utf8":
        return b"".join(lines[:i] + [lines[i][:5] + b"\xff\xfe" + lines[i][5:]] + lines[i + 1 :])
    if how == "crlf":
        return data.replace(b"\n", b"\r\n")
    if how == "blank_line":
        return b"".join(lines[:i] + [b"\n"] + lines[i:])
    if how == "a_line_twice":
        return b"".join(lines[: i + 1] + lines[i:])
    if how == "two_files_joined":
        return data + data
    raise AssertionError(how)


ANY = -1  # an error at some line: which one depends on where the damage fell among the sections


def generic_outcome(which: str, how: str, i: int, data: bytes) -> Tuple[str, Optional[int]]:
    """("error", the line it names: None for the file only, ANY for any
    line) or ("ok", None)."""
    n = len(lines_of(data))
    if how in ("crlf", "blank_line"):
        return "ok", None  # JSON takes a carriage return as white space; a blank line is no line
    if how in ("cut_inside_line", "junk_line", "not_utf8"):
        return "error", (i + 1 if i else None)  # a first line that is not JSON makes the file no result file
    if how == "cut_before_the_last_newline":
        return "error", n
    if which == "replay":
        return "ok", None  # cut between two lines, a line twice, two joined: results as replay writes them
    if how == "two_files_joined":
        return "error", n + 1  # the second diff's first line: a difference after the summary lines
    return "error", ANY  # a diff cut, or a line twice: the counts of its summary lines do not agree


@pytest.mark.parametrize("which", ["replay", "diff"])
def test_generic_damage(results, tmp_path, capsys, which):
    """Every cut, at each line boundary and inside each line, and the
    other damage any file may meet."""
    data = results[which]
    for how, i in generic_cases(which, data):
        path = tmp_path / f"{which}-{how}-{i}.jsonl"
        damaged = damage(data, how, i)
        assert damaged != data, (how, i)
        path.write_bytes(damaged)
        code, err = report(capsys, path, tmp_path)
        outcome, lineno = generic_outcome(which, how, i, data)
        if outcome == "ok":
            assert (code, err) == (0, ""), (how, i, err)
        else:
            check_refused(code, err, path, lineno, tmp_path, (how, i))
        if which == "diff" and how == "cut_at_line":
            assert "the diff was cut" in err, (how, i, err)
        shutil.rmtree(tmp_path / "out", ignore_errors=True)


def test_a_diff_cut_after_its_first_summary_line_is_refused(results, tmp_path, capsys):
    """The issue's: a section silently left out of the page, before."""
    lines = lines_of(results["diff"])
    first = line_where([json.loads(line) for line in lines], lambda d: d["kind"] == "summary")
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"".join(lines[: first + 1]))
    assert main(["report", str(path), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"api-tracer: {path}:") and "the diff was cut" in err, err
    # and a diff of older versions, without "sections", is still checked by its counts
    old = b"".join(
        json.dumps({k: v for k, v in json.loads(line).items() if k != "sections"}).encode() + b"\n" for line in lines
    )
    path.write_bytes(old)
    assert main(["report", str(path), "-o", str(tmp_path / "r.html")]) == 0
    capsys.readouterr()


# -- running them --------------------------------------------------------------------------


def report(capsys, path: Path, tmp_path: Path) -> Tuple[int, str]:
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    code = main(["report", str(path), "-o", str(out / "r.html")])
    return code, capsys.readouterr().err


def check_refused(code: int, err: str, path: Path, lineno: Optional[int], tmp_path: Path, what: Any = None) -> None:
    """Exit 2 with one line naming the file (and `lineno` where given),
    nothing written."""
    assert "Traceback" not in err
    assert code == 2 and err.count("\n") == 1, (what, err)
    if lineno == ANY:
        assert err.startswith(f"api-tracer: {path}:"), (what, err)
    where = f"{path}:{lineno}: " if lineno and lineno != ANY else f"{path}"
    assert err.startswith("api-tracer: ") and where in err, (what, where, err)
    assert not (tmp_path / "out" / "r.html").exists()
