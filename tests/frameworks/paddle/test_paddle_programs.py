"""Real Paddle programs under the Paddle dialect (tests/programs/paddle_models.py:
ResNet-18 and MobileNetV2 of paddle.vision.models and a Transformer encoder
of paddle.nn, random weights, two training steps each, then evaluation).
Traced, each prints, writes to stderr and exits exactly as untraced; every
config level 0 recorded replays, and traces back to itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import PROGRAMS

pytest.importorskip("paddle")


OPTION_SETS = [[], ["--merge", "--value-ranges", "--stack", "short", "--show-requires-grad", "--show-device"]]


def run(tmp_path: Path, tracer: list) -> tuple:
    env = dict(os.environ, PYTHONHASHSEED="0")
    r = subprocess.run(
        [sys.executable, *tracer, "paddle_models.py"],
        cwd=PROGRAMS,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    return r.returncode, r.stdout, r.stderr


@pytest.fixture(scope="module")
def untraced(tmp_path_factory):
    result = run(tmp_path_factory.mktemp("untraced"), [])
    assert result[0] == 0 and "resnet18 eval" in result[1], result[2]
    return result


@pytest.mark.parametrize("options", OPTION_SETS, ids=["default", "all-options"])
def test_a_traced_paddle_program_prints_and_ends_as_untraced(tmp_path, untraced, options):
    out = tmp_path / "trace"
    traced = run(tmp_path, ["-m", "api_tracer", "run", "--dialect", "paddle", "-o", str(out), *options])
    assert traced == untraced
    configs = next(out.glob("api_configs*.yaml")).read_text().splitlines()
    # the APIs of every kind the program calls: functions, layers built and
    # called, Tensor methods, optimizers; a model's construction, and its
    # layers (made inside it, not configs of their own) written as the
    # constructor calls that made them
    for start in (
        "paddle.nn.functional.cross_entropy(",
        "paddle.vision.models.ResNet(",
        "paddle.nn.Conv2D.forward(paddle.nn.Conv2D(3, 64, 7, ",
        "paddle.nn.Linear.forward(",
        "paddle.nn.TransformerEncoder.forward(",
        "paddle.Tensor.backward(",
        "paddle.optimizer.AdamW(",
        "paddle.optimizer.Momentum(",
        "paddle.randint(",
    ):
        assert any(line.startswith(start) for line in configs), start
