"""Operators with planted defects, for measuring replay's judge (--check
float64; tests/replay/judge/test_judge.py, bench/bench_judge.py). Importing this module
registers them in the namespace `defects` (replay --import planted_defects).

Each is right in float64, and wrong in float32, float16 and bfloat16 the
way real kernels go wrong: an accumulation in a narrower type, a wrong
epsilon, a dropped term, one wrong element among thousands, an
approximated transcendental, a wrong gradient under a right forward, a
wrong index output. The judge must find every one, and none in torch's own
kernels (judge_sets.py)."""

import math
from typing import List, Optional, Tuple

import torch

LIB = "defects"


def _exact(t: torch.Tensor) -> bool:
    return t.dtype == torch.float64


@torch.library.custom_op(f"{LIB}::sum_narrow", mutates_args=())
def sum_narrow(x: torch.Tensor) -> torch.Tensor:
    """A sum whose running total is kept in float16 (blocks of 64 summed
    in float32, then rounded), not in float32."""
    if _exact(x):
        return x.sum()
    acc = torch.zeros((), dtype=torch.float32)
    for block in x.reshape(-1).float().split(64):
        acc = (acc + block.sum()).half().float()
    return acc.to(x.dtype)


@torch.library.custom_op(f"{LIB}::mm_narrow", mutates_args=())
def mm_narrow(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A matmul whose partial sums over blocks of 32 of the inner size are
    rounded to bfloat16 as they add up."""
    if _exact(a):
        return a @ b
    out = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float32)
    for k in range(0, a.shape[1], 32):
        out = (out + a[:, k : k + 32].float() @ b[k : k + 32].float()).bfloat16().float()
    return out.to(a.dtype)


@torch.library.custom_op(f"{LIB}::layer_norm_eps", mutates_args=())
def layer_norm_eps(x: torch.Tensor, eps: float) -> torch.Tensor:
    """Layer norm over the last dimension with a hardcoded epsilon of 1e-3
    in place of the one given."""
    return torch.nn.functional.layer_norm(x, x.shape[-1:], eps=eps if _exact(x) else 1e-3)


@torch.library.custom_op(f"{LIB}::mm_dropped", mutates_args=())
def mm_dropped(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A matmul that leaves out the last term of the inner sum."""
    return a @ b if _exact(a) else a[:, :-1] @ b[:-1]


@torch.library.custom_op(f"{LIB}::exp_one_wrong", mutates_args=())
def exp_one_wrong(x: torch.Tensor) -> torch.Tensor:
    """exp, one element among thousands off by 0.1%."""
    y = x.exp()
    if not _exact(x):
        y.view(-1)[y.numel() // 2] *= 1.001
    return y


@torch.library.custom_op(f"{LIB}::gelu_tanh", mutates_args=())
def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """GELU by the tanh approximation in place of erf."""
    return torch.nn.functional.gelu(x, approximate="none" if _exact(x) else "tanh")


@torch.library.custom_op(f"{LIB}::exp_approx", mutates_args=())
def exp_approx(x: torch.Tensor) -> torch.Tensor:
    """exp off by up to 2e-4 relative (a short polynomial's error)."""
    y = x.exp()
    return y if _exact(x) else y * (1 + 2e-4 * torch.cos(37 * x))


@torch.library.custom_op(f"{LIB}::x_sin", mutates_args=())
def x_sin(x: torch.Tensor) -> torch.Tensor:
    """x * sin(x), right; its gradient drops the x cos(x) term in low precision."""
    return x * x.sin()


def _x_sin_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    if _exact(x):
        return grad * (x.sin() + x * x.cos())
    return grad * x.sin()


x_sin.register_autograd(_x_sin_backward, setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]))


@torch.library.custom_op(f"{LIB}::max_off", mutates_args=())
def max_off(x: torch.Tensor, dim: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """max along dim, its index one off where the maximum is the first element."""
    values, indices = x.max(dim)
    if not _exact(x):
        indices = torch.where(indices == 0, 1, indices)
    return values, indices


@torch.library.custom_op(f"{LIB}::var_biased", mutates_args=())
def var_biased(x: torch.Tensor, dim: int) -> torch.Tensor:
    """The unbiased variance, but divided by n instead of n - 1 in low precision."""
    return x.var(dim, correction=1 if _exact(x) else 0)


@torch.library.custom_op(f"{LIB}::cumsum_narrow", mutates_args=())
def cumsum_narrow(x: torch.Tensor) -> torch.Tensor:
    """A running sum kept in bfloat16."""
    if _exact(x):
        return x.cumsum(-1)
    out, acc = [], torch.zeros(x.shape[:-1], dtype=torch.bfloat16)
    for i in range(x.shape[-1]):
        acc = acc + x[..., i].bfloat16()
        out.append(acc)
    return torch.stack(out, -1).to(x.dtype)


@torch.library.custom_op(f"{LIB}::softmax_eps", mutates_args=())
def softmax_eps(x: torch.Tensor) -> torch.Tensor:
    """softmax whose denominator gets an epsilon of 1e-3 added."""
    if _exact(x):
        return x.softmax(-1)
    e = (x - x.amax(-1, keepdim=True)).exp()
    return e / (e.sum(-1, keepdim=True) + 1e-3)


@torch.library.custom_op(f"{LIB}::rms_norm_dropped", mutates_args=())
def rms_norm_dropped(x: torch.Tensor) -> torch.Tensor:
    """RMS norm over the last dimension whose mean of squares leaves out its
    last element."""
    squares = x * x if _exact(x) else x.float() * x.float()  # (float64's own: the reference is exact)
    mean = squares.mean(-1, keepdim=True) if _exact(x) else squares[..., :-1].sum(-1, keepdim=True) / x.shape[-1]
    return (x / (mean + 1e-6).sqrt()).to(x.dtype)


# -- kept apart: defects added for the validation split only (judge_sets.py) --------------------


@torch.library.custom_op(f"{LIB}::batch_norm_eps", mutates_args=())
def batch_norm_eps(x: torch.Tensor, eps: float) -> torch.Tensor:
    """Batch norm in training mode with an epsilon of 1e-2 in place of the one given."""
    return torch.nn.functional.batch_norm(x, None, None, training=True, eps=eps if _exact(x) else 1e-2)


@torch.library.custom_op(f"{LIB}::bmm_dropped", mutates_args=())
def bmm_dropped(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A batched matmul that leaves out the first term of the inner sum."""
    return a @ b if _exact(a) else a[..., 1:] @ b[:, 1:]


@torch.library.custom_op(f"{LIB}::sigmoid_approx", mutates_args=())
def sigmoid_approx(x: torch.Tensor) -> torch.Tensor:
    """sigmoid by a rational approximation, 0.5 + 0.5 x / (1 + |x|)."""
    return x.sigmoid() if _exact(x) else 0.5 + 0.5 * x / (1 + x.abs())


@torch.library.custom_op(f"{LIB}::dot_narrow", mutates_args=())
def dot_narrow(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A dot product accumulated in the inputs' own dtype, term by term
    (a half kernel without a float32 accumulator)."""
    if _exact(a):
        return (a * b).sum()
    acc = torch.zeros((), dtype=a.dtype)
    for p in (a * b).split(1):
        acc = acc + p[0]
    return acc


@torch.library.custom_op(f"{LIB}::softplus", mutates_args=())
def softplus(x: torch.Tensor) -> torch.Tensor:
    """softplus, right; its gradient uses tanh for sigmoid in low precision."""
    return torch.nn.functional.softplus(x)


def _softplus_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * (x.sigmoid() if _exact(x) else (x.tanh() + 1) / 2)


softplus.register_autograd(
    _softplus_backward, setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0])
)


@torch.library.custom_op(f"{LIB}::topk_off", mutates_args=())
def topk_off(x: torch.Tensor, k: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """topk along the last dimension, its indices reversed in low precision."""
    values, indices = x.topk(k)
    return values, indices if _exact(x) else indices.flip(-1)


# -- kept apart: defects written after the error model's constants were last chosen, judged once
# (judge_sets.py's "fresh" split) -----------------------------------------------------------------


@torch.library.custom_op(f"{LIB}::mean_wrong_n", mutates_args=())
def mean_wrong_n(x: torch.Tensor) -> torch.Tensor:
    """The mean over the last dimension, divided by n + 1 in low precision."""
    return x.mean(-1) if _exact(x) else x.sum(-1) / (x.shape[-1] + 1)


@torch.library.custom_op(f"{LIB}::mm_tf32", mutates_args=())
def mm_tf32(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A float32 matmul whose inputs are rounded to TF32 (10 bits of
    mantissa) first, as a TF32 tensor core would, where float32 was asked."""
    if _exact(a):
        return a @ b

    def tf32(t: torch.Tensor) -> torch.Tensor:
        bits = t.float().view(torch.int32)
        return ((bits + 0x1000) & ~0x1FFF).view(torch.float32)

    return (tf32(a) @ tf32(b)).to(a.dtype)


@torch.library.custom_op(f"{LIB}::conv_dropped_channel", mutates_args=())
def conv_dropped_channel(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """A 3x3 convolution that leaves out the last input channel."""
    if _exact(x):
        return torch.nn.functional.conv2d(x, w, padding=1)
    return torch.nn.functional.conv2d(x[:, :-1], w[:, :-1], padding=1)


@torch.library.custom_op(f"{LIB}::softmax_narrow", mutates_args=())
def softmax_narrow(x: torch.Tensor) -> torch.Tensor:
    """A float32 softmax computed in bfloat16 inside."""
    return x.softmax(-1) if _exact(x) else x.bfloat16().softmax(-1).to(x.dtype)


@torch.library.custom_op(f"{LIB}::attention_scale", mutates_args=())
def attention_scale(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Attention scaled by 1/sqrt(d + 1) for 1/sqrt(d) in low precision."""
    d = q.shape[-1] if _exact(q) else q.shape[-1] + 1
    return ((q @ k.transpose(-1, -2)) / d**0.5).softmax(-1) @ v


@torch.library.custom_op(f"{LIB}::sort_off", mutates_args=())
def sort_off(x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """sort along the last dimension; the indices of its first row are
    rotated by one in low precision."""
    values, indices = x.sort(-1)
    if not _exact(x):
        indices = indices.clone()
        indices[0] = indices[0].roll(1)
    return values, indices


@torch.library.custom_op(f"{LIB}::layer_norm_grad", mutates_args=())
def layer_norm_grad(x: torch.Tensor) -> torch.Tensor:
    """Layer norm over the last dimension (no affine), right; its gradient
    leaves out the mean of the incoming gradient in low precision."""
    return torch.nn.functional.layer_norm(x, x.shape[-1:])


def _layer_norm_grad_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    n = x.shape[-1]
    xc = x - x.mean(-1, keepdim=True)
    rstd = (xc.pow(2).mean(-1, keepdim=True) + 1e-5).rsqrt()
    xhat = xc * rstd
    mean_term = grad.mean(-1, keepdim=True) if _exact(x) else 0
    return rstd * (grad - mean_term - xhat * (grad * xhat).sum(-1, keepdim=True) / n)


layer_norm_grad.register_autograd(
    _layer_norm_grad_backward, setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0])
)


@torch.library.custom_op(f"{LIB}::silu_hard", mutates_args=())
def silu_hard(x: torch.Tensor) -> torch.Tensor:
    """SiLU with a piecewise-linear sigmoid (hardsigmoid) in low precision."""
    return torch.nn.functional.silu(x) if _exact(x) else x * torch.nn.functional.hardsigmoid(x)


@torch.library.custom_op(f"{LIB}::norm_no_sqrt_eps", mutates_args=())
def norm_no_sqrt_eps(x: torch.Tensor) -> torch.Tensor:
    """L2-normalizes the last dimension; in low precision the epsilon 1e-2
    is added to the norm instead of 1e-12."""
    eps = 1e-12 if _exact(x) else 1e-2
    return x / (x.norm(dim=-1, keepdim=True) + eps)


# -- kept apart last: written with the error model's constants fixed, judged once, reported as it
# came (judge_sets.py's "final" split) ----------------------------------------------------------


@torch.library.custom_op(f"{LIB}::logsumexp_narrow", mutates_args=())
def logsumexp_narrow(x: torch.Tensor) -> torch.Tensor:
    """logsumexp over the last dimension whose sum of exponentials is kept
    in float16 as it adds up, element by element."""
    if _exact(x):
        return x.logsumexp(-1)
    m = x.amax(-1, keepdim=True)
    acc = torch.zeros(x.shape[:-1], dtype=torch.float16)
    for e in (x - m).exp().unbind(-1):
        acc = acc + e.half()
    return (acc.float().log() + m.squeeze(-1)).to(x.dtype)


@torch.library.custom_op(f"{LIB}::linear_bias_twice", mutates_args=())
def linear_bias_twice(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """A linear layer that adds its bias twice for the last output feature."""
    y = torch.nn.functional.linear(x, w, b)
    if not _exact(x):
        y = y.clone()
        y[..., -1] += b[-1]
    return y


@torch.library.custom_op(f"{LIB}::tanh_grad", mutates_args=())
def tanh_grad(x: torch.Tensor) -> torch.Tensor:
    """tanh, right; its gradient is 1 - x^2 (of the input, not the output)
    in low precision."""
    return x.tanh()


def _tanh_grad_backward(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * (1 - x.tanh() ** 2 if _exact(x) else 1 - x.clamp(-1, 1) ** 2)


tanh_grad.register_autograd(
    _tanh_grad_backward, setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0])
)


@torch.library.custom_op(f"{LIB}::group_norm_groups", mutates_args=())
def group_norm_groups(x: torch.Tensor) -> torch.Tensor:
    """Group norm in 4 groups, done in 2 groups in low precision."""
    return torch.nn.functional.group_norm(x, 4 if _exact(x) else 2)


@torch.library.custom_op(f"{LIB}::argmax_first", mutates_args=())
def argmax_first(x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """max along the last dimension; the index of the last row is 0 in low
    precision."""
    values, indices = x.max(-1)
    if not _exact(x):
        indices = indices.clone()
        indices[-1] = 0
    return values, indices


@torch.library.custom_op(f"{LIB}::erf_poly", mutates_args=())
def erf_poly(x: torch.Tensor) -> torch.Tensor:
    """erf by Abramowitz and Stegun's 7.1.26 (error up to 1.5e-7 absolute)
    in low precision."""
    if _exact(x):
        return torch.erf(x)
    t = 1 / (1 + 0.3275911 * x.abs())
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return torch.sign(x) * (1 - poly * torch.exp(-x * x))


@torch.library.custom_op(f"{LIB}::interpolate_half_scale", mutates_args=())
def interpolate_half_scale(x: torch.Tensor, size: List[int]) -> torch.Tensor:
    """Bilinear interpolation to `size` whose coordinate scales (input size
    over output size) are kept in float16 in low precision."""
    if _exact(x):
        return torch.nn.functional.interpolate(x, size=size, mode="bilinear")
    scales = [float(torch.tensor(o / i, dtype=torch.float16)) for i, o in zip(x.shape[2:], size)]
    return torch.ops.aten.upsample_bilinear2d(x, size, False, *scales)


@torch.library.custom_op(f"{LIB}::interpolate_row_nearest", mutates_args=())
def interpolate_row_nearest(x: torch.Tensor, size: List[int]) -> torch.Tensor:
    """Bilinear interpolation to `size` whose last output row is the
    nearest input row's, not interpolated, in low precision."""
    out = torch.nn.functional.interpolate(x, size=size, mode="bilinear")
    if not _exact(x):
        out = out.clone()
        out[..., -1, :] = torch.nn.functional.interpolate(x, size=size, mode="nearest")[..., -1, :]
    return out


@torch.library.custom_op(f"{LIB}::interpolate_bicubic_as_bilinear", mutates_args=())
def interpolate_bicubic_as_bilinear(x: torch.Tensor, size: List[int]) -> torch.Tensor:
    """Bicubic interpolation to `size` that falls back to bilinear in low
    precision."""
    return torch.nn.functional.interpolate(x, size=size, mode="bicubic" if _exact(x) else "bilinear")


# -- elementwise defects that are right in absolute terms and wrong relative to the result: each computed in
# float32, as torch's kernels compute every floating dtype up to it, then rounded to the input's dtype


def _in_float32(x: torch.Tensor, f) -> torch.Tensor:
    return f(x.float()).to(x.dtype)


@torch.library.custom_op(f"{LIB}::erfc_cancel", mutates_args=())
def erfc_cancel(x: torch.Tensor) -> torch.Tensor:
    """erfc as 1 - erf(x): its tail (x > 3) lost to cancellation."""
    return torch.special.erfc(x) if _exact(x) else _in_float32(x, lambda v: 1 - torch.erf(v))


@torch.library.custom_op(f"{LIB}::sigmoid_cancel", mutates_args=())
def sigmoid_cancel(x: torch.Tensor) -> torch.Tensor:
    """sigmoid as 1 - sigmoid(-x): small results (x < -3) lose their digits."""
    return torch.sigmoid(x) if _exact(x) else _in_float32(x, lambda v: 1 - torch.sigmoid(-v))


@torch.library.custom_op(f"{LIB}::silu_cancel", mutates_args=())
def silu_cancel(x: torch.Tensor) -> torch.Tensor:
    """silu as x * (1 - sigmoid(-x))."""
    return torch.nn.functional.silu(x) if _exact(x) else _in_float32(x, lambda v: v * (1 - torch.sigmoid(-v)))


@torch.library.custom_op(f"{LIB}::log1p_cancel", mutates_args=())
def log1p_cancel(x: torch.Tensor) -> torch.Tensor:
    """log1p as log(1 + x): small x lose their digits in 1 + x."""
    return torch.log1p(x) if _exact(x) else _in_float32(x, lambda v: torch.log(1 + v))


@torch.library.custom_op(f"{LIB}::erfc_poly", mutates_args=())
def erfc_poly(x: torch.Tensor) -> torch.Tensor:
    """erfc by Abramowitz and Stegun's 7.1.26 (t P(t) exp(-x^2), accurate
    to 1.5e-7 absolute): relative to the result, its tail is a few percent off."""
    if _exact(x):
        return torch.special.erfc(x)

    def f(v: torch.Tensor) -> torch.Tensor:
        a = v.abs()
        t = 1 / (1 + 0.3275911 * a)
        tail = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
        tail = tail * torch.exp(-a * a)
        return torch.where(v >= 0, tail, 2 - tail)

    return _in_float32(x, f)


@torch.library.custom_op(f"{LIB}::tanh_small_poly", mutates_args=())
def tanh_small_poly(x: torch.Tensor) -> torch.Tensor:
    """tanh by its Taylor polynomial x - x^3/3 + 2x^5/15 below 0.6 in
    magnitude: up to 1e-4 off relative near 0.6, right near 0."""
    if _exact(x):
        return torch.tanh(x)
    return _in_float32(x, lambda v: torch.where(v.abs() < 0.6, v - v**3 / 3 + 2 * v**5 / 15, torch.tanh(v)))


@torch.library.custom_op(f"{LIB}::gelu_vector_path", mutates_args=())
def gelu_vector_path(x: torch.Tensor) -> torch.Tensor:
    """GELU whose vectorized body (8 elements at a time) computes
    x / 2 * (1 + erf(x / sqrt 2)), losing its negative tail to
    cancellation, and whose scalar tail computes x / 2 * erfc(-x / sqrt 2):
    as torch 2.13's CPU kernel does."""
    if _exact(x):
        return torch.nn.functional.gelu(x)
    v = x.float().reshape(-1)
    body = v.numel() - v.numel() % 8
    out = torch.empty_like(v)
    out[:body] = v[:body] * 0.5 * (1 + torch.erf(v[:body] * 0.5**0.5))
    out[body:] = v[body:] * 0.5 * torch.special.erfc(-v[body:] * 0.5**0.5)
    return out.reshape(x.shape).to(x.dtype)


@torch.library.custom_op(f"{LIB}::sort", mutates_args=())
def sort(x: torch.Tensor, dim: int = -1) -> Tuple[torch.Tensor, torch.Tensor]:
    """A sort whose float32 path gives the right values and each index
    one place off (a different value's, where values differ): a wrong
    index output that settling ties (frameworks/torch/ties.py) must not
    hide."""
    values, indices = torch.sort(x, dim=dim, stable=True)
    if not _exact(x):
        indices = indices.roll(1, dim)
    return values, indices


@torch.library.custom_op("ties::sort", mutates_args=())
def sort_ties_reversed(x: torch.Tensor, dim: int = -1) -> Tuple[torch.Tensor, torch.Tensor]:
    """A right sort (namespace `ties`) whose float32 path orders equal
    values' indices last to first, as an unstable sort may: no defect."""
    if _exact(x):
        return torch.sort(x, dim=dim, stable=True)
    values, indices = torch.sort(x.flip(dim), dim=dim, stable=True)
    return values, x.shape[dim] - 1 - indices


@torch.library.custom_op(f"{LIB}::index_add", mutates_args=())
def index_add(x: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """index_add, named as torch's (so the judge counts what each
    position receives: frameworks/torch/accumulations.py), which in low
    precision loses all but one of the values sent to the same position
    (a lost update, as a race gives)."""
    if _exact(x):
        return x.index_add(dim, index, source)
    return x + torch.zeros_like(x).index_copy(dim, index, source)


@torch.library.custom_op(f"{LIB}::log_softmax", mutates_args=())
def log_softmax(x: torch.Tensor, dim: int) -> torch.Tensor:
    """log_softmax, named as torch's (so the judge allows the rounding of
    its log of a sum, in absolute terms), whose sum of exponentials is
    kept in bfloat16 in low precision."""
    if _exact(x):
        return x.log_softmax(dim)
    shifted = x.float() - x.float().amax(dim, keepdim=True)
    return (shifted - shifted.exp().bfloat16().sum(dim, keepdim=True).float().log()).to(x.dtype)


@torch.library.custom_op(f"{LIB}::linalg_eigh", mutates_args=())
def linalg_eigh(a: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """eigh, named as torch's (so the judge turns its eigenvectors to the
    reference's signs: frameworks/torch/phases.py), whose last two
    eigenvectors are mixed by a rotation of 1e-3 in low precision: a sign
    cannot undo it."""
    values, vectors = torch.linalg.eigh(a)
    if not _exact(a):
        c, s = math.cos(1e-3), math.sin(1e-3)
        last, before = vectors[..., -1].clone(), vectors[..., -2].clone()
        vectors = vectors.clone()
        vectors[..., -2], vectors[..., -1] = c * before - s * last, s * before + c * last
    return values, vectors


@torch.library.custom_op(f"{LIB}::linalg_svd", mutates_args=())
def linalg_svd(a: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The thin SVD, named as torch's, its singular values 1e-4 too large in
    low precision (judged normwise, as LAPACK's bounds are, it still fails)."""
    u, s, vh = torch.linalg.svd(a, full_matrices=False)
    return u, s if _exact(a) else s * (1 + 1e-4), vh


@torch.library.custom_op(f"{LIB}::batch_norm", mutates_args=())
def batch_norm(
    x: torch.Tensor,
    running_mean: Optional[torch.Tensor],
    running_var: Optional[torch.Tensor],
    weight: torch.Tensor,
    bias: torch.Tensor,
    training: bool,
    momentum: float,
    eps: float,
) -> torch.Tensor:
    """Batch norm, named as torch's functional one (so the judge allows its
    fused form's cancellation: frameworks/torch/accumulations.py), with an
    epsilon of 1e-2 in place of the one given in low precision."""
    eps = eps if _exact(x) else 1e-2
    return torch.nn.functional.batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)
