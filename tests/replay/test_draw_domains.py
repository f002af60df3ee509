"""Values drawn inside what the program or the operator allows: a sentinel
(an ignore_index of -100) is drawn as itself or the others from their own
range, never a value between (draw.py); a floating argument of an operator
whose domain replay knows (probabilities, non-negative rates, variances,
positive-definite matrices, sorted boundaries: draw.py's DOMAINS) is drawn inside
it, with or without a profile (the profile's range wins), torch's and
Paddle's alike; one whose domain replay does not know is still skipped,
saying the domain."""

import pytest
import torch

from api_tracer import _C, APITracer
from api_tracer.formats.configs import ranges_beside, read_config_file
from api_tracer.formats.summaries import read_value_profiles, read_value_ranges
from api_tracer.replay import Config, ReplayOptions, prepare, replay_one, run_in_process
from api_tracer.replay.draw import (
    IN_ORDER,
    LOWER_BOUND,
    NON_NEGATIVE,
    NONZERO_DIVISOR,
    POSITIVE_COUNT,
    POSITIVE_DEFINITE,
    PROBABILITIES,
    UPPER_BOUND,
    argument_domains,
    draw,
)

# A causal LM's shifted labels, padded with ignore_index=-100, as a GPT-2 trace profiles them.
LABELS = 'torch.ops.aten.nll_loss_forward.default(Tensor([64, 497], "float32"), Tensor([64], "int64"), None, 1, -100)'
LABELS_PROFILE = f"""\
- config: {LABELS}
  ranges:
    args[1]: [-100, 496]
  sentinels:
    args[1]:
      values: [-100]
      rest: [2, 496]
  sums:
    args[1]: 5669
"""


def labels_profile(tmp_path, text=LABELS_PROFILE):
    path = tmp_path / "api_value_ranges.yaml"
    path.write_text(text)
    return read_value_profiles(str(path))


def outside(values, sentinels, lo, hi):
    return [v for v in values.tolist() if v not in sentinels and not lo <= v <= hi]


@pytest.mark.parametrize("total", [5669, -3760, 31148])  # as traced; most of them sentinels; nearly none
def test_a_sentinel_is_drawn_as_itself_never_between_it_and_the_others(tmp_path, total):
    """Drawn targets of nll_loss were moved toward their sum inside the
    whole range [-100, 496]: one landed between (-73), out of bounds. A
    sum the others alone cannot meet turns sentinels into others, or back."""
    profiles = labels_profile(tmp_path, LABELS_PROFILE.replace("5669", str(total)))
    [p] = profiles[LABELS].values()
    for seed in range(40):
        for keep_sum in (False, True):
            values = draw(p, 64, torch.Generator().manual_seed(seed), keep_sum=keep_sum)
            assert outside(values, [-100], 2, 496) == [], (seed, keep_sum)
            assert not keep_sum or int(values.sum()) == total
        assert (values == -100).any() or total > 0


def test_distinct_values_with_a_sentinel_keep_it_apart_too():
    p = _C.ValueProfile.of([-100, 3, 5, 7, -100, 3, 7, 7])
    assert (p.many, list(p.negatives), p.nonneg_min, p.same_sum) == (False, [-100], 3, True)
    for seed in range(40):
        values = draw(p, 8, torch.Generator().manual_seed(seed), keep_sum=True)
        assert outside(values, [-100], 3, 7) == [] and int(values.sum()) == p.sum, seed


@pytest.mark.parametrize("level", [2, 3])
def test_labels_padded_with_ignore_index_replay_at_every_seed(tmp_path, level):
    """A traced cross_entropy over labels padded with -100 (a causal LM's
    loss): its nll_loss and cross_entropy operators replay from the
    profile at every seed (they failed at some, "Target -73 is out of
    bounds")."""
    torch.manual_seed(0)
    logits, labels = torch.randn(64, 50), torch.randint(0, 50, (64,))
    labels[40:] = -100
    with APITracer(output_path=str(tmp_path), levels=level, merge_output=True, value_ranges=True):
        torch.nn.functional.cross_entropy(logits, labels)
    path = str(tmp_path / "api_configs.yaml")
    ranges = read_value_ranges(ranges_beside(path))
    configs = [c for c in read_config_file(path) if "loss" in c.text.split("(")[0]]
    assert configs and all(any(p.negatives == [-100] for p in ranges[c.text].values()) for c in configs)
    for seed in range(8):
        results = run_in_process(configs, ReplayOptions(ranges=ranges, seed=seed), lambda r: None)
        assert [(r.config, r.message) for r in results if r.status != "ok"] == [], seed


# -- known domains ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "api, path, domain",
    [
        ("torch.multinomial", "args[0]", NON_NEGATIVE),
        ("torch.Tensor.multinomial", "args[0]", NON_NEGATIVE),
        ("torch.ops.aten.multinomial.default", "kwargs.self", NON_NEGATIVE),
        ("torch.bernoulli", "args[0]", PROBABILITIES),
        ("torch.ops.aten.bernoulli_.Tensor", "args[1]", PROBABILITIES),
        ("torch.Tensor.bernoulli_", "kwargs.p", PROBABILITIES),
        ("torch.nn.functional.binary_cross_entropy", "kwargs.target", PROBABILITIES),
        ("torch._C._nn.binary_cross_entropy", "args[1]", PROBABILITIES),
        ("torch.nn.BCELoss.forward", "args[2]", PROBABILITIES),
        ("torch.nn.GaussianNLLLoss.forward", "args[3]", NON_NEGATIVE),
        ("torch.normal", "args[1]", NON_NEGATIVE),
        ("torch.ops.aten.normal.float_Tensor", "kwargs.std", NON_NEGATIVE),
        ("torch.linalg.cholesky", "args[0]", POSITIVE_DEFINITE),
        ("torch._C._linalg.linalg_cholesky_ex", "args[0]", POSITIVE_DEFINITE),
        ("torch.ops.aten.linalg_cholesky_ex.default", "args[0]", POSITIVE_DEFINITE),
        ("torch.Tensor.cholesky_solve", "args[1]", POSITIVE_DEFINITE),
        ("torch.ops.aten.searchsorted.Tensor", "args[0]", IN_ORDER),
        ("torch.bucketize", "kwargs.boundaries", IN_ORDER),
        ("paddle.multinomial", "kwargs.x", NON_NEGATIVE),
        ("paddle.Tensor.bernoulli_", "args[1]", PROBABILITIES),
        ("paddle.nn.functional.binary_cross_entropy", "kwargs.label", PROBABILITIES),
        ("paddle.nn.BCELoss.forward", "args[2]", PROBABILITIES),
        ("paddle.linalg.cholesky", "args[0]", POSITIVE_DEFINITE),
        ("paddle.nn.functional.gaussian_nll_loss", "kwargs.variance", NON_NEGATIVE),
        ("paddle.linalg.cov", "args[4]", NON_NEGATIVE),
        ("torch.topk", "args[1]", POSITIVE_COUNT),
        ("paddle.topk", "kwargs.k", POSITIVE_COUNT),
        ("paddle.Tensor.kthvalue", "args[1]", POSITIVE_COUNT),
        ("torch.ops.aten.remainder.Tensor", "args[1]", NONZERO_DIVISOR),
        ("torch.Tensor.floor_divide_", "kwargs.other", NONZERO_DIVISOR),
        ("paddle.Tensor.__floordiv__", "args[1]", NONZERO_DIVISOR),
        ("paddle.Tensor.__mod__", "args[1]", NONZERO_DIVISOR),
        ("paddle.floor_mod", "kwargs.y", NONZERO_DIVISOR),
        ("paddle.clip", "kwargs.min", LOWER_BOUND),
        ("paddle.Tensor.clip", "args[2]", UPPER_BOUND),
        ("torch.clamp", "kwargs.max", UPPER_BOUND),
        ("torch.add", "args[0]", None),
        ("paddle.Tensor.__add__", "args[1]", None),
        ("paddle.Tensor.__rfloordiv__", "args[1]", None),
        ("torch.Tensor.__getitem__", "args[0]", None),
        ("torch.nn.init.normal_", "args[1]", None),
        ("torch.ops.aten.poisson_nll_loss.default", "args[0]", None),
    ],
)
def test_every_levels_name_of_an_operator_finds_its_domain(api, path, domain):
    assert argument_domains(api).get(path) is domain


# The configs of torch's operators of a known domain, as levels 0 to 3 write them, skipped
# (or failed) when drawn from N(0, 1): with the check of what each one's argument holds.
def probabilities(t):
    return bool(((t >= 0) & (t <= 1)).all())


def non_negative(t):
    return bool((t >= 0).all())


def positive_definite(t):
    return bool((torch.linalg.eigvalsh(t.double()) > 0).all())


def in_order(t):
    return bool((t.diff(dim=-1) >= 0).all())


T46, T33 = 'Tensor([4, 6], "float32")', 'Tensor([3, 3], "float32")'
TORCH_LINES = [
    (f"torch.multinomial({T46}, 3)", 0, non_negative),
    (f"torch.Tensor.multinomial({T46}, 2, replacement=True)", 0, non_negative),
    (f"torch.ops.aten.multinomial.default({T46}, 2, True)", 0, non_negative),
    (f"torch.bernoulli({T46})", 0, probabilities),
    (f"torch.ops.aten.bernoulli.default({T46})", 0, probabilities),
    (f"torch.Tensor.bernoulli_({T46}, {T46})", 1, probabilities),
    (f"torch.ops.aten.bernoulli_.Tensor({T46}, {T46})", 1, probabilities),
    (f'torch.nn.functional.binary_cross_entropy({T46}, {T46}, weight=None, reduction="mean")', 0, probabilities),
    (f"torch.ops.aten.binary_cross_entropy.default({T46}, {T46})", 1, probabilities),
    (f"torch.nn.BCELoss.forward(torch.nn.BCELoss(), {T46}, {T46})", 1, probabilities),
    (f"torch.poisson({T46})", 0, non_negative),
    (f"torch.ops.aten.poisson.default({T46})", 0, non_negative),
    (
        'torch.normal(Tensor([5], "float32"), Tensor([5], "float32", storage_offset=0, storage_size=24))',
        1,
        non_negative,
    ),
    ('torch.ops.aten.normal.Tensor_Tensor(Tensor([5], "float32"), Tensor([5], "float32"))', 1, non_negative),
    (
        'torch.nn.functional.gaussian_nll_loss(Tensor([5, 2], "float32"), Tensor([5, 2], "float32"), '
        'Tensor([5, 2], "float32"), full=False, eps=1e-06, reduction="mean")',
        2,
        non_negative,
    ),
    (
        'torch.nn.GaussianNLLLoss.forward(torch.nn.GaussianNLLLoss(), Tensor([5, 2], "float32"), '
        'Tensor([5, 2], "float32"), Tensor([5, 2], "float32"))',
        3,
        non_negative,
    ),
    (f"torch.linalg.cholesky({T33})", 0, positive_definite),
    ('torch.ops.aten.linalg_cholesky.default(Tensor([2, 4, 4], "float64"))', 0, positive_definite),
    (
        'torch.cholesky_solve(Tensor([3, 2], "float32"), Tensor([3, 3], "float32", stride=[1, 3]))',
        1,
        positive_definite,
    ),
    ('torch.bucketize(Tensor([10], "float32"), Tensor([7], "float32"))', 1, in_order),
    ('torch.ops.aten.searchsorted.Tensor(Tensor([3, 7], "float32"), Tensor([3, 4], "float32"))', 0, in_order),
    ('torch.topk(Tensor([9], "float32"), Tensor([], "int64"))', 1, lambda t: bool((t >= 1).all())),
    ('torch.floor_divide(Tensor([3, 4], "int64"), Tensor([3, 4], "int64"))', 1, lambda t: bool((t != 0).all())),
    ('torch.ops.aten.remainder.Tensor(Tensor([8], "int32"), Tensor([8], "int32"))', 1, lambda t: bool((t != 0).all())),
    (f"torch.clamp({T46}, {T46}, {T46})", 1, lambda t: bool((t <= 0).all())),
    (f"torch.clamp({T46}, {T46}, {T46})", 2, lambda t: bool((t >= 0).all())),
]


def test_known_domains_are_drawn_inside_and_their_configs_replay():
    configs = [Config("x", i + 1, line) for i, (line, _, _) in enumerate(TORCH_LINES)]
    for config, (line, i, holds) in zip(configs, TORCH_LINES):
        _, _, args, _ = prepare(config)
        assert holds(args[i]), line
    results = run_in_process(configs, ReplayOptions(), lambda r: None)
    assert [(r.config, r.message) for r in results if r.status != "ok"] == []
    checked = replay_one(Config("x", 1, f"torch.linalg.cholesky({T33})"), ReplayOptions(check="float64"))
    assert (checked.status, checked.compared) == ("ok", "values"), checked  # both sides hold the same matrix


def floats(lo, hi):
    p = _C.ValueProfile()
    p.valid = p.floating = p.finite = True
    p.fmin, p.fmax = lo, hi
    return p


def test_a_floating_profile_wins_and_a_structure_is_imposed_on_its_draws():
    line, matrix = f"torch.bernoulli({T46})", f"torch.linalg.cholesky({T33})"
    ranges = {line: {"args[0]": floats(0.25, 0.5)}, matrix: {"args[0]": floats(-1.0, 1.0)}}
    _, _, args, _ = prepare(Config("x", 1, line), ReplayOptions(ranges=ranges))
    assert 0.25 <= float(args[0].min()) and float(args[0].max()) <= 0.5
    _, _, args, _ = prepare(Config("x", 1, matrix), ReplayOptions(ranges=ranges))
    assert positive_definite(args[0])


@torch.library.custom_op("drawdomains::cholesky_of", mutates_args=())
def cholesky_of(x: torch.Tensor) -> torch.Tensor:
    return torch.linalg.cholesky(x)  # an operator of the user's: its domain is not replay's to know


def test_a_domain_replay_does_not_know_is_still_skipped_saying_it():
    """A config whose drawn values fall outside what the operator takes is
    not the operator's failure: skipped, saying the domain, and whether a
    floating profile could have helped."""
    r = replay_one(
        Config("x", 1, f"torch.ops.drawdomains.cholesky_of.default({T33})"), ReplayOptions(allow_unsafe=True)
    )
    assert r.status == "skipped" and r.message.startswith(
        "inputs outside the operator's domain (a positive-definite matrix), drawn from N(0, 1): no floating profile"
    ), r
    r = replay_one(Config("x", 1, 'torch.set_rng_state(Tensor([5056], "uint8"))'))  # no profile keeps a state
    assert (
        r.status == "skipped"
        and "(a generator state torch made (get_rng_state), not any bytes), drawn at "
        "random: no value profile keeps that"
        in r.message
    ), r
    r = replay_one(Config("x", 1, "torch.ones(2, -1)"))  # any other error stays the operator's
    assert r.status == "failed"


PADDLE_LINES = [
    f"paddle.multinomial({T46}, 3)",
    f"paddle.Tensor.multinomial({T46}, 2, True)",
    f"paddle.bernoulli({T46})",
    f"paddle.Tensor.bernoulli_({T46}, {T46})",
    f"paddle.nn.functional.binary_cross_entropy({T46}, {T46})",
    f"paddle.nn.BCELoss.forward(paddle.nn.BCELoss(), {T46}, {T46})",
    f"paddle.linalg.cholesky({T33})",
    'paddle.Tensor.cholesky(Tensor([2, 3, 3], "float64"))',
    'paddle.nn.functional.gaussian_nll_loss(Tensor([5, 2], "float32"), Tensor([5, 2], "float32"), '
    'Tensor([5, 2], "float32"))',
    'paddle.linalg.cov(Tensor([2, 5], "float32"), aweights=Tensor([5], "float32"))',
    # PaddleAPITest's lines (tester/api_config), which failed drawn as zeros or from N(0, 1):
    # "the attribute of k in the topk must >= 1", "Integer division by zero", "max should be
    # greater than or equal to min"
    'paddle.topk(Tensor([4154], "float32"), k=Tensor([], "int64"), largest=False)',
    'paddle.floor_divide(Tensor([3, 1], "int32"), Tensor([3, 1], "int32"))',
    'paddle.Tensor.__floordiv__(Tensor([10, 20], "int32"), Tensor([10, 20], "int32"))',
    'paddle.remainder(Tensor([4, 4], "int64"), Tensor([1], "int64"))',
    'paddle.Tensor.__mod__(Tensor([4], "int32"), Tensor([4], "int32"))',
    'paddle.clip(x=Tensor([3, 3], "float64"), min=Tensor([1], "float64"), max=Tensor([1], "float64"))',
]


def test_paddles_operators_of_a_known_domain_replay():
    """Drawn from N(0, 1), each of these failed in Paddle's own checks
    ("The input of multinomial distribution should be >= 0", "Cholesky
    decomposition was not successful", ...)."""
    pytest.importorskip("paddle")
    configs = [Config("x", i + 1, line) for i, line in enumerate(PADDLE_LINES)]
    results = run_in_process(configs, ReplayOptions(dialect="paddle"), lambda r: None)
    assert [(r.config, r.message) for r in results if r.status != "ok"] == []
