"""api-tracer replay and --check float64 of Paddle's config files: lines
replayed (ok, failed, skipped, invalid, as torch's), the framework read from
the file's names or given (--dialect), the policy (Paddle's allow-list less
its denied families, each with its reason; the kernels that index without
looking, checked first), values across the boundary (torch's draws made
paddle tensors, paddle's outputs made torch tensors), and the judge
measured both ways: Paddle's own kernels must pass, the planted defects of
this module (replayed as the user's own code: --import test_replay_paddle)
must fail.

The planted defects are functions of this module: each is right in float64
and wrong in float32 the way kernels go wrong (one wrong element, a few
hundred ulps, a dropped term, a narrow accumulation, a wrong epsilon, an
approximated function, a wrong divisor)."""

import json
import os
import subprocess
import sys

import pytest

from support import PROGRAMS, TESTS, run_cli
from support import write_lines as write

paddle = pytest.importorskip("paddle")
import paddle.nn.functional as F  # noqa: E402 - after importorskip("paddle")
import torch  # noqa: E402 - after importorskip("paddle")

from api_tracer.formats.configs import read_config_file  # noqa: E402 - after importorskip("paddle")
from api_tracer.frameworks.paddle import policy as paddle_policy  # noqa: E402 - after importorskip("paddle")
from api_tracer.frameworks.paddle.replay import PaddleResolver  # noqa: E402 - after importorskip("paddle")
from api_tracer.frameworks.paddle.tensors import to_paddle, to_torch  # noqa: E402
from api_tracer.replay import Config, ReplayOptions, replay_one, roundtrip, run_in_process  # noqa: E402 - after importorskip("paddle")
from api_tracer.replay.framework import MixedFile, file_framework  # noqa: E402 - after importorskip("paddle")
from api_tracer.replay.results import Invalid, Skip  # noqa: E402 - after importorskip("paddle")

HERE = os.path.dirname(os.path.abspath(__file__))
ME = "test_replay_paddle"  # this module, as --import names it


# -- planted defects -----------------------------------------------------------


def _exact(x):
    return x.dtype == paddle.float64


def _one_wrong(y, at, factor):
    flat = y.reshape([-1]).clone()
    i = int(flat.shape[0] * at)
    flat[i] = flat[i] * factor
    return flat.reshape(y.shape)


def matmul_one_off(a, b):
    """matmul, one element of thousands off by 1e-3 relative."""
    y = paddle.matmul(a, b)
    return y if _exact(a) else _one_wrong(y, 0.5, 1 + 1e-3)


def softmax_ulps(x):
    """softmax, every element off by 1000 units in float32's last place."""
    y = F.softmax(x, axis=-1)
    return y if _exact(x) else y * (1 + 1000 * 2.0**-24)


def conv_dropped(x, w):
    """conv2d that drops the last tap of every kernel."""
    if not _exact(x):
        mask = paddle.ones_like(w)
        mask[:, :, -1, -1] = 0
        w = w * mask
    return F.conv2d(x, w, padding=1)


def sum_narrow(x):
    """A sum whose running total is rounded to float16 after each block of 64."""
    if _exact(x):
        return x.sum()
    acc = paddle.zeros([], dtype="float32")
    for block in paddle.split(x.reshape([-1]), int(x.shape[0]) // 64):
        acc = (acc + block.sum()).astype("float16").astype("float32")
    return acc


def matmul_bf16(a, b):
    """matmul of inputs rounded to bfloat16."""
    if _exact(a):
        return paddle.matmul(a, b)
    return paddle.matmul(a.astype("bfloat16").astype("float32"), b.astype("bfloat16").astype("float32"))


def layer_norm_eps(x):
    """layer norm with an epsilon of 1e-3 for 1e-5."""
    return F.layer_norm(x, x.shape[-1:], epsilon=1e-5 if _exact(x) else 1e-3)


def gelu_tanh(x):
    """GELU by the tanh approximation for erf."""
    return F.gelu(x, approximate=not _exact(x))


def exp_approx(x):
    """exp off by up to 2e-4 relative (a short polynomial's error)."""
    y = paddle.exp(x)
    return y if _exact(x) else y * (1 + 2e-4 * paddle.cos(37 * x))


def var_biased(x):
    """The unbiased variance divided by n, not n - 1."""
    return paddle.var(x, axis=-1, unbiased=_exact(x))


def linear_bias_last(x, w, b):
    """linear that leaves out the bias of its last output."""
    if not _exact(x):
        mask = paddle.ones_like(b)
        mask[-1] = 0
        b = b * mask
    return F.linear(x, w, b)


def cumsum_narrow(x):
    """A running sum over blocks of 64, the carry between blocks rounded to bfloat16."""
    if _exact(x):
        return paddle.cumsum(x, axis=-1)
    rows, n = x.shape
    blocks = paddle.cumsum(x.reshape([rows, n // 64, 64]), axis=-1)
    carry = (paddle.cumsum(blocks[:, :, -1], axis=-1) - blocks[:, :, -1]).astype("bfloat16").astype("float32")
    return (blocks + carry.unsqueeze(-1)).reshape([rows, n])


def tanh_one_wrong(x):
    """tanh, one element off by 0.1%."""
    y = paddle.tanh(x)
    return y if _exact(x) else _one_wrong(y, 1 / 3, 1.001)


def rsqrt_newton(x):
    """1/sqrt as one Newton step from a 1% guess."""
    if _exact(x):
        return paddle.rsqrt(x)
    y = paddle.rsqrt(x) * (1 + 1e-2)
    return y * (1.5 - 0.5 * x * y * y)


def matmul_dropped(a, b):
    """matmul that leaves out the last term of the inner sum."""
    return paddle.matmul(a, b) if _exact(a) else paddle.matmul(a[:, :-1], b[:-1])


def softmax_half_sum(x):
    """softmax, its denominator summed in float16."""
    if _exact(x):
        return F.softmax(x, axis=-1)
    e = paddle.exp(x - x.max(axis=-1, keepdim=True))
    return e / e.astype("float16").sum(axis=-1, keepdim=True).astype("float32")


def mean_off_by_one(x):
    """A mean divided by n + 1."""
    return paddle.mean(x, axis=-1) if _exact(x) else x.sum(axis=-1) / (x.shape[-1] + 1)


# held out: written after the rest were judged, judged once
def dot_half(a, b):
    """A dot product accumulated in float16 blocks of 256."""
    if _exact(a):
        return paddle.dot(a, b)
    parts = (a * b).reshape([-1, 256]).sum(axis=1)
    acc = paddle.zeros([], dtype="float32")
    for i in range(int(parts.shape[0])):
        acc = (acc + parts[i]).astype("float16").astype("float32")
    return acc


def softplus_log(x):
    """softplus as log(1 + exp(x)), not log1p."""
    return F.softplus(x) if _exact(x) else paddle.log(1 + paddle.exp(x))


def conv_half_weights(x, w):
    """conv2d of weights rounded to float16."""
    return F.conv2d(x, w if _exact(x) else w.astype("float16").astype("float32"), padding=2)


def layer_norm_unbiased(x):
    """layer norm dividing its variance by n - 1."""
    if _exact(x):
        return F.layer_norm(x, x.shape[-1:])
    mean = x.mean(axis=-1, keepdim=True)
    var = ((x - mean) ** 2).sum(axis=-1, keepdim=True) / (x.shape[-1] - 1)
    return (x - mean) / paddle.sqrt(var + 1e-5)


def sigmoid_half(x):
    """sigmoid whose exp is computed in float16."""
    if _exact(x):
        return F.sigmoid(x)
    return 1 / (1 + paddle.exp(-x.astype("float16")).astype("float32"))


class HalfInputSoftmax(paddle.nn.Layer):
    """A layer of the user's with a precision defect: float32 inputs
    rounded to float16 before a softmax."""

    def forward(self, x):
        if x.dtype == paddle.float32:
            x = x.astype("float16").astype("float32")
        return F.softmax(x, -1)


class Softmax(paddle.nn.Layer):
    """Its correct twin."""

    def forward(self, x):
        return F.softmax(x, -1)


def T(shape, dtype="float32"):
    return f'Tensor({list(shape)}, "{dtype}")'


# The judge's sets. "development": judged while replay's Paddle side was
# written (the error model is torch's, unchanged: nothing was tuned on
# them); "held_out": written after, judged once, as they came.
CORRECT = {
    "development": [
        f"paddle.matmul({T((64, 500))}, {T((500, 64))})",
        f"paddle.matmul({T((4, 64, 1000))}, {T((4, 1000, 64))})",
        f"paddle.matmul({T((128, 256))}, {T((64, 256))}, transpose_y=True)",
        f"paddle.matmul({T((1, 4096))}, {T((4096, 32))})",
        f"paddle.bmm({T((4, 33, 77))}, {T((4, 77, 19))})",
        f"paddle.nn.functional.linear({T((32, 768))}, {T((768, 256))}, {T((256,))})",
        f"paddle.nn.functional.conv2d({T((2, 16, 32, 32))}, {T((32, 16, 3, 3))}, padding=1)",
        f"paddle.nn.functional.conv2d({T((1, 3, 64, 64))}, {T((8, 3, 7, 7))}, stride=2, padding=3)",
        f"paddle.nn.functional.conv2d({T((2, 32, 16, 16))}, {T((32, 1, 3, 3))}, padding=1, groups=32)",
        f"paddle.nn.functional.conv1d({T((4, 8, 100))}, {T((16, 8, 5))})",
        f"paddle.nn.functional.softmax({T((32, 1000))})",
        f"paddle.nn.functional.softmax({T((4, 8, 64, 64))}, axis=-1)",
        f"paddle.nn.functional.log_softmax({T((64, 500))})",
        f"paddle.nn.functional.layer_norm({T((8, 64, 768))}, [768])",
        f"paddle.nn.functional.layer_norm({T((16, 1024))}, [1024], {T((1024,))}, {T((1024,))})",
        f"paddle.sum({T((262144,))})",
        f"paddle.sum({T((256, 1024))}, axis=1)",
        f"paddle.mean({T((512, 512))})",
        f"paddle.mean({T((64, 3000))}, axis=-1)",
        f"paddle.exp({T((20000,))})",
        f"paddle.tanh({T((20000,))})",
        f"paddle.nn.functional.gelu({T((4096,))})",
        f"paddle.nn.functional.sigmoid({T((10000,))})",
        f"paddle.nn.functional.silu({T((10000,))})",
        f"paddle.sqrt(Filled({T((1000,))}, 2.5))",
        f"paddle.add({T((256, 256))}, {T((256,))})",
        f"paddle.Tensor.__add__({T((512, 64))}, 1.5)",
        f"paddle.Tensor.__matmul__({T((50, 300))}, {T((300, 40))})",
        f"paddle.linalg.norm({T((262144,))})",
        f"paddle.cumsum({T((16, 2048))}, axis=1)",
        f"paddle.nn.functional.cross_entropy({T((64, 1000))}, {T((64,), 'int64')})",
        f"paddle.nn.functional.batch_norm({T((8, 16, 10, 10))}, {T((16,))}, {T((16,))}, training=True)",
        f"paddle.nn.Linear.forward(paddle.nn.Linear(512, 256), {T((64, 512))})",
        f"paddle.nn.Conv2D.forward(paddle.nn.Conv2D(8, 16, 3, padding=1), {T((2, 8, 20, 20))})",
        f"paddle.nn.LayerNorm.forward(paddle.nn.LayerNorm(384), {T((4, 50, 384))})",
        f'paddle.einsum("bij,bjk->bik", {T((4, 64, 128))}, {T((4, 128, 32))})',
        f"paddle.nn.functional.scaled_dot_product_attention({T((2, 64, 4, 32))}, {T((2, 64, 4, 32))}, "
        f"{T((2, 64, 4, 32))})",
        f"paddle.var({T((128, 1000))}, axis=1)",
        f"paddle.logsumexp({T((64, 2000))}, axis=1)",
        f"paddle.nn.functional.normalize({T((64, 512))})",
    ],
    "held_out": [
        f"paddle.matmul({T((96, 333))}, {T((333, 77))})",
        f"paddle.nn.functional.conv2d({T((1, 24, 28, 28))}, {T((48, 24, 5, 5))}, padding=2)",
        f"paddle.nn.functional.conv2d_transpose({T((1, 16, 8, 8))}, {T((16, 8, 4, 4))}, stride=2, padding=1)",
        f"paddle.nn.functional.softmax({T((16, 4096))}, axis=1)",
        f"paddle.nn.functional.layer_norm({T((32, 2048))}, [2048])",
        f"paddle.nn.functional.instance_norm({T((2, 8, 16, 16))})",
        f"paddle.prod({T((64, 16))}, axis=1)",
        f"paddle.std({T((256, 300))}, axis=0)",
        f"paddle.nn.functional.log_sigmoid({T((5000,))})",
        f"paddle.nn.functional.softplus({T((5000,))})",
        f"paddle.nn.functional.mse_loss({T((128, 64))}, {T((128, 64))})",
        f"paddle.nn.functional.avg_pool2d({T((2, 16, 32, 32))}, 2)",
        f"paddle.nn.functional.max_pool2d({T((2, 16, 32, 32))}, 3, stride=2, padding=1)",
        f"paddle.outer({T((300,))}, {T((200,))})",
        f"paddle.dot({T((10000,))}, {T((10000,))})",
        f"paddle.nn.functional.cosine_similarity({T((64, 256))}, {T((64, 256))})",
        f"paddle.linalg.vector_norm({T((512, 512))}, p=2, axis=1)",
        f"paddle.sin({T((20000,))})",
        f"paddle.erf({T((20000,))})",
        f"paddle.addmm({T((64, 64))}, {T((64, 200))}, {T((200, 64))})",
        f"paddle.nn.Linear.forward(paddle.nn.Linear(1024, 128), {T((16, 1024))})",
    ],
}
DEFECTS = {
    "development": [
        f"{ME}.matmul_one_off({T((64, 256))}, {T((256, 64))})",
        f"{ME}.softmax_ulps({T((32, 500))})",
        f"{ME}.conv_dropped({T((2, 8, 16, 16))}, {T((16, 8, 3, 3))})",
        f"{ME}.sum_narrow({T((65536,))})",
        f"{ME}.matmul_bf16({T((64, 256))}, {T((256, 64))})",
        f"{ME}.layer_norm_eps({T((16, 512))})",
        f"{ME}.gelu_tanh({T((4096,))})",
        f"{ME}.exp_approx({T((4096,))})",
        f"{ME}.var_biased({T((64, 1000))})",
        f"{ME}.linear_bias_last({T((32, 128))}, {T((128, 64))}, {T((64,))})",
        f"{ME}.cumsum_narrow({T((8, 1024))})",
        f"{ME}.tanh_one_wrong({T((4096,))})",
        f"{ME}.rsqrt_newton(Filled({T((1024,))}, 3.0))",
        f"{ME}.matmul_dropped({T((64, 256))}, {T((256, 64))})",
        f"{ME}.softmax_half_sum({T((32, 500))})",
        f"{ME}.mean_off_by_one({T((64, 1000))})",
    ],
    "held_out": [
        f"{ME}.dot_half({T((8192,))}, {T((8192,))})",
        f"{ME}.softplus_log({T((5000,))})",
        f"{ME}.conv_half_weights({T((1, 24, 28, 28))}, {T((48, 24, 5, 5))})",
        f"{ME}.layer_norm_unbiased({T((32, 256))})",
        f"{ME}.sigmoid_half({T((5000,))})",
    ],
}
# What the judge does not find, measured. (softplus_log, missed on its one judging, is caught since an
# elementwise output is held to its result: its error shows where exp(x) is far below u.)
KNOWN_MISSES: dict = {}
# Paddle's own kernels the judge finds wrong since it holds an elementwise output to its result, over the
# regions (issue 37): listed, not loosened away.
PADDLE_DEFECTS = {
    f"paddle.nn.functional.gelu({T((4096,))})": (
        "flushes results far above the smallest normal to 0 in its negative tail (-2.5e-37 for x near -88)"
    ),
    f"paddle.nn.functional.silu({T((10000,))})": (
        "flushes results far above the smallest normal to 0 in its negative tail (-2.5e-37 for x near -88)"
    ),
    # (the two share softplus's log(1 + exp(x)))
    f"paddle.nn.functional.log_sigmoid({T((5000,))})": (
        "a few units in the last place past the bound (1.27x) on 6 of 5,000 elements of N(0, 1)"
    ),
    f"paddle.nn.functional.softplus({T((5000,))})": (
        "a few units in the last place past the bound (1.27x) on 3 of 5,000 elements of N(0, 1)"
    ),
}
# Paddle's float32 tanh is an approximation (5.3 ulps from the float64 result
# at worst on [-10, 10], torch's 0.56): its output stays within the error
# model's bound, but the gradient made from it, 1 - tanh(x)^2, is 8 times as
# far from float64's as torch's where tanh(x) is near 1. Found by --backward
# (against torch) on the development split.
PADDLE_GRADIENT_DEFECTS = {f"paddle.tanh({T((20000,))})"}
PADDLE = ReplayOptions(dialect="paddle")


def judge(lines, **options):
    configs = [Config("judge", i + 1, line) for i, line in enumerate(lines)]
    opts = ReplayOptions(check="float64", dialect="paddle", imports=(ME,), **options)
    return [(c.text, r) for c, r in zip(configs, run_in_process(configs, opts, lambda r: None))]


def replay(line, **options):
    return replay_one(Config("x", 1, line), ReplayOptions(**{"dialect": "paddle", **options}))


def cli(*args, **kwargs):
    # (this module is the user's code some lines name: importing it imports support, in tests/)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([HERE, str(TESTS), os.environ.get("PYTHONPATH", "")])}
    return run_cli(*map(str, args), env=env, **kwargs)


# -- the judge -----------------------------------------------------------------


@pytest.mark.parametrize("split", sorted(CORRECT))
def test_paddles_own_kernels_pass_the_float64_check(split):
    results = judge(CORRECT[split])
    assert len(results) == len(CORRECT[split]) >= 20
    wrong = {line for line, r in results if r.status != "ok"}
    assert wrong == set(CORRECT[split]) & set(PADDLE_DEFECTS), [
        (line, r.message) for line, r in results if line in wrong
    ]
    assert all(r.status == "mismatch" for line, r in results if line in wrong)
    assert all(
        r.measure in ("error model", "exact") and r.compared == "values" and r.excess < 1
        for line, r in results
        if line not in wrong
    )


@pytest.mark.parametrize("split", sorted(CORRECT))
def test_paddles_own_gradients_pass_the_float64_check(split):
    # what the forward saved moved through Paddle's saved-tensor hooks, as the error model asks
    results = judge(CORRECT[split], backward=True)
    wrong = {line for line, r in results if r.status != "ok"}
    assert wrong == set(CORRECT[split]) & (set(PADDLE_DEFECTS) | PADDLE_GRADIENT_DEFECTS), [
        (line, r.message) for line, r in results if line in wrong
    ]
    assert all(
        r.status == "mismatch" and "the gradient of args[0]" in r.message
        for line, r in results
        if line in PADDLE_GRADIENT_DEFECTS
    )


@pytest.mark.parametrize("split", sorted(DEFECTS))
def test_planted_defects_are_mismatches(split):
    results = judge(DEFECTS[split])
    assert len(results) == len(DEFECTS[split]) >= 5
    missed = {line for line, r in results if r.status != "mismatch"}
    assert missed == {line for line in DEFECTS[split] if line in KNOWN_MISSES}, missed
    assert all("past the error model's bound" in r.message for line, r in results if line not in missed)
    assert all(r.status == "ok" and r.measure == "error model" for line, r in results if line in missed)


def test_a_layer_of_layers_is_judged_with_its_sublayers_roundings(monkeypatch):
    """A Sequential's output carries each sublayer's rounding, which what
    follows may amplify: the error model allows them (error_model.Sublayers,
    normwise). A correct composite passes with room to spare, and a defect
    in one of its layers is still found."""
    from api_tracer.replay.judge import error_model

    good = (
        f"paddle.nn.Sequential.forward(paddle.nn.Sequential(paddle.nn.Linear(64, 64), {ME}.Softmax()), {T((32, 64))})"
    )
    bad = good.replace(f"{ME}.Softmax()", f"{ME}.HalfInputSoftmax()")
    results = dict(judge([good, bad]))
    assert results[good].status == "ok", results[good].message
    assert results[bad].status == "mismatch" and results[bad].excess > 5, results[bad].message
    monkeypatch.setattr(error_model, "C_LAYERS", 0.0)
    assert dict(judge([good]))[good].excess > results[good].excess  # (the term is there, and counts)


def test_a_paddle_float64_reference_holds_the_very_same_numbers():
    """Each side builds its values from the seed, drawn as torch's replay
    draws them: the float32 side's inputs are the float64 side's, rounded."""
    line = f"paddle.assign({T((3, 4))})"
    r = replay(line, check="float64")
    assert (r.status, r.compared, r.max_abs_error) == ("ok", "values", 0.0), r
    # and they are what torch's replay draws for the same description
    from api_tracer.replay import prepare

    _, _, args, _ = prepare(Config("x", 1, line), PADDLE)
    from api_tracer.replay import prepare as torch_prepare

    _, _, targs, _ = torch_prepare(Config("x", 1, f"torch.clone({T((3, 4))})"))
    assert torch.equal(to_torch(args[0]), targs[0])


# -- lines replayed ------------------------------------------------------------


def test_paddle_lines_replay_ok_failed_skipped_and_invalid(tmp_path):
    lines = {
        f"paddle.concat([{T((3, 5))}, {T((3, 5))}], axis=0)": "ok",
        f"paddle.Tensor.__add__({T((6, 5))}, 1)": "ok",
        f"paddle.nn.functional.conv2d({T((1, 3, 8, 8))}, {T((4, 3, 3, 3))}, padding=1)": "ok",
        f"paddle.nn.Linear.forward(paddle.nn.Linear(4, 5), {T((3, 4))})": "ok",
        f"paddle.nn.Dropout.forward(Eval(paddle.nn.Dropout(p=0.5)), {T((10,))})": "ok",
        f"paddle.cast({T((2, 3), 'int64')}, paddle.float32)": "ok",
        f"paddle.cast({T((2, 3), 'int64')}, numpy.float32)": "ok",  # their type(numpy.float32): a dtype
        f"paddle.cast({T((2, 3), 'int64')}, numpy.fromfile)": "invalid",  # not a numpy scalar type
        "paddle.to_tensor([1.0, 2.0], place=paddle.CPUPlace())": "ok",
        f"paddle.matmul({T((3, 4))}, {T((5, 2))})": "failed",  # shapes that do not multiply
        f"paddle.nn.functional.relu({T((4, 3), 'float16')})": "skipped",  # no CPU kernel for float16
        f'paddle.nn.Linear.forward(Module("paddle.nn.Linear"), {T((3, 4))})': "skipped",
        f'paddle.nn.Linear.forward(Module("mypkg.Net"), {T((3, 4))})': "skipped",
        'paddle.add(Opaque("T"), 1)': "skipped",
        f"paddle.no_such_function({T((3,))})": "refused",  # (not in the allow-list)
        f"paddle.save({T((3,))}, 'x.pdparams')": "refused",
        f"torch.add({T((3,))}, 1)": "refused",
        'os.system("touch PWNED")': "refused",
        f"paddle.Tensor.__class__({T((3,))})": "refused",
        "paddle.os.system('touch PWNED')": "refused",
        f"paddle.add({T((3,))}, Callable('builtins.exec'))": "refused",
        "paddle.add(": "invalid",
    }
    path = write(tmp_path, list(lines))
    results = run_in_process([Config(str(path), i + 1, line) for i, line in enumerate(lines)], PADDLE, lambda r: None)
    assert [(r.config, r.status) for r in results] == list(lines.items())
    by_line = {r.config: r for r in results}
    assert by_line[f"paddle.matmul({T((3, 4))}, {T((5, 2))})"].error in ("ValueError", "RuntimeError")
    assert (
        'Module("paddle.nn.Linear"): the tracer could not read this paddle.nn layer'
        in by_line[f'paddle.nn.Linear.forward(Module("paddle.nn.Linear"), {T((3, 4))})'].message
    )
    assert (
        "torch.add is refused: it is not in replay's allow-list of Paddle's computing APIs"
        in by_line[f"torch.add({T((3,))}, 1)"].message
    )
    assert by_line[f"paddle.nn.functional.relu({T((4, 3), 'float16')})"].message.startswith(
        "no kernel: Paddle has no CPU kernel `relu` for float16: RuntimeError: (NotFound)"
    )
    assert all(r.message for r in results if r.status != "ok")
    assert not (tmp_path / "PWNED").exists() and not os.path.exists("PWNED")


def test_layers_get_the_same_weights_on_every_side_and_named_parameters_build_twice():
    line = (
        f'paddle.nn.Linear.forward(paddle.nn.Linear(4, 5, weight_attr=paddle.ParamAttr(name="w", '
        f"initializer=paddle.nn.initializer.Constant(value=0.5))), {T((3, 4))})"
    )
    for _ in range(2):  # (paddle refuses a parameter name twice a process: each side has its own names)
        r = replay(line, check="float64")
        assert (r.status, r.compared) == ("ok", "values"), r
    r = replay(f"paddle.nn.Linear.forward(paddle.nn.Linear(64, 32), {T((8, 64))})", check="repeat")
    assert (r.status, r.compared) == ("ok", "values"), r


def test_random_calls_are_compared_by_shapes_only_and_say_so():
    for line, api in (
        (f"paddle.nn.functional.dropout({T((100,))}, 0.5)", "paddle.nn.functional.dropout"),
        (f"paddle.nn.Dropout.forward(paddle.nn.Dropout(p=0.5), {T((100,))})", "paddle.nn.Dropout.forward"),
        ("paddle.randn([3, 4])", "paddle.randn"),
        # memory as allocated: Paddle does not fill it (was a mismatch of 100% of the elements)
        (f"paddle.empty_like({T((2,), 'int32')}, dtype=numpy.int64)", "paddle.empty_like: memory as allocated"),
    ):
        r = replay(line, check="float64")
        assert (r.status, r.compared) == ("ok", "shapes"), r
        assert r.message.startswith(f"random ({api}): compared shapes, dtypes and devices only"), r.message
    # the same draw twice is the same; memory as allocated is not (was 100% of its elements differing)
    assert replay(f"paddle.nn.functional.dropout({T((100,))}, 0.5)", check="repeat").compared == "values"
    r = replay(f"paddle.empty_like({T((2,), 'int32')}, dtype=numpy.int64)", check="repeat")
    assert (r.status, r.compared) == ("ok", "shapes"), r
    # no draw, no random: dropout of 0, and in evaluation mode
    for line in (
        f"paddle.nn.functional.dropout({T((100,))}, 0.0)",
        f"paddle.nn.Dropout.forward(Eval(paddle.nn.Dropout(p=0.5)), {T((100,))})",
    ):
        assert replay(line, check="float64").compared == "values"


def test_grad_mode_and_the_generator_are_put_back():
    state = paddle.get_rng_state()
    assert replay("paddle.set_grad_enabled(False)").status == "ok"
    assert paddle.is_grad_enabled()
    assert replay(f"paddle.nn.functional.dropout({T((100,))}, 0.5)").status == "ok"
    after = paddle.rand([8]).numpy()  # what the program draws next: as if replay had not drawn
    paddle.set_rng_state(state)
    assert (paddle.rand([8]).numpy() == after).all()


# -- values across the boundary ------------------------------------------------


@pytest.mark.parametrize(
    "dtype",
    [
        "float32",
        "float64",
        "float16",
        "bfloat16",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "bool",
        "complex64",
        "complex128",
    ],
)
def test_tensors_cross_to_paddle_and_back_with_their_values(dtype):
    t = (torch.randn(3, 5) * 100).to(getattr(torch, dtype))
    p = to_paddle(t)
    assert str(p.dtype) == f"paddle.{dtype}" and list(p.shape) == [3, 5]
    back = to_torch(p)
    assert back.dtype == t.dtype and torch.equal(back, t)
    assert to_torch([p, (p,), {"k": p}])[2]["k"].dtype == t.dtype


def test_strides_offsets_and_requires_grad_cross_to_paddle():
    base = torch.arange(24, dtype=torch.float32)
    view = base.as_strided((3, 4), (1, 3), 5).requires_grad_(True)
    p = to_paddle(view)
    assert list(p.strides) == [1, 3] and not p.stop_gradient
    assert torch.equal(to_torch(p), view.detach())
    expanded = torch.randn(1, 4).expand(3, 4)
    assert torch.equal(to_torch(to_paddle(expanded)), expanded)
    r = replay(f'paddle.matmul(Tensor([3, 4], "float32", stride=[1, 3]), {T((4, 2))})', check="float64")
    assert (r.status, r.compared) == ("ok", "values"), r


def test_check_outputs_of_every_dtype_are_converted_and_compared():
    lines = [
        f"paddle.cast({T((64,))}, paddle.float16)",
        f'paddle.cast({T((64,))}, "bfloat16")',
        f"paddle.argmax({T((8, 10))}, axis=1)",
        f"paddle.greater_than({T((8, 10))}, {T((8, 10))})",
        f"paddle.as_complex({T((8, 2))})",
        f"paddle.fft.fft({T((64,))})",
        f"paddle.topk({T((8, 10))}, 3)",
        f'paddle.cast({T((16,), "bfloat16")}, "float32")',
        f"paddle.cast({T((16,), 'float16')}, paddle.float32)",
        f"paddle.abs({T((16,), 'complex64')})",
        f"paddle.sum({T((3, 4), 'int32')}, axis=0)",
        f"paddle.logical_not({T((3, 4), 'bool')})",
        f"paddle.sum({T((300,))}, dtype=paddle.float32)",  # a dtype naming the input's follows it to float64
        f'paddle.sum({T((300,))}, dtype="float32")',
    ]
    results = judge(lines)
    assert [(line, r.status, r.compared) for line, r in results] == [(line, "ok", "values") for line in lines]
    r = replay("paddle.nn.Linear(4, 5)", check="repeat")  # a layer returned: its state_dict
    assert (r.status, sorted(r.hashes)) == ("ok", ["output['bias']", "output['weight']"]), r
    values, indices = to_torch(paddle.topk(paddle.to_tensor([[1.0, 3.0, 2.0]]), 2))
    assert indices.dtype == torch.int64 and indices.tolist() == [[1, 2]] and values.dtype == torch.float32
    assert to_torch(paddle.float16) is torch.float16 and to_torch(paddle.CPUPlace()) == "Place(cpu)"


# -- the policy ----------------------------------------------------------------

# One name of each denied family, as a line.
DENIED_LINES = {
    "reads or writes files": f"paddle.save({T((3,))}, 'x.pdparams')",
    "downloads files": 'paddle.hub.load("repo", "model")',
    "trains, saves and loads whole models": 'paddle.Model(Opaque("Net"))',
    "loads, builds or imports code": 'paddle.utils.try_import("os")',
    "starts processes or threads": 'paddle.io.DataLoader(Opaque("Dataset"))',
    "creates shared memory": f"paddle.Tensor._share_memory({T((3,))})",
    "views a window of memory": f"paddle.as_strided({T((12,))}, [4], [1000000])",
    "changes process-wide state: devices": 'paddle.set_device("cpu")',
    "changes process-wide state: flags": 'paddle.set_flags({"FLAGS_check_nan_inf": True})',
    "changes process-wide state: the random generators": "paddle.seed(1)",
    "prints": "paddle.summary(paddle.nn.Linear(4, 5), (1, 4))",
    "talks to other processes": "paddle.distributed.init_parallel_env()",
    "compiles or traces programs": 'paddle.jit.to_static(Callable("paddle.add"))',
}


def test_every_denied_family_has_a_line_here_and_each_is_refused_with_its_reason():
    assert sorted(k for k in DENIED_LINES) == sorted(
        next(k for k in DENIED_LINES if reason.startswith(k)) for reason in paddle_policy.DENIED
    )
    for family, line in DENIED_LINES.items():
        r = replay(line)
        assert r.status == "refused" and f"is refused: it {family}" in r.message, (line, r.message)
        assert r.column == 1


def test_the_denied_names_are_paddles_and_the_computing_apis_are_allowed():
    for patterns in paddle_policy.DENIED.values():
        for pattern in patterns:
            if not any(c in pattern for c in "*?["):
                obj = paddle
                for part in pattern.split(".")[1:]:
                    obj = getattr(obj, part)  # (raises where this paddle has no such name)
    allowed = paddle_policy.allow_list()
    for name in (
        "paddle.add",
        "paddle.matmul",
        "paddle.concat",
        "paddle.nn.functional.relu",
        "paddle.nn.functional.conv2d",
        "paddle.nn.functional.linear",
        "paddle.Tensor.__add__",
        "paddle.nn.Linear",
        "paddle.nn.Linear.forward",
        "paddle.CPUPlace",
        "paddle.ParamAttr",
        "paddle.nn.initializer.Constant",
    ):
        assert name in allowed and paddle_policy.refusal(name) is None, name
    assert len(allowed) > 1000
    resolver = PaddleResolver()
    unresolved = []
    for name in sorted(allowed):
        try:
            resolver.resolve(name, name)
        except (Invalid, Skip) as e:
            unresolved.append((name, str(e)))
    assert not unresolved, unresolved
    # Paddle's eager operators are replayable (level 2 records them), less
    # the families that must not run from an untrusted file; other private
    # names stay refused.
    assert paddle_policy.refusal("paddle._C_ops.add") is None
    assert "reads files" in paddle_policy.refusal("paddle._C_ops.read_file")
    assert "not one of Paddle's eager operators" in paddle_policy.refusal("paddle._C_ops.no_such_operator")
    assert "it is private" in paddle_policy.refusal("paddle.tensor._private_helper")


# PaddleAPITest's corpus calls computing APIs outside the tracer's list: a
# line of each family replay refuses, with its reason.
NOT_REPLAYED_LINES = {
    "takes boxes counted per image": f"paddle.vision.ops.roi_align({T((1, 3, 8, 8))}, {T((2, 4))}, "
    f"{T((1,), 'int32')}, 2)",
    "takes sparse tensors": f"paddle.sparse.sin({T((4, 4))})",
    "decodes image bytes": f"paddle.vision.ops.decode_jpeg({T((100,), 'uint8')})",
    "lists an object's attribute names": f"paddle.Tensor.__dir__({T((3,))})",
}


def test_the_corpus_computing_apis_are_allowed_or_refused_with_their_reason():
    assert sorted(NOT_REPLAYED_LINES) == sorted(
        next(k for k in NOT_REPLAYED_LINES if reason.startswith(k)) for reason in paddle_policy.NOT_REPLAYED
    )
    for family, line in NOT_REPLAYED_LINES.items():
        r = replay(line)
        assert r.status == "refused" and f"is refused: it {family}" in r.message, (line, r.message)
    assert all(paddle_policy.refusal(name) is None for name in paddle_policy.REVIEWED)
    # (the test above resolves every allowed name in this paddle); a GPU-only operator is skipped, said
    r = replay(f"paddle.incubate.nn.functional.fused_bias_act({T((8, 16))}, None, act_method='swiglu')")
    assert r.status == "skipped" and r.message.startswith(
        "no kernel: this build of Paddle has no CPU kernel `fused_bias_act`"
    ), r.message
    for line in (
        f"paddle.geometric.segment_sum({T((3, 3))}, {T((3,), 'int32')})",
        f"paddle.geometric.send_u_recv({T((3, 3))}, {T((5,), 'int32')}, {T((5,), 'int32')}, 'max')",
        f"paddle.nn.utils.vector_to_parameters({T((9,))}, [{T((2, 3))}, {T((3,))}])",
        "paddle.audio.functional.get_window('hann', 8)",
    ):
        assert replay(line, check="float64").status == "ok", line


def test_backward_kernels_whose_python_binding_gives_no_outputs_are_refused():
    """Level 2 records the backward kernels the engine calls from C++; where
    the kernel's outputs are a list, Paddle's own Python binding of it passes
    none (concat_grad raises, stack_grad segfaults): each such kernel of
    the generated wrappers is refused, with the reason, and no other."""
    import re

    wrappers = (TESTS.parent / "csrc" / "paddle" / "backward_wrappers.inc").read_text()
    listed = {
        m.group(1) for m in re.finditer(r"static void \(\*(o_\d+)\)\([^;]*std::vector<paddle::Tensor\*>\);", wrappers)
    }
    table = re.finditer(
        r'\{"[^"]+", "(\w+)", reinterpret_cast<void\*>\(&w_\d+\), reinterpret_cast<void\*\*>\(&(o_\d+)\)\}', wrappers
    )
    expected = {name for name, slot in (m.groups() for m in table) if slot in listed}
    reason = "Paddle's Python binding of this backward kernel gives it no outputs"
    refused = {
        name
        for name in paddle_policy.operator_names()
        if reason in (paddle_policy.refusal(f"paddle._C_ops.{name}") or "")
    }
    assert "concat_grad" in expected and "stack_grad" in expected
    assert refused == expected & paddle_policy.operator_names()
    line = f"paddle._C_ops.concat_grad([{T((4, 2))}, {T((4, 2))}], {T((4, 4))}, 1)"
    result = replay_one(Config("x", 1, line), ReplayOptions(dialect="paddle"))
    assert result.status == "refused" and reason in result.message, (result.status, result.message)


def test_kernels_that_index_without_looking_get_their_indices_checked():
    lines = {
        f"paddle.Tensor.__getitem__({T((12,))}, Filled({T((1,), 'int64')}, "
        f"12))": "the key: the index 12 is out of range for dimension 0 of size 12",
        f"paddle.Tensor.__setitem__({T((3, 4))}, (1, Filled({T((1,), 'int64')}, -5)), "
        f"1.0)": "the key: the index -5 is out of range for dimension 1 of size 4",
        f"paddle.Tensor.__getitem__({T((3, 4))}, (..., Filled({T((2,), 'int64')}, "
        f"4)))": "the index 4 is out of range for dimension 1 of size 4",
        f"paddle.index_put({T((12,))}, [Filled({T((1,), 'int64')}, -13)], "
        f"{T((1,))})": "indices: the index -13 is out of range for dimension 0 of size 12",
        f"paddle.index_put({T((3, 4))}, [{T((2,), 'bool')}], "
        f"{T((1,))})": "a boolean mask of shape [2] for the dimensions [3]",
        f"paddle.index_fill({T((12,))}, Filled({T((1,), 'int64')}, -13), 0, "
        f"1.0)": "index: -13 is out of range for axis 0 of size 12",
        f"paddle.select_scatter({T((3, 4))}, {T((4,))}, 0, 100000)": "index: 100000 is out of range for axis 0",
        f"paddle.nn.functional.ctc_loss({T((5, 1, 3))}, Filled({T((1, 1), 'int32')}, 7), "
        f"Filled({T((1,), 'int64')}, 5), Filled({T((1,), 'int64')}, 1))": "labels must be in [0, 2]",
        f"paddle.nn.functional.hsigmoid_loss({T((4, 3))}, Filled({T((4,), 'int64')}, 100000), 6, "
        f"{T((5, 3))})": "label must be classes in [0, 6)",
        f"paddle.nn.functional.hsigmoid_loss({T((4, 3))}, Filled({T((4,), 'int64')}, 2), 6, {T((5, 3))}, None, "
        f"Filled({T((4, 3), 'int64')}, 5), Filled({T((4, 3), 'int64')}, 1))": "path_table must hold a path per row",
        f"paddle.nn.functional.rnnt_loss({T((2, 5, 4, 6))}, Filled({T((2, 3), 'int32')}, 1), "
        f"Filled({T((2,), 'int32')}, 500), Filled({T((2,), 'int32')}, 3))": "input_lengths must be in [1, 5]",
        f"paddle.nn.functional.rnnt_loss({T((2, 5, 4, 6))}, Filled({T((2, 3), 'int32')}, 1), "
        f"Filled({T((2,), 'int32')}, 5), Filled({T((2,), 'int32')}, 300))": "label_lengths must be in [0, 3]",
        f"paddle.nn.functional.max_unpool3d({T((1, 1, 1, 1, 2))}, Filled({T((1, 1, 1, 1, 2), 'int32')}, -1), "
        "2)": "indices must be positions of 0 or more",
        f"paddle.linalg.lu_solve({T((3, 1))}, {T((3, 3))}, Filled({T((3,), 'int32')}, 100000))": "pivots must be rows",
        f"paddle.geometric.send_ue_recv({T((4, 3))}, {T((3, 3))}, Filled({T((3,), 'int64')}, 4), "
        f"{T((3,), 'int64')})": "src_index must be rows of x in [0, 4)",
        f"paddle.geometric.send_uv({T((4, 3))}, {T((2, 3))}, {T((3,), 'int64')}, "
        f"Filled({T((3,), 'int64')}, 2))": "dst_index must be rows of y in [0, 2)",
        f"paddle.geometric.sample_neighbors({T((4,), 'int64')}, Filled({T((5,), 'int64')}, 9), "
        f"{T((2,), 'int64')})": "colptr must be offsets in order within row's 4 entries",
        f"paddle.geometric.sample_neighbors({T((4,), 'int64')}, {T((5,), 'int64')}, "
        f"Filled({T((2,), 'int64')}, 4), 2)": "input_nodes must be nodes in [0, 4)",
        f"paddle.geometric.sample_neighbors({T((4,), 'int64')}, {T((5,), 'int64')}, "
        f"{T((2,), 'int64')})": "sample_size=-1: Paddle 3.3's CPU kernel aborts on all neighbours",
    }
    for line, why in lines.items():
        r = replay(line)
        assert r.status == "invalid" and why in r.message, (line, r.message)
    for line in (
        f"paddle.Tensor.__getitem__({T((12,))}, Filled({T((1,), 'int64')}, -12))",
        f"paddle.index_put({T((3, 4))}, [{T((3,), 'bool')}], {T((1,))})",
        f"paddle.Tensor.__getitem__({T((3, 4))}, (..., Filled({T((2,), 'int64')}, 3)))",
        f"paddle.nn.functional.hsigmoid_loss({T((4, 3))}, Filled({T((4,), 'int64')}, 2), 6, {T((5, 3))})",
        f"paddle.nn.functional.hsigmoid_loss({T((4, 3))}, Filled({T((4,), 'int64')}, 2), 6, {T((5, 3))}, None, "
        f"Filled({T((4, 3), 'int64')}, 4), Filled({T((4, 3), 'int64')}, 1))",
        f"paddle.nn.functional.rnnt_loss({T((2, 5, 4, 6))}, Filled({T((2, 3), 'int32')}, 1), "
        f"Filled({T((2,), 'int32')}, 5), Filled({T((2,), 'int32')}, 3))",
        f"paddle.nn.functional.max_unpool3d({T((1, 1, 1, 1, 2))}, Filled({T((1, 1, 1, 1, 2), 'int32')}, 1), 2)",
        f"paddle.linalg.lu_solve({T((3, 1))}, {T((3, 3))}, Filled({T((3,), 'int32')}, 2))",
        f"paddle.geometric.send_ue_recv({T((4, 3))}, {T((3, 3))}, Filled({T((3,), 'int64')}, 3), {T((3,), 'int64')})",
        f"paddle.geometric.sample_neighbors({T((4,), 'int64')}, {T((5,), 'int64')}, Filled({T((2,), 'int64')}, 3), 2)",
    ):
        assert replay(line).status == "ok", line


def test_the_probes_that_show_those_kernels_trust_their_indices(tmp_path):
    """Without the checks (--allow-unsafe), each of these kills the process
    that runs it, or hangs it (heap corruption: glibc aborts, or Paddle's
    own fatal-signal handler never returns): --isolate keeps each to its
    worker."""
    lines = [
        f"paddle.index_put({T((12,))}, [Filled({T((1,), 'int64')}, -13)], {T((1,))})",
        f"paddle.index_fill({T((12,))}, Filled({T((1,), 'int64')}, -13), 0, 1.0)",
        f"paddle.Tensor.__setitem__({T((12,))}, Filled({T((1,), 'int64')}, -13), 5.0)",
        f"paddle.as_strided({T((12,))}, [4], [{10**12}])",
        f"paddle.nn.functional.hsigmoid_loss({T((4, 3))}, Filled({T((4,), 'int64')}, {10**12}), 6, {T((5, 3))})",
        f"paddle.nn.functional.rnnt_loss({T((2, 5, 4, 6))}, Filled({T((2, 3), 'int32')}, 1), "
        f"Filled({T((2,), 'int32')}, 5), Filled({T((2,), 'int32')}, 300))",
        f"paddle.geometric.send_uv({T((4, 3))}, {T((4, 3))}, {T((3,), 'int64')}, Filled({T((3,), 'int64')}, {10**12}))",
        f"paddle.geometric.sample_neighbors({T((4,), 'int64')}, {T((5,), 'int64')}, "
        f"Filled({T((2,), 'int64')}, {10**12}), 2)",
        # a million boxes per image where there are 3 (0 per image: a crash 1 run in 2, else unnoticed)
        f"paddle.vision.ops.roi_align({T((2, 3, 8, 8))}, {T((3, 4))}, Filled({T((2,), 'int32')}, {10**6}), 2)",
        f"paddle.geometric.sample_neighbors({T((4,), 'int64')}, {T((5,), 'int64')}, {T((2,), 'int64')})",
    ]  # (far enough to be unmapped: a label of 100000 read memory that was there, 1 run in 6)
    path = write(tmp_path, lines)
    r = cli("replay", path, "--allow-unsafe", "--jobs", "2", "--timeout", "5", "-o", tmp_path / "r.jsonl", timeout=120)
    results = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert len(results) == len(lines) and all(
        x["status"] == "failed" and x["error"] in ("WorkerCrashed", "Timeout") for x in results
    ), r.stdout


# -- the framework of a file ---------------------------------------------------


def test_the_framework_is_read_from_the_files_names_or_given(tmp_path):
    paddle_lines = [Config("f", 1, "os.system(1)"), Config("f", 2, f"paddle.add({T((3,))}, 1)")]
    torch_lines = [Config("f", 1, f"torch.add({T((3,))}, 1)")]
    assert file_framework(paddle_lines) == "paddle" and file_framework(torch_lines) == "torch"
    assert file_framework([Config("f", 1, "mymodule.f(1)")]) == "torch"  # none named: torch's, as ever
    assert file_framework(torch_lines, "paddle") == "paddle"
    with pytest.raises(MixedFile, match=r"f:3: a torch line in a file of paddle lines \(f:2 is paddle's\)"):
        file_framework(paddle_lines + [Config("f", 3, f"torch.add({T((3,))}, 1)")])
    # a line alone: its own API decides
    assert replay_one(Config("x", 1, f"paddle.add({T((3,))}, {T((3,))})")).status == "ok"


def test_the_cli_replays_paddle_files_and_refuses_mixed_ones_and_torchs_modes(tmp_path):
    path = write(tmp_path, [f"paddle.add({T((3,))}, {T((3,))})", f"paddle.matmul({T((4, 8))}, {T((8, 2))})"])
    r = cli("replay", path, "--check", "float64")
    assert r.returncode == 0 and "2 configs (checked against float64): 2 ok" in r.stdout, (r.stdout, r.stderr)
    assert "ccache" not in r.stderr
    mixed = write(tmp_path, [f"paddle.add({T((3,))}, {T((3,))})", "", f"torch.add({T((3,))}, 1)"], "mixed.txt")
    r = cli("replay", mixed)
    assert r.returncode == 2
    assert f"replay: {mixed}:3: a torch line in a file of paddle lines ({mixed}:1 is paddle's)" in r.stderr
    r = cli("replay", mixed, "--dialect", "paddle")
    assert r.returncode == 0 and "1 ok" in r.stdout and "1 refused" in r.stdout
    assert "refused: 1 x torch.add is refused: it is not in replay's allow-list of Paddle's" in r.stdout
    for flags, said in (
        (["--check", "compile"], "--check compile: Paddle's configs are checked by float64 or repeat"),
    ):
        r = cli("replay", path, *flags)
        assert r.returncode == 2 and said in r.stderr, r.stderr


def test_the_users_functions_are_called_only_when_imported_on_the_command_line(tmp_path):
    path = write(tmp_path, [DEFECTS["development"][0], DEFECTS["development"][6]])
    r = cli("replay", path, "--dialect", "paddle", "--strict")
    assert (
        r.returncode == 1
        and "0 ok" in r.stdout
        and f"{ME}.matmul_one_off is refused: it is not in replay's allow-list of Paddle's computing APIs" in r.stdout
    )
    r = cli("replay", path, "--dialect", "paddle", "--import", ME, "--check", "float64", "--isolate")
    assert r.returncode == 1 and "2 configs (checked against float64): 0 ok, 2 mismatch" in r.stdout, r.stdout
    assert f"loaded --import {ME}" in r.stdout
    # and a name that leads out of the user's module is still refused
    r = replay(f"{ME}.os.system('touch PWNED')", imports=(ME,))
    assert r.status == "invalid" and "leads out of test_replay_paddle" in r.message, r.message


# -- the round trip, and a real program -----------------------------------------


def test_tracing_a_paddle_replay_gives_back_the_config():
    lines = [
        f"paddle.concat([{T((3, 5))}, {T((3, 5))}], axis=0)",
        f"paddle.Tensor.__add__({T((6, 5))}, 1)",
        f"paddle.nn.functional.conv2d({T((1, 3, 8, 8))}, {T((4, 3, 3, 3))}, padding=1)",
        f"paddle.nn.Linear.forward(paddle.nn.Linear(4, 5), {T((3, 4))})",
        f"paddle.cast({T((2, 3), 'int64')}, paddle.float32)",
        f'paddle.matmul(Tensor([3, 4], "float32", stride=[1, 3]), {T((4, 2))})',
        # a block of paddle.vision, its norm layer a partial (MobileNetV3's)
        "paddle.nn.Sequential.forward(paddle.vision.ops.ConvNormActivation(3, 8, norm_layer=functools.partial("
        f"paddle.nn.BatchNorm2D, epsilon=0.001, momentum=0.99)), {T((1, 3, 8, 8))})",
    ]
    problems = [(c.text, why) for c, why in roundtrip([Config("x", i, text) for i, text in enumerate(lines)], 0) if why]
    assert problems == []


def test_a_partial_binds_its_arguments_and_its_callable_goes_through_the_policy():
    bound = (
        "paddle.nn.Sequential.forward(paddle.vision.ops.ConvNormActivation(3, 8, norm_layer=functools.partial("
        f"paddle.nn.BatchNorm2D, epsilon={{}})), {T((2, 3, 8, 8))})"
    )
    # the bound epsilon reaches the layer: 100 is not 1e-5 (the outputs differ)
    from api_tracer.replay import prepare

    _, _, args, _ = prepare(Config("x", 1, bound.format(100.0)), PADDLE)
    assert args[0][1]._epsilon == 100.0
    assert replay(bound.format(100.0), check="float64").status == "ok"
    for line, why in [
        (
            'paddle.add(functools.partial(Callable("paddle.save"), path="/tmp/x"), 1)',
            "paddle.save is refused: it reads or writes",
        ),
        ('paddle.add(functools.partial(paddle.save, path="/tmp/x"), 1)', "'paddle.save' is not a paddle constant"),
        ('paddle.add(functools.partial(Callable("os.system"), "true"), 1)', "os.system is refused"),
        ("paddle.add(functools.partial(3), 1)", "takes a callable first"),
    ]:
        r = replay(line)
        assert r.status == ("refused" if "is refused" in why else "invalid") and why in r.message, (line, r.message)


def test_the_configs_of_a_real_paddle_program_replay_pass_the_check_and_trace_back(tmp_path):
    """tests/programs/paddle_models.py (ResNet-18, MobileNetV2, a Transformer
    encoder: training steps, then evaluation) traced by the Paddle dialect:
    every config replays, passes --check float64 and traces back to itself.
    paddle.vision's blocks are written as their constructor calls (the
    blocks of a model, made inside its recorded construction, too), and a
    Sequential of MobileNetV2's blocks in training mode, whose batch norms
    over two samples blow its sublayers' roundings up to 1, is judged with
    them (error_model.Sublayers)."""
    out = tmp_path / "trace"
    traced = subprocess.run(
        [sys.executable, "-m", "api_tracer", "run", "--dialect", "paddle", "-o", str(out), "paddle_models.py"],
        cwd=PROGRAMS,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert traced.returncode == 0, traced.stderr
    configs = read_config_file(str(next(out.glob("api_configs*.yaml"))))
    results = run_in_process(configs, ReplayOptions(check="float64"), lambda r: None)
    assert len(results) >= 100
    assert [(r.config, r.status, r.message) for r in results if r.status != "ok"] == []
    assert sum(r.compared == "values" for r in results) >= 100
    assert any("paddle.vision.models.mobilenetv2.InvertedResidual(" in c.text for c in configs)
    replayable = [c for c, r in zip(configs, results) if r.status == "ok"]
    assert [(c.text, why) for c, why in roundtrip(replayable, 0) if why] == []
