"""The sets replay's judge (--check float64) is measured on, both ways:

- CORRECT: torch's own CPU kernels, which are right, in float32, float16
  and bfloat16: matmuls with inner sizes up to 16k, batched matmul, addmm,
  convolutions forward and backward, sums, means, norms and variances over
  up to a million elements, cumsum, softmax and log-softmax and their
  backward, layer norm, attention, elementwise functions. Every one must be
  judged ok (a false alarm is a defect of the judge).
- DEFECTS: the operators of planted_defects.py, each with the lines that
  show its defect. Every one must be judged a mismatch.

Each set is split. The error model's form and constants were chosen
looking at "tuning" first, then at "held_out", "validation" and "fresh",
each written before it was first judged and kept apart until then, and
each of which, judged, showed something the model then learned (the
intermediates torch's low-precision kernels hold in their dtype, a
sign draw cancelling by chance, the coefficients an interpolation computes
from its scale): so all four count as tuned on. "final" was written with
the model fixed and judged once, as it came: it is the held-out measure
(bench/bench_judge.py reports every split; tests/replay/judge/test_judge.py holds them).
"sizes" and "sizes_final" are the same pair for interpolation to a given
size, which the model learned later (see there).
Lines are (config, backward): backward lines are judged with --backward."""

from typing import Dict, List, Tuple

Line = Tuple[str, bool]


def T(shape, dtype: str) -> str:
    return f'Tensor({list(shape)}, "{dtype}")'


def _correct(dtypes: List[str], inner: List[int], reduce_sizes: List[int]) -> List[Line]:
    lines: List[Line] = []
    for d in dtypes:
        for k in inner:
            lines.append((f"torch.ops.aten.mm.default({T((64, k), d)}, {T((k, 32), d)})", False))
        lines += [
            (f"torch.ops.aten.bmm.default({T((4, 32, inner[-1]), d)}, {T((4, inner[-1], 32), d)})", False),
            (f"torch.ops.aten.addmm.default({T((32,), d)}, {T((48, inner[-1]), d)}, {T((inner[-1], 32), d)})", False),
            (f"torch.matmul({T((2, 16, inner[0]), d)}, {T((inner[0], 24), d)})", True),
            (f"torch.nn.functional.conv2d({T((2, 32, 12, 12), d)}, {T((32, 32, 3, 3), d)}, None, 1, 1)", True),
            (f"torch.nn.functional.conv1d({T((2, 16, 64), d)}, {T((24, 16, 5), d)}, {T((24,), d)})", True),
            (f"torch.nn.functional.conv_transpose2d({T((2, 16, 8, 8), d)}, {T((16, 8, 3, 3), d)})", True),
            (f"torch.nn.functional.linear({T((8, inner[-1]), d)}, {T((16, inner[-1]), d)}, {T((16,), d)})", True),
        ]
        for n in reduce_sizes:
            lines += [
                (f"torch.sum({T((n,), d)})", False),
                (f"torch.mean({T((n,), d)})", False),
                (f"torch.linalg.vector_norm({T((n,), d)})", False),
                (f"torch.var({T((n,), d)})", False),
            ]
        lines += [
            (f"torch.sum({T((64, 4096), d)}, 1)", False),
            (f"torch.std({T((32, 2048), d)}, 1)", False),
            (f"torch.cumsum({T((16, 2048), d)}, 1)", False),
            (f"torch.logsumexp({T((64, 1000), d)}, 1)", False),
            (f"torch.softmax({T((64, 500), d)}, -1)", True),
            (f"torch.log_softmax({T((32, 5000), d)}, -1)", True),
            (f"torch.nn.functional.layer_norm({T((32, 768), d)}, [768], {T((768,), d)}, {T((768,), d)})", True),
            (f"torch.nn.functional.group_norm({T((4, 32, 8, 8), d)}, 8)", True),
            (
                f"torch.nn.functional.scaled_dot_product_attention({T((2, 4, 64, 32), d)}, {T((2, 4, 64, 32), d)}, "
                f"{T((2, 4, 64, 32), d)})",
                True,
            ),
            (f"torch.nn.functional.gelu({T((4096,), d)})", True),
            (f"torch.nn.functional.silu({T((4096,), d)})", True),
            (f"torch.tanh({T((4096,), d)})", True),
            (f"torch.sigmoid({T((4096,), d)})", True),
            (f"torch.exp({T((4096,), d)})", True),
            (f"torch.erf({T((4096,), d)})", False),
            (f"torch.sin({T((4096,), d)})", False),
            (f"torch.nn.functional.cross_entropy({T((64, 1000), d)}, {T((64,), 'int64')})", True),
        ]
    return lines


def _defects(dtypes: List[str], names: List[str]) -> List[Line]:
    lines: List[Line] = []
    shapes = {
        "sum_narrow": lambda d: [f"torch.ops.defects.sum_narrow.default({T((4096,), d)})"],
        "mm_narrow": lambda d: [f"torch.ops.defects.mm_narrow.default({T((32, 2048), d)}, {T((2048, 16), d)})"],
        "layer_norm_eps": lambda d: [f"torch.ops.defects.layer_norm_eps.default({T((16, 768), d)}, 1e-05)"],
        "mm_dropped": lambda d: [f"torch.ops.defects.mm_dropped.default({T((32, 1024), d)}, {T((1024, 16), d)})"],
        "exp_one_wrong": lambda d: [f"torch.ops.defects.exp_one_wrong.default({T((4096,), d)})"],
        "gelu_tanh": lambda d: [f"torch.ops.defects.gelu_tanh.default({T((4096,), d)})"],
        "exp_approx": lambda d: [f"torch.ops.defects.exp_approx.default({T((4096,), d)})"],
        "x_sin": lambda d: [f"torch.ops.defects.x_sin.default({T((4096,), d)})"],
        "max_off": lambda d: [f"torch.ops.defects.max_off.default({T((256, 8), d)}, 1)"],
        "var_biased": lambda d: [f"torch.ops.defects.var_biased.default({T((64, 512), d)}, 1)"],
        "cumsum_narrow": lambda d: [f"torch.ops.defects.cumsum_narrow.default({T((4, 2048), d)})"],
        "softmax_eps": lambda d: [f"torch.ops.defects.softmax_eps.default({T((64, 500), d)})"],
        "rms_norm_dropped": lambda d: [f"torch.ops.defects.rms_norm_dropped.default({T((16, 1024), d)})"],
    }
    for name in names:
        for d in dtypes:
            lines += [(line, name == "x_sin") for line in shapes[name](d)]
    return lines


# What the constants were tuned on, and what was kept apart.
CORRECT: Dict[str, List[Line]] = {
    "tuning": _correct(["float32"], [16, 500, 4096], [10_000, 1_000_000]),
    "held_out": _correct(["float16", "bfloat16"], [128, 2048, 16384], [100_000])
    + _correct(["float32"], [2048, 16384], [300_000]),
}
DEFECTS: Dict[str, List[Line]] = {
    "tuning": _defects(["float32"], ["sum_narrow", "layer_norm_eps", "mm_dropped", "gelu_tanh", "x_sin", "var_biased"]),
    "held_out": _defects(
        ["float32", "float16"],
        ["mm_narrow", "exp_one_wrong", "exp_approx", "max_off", "cumsum_narrow", "softmax_eps", "rms_norm_dropped"],
    )
    + _defects(["float16", "bfloat16"], ["layer_norm_eps", "gelu_tanh", "x_sin", "mm_dropped"]),
}


def _validation_correct(dtypes: List[str]) -> List[Line]:
    lines: List[Line] = []
    for d in dtypes:
        lines += [
            (f"torch.baddbmm({T((3, 16, 24), d)}, {T((3, 16, 3000), d)}, {T((3, 3000, 24), d)})", False),
            (f'torch.einsum("bij,bjk->bik", {T((2, 24, 1500), d)}, {T((2, 1500, 8), d)})', False),
            (f"torch.addmv({T((40,), d)}, {T((40, 6000), d)}, {T((6000,), d)})", False),
            (f"torch.dot({T((200000,), d)}, {T((200000,), d)})", False),
            (f"torch.nn.functional.conv3d({T((1, 8, 6, 6, 6), d)}, {T((12, 8, 3, 3, 3), d)})", True),
            (
                f"torch.nn.functional.batch_norm({T((16, 24, 5, 5), d)}, None, None, {T((24,), d)}, {T((24,), d)}, "
                "True)",
                True,
            ),
            (f"torch.nn.functional.instance_norm({T((4, 8, 16, 16), d)})", True),
            (f"torch.nn.functional.avg_pool2d({T((2, 8, 16, 16), d)}, 3)", True),
            (f'torch.nn.functional.interpolate({T((2, 4, 9, 9), d)}, scale_factor=2.0, mode="bilinear")', True),
            (f"torch.nn.functional.mse_loss({T((512, 64), d)}, {T((512, 64), d)})", True),
            (f"torch.nn.functional.nll_loss({T((256, 100), d)}, {T((256,), 'int64')})", True),
            (f"torch.nn.functional.softplus({T((4096,), d)})", True),
            (f"torch.std_mean({T((64, 3000), d)}, 1)", False),
            (f"torch.logcumsumexp({T((8, 1000), d)}, 1)", False),
            (f"torch.linalg.vector_norm({T((128, 4096), d)}, 2.0, (1,))", False),
            (f"torch.Tensor.norm({T((700000,), d)})", False),
        ]
    return lines


CORRECT["validation"] = _validation_correct(["float32", "float16", "bfloat16"])
DEFECTS["validation"] = [
    (f"torch.ops.defects.batch_norm_eps.default({T((16, 24, 5, 5), 'float32')}, 1e-05)", False),
    (f"torch.ops.defects.bmm_dropped.default({T((3, 16, 500), 'float32')}, {T((3, 500, 8), 'float32')})", False),
    (f"torch.ops.defects.bmm_dropped.default({T((3, 16, 64), 'float16')}, {T((3, 64, 8), 'float16')})", False),
    (f"torch.ops.defects.sigmoid_approx.default({T((4096,), 'float32')})", False),
    (f"torch.ops.defects.sigmoid_approx.default({T((4096,), 'bfloat16')})", False),
    (f"torch.ops.defects.dot_narrow.default({T((4096,), 'float16')}, {T((4096,), 'float16')})", False),
    (f"torch.ops.defects.dot_narrow.default({T((4096,), 'bfloat16')}, {T((4096,), 'bfloat16')})", False),
    (f"torch.ops.defects.softplus.default({T((4096,), 'float32')})", True),
    (f"torch.ops.defects.softplus.default({T((4096,), 'float16')})", True),
    (f"torch.ops.defects.topk_off.default({T((64, 50), 'float32')}, 5)", False),
]


# The planted defects the judge does not catch, and why, each measured on
# replay's inputs: the defect's greatest error in units of the last place
# (ulp) of the result's dtype, against 0.5 for a correctly rounded result.
# A low-precision result is allowed about 8 roundings of its own size and of
# the terms it sums (error_model.py: C_OUT and C_MID), because torch's own
# float16 and bfloat16 kernels need them (conv_transpose2d's col2im adds its
# partial sums in bfloat16: 5 roundings of the terms; attention and batch
# norm hold their intermediates in the dtype): so a defect of fewer ulp
# cannot be told from torch's rounding. test_judge.py holds this list
# exact: a miss not on it fails, and so does a line on it that is caught.
_BELOW_RESOLUTION = (
    "{ulp} ulp at worst: within the roundings of {dtype} that torch's own {dtype} kernels make "
    "(a defect sized for float32, not a defect in {dtype})"
)
_AT_RESOLUTION = (
    "{ulp} ulp at worst, {median} in the median: within the ~8 roundings of {dtype} the model allows a "
    "{dtype} result because torch's own {dtype} kernels (conv_transpose2d, attention) make as many"
)
_NARROW_DOT = (
    "a single dot of 4096 terms accumulated in {dtype}: {ulp} ulp of its result, but 3 roundings of the "
    "size of its terms (u * S), as torch's own bfloat16 conv_transpose2d errs by 5 (its col2im adds "
    "partial sums in bfloat16): by output error the two are one class; mm_narrow, the same defect over "
    "512 outputs, is caught"
)
KNOWN_MISSES: Dict[str, str] = {
    f"torch.ops.defects.exp_one_wrong.default({T((4096,), 'float16')})": _BELOW_RESOLUTION.format(
        dtype="float16", ulp=1.79
    ),
    f"torch.ops.defects.exp_approx.default({T((4096,), 'float16')})": _BELOW_RESOLUTION.format(
        dtype="float16", ulp=0.50
    ),
    f"torch.ops.defects.layer_norm_eps.default({T((16, 768), 'float16')}, 1e-05)": _BELOW_RESOLUTION.format(
        dtype="float16", ulp=1.55
    ),
    f"torch.ops.defects.layer_norm_eps.default({T((16, 768), 'bfloat16')}, 1e-05)": _BELOW_RESOLUTION.format(
        dtype="bfloat16", ulp=0.63
    ),
    f"torch.ops.defects.mean_wrong_n.default({T((32, 700), 'bfloat16')})": _BELOW_RESOLUTION.format(
        dtype="bfloat16", ulp=1.09
    ),
    f"torch.ops.defects.logsumexp_narrow.default({T((16, 1000), 'bfloat16')})": _BELOW_RESOLUTION.format(
        dtype="bfloat16", ulp=0.81
    )
    + "; float16 holds more digits than bfloat16",
    f"torch.ops.defects.softmax_eps.default({T((64, 500), 'float16')})": _AT_RESOLUTION.format(
        dtype="float16", ulp=5.46, median=0.70
    ),
    f"torch.ops.defects.rms_norm_dropped.default({T((16, 1024), 'float16')})": _AT_RESOLUTION.format(
        dtype="float16", ulp=7.10, median=0.43
    ),
    f"torch.ops.defects.norm_no_sqrt_eps.default({T((32, 64), 'float16')})": _AT_RESOLUTION.format(
        dtype="float16", ulp=4.72, median=1.74
    ),
    f"torch.ops.defects.dot_narrow.default({T((4096,), 'float16')}, {T((4096,), 'float16')})": _NARROW_DOT.format(
        dtype="float16", ulp=25.5
    ),
    f"torch.ops.defects.dot_narrow.default({T((4096,), 'bfloat16')}, {T((4096,), 'bfloat16')})": _NARROW_DOT.format(
        dtype="bfloat16", ulp=44.8
    ),
}


# -- kept apart once more: written after the constants of error_model.py were last chosen (on the
# splits above), judged once and reported as measured ----------------------------------------------


def _fresh_correct(dtypes: List[str]) -> List[Line]:
    lines: List[Line] = []
    for d in dtypes:
        lines += [
            (f"torch.addbmm({T((24, 40), d)}, {T((6, 24, 700), d)}, {T((6, 700, 40), d)})", False),
            (f"torch.nn.functional.conv_transpose1d({T((2, 12, 30), d)}, {T((12, 6, 5), d)}, None, 2)", True),
            (f"torch.nn.functional.conv2d({T((2, 16, 10, 10), d)}, {T((16, 4, 3, 3), d)}, None, 1, 1, 1, 4)", True),
            (f"torch.nn.functional.adaptive_avg_pool2d({T((2, 8, 13, 13), d)}, 4)", True),
            (f"torch.nn.functional.cosine_similarity({T((64, 300), d)}, {T((64, 300), d)})", True),
            (f"torch.nn.functional.rms_norm({T((16, 512), d)}, [512], {T((512,), d)})", True),
            (f"torch.nn.functional.pairwise_distance({T((64, 100), d)}, {T((64, 100), d)})", True),
            (f"torch.nn.functional.huber_loss({T((128, 32), d)}, {T((128, 32), d)})", True),
            (f"torch.nn.functional.normalize({T((32, 256), d)})", True),
            (f"torch.nn.functional.glu({T((16, 64), d)})", True),
            (f"torch.nn.functional.mish({T((4096,), d)})", True),
            (f"torch.nn.functional.hardswish({T((4096,), d)})", False),
            (f"torch.atan2({T((2048,), d)}, {T((2048,), d)})", False),
            (f"torch.hypot({T((2048,), d)}, {T((2048,), d)})", False),
            (f"torch.tensordot({T((8, 30, 40), d)}, {T((30, 40, 12), d)}, 2)", False),
            (f'torch.nn.functional.interpolate({T((2, 3, 7, 7), d)}, scale_factor=3.0, mode="bicubic")', False),
            (f"torch.var_mean({T((16, 5000), d)}, 1)", False),
            (f"torch.linalg.vector_norm({T((64, 64), d)}, 3.0, (0,))", False),
            (f"torch.nn.functional.bilinear({T((16, 20), d)}, {T((16, 30), d)}, {T((8, 20, 30), d)})", True),
            (f"torch.cumprod({T((4, 20), d)}, 1)", False),
        ]
    return lines


CORRECT["fresh"] = _fresh_correct(["float32", "float16", "bfloat16"])
DEFECTS["fresh"] = [
    (f"torch.ops.defects.mean_wrong_n.default({T((32, 700), 'float32')})", False),
    (f"torch.ops.defects.mean_wrong_n.default({T((32, 700), 'bfloat16')})", False),
    (f"torch.ops.defects.mm_tf32.default({T((48, 256), 'float32')}, {T((256, 24), 'float32')})", False),
    (
        f"torch.ops.defects.conv_dropped_channel.default({T((2, 32, 8, 8), 'float32')}, "
        f"{T((16, 32, 3, 3), 'float32')})",
        False,
    ),
    (
        f"torch.ops.defects.conv_dropped_channel.default({T((2, 32, 8, 8), 'float16')}, "
        f"{T((16, 32, 3, 3), 'float16')})",
        False,
    ),
    (f"torch.ops.defects.softmax_narrow.default({T((32, 200), 'float32')})", False),
    (
        f"torch.ops.defects.attention_scale.default({T((2, 16, 32), 'float32')}, {T((2, 16, 32), 'float32')}, "
        f"{T((2, 16, 32), 'float32')})",
        False,
    ),
    (
        f"torch.ops.defects.attention_scale.default({T((2, 16, 32), 'bfloat16')}, {T((2, 16, 32), 'bfloat16')}, "
        f"{T((2, 16, 32), 'bfloat16')})",
        False,
    ),
    (f"torch.ops.defects.sort_off.default({T((8, 40), 'float32')})", False),
    (f"torch.ops.defects.layer_norm_grad.default({T((16, 256), 'float32')})", True),
    (f"torch.ops.defects.layer_norm_grad.default({T((16, 256), 'float16')})", True),
    (f"torch.ops.defects.silu_hard.default({T((4096,), 'float32')})", False),
    (f"torch.ops.defects.silu_hard.default({T((4096,), 'bfloat16')})", False),
    (f"torch.ops.defects.norm_no_sqrt_eps.default({T((32, 64), 'float32')})", False),
    (f"torch.ops.defects.norm_no_sqrt_eps.default({T((32, 64), 'float16')})", False),
]


def _final_correct(dtypes: List[str]) -> List[Line]:
    lines: List[Line] = []
    for d in dtypes:
        lines += [
            (f"torch.ops.aten.mm.default({T((96, 8192), d)}, {T((8192, 48), d)})", False),
            (f"torch.nn.functional.linear({T((4, 10, 384), d)}, {T((1152, 384), d)}, {T((1152,), d)})", True),
            (f"torch.nn.functional.conv2d({T((1, 3, 32, 32), d)}, {T((16, 3, 7, 7), d)}, {T((16,), d)}, 2, 3)", True),
            (f"torch.nn.functional.max_pool2d({T((2, 6, 12, 12), d)}, 2)", True),
            (f"torch.nn.functional.smooth_l1_loss({T((300, 7), d)}, {T((300, 7), d)})", True),
            (
                f'torch.nn.functional.kl_div({T((64, 50), d)}, {T((64, 50), d)}, reduction="batchmean", '
                "log_target=True)",
                True,
            ),
            (f"torch.nn.functional.elu({T((4096,), d)})", True),
            (f"torch.nn.functional.logsigmoid({T((4096,), d)})", True),
            (f"torch.logaddexp({T((2048,), d)}, {T((2048,), d)})", False),
            (f"torch.nn.functional.softmin({T((40, 300), d)}, -1)", True),
            (f"torch.cdist({T((40, 64), d)}, {T((30, 64), d)})", False),
            (f"torch.prod({T((8, 12), d)}, 1)", False),
            (f"torch.nn.functional.embedding({T((16,), 'int64')}, {T((50, 32), d)})", True),
            (f"torch.nn.functional.group_norm({T((2, 16, 5, 5), d)}, 4)", True),
            (f"torch.mean({T((512, 512), d)})", False),
        ]
    return lines


CORRECT["final"] = _final_correct(["float32", "float16", "bfloat16"]) + [
    # (written for every dtype at first: torch has no float16 or bfloat16 CPU kernel of it, so those two
    # lines failed in torch itself, which no judge is asked; nothing else changed after the one run)
    (f"torch.nn.functional.local_response_norm({T((2, 16, 6, 6), 'float32')}, 5)", False)
]
DEFECTS["final"] = [
    (f"torch.ops.defects.logsumexp_narrow.default({T((16, 1000), 'float32')})", False),
    (f"torch.ops.defects.logsumexp_narrow.default({T((16, 1000), 'bfloat16')})", False),
    (
        f"torch.ops.defects.linear_bias_twice.default({T((8, 64), 'float32')}, {T((16, 64), 'float32')}, "
        f"{T((16,), 'float32')})",
        False,
    ),
    (
        f"torch.ops.defects.linear_bias_twice.default({T((8, 64), 'bfloat16')}, {T((16, 64), 'bfloat16')}, "
        f"{T((16,), 'bfloat16')})",
        False,
    ),
    (f"torch.ops.defects.tanh_grad.default({T((2048,), 'float32')})", True),
    (f"torch.ops.defects.tanh_grad.default({T((2048,), 'float16')})", True),
    (f"torch.ops.defects.group_norm_groups.default({T((2, 16, 5, 5), 'float32')})", False),
    (f"torch.ops.defects.group_norm_groups.default({T((2, 16, 5, 5), 'float16')})", False),
    (f"torch.ops.defects.argmax_first.default({T((10, 30), 'float32')})", False),
    (f"torch.ops.defects.erf_poly.default({T((4096,), 'float32')})", False),
]


# Interpolation to a given size: torch's kernels compute their coordinates'
# scale from the sizes in the result's precision, as they do from a float
# scale factor, and their weights err by that rounding times the
# coordinates' size. "sizes": the four lines that showed it (false alarms
# of 1.3x to 1.8x), then six written before the model learned it and
# judged after, whose two gradients failed once more (the weights' error
# reaches a gradient through the cotangents): tuned on, all. Larger sizes
# (100 to 224) had failed by 13x to 17x. "sizes_final": written with the
# model fixed, judged once.
CORRECT["sizes"] = [
    (f'torch.nn.functional.interpolate({T((1, 3, 8, 8), "float32")}, size=[13, 13], mode="bilinear")', False),
    (
        f'torch.nn.functional.interpolate({T((1, 3, 8, 8), "float32")}, size=[13, 13], mode="bilinear", '
        "align_corners=True)",
        False,
    ),
    (f'torch.nn.functional.interpolate({T((1, 3, 16, 16), "float32")}, size=[7, 7], mode="bicubic")', False),
    (f'torch.nn.functional.interpolate({T((1, 3, 16), "float32")}, size=[37], mode="linear")', False),
    (f'torch.nn.functional.interpolate({T((1, 2, 5, 5, 5), "float32")}, size=[7, 9, 6], mode="trilinear")', False),
    (f'torch.nn.functional.interpolate({T((2, 3, 12, 12), "float32")}, size=[5, 11], mode="bilinear")', True),
    (
        f'torch.nn.functional.interpolate({T((1, 4, 9, 9), "float32")}, size=[20, 14], mode="bicubic", '
        "align_corners=True)",
        False,
    ),
    (
        f'torch.nn.functional.interpolate({T((2, 3, 21), "float32")}, size=[50], mode="linear", align_corners=True)',
        True,
    ),
    (
        f'torch.nn.Upsample.forward(torch.nn.Upsample(size=[11, 11], mode="bilinear"), {T((1, 3, 6, 6), "float32")})',
        False,
    ),
    (f'torch.nn.functional.interpolate({T((1, 3, 8, 8), "float16")}, size=[13, 13], mode="bilinear")', False),
    (f'torch.nn.functional.interpolate({T((1, 3, 100, 100), "float32")}, size=[224, 224], mode="bilinear")', True),
    (f'torch.nn.functional.interpolate({T((1, 3, 300), "float32")}, size=[77], mode="linear")', True),
]
CORRECT["sizes_final"] = [
    (f'torch.nn.functional.interpolate({T((2, 8, 37, 53), "float32")}, size=[96, 128], mode="bilinear")', True),
    (f'torch.nn.functional.interpolate({T((1, 3, 50, 50), "float32")}, size=[131, 77], mode="bicubic")', False),
    (f'torch.nn.functional.interpolate({T((1, 3, 97, 97), "float32")}, size=[31, 31], mode="area")', False),
    (
        f'torch.nn.functional.interpolate({T((1, 2, 17, 19, 23), "float32")}, size=[40, 9, 30], mode="trilinear", '
        "align_corners=True)",
        True,
    ),
    (f'torch.nn.functional.interpolate({T((4, 2, 1000), "float32")}, size=[333], mode="linear")', True),
    # (written as torch.nn.UpsamplingBilinear2d, which replay's policy refuses, deprecated: it was not judged;
    # this line, its equal, was judged once after)
    (
        f'torch.nn.Upsample.forward(torch.nn.Upsample(size=[64, 64], mode="bilinear", align_corners=True), '
        f"{T((1, 3, 45, 45), 'float32')})",
        False,
    ),
    (
        f"torch.nn.functional.grid_sample({T((1, 3, 64, 64), 'float32')}, {T((1, 40, 40, 2), 'float32')}, "
        "align_corners=False)",
        False,
    ),
    (f'torch.nn.functional.interpolate({T((1, 3, 40, 40), "bfloat16")}, size=[97, 97], mode="bilinear")', False),
]
DEFECTS["sizes"] = [
    (f"torch.ops.defects.interpolate_half_scale.default({T((1, 3, 7, 7), 'float32')}, [13, 13])", False),
    (f"torch.ops.defects.interpolate_row_nearest.default({T((1, 3, 8, 8), 'float32')}, [13, 13])", False),
]
DEFECTS["sizes_final"] = [
    (f"torch.ops.defects.interpolate_bicubic_as_bilinear.default({T((1, 3, 30, 30), 'float32')}, [71, 71])", False),
    (f"torch.ops.defects.interpolate_half_scale.default({T((2, 4, 45, 61), 'float32')}, [100, 150])", False),
]


# torch's own kernels among CORRECT that the judge finds wrong since it holds an elementwise output to its
# result, over the regions (issue 37): listed, not loosened away; (config, backward) -> what goes wrong, as
# elementwise_sets.py's classes say it (bench/bench_judge.py --elementwise writes reproducers)
def _gelu(d: str) -> str:
    return f"torch.nn.functional.gelu({T((4096,), d)})"


_GELU = "GELU's vectorized kernel computes x/2 (1 + erf(x/sqrt 2)): its negative tail lost to cancellation"
_UNDERFLOW = (
    "flushes results a little above the smallest normal to 0 in its tail (silu(-88.94) = -2.1e-37 in float32 "
    "is -0.0): exp(-x) overflows in x / (1 + exp(-x))"
)
TORCH_DEFECTS: Dict[Line, str] = {
    **{(_gelu(d), b): _GELU for d in ("float32", "bfloat16") for b in (False, True)},
    **{(f"torch.nn.functional.silu({T((4096,), d)})", True): _UNDERFLOW for d in ("float32", "bfloat16")},
    (f"torch.nn.functional.mish({T((4096,), 'float32')})", True): _UNDERFLOW.replace("silu", "mish"),
    (f"torch.erf({T((4096,), 'bfloat16')})", False): (
        "erf(-1.84e-07) is -4.17e-07 in bfloat16 for -2.08e-07: twice the result near 0"
    ),
}


def torch_gelu(api: str, config: str) -> bool:
    """Whether a config calls torch's own GELU (forward or backward, either
    approximation) on float32 or bfloat16 tensors: its CPU kernels compute
    x/2 (1 + erf(x/sqrt 2)) and lose the negative tail (TORCH_DEFECTS)."""
    return "gelu" in api and "paddle" not in api and ('"float32"' in config or '"bfloat16"' in config)
