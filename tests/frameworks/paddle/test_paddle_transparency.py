"""A traced Paddle program computes exactly what it computes untraced.

The programs of tests/programs/paddle_programs_more.py (a SqueezeNet fed by
a shuffling DataLoader, a Transformer encoder-decoder with greedy decoding,
a bidirectional LSTM and GRU tagger, auto_cast with a GradScaler and
bfloat16 tensors, paddle.jit.to_static and paddle.jit.save) run in fresh
processes, untraced and with the tracer they start themselves at every
Paddle level and at levels together, merged and not, started after the
model is built ("before") or before it is ("inside"). Each traced run must
print the same bytes (the losses' reprs, digests of the weights, of the
parameters' names, of the outputs, of the saved files, of every random
generator's state at the end), write the same stderr (less glog's stamped
lines), exit as it does untraced and save the same files, byte for byte.
And it must have recorded what its levels see, so that tracing nothing
cannot pass.

The matrix: on the cheapest program each level alone and all together,
started before or inside, merged or not; each other program at levels
0+1+2 started after its model is built (its layers and optimizer read
back). Two runs at a time.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from support import PROGRAMS

pytest.importorskip("paddle")

SCRIPT = "paddle_programs_more.py"
CHEAPEST = "seq2seq"
# the cheapest program's runs: each level alone and all together, started
# before or inside, merged or not
EVERY_COMBINATION = [
    ("inside", "0", False),
    ("before", "1", True),
    ("inside", "2", False),
    ("before", "0,1,2", False),
]
# each other program's: every level together, started before its model is built
SOME_COMBINATIONS = [("before", "0,1,2", True)]
# an API each program's level 1 sees only inside another public API (a layer's forward)
# (Conv2D.forward calls a private function, not paddle.nn.functional.conv2d)
NESTED = {
    "cnn": "paddle.nn.functional.max_pool2d",
    "seq2seq": "paddle.nn.functional.linear",
    "tagger": "paddle.nn.functional.linear",
    "amp": "paddle.nn.functional.linear",
    "to_static": "paddle.cast",  # (inside cross_entropy: the compiled forward runs a static program, quiet)
}
# a layer each program builds, whose construction level 0 records when it traces it ("inside")
BUILT = {
    "cnn": "paddle.vision.models.SqueezeNet",
    "seq2seq": "paddle.nn.Transformer",
    "tagger": "paddle.nn.LSTM",
    "amp": "paddle.nn.Conv2D",
    "to_static": "paddle.nn.Linear",
}
# glog's lines (Paddle's executors log them) hold the time and the thread id
GLOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ ")


def cases(program: str) -> list:
    """(mode, levels, merge_output) of each traced run of `program`."""
    return EVERY_COMBINATION if program == CHEAPEST else SOME_COMBINATIONS


def label(case: tuple | None) -> str:
    """A run's name: "untraced", "before-012-merge", "inside-0-split"."""
    if case is None:
        return "untraced"
    mode, levels, merge = case
    return f"{mode}-{levels.replace(',', '')}-{'merge' if merge else 'split'}"


def saved_files(directory: Path) -> dict:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def run(program: str, tmp_path: Path, case: tuple | None) -> tuple:
    """(exit status, stdout, stderr less glog's lines, the files saved)."""
    saved = tmp_path / f"saved-{label(case)}"
    saved.mkdir()
    tracing = ["untraced"]
    if case is not None:
        mode, levels, merge = case
        tracing = [mode, levels, "merge" if merge else "split", str(tmp_path / f"trace-{label(case)}")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("API_TRACER")}
    env.update(PYTHONHASHSEED="0", OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    r = subprocess.run(
        [sys.executable, SCRIPT, program, str(saved), *tracing],
        cwd=PROGRAMS,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    stderr = "".join(line for line in r.stderr.splitlines(keepends=True) if not GLOG.match(line))
    return r.returncode, r.stdout, stderr, saved_files(saved)


def recorded(trace: Path, levels: list, merge: bool) -> dict:
    """The APIs each level recorded, by level: from each level's own set,
    or from the merged set's records (each says its level when several
    levels were traced)."""
    assert trace.is_dir(), f"no output set in {trace}"
    if not merge:
        found = {}
        for level in levels:
            assert (trace / f"api_configs_level_{level}.yaml").read_text().strip(), level
            found[level] = set((trace / f"api_apis_level_{level}.txt").read_text().split())
        return found
    assert (trace / "api_configs.yaml").read_text().strip()
    records = (trace / "api_trace.yaml").read_text()
    if len(levels) == 1:
        return {levels[0]: set(re.findall(r"^- api: (\S+)$", records, re.M))}
    found = {level: set() for level in levels}
    for api, level in re.findall(r"^- api: (\S+)\n  level: (\d+)$", records, re.M):
        found[int(level)].add(api)
    return found


def assert_recorded(program: str, trace: Path, case: tuple) -> None:
    """The run recorded what its levels see: the program's own calls at
    level 0 (and neither a layer's functional calls nor operators), the
    model's construction there when it traced it, the functional calls of
    its layers at level 1, operators at level 2."""
    levels = [int(n) for n in case[1].split(",")]
    for level, apis in recorded(trace, levels, case[2]).items():
        operators = sorted(a for a in apis if a.startswith("paddle._C_ops."))
        if level == 0:
            assert "paddle.nn.functional.cross_entropy" in apis, (case, level, sorted(apis))
            assert NESTED[program] not in apis and not operators, (case, level, sorted(apis))
            assert (BUILT[program] in apis) == (case[0] == "inside"), (case, level, sorted(apis))
        elif level == 1:
            assert NESTED[program] in apis, (case, level, sorted(apis))
        else:
            assert operators, (case, level, sorted(apis))


def first_difference(untraced: str, traced: str) -> str:
    """The first line the traced run's text differs at, both ways."""
    for n, (a, b) in enumerate(zip(untraced.splitlines(), traced.splitlines()), 1):
        if a != b:
            return f"line {n}: untraced {a!r}, traced {b!r}"
    return f"untraced {len(untraced.splitlines())} lines, traced {len(traced.splitlines())}"


@pytest.mark.parametrize("program", ["seq2seq", "cnn", "tagger", "amp", "to_static"])
def test_a_traced_paddle_program_prints_saves_and_draws_as_untraced(tmp_path, program):
    runs = [None, *cases(program)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda case: run(program, tmp_path, case), runs))
    untraced = results[0]
    assert untraced[0] == 0 and "numpy rng" in untraced[1], untraced[2]
    assert untraced[3], "the program saved nothing"
    for case, traced in zip(runs[1:], results[1:]):
        assert traced[0] == untraced[0], (case, traced[2][-3000:])
        assert traced[1] == untraced[1], (case, first_difference(untraced[1], traced[1]))
        assert traced[2] == untraced[2], (case, first_difference(untraced[2], traced[2]))
        assert traced[3].keys() == untraced[3].keys(), case
        for name in untraced[3]:
            assert traced[3][name] == untraced[3][name], (case, name)
        assert_recorded(program, tmp_path / f"trace-{label(case)}", case)
