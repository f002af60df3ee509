"""replay --check float64 on elementwise functions, both ways: every unary
and binary elementwise function of torch (its own OpInfo list), forward and
backward, in float32, float16 and bfloat16, over the usual draw and the
regions where such kernels go wrong (draw.REGIONS), passes but for the
torch defects the sets name; the planted elementwise defects (right in
absolute terms, wrong relative to the result) are caught but for the few
half precision cannot tell (support/elementwise_sets.py)."""

import math
import subprocess
import sys

import pytest
import torch

from api_tracer.replay import Config, ReplayOptions, replay_one, run_in_process
from api_tracer.replay.draw import REGIONS, region_floats
from support import elementwise_sets as sets


def judge(lines):
    """((line, backward), Result) of each line, --check float64."""
    out = []
    for backward in (False, True):
        group = [line for line, b in lines if b == backward]
        configs = [Config("elementwise", i + 1, line) for i, line in enumerate(group)]
        options = ReplayOptions(check="float64", backward=backward, imports=("planted_defects",))
        out += [((c.text, backward), r) for c, r in zip(configs, run_in_process(configs, options, lambda r: None))]
    return out


@pytest.mark.parametrize("split", ["tuning", "held_out"])
def test_torch_elementwise_kernels_pass_but_its_known_defects(split):
    lines = sets.correct(split)
    results = judge(lines)
    assert len(results) == len(lines) > 300
    found = {key for key, r in results if r.status != "ok"}
    expected = set(lines) & set(sets.torch_defects())
    assert found == expected, (sorted(found - expected), sorted(expected - found))
    for line, r in results:
        if line in expected:
            assert r.status == "mismatch" and "past the error model's bound" in r.message, (line, r.message)
        else:
            assert r.measure in ("error model", "exact") and r.excess < 1, (line, r.message)


@pytest.mark.parametrize("split", ["tuning", "held_out"])
def test_planted_elementwise_defects_are_caught_but_what_half_precision_cannot_tell(split):
    results = judge(sets.defects(split))
    missed = {line for (line, _), r in results if r.status != "mismatch"}
    assert missed == {line for line, _ in sets.defects(split) if line in sets.KNOWN_MISSES}
    assert all('"float32"' not in line for line in missed)
    for (line, _), r in results:
        if r.status == "mismatch":
            assert "past the error model's bound" in r.message, (line, r.message)


def test_the_issues_kernels_sigmoid_and_erfc_by_cancellation_are_mismatches_on_the_tails():
    for name in ("sigmoid_cancel", "erfc_cancel"):
        line = f'torch.ops.defects.{name}.default(Tensor([64, 1024], "float32"))'
        (r,) = [r for _, r in judge([(line, False)])]
        assert r.status == "mismatch", r.message


def test_torchs_gelu_tail_is_a_mismatch_by_hundreds_not_a_near_miss():
    # the issue's row: torch 2.13's vectorized GELU computes x/2 (1 + erf(x/sqrt 2)) (1.08x of the old bound)
    r = replay_one(
        Config("x", 1, 'torch.nn.functional.gelu(Tensor([64, 1024], "float32"))'), ReplayOptions(check="float64")
    )
    assert r.status == "mismatch" and r.excess > 100, r.message
    r = replay_one(Config("x", 1, 'torch.special.erfc(Tensor([64, 1024], "float32"))'), ReplayOptions(check="float64"))
    assert r.status == "ok" and r.excess < 1, r.message


def test_a_region_draw_keeps_inside_a_value_profile():
    class Profile:
        floating, finite, fmin, fmax = True, True, -0.5, 2.0

    for region in REGIONS:
        values = region_floats(region, Profile(), 4096, torch.Generator().manual_seed(0), torch.float32)
        assert values.min() >= -0.5 and values.max() <= 2.0
    tails = region_floats("tails", None, 4096, torch.Generator().manual_seed(0), torch.float32)
    assert 2 <= tails.abs().min() and tails.abs().max() <= 100 and (tails < 0).any() and (tails > 0).any()
    extremes = region_floats("extremes", None, 4096, torch.Generator().manual_seed(0), torch.float16)
    info = torch.finfo(torch.float16)
    assert extremes.min() >= info.tiny**0.5 and extremes.max() ** 2 <= info.max


def test_a_call_that_is_not_elementwise_is_judged_on_the_usual_draw_alone():
    r = replay_one(
        Config("x", 1, 'torch.mm(Tensor([8, 300], "float32"), Tensor([300, 4], "float32"))'),
        ReplayOptions(check="float64"),
    )
    assert r.status == "ok" and "draw" not in r.message, r.message


@pytest.mark.parametrize(
    "line",
    [
        'torch.cosh(Tensor([4099], "float32"))',
        'torch.nn.functional.gelu(Tensor([4099], "float32"))',
        'torch.nn.functional.softsign(Tensor([4099], "float32"))',
    ],
)
def test_a_torch_defects_reproducer_shows_it_in_plain_torch(line, tmp_path):
    backward = "softsign" in line
    (r,) = [r for _, r in judge([(line, backward)])]
    script = tmp_path / "repro.py"
    script.write_text(sets.reproducer(line, r.message) + "\n")
    out = subprocess.run([sys.executable, "-I", str(script)], capture_output=True, text=True, check=True).stdout
    mine, _, reference = out.strip().partition(" for ")
    mine, reference = float(mine), float(reference)
    assert math.isinf(mine) or abs(mine - reference) > 8 * abs(reference) * 2**-24, out
