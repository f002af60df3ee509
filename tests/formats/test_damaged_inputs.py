"""Damaged file sets against the commands that read them: merge, stats,
diff and report (docs/cli.md, "Damaged input"); test_damaged_results.py
does the same for the result files report reads (replay reports, diffs).

A corpus is made from two real sets (one merged set of levels 0 and 1, one
set per level), each file damaged one way at a time: cut at 0 bytes,
inside a line, at a line boundary (first, middle, last), junk, bytes that
are not UTF-8, YAML of the wrong types, counts that do not add up or do not
fit, a missing file, a directory or a link to nothing or to a device in its
place. Every command is run on each copy, in this process through
`api_tracer.cli.main` (a subprocess for each would take minutes), and must
end as docs/cli.md says: exit 2 with one line `api-tracer: ...` naming the
damaged file, or exit 0 with a warning naming it (a cut trace, repaired),
or exit 0 in silence (a file the command does not read); never a traceback.
FIFOs, which would block a reader for ever, are tried in subprocesses with
a timeout; so is a real killed run.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import pytest
import torch
import yaml

from api_tracer import APITracer
from api_tracer.cli import main
from api_tracer.formats.io import replace_atomically
from support import run_cli

COMMANDS = ("merge", "stats", "diff", "report")
KINDS = {"merged": "", "split": "_level_0"}  # the set damaged, by the suffix of its files
FILES = (
    "api_statistics.yaml",
    "api_configs.yaml",
    "api_stacks.yaml",
    "api_value_ranges.yaml",
    "api_trace.txt",
    "api_trace.yaml",
    "api_apis.txt",
)
SUMMARY_YAML = ("api_stacks.yaml", "api_value_ranges.yaml")
TRACE = ("api_trace.txt", "api_trace.yaml")


def program() -> None:
    x = torch.ones(2, 3)
    torch.add(x, x, alpha=2)
    torch.mul(x, 3)
    torch.index_select(x, 0, torch.tensor([0, 1]))
    torch.sum(x, dim=(0, 1), keepdim=True)
    torch.nn.functional.relu(x)


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Dict[str, Path]:
    top = tmp_path_factory.mktemp("base")
    for kind in KINDS:
        with APITracer(
            output_path=str(top / kind),
            levels=[0, 1],
            merge_output=kind == "merged",
            record_stack=True,
            value_ranges=True,
        ):
            program()
    return {kind: top / kind for kind in KINDS}


def file_name(name: str, suffix: str) -> str:
    stem, ext = os.path.splitext(name)
    return f"{stem}{suffix}{ext}"


# -- the damage ---------------------------------------------------------------------------


def lines_of(data: bytes) -> List[bytes]:
    return data.splitlines(keepends=True)


def cut_at_line(data: bytes, i: int) -> bytes:
    """The first i lines."""
    return b"".join(lines_of(data)[:i])


def cut_inside_line(data: bytes, i: int) -> bytes:
    """The first i lines, and half of the next (without its newline)."""
    lines = lines_of(data)
    return b"".join(lines[:i]) + lines[i][: max(1, len(lines[i]) // 2)].rstrip(b"\n")


def middle(data: bytes) -> int:
    return len(lines_of(data)) // 2


def cut_after_a_key(data: bytes) -> bytes:
    """YAML summaries: cut after the middlemost line that opens a mapping or
    list (`key:` alone), so that what it holds is gone and the key is null.
    (A cut between two entries leaves a file that is whole: docs/cli.md.)"""
    lines = lines_of(data)
    keys = [i for i, line in enumerate(lines) if line.rstrip(b"\n").endswith(b":")]
    return b"".join(lines[: keys[len(keys) // 2] + 1])


def insert_line(data: bytes, line: bytes) -> bytes:
    lines = lines_of(data)
    i = middle(data)
    return b"".join(lines[:i] + [line] + lines[i:])


def not_utf8(data: bytes) -> bytes:
    lines = lines_of(data)
    i = middle(data)
    half = len(lines[i]) // 2
    lines[i] = lines[i][:half] + b"\xff\xfe" + lines[i][half:]
    return b"".join(lines)


JUNK = b"\xff\xfe junk \x00\x01\n}{ ]]\n\x80"

# damage to any file, by name: bytes -> bytes
GENERIC: Dict[str, Callable[[bytes], bytes]] = {
    "cut_to_0_bytes": lambda d: b"",
    "cut_inside_the_first_line": lambda d: cut_inside_line(d, 0),
    "cut_after_the_first_line": lambda d: cut_at_line(d, 1),
    "cut_inside_a_middle_line": lambda d: cut_inside_line(d, middle(d)),
    "cut_at_a_middle_line": lambda d: cut_at_line(d, middle(d)),
    "cut_before_the_last_newline": lambda d: d[:-1],
    "cut_before_the_last_line": lambda d: cut_at_line(d, len(lines_of(d)) - 1),
    "a_junk_line": lambda d: insert_line(d, b"}{ ]] junk: [\x00\n"),
    "junk_bytes": lambda d: JUNK,
    "not_utf8": not_utf8,
}


def stats_file(counts: List[Tuple[str, int]]) -> str:
    """A statistics file as the writer writes it (but for its order)."""
    total = sum(n for _, n in counts)
    return f"Total APIs: {len(counts)}\nTotal API calls: {total}\n\n" + "".join(
        f"{api}: {n} ({100.0 * n / total:.2f}%)\n" for api, n in counts
    )


def stats_edit(text: str, how: str) -> str:
    lines = text.split("\n")
    counts = [(line.rsplit(": ", 1)[0], int(line.rsplit(": ", 1)[1].split(" ")[0])) for line in lines[3:-1]]
    api, n = counts[0]
    share = lines[3].rsplit(" ", 1)[1]
    if how == "no_totals":  # the issue's: the APIs without the two total lines
        return "\n".join(lines[3:])
    if how == "string_count":
        lines[3] = f"{api}: five {share}"
    elif how == "negative_count":
        lines[3] = f"{api}: -1 {share}"
    elif how == "a_count_of_other_digits":  # fullwidth: int() reads them, the tracer writes none
        lines[3] = f"{api}: {str(n).translate({ord(d): 0xFF10 + ord(d) - ord('0') for d in '0123456789'})} {share}"
    elif how == "count_above_2_64":  # the totals and shares made to add up
        return stats_file([(api, 2**64)] + counts[1:])
    elif how == "calls_do_not_add_up":
        lines[1] = f"Total API calls: {sum(c for _, c in counts) + 1}"
    elif how == "apis_do_not_add_up":
        lines[0] = f"Total APIs: {len(counts) + 1}"
    elif how == "an_api_twice":
        return stats_file(counts + [counts[-1]])
    elif how == "a_share_that_is_not_its_own":
        lines[3] = f"{api}: {n} (99.00%)"
    elif how == "a_list":
        return "- torch.add\n- torch.mul\n"
    elif how in ("an_api_with_a_nul", "an_api_with_a_terminal_escape"):  # copied, or printed, before
        return stats_file([(("\0" if how == "an_api_with_a_nul" else "\x1b[2J") + api, n)] + counts[1:])
    return "\n".join(lines)


def swapped(lines: List[str]) -> List[str]:
    """The lines with the middle two swapped."""
    i = len(lines) // 2
    return lines[: i - 1] + [lines[i], lines[i - 1]] + lines[i + 1 :]


TYPED: Dict[str, Dict[str, Callable[[str], str]]] = {
    "api_statistics.yaml": {
        how: (lambda t, how=how: stats_edit(t, how))
        for how in (
            "no_totals",
            "string_count",
            "negative_count",
            "a_count_of_other_digits",
            "count_above_2_64",
            "calls_do_not_add_up",
            "apis_do_not_add_up",
            "an_api_twice",
            "a_share_that_is_not_its_own",
            "a_list",
            "an_api_with_a_nul",
            "an_api_with_a_terminal_escape",
        )
    },
    "api_configs.yaml": {
        "a_line_that_does_not_parse": lambda t: t + 'torch.add(Tensor([2, 3], "float32"\n',
        "a_line_of_python": lambda t: t + '__import__("os").system("true")\n',
        "crlf_line_endings": lambda t: t.replace("\n", "\r\n"),  # silently twice as many configs, before
        "a_byte_order_mark": lambda t: "\ufeff" + t,
        "a_terminal_escape_in_an_api": lambda t: "\x1b]0;x\x07" + t,
        # out of the tracer's order, or twice: merge refused them, and stats, diff and report read them, before
        "two_lines_swapped": lambda t: "".join(swapped(t.splitlines(keepends=True))),
        "a_line_twice": lambda t: t + t.splitlines(keepends=True)[-1],
    },
    "api_stacks.yaml": {
        "a_list": lambda t: "- torch.add\n",
        "a_count_for_stacks": lambda t: "torch.add: 5\n",  # AttributeError, before
        "stacks_a_string": lambda t: "torch.add:\n  3stacks: x\n",
        "frames_not_strings": lambda t: "torch.add:\n  3stacks:\n  - - 1\n",
        "another_field": lambda t: "torch.add:\n  3stacks: []\n  more: 1\n",
        "an_alias": lambda t: "a: &x\n  3stacks: []\nb: *x\n",
        "not_yaml": lambda t: "torch.add:\n  3stacks: [\n",
    },
    "api_value_ranges.yaml": {
        "a_mapping": lambda t: "config: torch.ones(2)\n",
        "no_ranges": lambda t: "- config: torch.ones(2)\n  values:\n    args[0]: [1]\n",  # KeyError, before
        "ranges_of_strings": lambda t: "- config: torch.ones(2)\n  ranges:\n    args[0]: [a, b]\n",
        "a_range_past_int64": lambda t: f"- config: torch.ones(2)\n  ranges:\n    args[0]: [0, {2**70}]\n",
        "a_range_backwards": lambda t: "- config: torch.ones(2)\n  ranges:\n    args[0]: [5, 1]\n",
        "a_value_outside": lambda t: "- config: f(1)\n  ranges:\n    args[0]: [0, 1]\n  values:\n    args[0]: [7]\n",
        "a_config_that_does_not_parse": lambda t: "- config: torch.ones(\n  ranges:\n    args[0]: [0, 1]\n",
        "another_field": lambda t: t.replace("  ranges:", "  extra: 1\n  ranges:", 1),
        "a_sum_not_an_int": lambda t: "- config: f(1)\n  ranges:\n    args[0]: [0, 1]\n  sums:\n    args[0]: 1.5\n",
        "a_sum_without_range": lambda t: "- config: f(1)\n  ranges:\n    args[0]: [0, 1]\n  sums:\n    args[1]: 2\n",
    },
    "api_trace.txt": {
        "crlf_line_endings": lambda t: t.replace("\n", "\r\n"),
        "another_api": lambda t: "\n".join(
            line if i != len(t.split("\n")) // 2 else "torch.nothing(1)" for i, line in enumerate(t.split("\n"))
        ),
    },
    "api_trace.yaml": {
        "another_api": lambda t: re.sub(r"\n- api: [^\n]*", "\n- api: torch.nothing", t, count=1),
        "a_bad_level": lambda t: t.replace("  level: 0\n", "  level: x\n", 1),
        "a_negative_level": lambda t: t.replace("  level: 0\n", "  level: -5\n", 1),
        "a_level_past_the_last": lambda t: t.replace("  level: 0\n", "  level: 64\n", 1),
        "a_level_past_int": lambda t: t.replace("  level: 0\n", "  level: 99999999999999999999\n", 1),
    },
}
LEVEL_DAMAGE = ("a_bad_level", "a_negative_level", "a_level_past_the_last", "a_level_past_int")

SPECIAL = ("missing", "a_directory", "a_link_to_nothing", "a_link_to_dev_null")

CASES: List[Tuple[str, str, str]] = [
    (kind, name, how)
    for kind in KINDS
    for name in FILES
    for how in list(GENERIC) + list(TYPED.get(name, {})) + list(SPECIAL)
    if not (kind == "split" and how in LEVEL_DAMAGE)
]  # one level: no level field


def damage(path: Path, name: str, how: str) -> None:
    if how in GENERIC or how in TYPED.get(name, {}):
        data = path.read_bytes()
        if how in TYPED.get(name, {}):
            damaged = TYPED[name][how](data.decode()).encode()
        elif how == "cut_at_a_middle_line" and name in SUMMARY_YAML:
            damaged = cut_after_a_key(data)
        else:
            damaged = GENERIC[how](data)
        assert damaged != data, "a damage that changes nothing"
        path.write_bytes(damaged)
    else:
        path.unlink()
        if how == "a_directory":
            path.mkdir()
        elif how == "a_link_to_nothing":
            path.symlink_to(path.parent / "nowhere")
        elif how == "a_link_to_dev_null":
            path.symlink_to("/dev/null")


# -- what each command must do -------------------------------------------------------------


def reads(command: str, kind: str, name: str) -> bool:
    """Whether `command` reads the file's content (docs/cli.md)."""
    if command == "diff":
        return name in ("api_statistics.yaml", "api_configs.yaml")  # (and api_config_sources.yaml: none here)
    if name == "api_apis.txt":
        return command == "report"  # its coverage pane (corpus/coverage.py)
    if name == "api_stacks.yaml":
        return command != "stats"
    if name == "api_value_ranges.yaml":
        return command == "merge"
    if name in TRACE:
        return command != "stats"  # stats counts a merged trace's levels, checking only those (docs/cli.md)
    return True


def looks_at(command: str, kind: str, name: str) -> bool:
    """Whether `command` looks at what is there (a regular file or not)."""
    return reads(command, kind, name) or (
        command == "stats"
        and (
            name == "api_trace.txt"  # its trace_limit note
            or (kind == "merged" and name == "api_trace.yaml")
        )
    )  # a merged trace's calls per level


def apis_left_without_configs(directory: Path, suffix: str) -> bool:
    stats = (directory / file_name("api_statistics.yaml", suffix)).read_text().split("\n")[3:-1]
    configs = (directory / file_name("api_configs.yaml", suffix)).read_bytes().decode().split("\n")
    have = {line.split("(")[0] for line in configs if line}
    return any(line.rsplit(": ", 1)[0] not in have for line in stats)


def whole_looking(name: str, text: str) -> bool:
    """Whether a YAML summary cut at a line boundary still has the shape of
    a whole one (the test's own view, by yaml.safe_load): such a cut, between
    two frames or two entries, cannot be told (docs/cli.md)."""
    data = yaml.safe_load(text)
    if name == "api_stacks.yaml":
        return isinstance(data, dict) and all(
            isinstance(e, dict)
            and set(e) == {"3stacks"}
            and isinstance(e["3stacks"], list)
            and all(isinstance(st, list) and all(isinstance(f, str) for f in st) for st in e["3stacks"])
            for e in data.values()
        )
    return isinstance(data, list) and all(
        isinstance(e, dict)
        and isinstance(e.get("config"), str)
        and isinstance(e.get("ranges"), dict)
        and all(isinstance(r, list) and len(r) == 2 for r in e["ranges"].values())
        and all(e[k] is not None for k in e)
        for e in data
    )


def expected(command: str, kind: str, name: str, how: str, directory: Path) -> Tuple[str, str]:
    """("error" | "warning" | "ok", the path the line names)."""
    suffix = KINDS[kind]
    path = str(directory / file_name(name, suffix))
    if how in SPECIAL:
        if name == "api_statistics.yaml" and how == "missing":  # no set: its files are said to be no set
            return ("error", str(directory)) if kind == "merged" else ("warning", path)
        if how == "missing":
            if name in ("api_configs.yaml", "api_apis.txt") and reads(command, kind, name):
                return "error", path
            if name in TRACE and (reads(command, kind, name) or (command == "stats" and kind == "merged")):
                return "warning", str(directory / file_name(TRACE[1 - TRACE.index(name)], suffix))
            return "ok", ""  # an optional file: its absence is no damage that can be told
        return ("error", path) if looks_at(command, kind, name) or name == "api_statistics.yaml" else ("ok", "")
    if command == "stats" and how in LEVEL_DAMAGE:  # the level fields it counts are checked
        return "error", path
    if not reads(command, kind, name):
        return "ok", ""
    if name in TRACE and how.startswith("cut_"):
        return "warning", path  # a cut trace is repaired
    if name == "api_apis.txt" and how in (
        "cut_to_0_bytes",
        "cut_after_the_first_line",
        "cut_at_a_middle_line",
        "cut_before_the_last_line",
    ):
        return "warning", path  # names the statistics count are missing: said, and counted
    if name == "api_configs.yaml" and how in (
        "cut_to_0_bytes",
        "cut_after_the_first_line",
        "cut_at_a_middle_line",
        "cut_before_the_last_line",
    ):
        # a configs file cut between lines still parses: an API left without
        # a config line is said; otherwise the cut cannot be told
        return ("warning", path) if apis_left_without_configs(directory, suffix) else ("ok", "")
    if name in SUMMARY_YAML and how in ("cut_after_the_first_line", "cut_before_the_last_line"):
        text = Path(path).read_text()
        return ("ok", "") if text and whole_looking(name, text) else ("error", path)
    return "error", path


# -- running them --------------------------------------------------------------------------


def argv_of(command: str, directory: Path, work: Path, clean: Path) -> List[str]:
    """The command line of `command` reading the set in `directory` (diff:
    against `clean`, the set undamaged), writing into `work`."""
    return {
        "merge": ["merge", str(directory), "-o", str(work / "out")],
        "stats": ["stats", str(directory)],
        "diff": ["diff", str(clean), str(directory)],
        "report": ["report", str(directory), "-o", str(work / "r.html")],
    }[command]


def run(capsys, command: str, directory: Path, work: Path, clean: Path) -> Tuple[int, str]:
    argv = argv_of(command, directory, work, clean)
    code = main(argv)
    return code, capsys.readouterr().err


def check_agree(out: Path) -> None:
    """Each trace of a merged set: its two files hold the same records."""
    for txt in out.glob("api_trace*.txt"):
        lines = [line for line in txt.read_text().splitlines() if not line.startswith("#")]
        records = yaml.safe_load(txt.with_suffix(".yaml").read_text()) or []
        assert [r["api"] for r in records] == [line.split("(")[0] for line in lines], txt


def check_outcome(command: str, code: int, err: str, want: Tuple[str, str], work: Path) -> None:
    outcome, path = want
    assert "Traceback" not in err
    lines = err.splitlines()
    warnings = [line for line in lines if line.startswith("api-tracer: warning: ")]
    if outcome == "error":
        assert code == 2, err
        assert len(lines) - len(warnings) == 1 and lines[-1].startswith("api-tracer: ") and path in lines[-1], err
        # refused before anything is written
        assert not (work / "out").exists() and not (work / "r.html").exists()
    elif outcome == "warning":
        assert code == 0, err
        assert warnings and warnings == lines and any(path in line for line in warnings), err
    else:
        assert (code, err) == (0, ""), err
    if code == 0 and command == "merge":
        check_agree(work / "out")


@pytest.mark.parametrize("kind,name,how", CASES, ids=[f"{k}-{n}-{h}" for k, n, h in CASES])
def test_a_damaged_file(base, tmp_path, capsys, kind, name, how):
    directory = tmp_path / "set"
    shutil.copytree(base[kind], directory, symlinks=True)
    damage(directory / file_name(name, KINDS[kind]), name, how)
    for command in COMMANDS:
        work = tmp_path / command
        work.mkdir()
        want = expected(command, kind, name, how, directory)
        code, err = run(capsys, command, directory, work, base[kind])
        check_outcome(command, code, err, want, work)


def test_the_corpus_holds_every_kind_of_damage():
    hows = {how for _, _, how in CASES}
    assert len(CASES) > 200
    assert {
        "cut_to_0_bytes",
        "cut_inside_a_middle_line",
        "cut_at_a_middle_line",
        "junk_bytes",
        "not_utf8",
        "count_above_2_64",
        "negative_count",
        "string_count",
        "a_list",
        "a_mapping",
        "calls_do_not_add_up",
        "missing",
        "a_directory",
    } <= hows


# -- the cases, with their messages --------------------------------------------------


def healthy(base, tmp_path, kind="merged") -> Path:
    directory = tmp_path / "set"
    shutil.copytree(base[kind], directory)
    return directory


def test_statistics_without_their_totals_are_refused(base, tmp_path, capsys):
    directory = healthy(base, tmp_path)
    (directory / "api_statistics.yaml").write_text("add: 5\nmul: 3\nsub: 2\n")
    for argv in (
        ["merge", str(directory), "-o", str(tmp_path / "out")],
        ["stats", str(directory)],
        ["report", str(directory), "-o", str(tmp_path / "r.html")],
    ):
        assert main(argv) == 2
        assert capsys.readouterr().err == (
            f"api-tracer: {directory}/api_statistics.yaml:1: expected 'Total APIs: N' "
            "(the file's totals), not 'add: 5'\n"
        )
    assert not (tmp_path / "out").exists()


# damage to the configs of a set with api_config_sources.yaml: (how, the lines an error may name:
# of two lines swapped, the first where the file is held against its sources, else the second)
SOURCED_DAMAGE: Dict[str, Tuple[Callable[[List[bytes]], List[bytes]], Tuple[Optional[int], ...]]] = {
    "not_utf8": (lambda lines: lines[:2] + [lines[2][:9] + b"\xff" + lines[2][9:]] + lines[3:], (3,)),
    "two_lines_swapped": (lambda lines: [lines[1], lines[0]] + lines[2:], (1, 2)),
    "a_line_twice": (lambda lines: lines + lines[-1:], (len(("add", "mul", "ones", "sum")) + 1,)),
    # whole lines each, but not the lines of api_config_sources.yaml (stats and report read them, before)
    "the_last_line_gone": (lambda lines: lines[:-1], (None,)),
    "a_config_changed": (lambda lines: lines[:-1] + [lines[-1].replace(b"torch.sum", b"torch.sux")], (4,)),
}


@pytest.mark.parametrize("how", SOURCED_DAMAGE)
def test_every_command_refuses_configs_beside_their_sources_alike(tmp_path, capsys, how):
    """The issue's: diff read a labelled set (api_config_sources.yaml beside
    api_configs.yaml) whose configs stats and merge refused. One reader of
    the file (formats/configs.py: set_config_lines), one verdict: each
    command refuses it, at the line the damage is on (merge's C++ reader
    holds the file against api_config_sources.yaml, line by line)."""
    with APITracer(output_path=str(tmp_path / "clean"), levels=[1], merge_output=True, label="run"):
        x = torch.ones(2, 3)
        torch.add(x, x)
        torch.mul(x, 2)
        torch.sum(x)
    shutil.copytree(tmp_path / "clean", tmp_path / "set")
    configs = tmp_path / "set" / "api_configs.yaml"
    damaged, lines = SOURCED_DAMAGE[how]
    configs.write_bytes(b"".join(damaged(configs.read_bytes().splitlines(keepends=True))))
    assert len(configs.read_bytes().splitlines()) >= 3
    for command in COMMANDS:
        work = tmp_path / command
        work.mkdir()
        code, err = run(capsys, command, tmp_path / "set", work, tmp_path / "clean")
        assert "Traceback" not in err
        named = tuple(f"api-tracer: {configs}:{lineno}: " if lineno else f"api-tracer: {configs}: " for lineno in lines)
        assert code == 2 and err.startswith(named) and err.count("\n") == 1, (command, err)


def test_a_cut_trace_merges_into_two_files_that_agree(base, tmp_path, capsys):
    directory = healthy(base, tmp_path)
    trace = directory / "api_trace.yaml"
    text = trace.read_text()
    header = text.index("\n- api: ", len(text) // 2) + 1  # a record after the middle
    trace.write_text(text[: header + 11])  # cut inside its first line
    kept = len(yaml.safe_load(text[:header]))
    lines = (directory / "api_trace.txt").read_text().splitlines()
    assert main(["merge", str(directory), "-o", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().err == (
        f"api-tracer: warning: {directory}/api_trace.txt:{kept + 1} and {trace}:{text[:header].count(chr(10)) + 1}: "
        f"{len(lines) - kept} lines and 1 record from there on are left out of the merge: the trace's two files end "
        "at different records, or inside one (a killed run, or a copy of a running one); the "
        f"{kept} records both hold whole are read\n"
    )
    merged = tmp_path / "out"
    assert (merged / "api_trace.txt").read_text().splitlines() == lines[:kept]
    check_agree(merged)
    # the summaries still count every call: they are the last snapshot's
    assert (merged / "api_statistics.yaml").read_text() == (directory / "api_statistics.yaml").read_text()


def test_a_configs_file_cut_inside_a_line_is_refused(base, tmp_path, capsys):
    directory = healthy(base, tmp_path)
    configs = directory / "api_configs.yaml"
    lines = configs.read_text().splitlines(keepends=True)
    configs.write_text("".join(lines[:2]) + lines[2][:12])
    assert main(["merge", str(directory), "-o", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == f"api-tracer: {configs}:3: ends inside a line: the file was cut\n"
    configs.write_text("".join(lines[:2]) + lines[2][:12] + "\n")  # the same, but for its newline
    assert main(["merge", str(directory), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"api-tracer: {configs}:3:") and err.count("\n") == 1


def test_report_without_configs_and_merge_of_bad_stacks_and_ranges(base, tmp_path, capsys):
    directory = healthy(base, tmp_path)
    (directory / "api_configs.yaml").unlink()
    assert main(["report", str(directory), "-o", str(tmp_path / "r.html")]) == 2
    assert capsys.readouterr().err == (
        f"api-tracer: {directory}/api_configs.yaml: no such file: a file set has one beside its api_statistics file\n"
    )
    shutil.copy(base["merged"] / "api_configs.yaml", directory)
    (directory / "api_stacks.yaml").write_text("torch.add: 5\n")
    assert main(["merge", str(directory), "-o", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == (
        f"api-tracer: {directory}/api_stacks.yaml:1: expected the entry of torch.add, a mapping\n"
    )
    shutil.copy(base["merged"] / "api_stacks.yaml", directory)
    (directory / "api_value_ranges.yaml").write_text("- config: torch.ones(2)\n  values:\n    args[0]: [1]\n")
    assert main(["merge", str(directory), "-o", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.startswith(f"api-tracer: {directory}/api_value_ranges.yaml:1: a config entry has")


def test_counts_up_to_what_the_writers_hold(base, tmp_path, capsys):
    directory = healthy(base, tmp_path)
    stats = directory / "api_statistics.yaml"
    big = 2**63 + 1  # no trouble: the writers count in 64 bits, unsigned
    stats.write_text(f"Total APIs: 2\nTotal API calls: {big + 1}\n\ntorch.add: {big} (100.00%)\ntorch.mul: 1 (0.00%)\n")
    assert main(["stats", str(directory)]) == 0
    assert f"2 APIs, {big + 1} calls" in capsys.readouterr().out
    assert main(["merge", str(directory), "-o", str(tmp_path / "one")]) == 0
    assert f"Total API calls: {big + 1}\n" in (tmp_path / "one" / "api_statistics.yaml").read_text()
    capsys.readouterr()
    twice = tmp_path / "twice"
    shutil.copytree(directory, twice / "a")
    shutil.copytree(directory, twice / "b")
    assert main(["merge", str(twice), "-o", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == (
        f"api-tracer: {twice}/b/api_statistics.yaml:4: torch.add: the sets' counts add "
        "up past 2^64 - 1, more than the writers hold\n"
    )


def test_files_of_a_set_without_its_statistics_are_said(base, tmp_path, capsys):
    directory = healthy(base, tmp_path, "split")
    (directory / "api_statistics_level_0.yaml").unlink()
    assert main(["stats", str(directory)]) == 0
    assert capsys.readouterr().err == (
        f"api-tracer: warning: {directory}/api_statistics_level_0.yaml: missing beside "
        "api_apis_level_0.txt and 5 more: without it the files are not a file set, "
        "and are not read\n"
    )


# -- outputs -------------------------------------------------------------------------------


def test_outputs_that_cannot_be_written(base, tmp_path, capsys):
    directory = healthy(base, tmp_path)
    (tmp_path / "afile").write_text("")
    assert main(["report", str(directory), "-o", str(tmp_path / "afile" / "x.html")]) == 2
    assert capsys.readouterr().err == (
        f"api-tracer: {tmp_path}/afile/x.html: cannot write here: {tmp_path}/afile is not a directory\n"
    )
    assert main(["report", str(directory), "-o", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"api-tracer: {tmp_path}: a directory: the report is one HTML file\n"
    # /dev/full is the machine's: it is written to only once a device of the test's own (a terminal) is
    # known to be written through, not replaced (as `-o /dev/full` once replaced it by a regular file)
    master, slave = os.openpty()
    try:
        replace_atomically(os.ttyname(slave), "x")
        assert stat.S_ISCHR(os.stat(os.ttyname(slave)).st_mode) and os.read(master, 16) == b"x"
    finally:
        os.close(slave)
        os.close(master)
    assert main(["report", str(directory), "-o", "/dev/full"]) == 2
    assert capsys.readouterr().err == "api-tracer: /dev/full: cannot write: No space left on device\n"
    assert main(["merge", str(directory), "-o", str(tmp_path / "afile" / "x")]) == 2
    assert capsys.readouterr().err == (
        f"api-tracer: {tmp_path}/afile/x: cannot make this directory: {tmp_path}/afile is not a directory\n"
    )
    assert main(["merge", str(directory), "-o", str(tmp_path / "afile")]) == 2
    assert capsys.readouterr().err == (
        f"api-tracer: {tmp_path}/afile: not a directory: the merged set is written into a directory\n"
    )


@pytest.mark.parametrize("name", ["api_trace.txt", "api_configs.yaml"])
def test_a_merge_onto_a_full_disk(base, tmp_path, capsys, name):
    """The merged trace is written by Python, the summaries by the C++
    writers: each into a temporary file (.NAME.tmp) first, here a link to
    /dev/full, whose every write fails with ENOSPC."""
    directory = healthy(base, tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / f".{name}.tmp").symlink_to("/dev/full")
    assert main(["merge", str(directory), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    if name == "api_trace.txt":
        assert err == f"api-tracer: {out}/api_trace.txt: cannot write: No space left on device\n"
        assert sorted(os.listdir(out)) == []  # the temporary files are gone, nothing was put in place
    else:
        assert err == (
            f"api-tracer: {out}: cannot write the merged set: writing {out}/api_configs.yaml failed: "
            "No space left on device\n"
        )


# -- in subprocesses: FIFOs, a killed run ------------------------------------------------------


def cli(*args: str, cwd: Optional[Path] = None) -> subprocess.CompletedProcess:
    try:
        return run_cli(*args, cwd=cwd, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"api-tracer {' '.join(args)} blocked")


@pytest.mark.parametrize(
    "name,commands,link",
    [
        ("api_statistics.yaml", COMMANDS, False),
        ("api_trace.yaml", ("merge",), False),
        ("api_configs.yaml", ("report", "diff"), False),
        ("api_stacks.yaml", ("report",), True),
    ],
)
def test_a_fifo_blocks_nothing(base, tmp_path, name, commands, link):
    """A FIFO (or a link to one) where a file of the set should be: a
    reader that opened it would wait for a writer for ever."""
    directory = healthy(base, tmp_path)
    (directory / name).unlink()
    os.mkfifo(tmp_path / "fifo" if link else directory / name)
    if link:
        (directory / name).symlink_to(tmp_path / "fifo")
    for command in commands:
        r = cli(*argv_of(command, directory, tmp_path, base["merged"]))
        assert "Traceback" not in r.stderr
        assert (r.returncode, r.stderr) == (
            2,
            f"api-tracer: {directory / name}: a FIFO, not a regular file: only regular files are read\n",
        )


LOOP = """
import torch
from api_tracer import APITracer
with APITracer(output_path="out", levels=[0, 1], merge_output=True, snapshot_interval=0.1, record_stack=True):
    for i in range(10 ** 9):
        torch.add(torch.ones(i % 50 + 1), 1)
"""


def test_a_killed_run_merges_reports_and_counts(tmp_path, capsys):
    (tmp_path / "loop.py").write_text(LOOP)
    proc = subprocess.Popen(
        [sys.executable, "loop.py"], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        trace = tmp_path / "out" / "api_trace.yaml"
        deadline = time.monotonic() + 120
        while not (trace.exists() and trace.stat().st_size > 700_000):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    out = tmp_path / "out"
    for argv in (
        ["merge", str(out), "-o", str(tmp_path / "m")],
        ["stats", str(out)],
        ["report", str(out), "-o", str(tmp_path / "r.html")],
    ):
        assert main(argv) == 0
        err = capsys.readouterr().err
        assert "Traceback" not in err
        # a kill leaves api_trace.yaml ahead of api_trace.txt, or one of them cut
        assert all(line.startswith(f"api-tracer: warning: {out}/api_trace.txt:") for line in err.splitlines()), err
    check_agree(tmp_path / "m")
    assert len((tmp_path / "m" / "api_trace.txt").read_text().splitlines()) > 1000


@pytest.mark.parametrize(
    "content,message",
    [
        (b'{"rows": [1], "total_ns": 5}', "not a profile as Profile.export_json writes it (TypeError: "),
        (b'{"rows": [{"name": "m"}], "total_ns": 5}', "not a profile as Profile.export_json writes it (KeyError: "),
        (b'\xff{"rows": []}', "report: cannot read "),
        (b"[" * 100000, "report: cannot read "),
    ],
)
def test_a_damaged_profile(tmp_path, capsys, content, message):
    (tmp_path / "p.json").write_bytes(content)
    assert main(["report", str(tmp_path / "p.json"), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("api-tracer: ") and str(tmp_path / "p.json") in err
    assert message in err and not (tmp_path / "r.html").exists()


def test_a_link_to_a_set_directory_is_followed_once(base, tmp_path, capsys):
    top = tmp_path / "sets"
    top.mkdir()
    shutil.copytree(base["merged"], top / "rank-0")
    shutil.copytree(base["merged"], tmp_path / "elsewhere")
    (top / "rank-1").symlink_to(tmp_path / "elsewhere")  # left out without a word, before
    (top / "rank-2").symlink_to(top / "rank-0")  # the same set again: read once
    assert main(["merge", str(top), "-o", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().err == (
        f"api-tracer: warning: {top / 'rank-2'}: the directory {top / 'rank-0'} again (a link): read once\n"
    )
    one = (base["merged"] / "api_statistics.yaml").read_text().split("\n")[1]
    merged = (tmp_path / "out" / "api_statistics.yaml").read_text().split("\n")[1]
    assert int(merged.split(": ")[1]) == 2 * int(one.split(": ")[1])
