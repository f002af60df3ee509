"""How `--check float64` judges a result: an error model, not a tolerance
pair.

The result under test, y (float32, float16, bfloat16), is compared with a
reference r, the same call on float64 copies of the very same input
values (a low-precision value is exact in float64). A correct kernel's
error then comes from its own roundings only: the rounding of each output
to its dtype, and the roundings of what it accumulates. For each output
element the model allows

    C_OUT * u * |r|                              the rounding of the result to its dtype
  + C_OUT * u_in * X                             input-sized values rounded on the way
  + C_ACC * (u_acc * sqrt(K) + u_kept) * (D + S) what the kernel accumulates
  + C_MID * u * S                                intermediates held in the result's dtype
  + C_OUT * tiny * K                             (underflow: subnormal terms flushed)

- u is the unit roundoff of the result's dtype (2^-24 float32, 2^-11
  float16, 2^-8 bfloat16), u_acc that of what kernels compute in (float32,
  for every dtype below it: torch's CPU kernels accumulate and evaluate in
  it);
- D and S say how much the element moves when the inputs move by a unit
  of their last place: the reference computed again with every floating
  input (tensors, modules' parameters) multiplied by 1 + U (D: the
  response along the inputs, the size of what adds up to the element
  where its terms share a sign) and by 1 +- U m at random, m = 1 in the
  first draw and, where no output is elementwise, in [1/2, 1] in the
  others (S, the largest of SIGN_DRAWS draws: the root-sum-square of the
  terms where they cancel; with two draws one element in a few hundred
  had both draws cancel by chance and its S a quarter of its size, and
  with m = 1 a product's two factors moved apart cancel exactly), each
  over U; for an output of
  a fan-in of a few (elementwise) and more than one floating input, S is
  at least the sum of the responses to each input moved alone (a + alpha
  * b near 0 moves by U * (|a| + |alpha * b|): no draw of signs left to
  chance). One rounding in
  the result's dtype of every input-level intermediate moves the result
  by about u * S: torch's low-precision kernels hold some intermediates so
  (the attention matrix, batch norm's normalized input, the partial sums
  of a transposed convolution's col2im), hence the C_MID term; for a
  float32 result it is inside the accumulation's;
- K is the element's fan-in, how many input elements feed it: one
  element of each of the PROBES largest inputs moved at a time, counting
  the outputs that move (a matmul's inner size, a softmax's row, a norm's
  length, 1 for an elementwise op); a sum of K rounded terms strays by
  about sqrt(K) roundings of their size. What the probes cannot see, the
  framework says (`Accumulated`, per element): a scatter that adds, whose
  one position may receive hundreds of values where the average is one
  (K its count, and u_acc = u: torch adds into the output itself), a
  log-space reduction's log of its sum, of size 1 whatever the result's
  (then + (C_ACC * u_acc * sqrt(K) + C_MID * u) * that size);
- X is the size of input values a kernel computes with on its way to a
  far smaller result: for an elementwise output (of fan-in 1 and of an
  input's shape) its own input's magnitude, at u_in = u_acc (GELU of a
  negative input: x * (1 + erf(x)) near 0 in float32; of inputs broadcast
  to its shape, their largest magnitude); for another output
  of a call with float scalars, or of a resampling (SIZED: an
  interpolation to a given size, a grid sample), the largest input's
  magnitude at u_in = u (a kernel computes coefficients from them in its
  own precision, an interpolation's weights from its scale or from the
  sizes, torch's bfloat16 bicubic upsampling in bfloat16: an input the
  exact weights leave out by a weight of 0 comes in by a weight of u);
  for a resampling, times its largest input dimension, the size of the
  coordinates its weights are computed from (each weight errs by u times
  it), and for its gradient, that times the outputs per input element plus
  one (the cotangents it adds up are at most 1); for a gradient, made from what
  the forward saved in the result's dtype (a tanh's output, which
  1 - tanh^2 reads), the largest input's at u_in = u, and u_kept = u;
  else X = 0: the input-sized intermediates of the rest are in D and S,
  measured in the output's own units (a softmax of inputs of size 3 is of
  size 1/n, and so are its errors).

An elementwise output (fan-in up to ELEMENTWISE, not a resampling, and
no element moved by a random half of its inputs' elements but its own:
`_spread`) is held to its own result instead (`_elementwise`): the input-sized X and the
accumulation's terms would allow thousands of times what a correct kernel
needs where the result is small against its input (the tails of erfc,
sigmoid, GELU), so its bound is

    C_RESULT * u * |r| + tiny                    its rounding, a correct function's few ulp; flushed below tiny
  + C_ULP * (M + 2 u_in S)                       its inputs' roundings, as the reference responds to them
  + C_SAVED * V + C_MID * u * S                  (a gradient) what the forward saved, its own steps in u

- M, the larger move of the element when every floating input moves by
  one unit in its last place, up and down (`Ulps`), at u_in: the
  precision kernels compute in (u_acc) for an output, the result's own
  for a gradient (torch computes a backward in its dtype): the function's
  own sensitivity, steps included (round(x, 3) at a half);
- S as above, at least the sum of the responses to each input and each
  float scalar moved alone (x - y where they cancel; x + 0.1, whose 0.1 a
  kernel rounds);
- V, the move of a gradient when what the forward saved for it is rounded
  to the result's dtype (`Saved`: the reference's saved tensors moved by
  u at random signs through the framework's saved-tensor hooks, and past
  the dtype's largest, infinite: tanh's output, which 1 - tanh^2 reads).

check.py judges an elementwise call on the regions of draw.REGIONS too.

A call of a layer that holds layers (a Sequential, a whole model) rounds
at every sublayer's output, and what follows may amplify those roundings
far more than it amplifies its own inputs' (a batch norm in training mode
over two samples turns a difference at the rounding's size into one of
size 1; a ReLU6 after it keeps it). So for such a call the reference is
run again with each sublayer's output moved by u at random signs
(ROUNDING_DRAWS draws, the framework's own forward hooks: the builder's
`Perturbation.layer`),
and the largest move L of any element of the output is allowed to each
(normwise: where a rounding flips a sign that a later layer blows up, a
few draws flip a few of the elements the real roundings flip, not the
same ones):

  + C_LAYERS * L                                 its sublayers' roundings, propagated

A defect of the size kernels really have (an accumulation in a narrower
type, a wrong epsilon, a dropped term, an approximated transcendental, a
wrong gradient) strays far past it; ordinary rounding stays inside, also
for a float32 matmul over 16k terms or a norm of a million. The constants
were tuned on bench/bench_judge.py's sets of torch's own kernels and of
operators with planted defects, and are held on sets the tuning never saw
(tests/replay/judge/test_judge.py).
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..builder import Perturbation
from ..framework import Accumulated
from .probes import (
    Alone,
    Half,
    Rounded,
    Saved,
    Scale,
    U,
    Ulps,
    accumulation_roundoff,
    one_element,
    signs,
    unit_roundoff,
)

C_OUT = 4.0  # roundings of the result itself
C_ACC = 8.0  # the accumulated roundings: standard deviations of their random walk, with room
C_MID = 4.0  # intermediates a kernel holds in the result's dtype, each rounded once
C_LAYERS = 2.0  # a composite layer's roundings at its sublayers' outputs, as they propagate
SIGN_DRAWS = 4  # draws of random signs that S is the largest response of
ROUNDING_DRAWS = 2  # draws of its sublayers' roundings that L is the largest move of
C_RESULT = 6.0  # elementwise: the result's own rounding, and its function's error (a few units in its last place)
C_ULP = 1.0  # elementwise: the response to the inputs moved by one unit in their last place
C_SAVED = 2.0  # elementwise gradients: the response to what the forward saved, rounded to the result's dtype
ELEMENTWISE = 1.5  # the fan-in up to which an output is elementwise (one input element each, broadcast or not)
PROBES = 3  # input tensors whose fan-in is measured (the largest: a convolution's gradient, all three)
ALONE_PROBES = 4  # input tensors moved one at a time, for S (the largest)
ALONE_FAN_IN = 4.0  # ... for outputs of at most this fan-in (elementwise ones, their inputs' storage larger)

NAME = "error model"

# APIs whose kernels compute their coefficients from the sizes (or a grid)
# in the result's precision: interpolation and resampling, torch's and
# Paddle's, as functions, layers and operators.
SIZED = re.compile(r"interpolate|upsample|Upsample|grid_sample|affine_grid")


@dataclass
class Bound:
    """One leaf's allowed error per element, and what it was made of."""

    allowed: Any  # float64, the leaf's shape
    rounding: Any  # C_OUT * (u * |r| + u_in * X)
    fan_in: float  # K
    measure: str = NAME  # what the report calls it
    elementwise: bool = False  # judged as an elementwise output (_elementwise)
    nan_allowed: Any = None  # where a NaN against a number is right (the probes' reference gave NaN too)


RunSide = Callable[[Perturbation], Any]  # the reference side run with a perturbation -> its Outcome


def _spread(run: RunSide, judged: Dict[str, Any], candidates: set, inputs: List[int], seed: int) -> set:
    """Of the outputs that look elementwise by one element probed per input
    (`candidates`; `inputs`, the input tensors' numbers of elements),
    those that are not: one smaller than an input (an elementwise output
    is as large as its largest input: L of an LU, whose probed element
    moved none of it), or one that, with a random half of the elements of
    each input of its size moved, moved an element whose own input
    elements stayed. One probed element can miss what an output sums (a
    causal attention's gradient: the last row feeds every row, the first
    row one); half of them cannot."""
    found = {where for where in candidates if any(n > judged[where].numel() for n in inputs)}
    for size in sorted({judged[where].numel() for where in candidates - found} & set(inputs)):
        group = {where for where in candidates - found if judged[where].numel() == size}
        probe = Half(size, seed)
        outputs = leaves(run(probe))
        own = probe.chosen[0]
        for chosen in probe.chosen[1:]:
            own = own | chosen
        for where in group:
            if where in outputs and bool(((_moved(outputs[where], judged[where]) > 0).reshape(-1) & ~own).any()):
                found.add(where)
    return found


def leaves(outcome: Any) -> Dict[str, Any]:
    """The floating tensors of an outcome (its output and gradients), named
    as Comparison names them."""
    import torch

    return {
        k: v for k, v in outcome.tensors() if isinstance(v, torch.Tensor) and (v.is_floating_point() or v.is_complex())
    }


def _moved(a: Any, b: Any) -> Any:
    """|a - b| in float64, 0 where both are equal (infinities too)."""
    import torch

    from .compare import plain

    a, b = plain(a).detach().cpu(), plain(b).detach().cpu()
    wide = torch.complex128 if a.is_complex() or b.is_complex() else torch.float64
    a, b = a.to(wide), b.to(wide)
    d = (a - b).abs().to(torch.float64)
    return torch.where((a == b) | (a.isnan() & b.isnan()), 0.0, d)


def _folded(judged: Dict[str, Any], runs: Any, fold: Callable[[Any, Any], Any]) -> Dict[str, Any]:
    """Per judged output, each run's move from the reference (_moved) folded
    into one as the runs come (`fold(acc, moved)`), so that one run's outputs
    are held at a time: the probes of a large output would otherwise hold a
    dozen float64 copies of it (replay's --max-bytes bounds them all). Only
    outputs every run gave are kept."""
    acc: Dict[str, Any] = {}
    missing: set = set()
    for outputs in runs:
        for where, r in judged.items():
            if where not in outputs:
                missing.add(where)
            elif where not in missing:
                moved = _moved(outputs[where], r)
                acc[where] = moved if where not in acc else fold(acc[where], moved)
    return {where: m for where, m in acc.items() if where not in missing}


def bounds(
    run: RunSide,
    mine: Any,
    theirs: Any,
    seed: int,
    api: str = "",
    accumulated: Optional[Dict[str, Accumulated]] = None,
) -> Dict[str, Bound]:
    """Per floating leaf of `mine`, its Bound: from the reference `theirs`
    and the reference run again with its inputs moved (see the module);
    `api`, the call's, says whether it resamples (SIZED); `accumulated`,
    per leaf, what its kernel adds up that the probes cannot see."""
    import torch

    from .compare import plain

    accumulated = accumulated or {}
    mine_leaves, ref = leaves(mine), leaves(theirs)
    judged = {
        where: ref[where]
        for where, y in mine_leaves.items()
        if where in ref and unit_roundoff(y.dtype) is not None and tuple(ref[where].shape) == tuple(y.shape)
    }
    scale = Scale()
    scaled = _folded(judged, [leaves(run(scale))], torch.maximum)
    sizes, scalar_paths, layered, spans = scale.seen, scale.scalars, scale.layered, scale.spans
    # each input tensor moved alone: the sum of their responses is what the terms of an element add up to
    # where they cancel, with no draw of signs left to chance (a + alpha * b near 0, for an elementwise op)
    # (and each float scalar alone: a kernel rounds it to what it computes in)
    alone_paths = [path for path, _, _ in sorted(sizes, key=lambda s: -s[1])[:ALONE_PROBES]] + scalar_paths[
        :ALONE_PROBES
    ]
    alone = _folded(judged, (leaves(run(Alone(path))) for path in alone_paths), lambda a, b: a + b)
    picker = random.Random(seed)
    fan_ins = dict.fromkeys(judged, 1.0)
    ratios: Dict[str, List[float]] = {}  # per output, each probe's input elements per output element
    largest_input = max((float(m.max()) for _, n, m in sizes if n), default=0.0)
    for path, _, elements in sorted(sizes, key=lambda s: -s[1])[:PROBES]:
        numel = elements.numel()  # (the tensor's elements: a strided one's storage holds more, or fewer)
        if numel:
            outputs = leaves(run(one_element(path, picker.randrange(numel))))
            for where, r in judged.items():
                if where in outputs and r.numel():
                    moved = int((_moved(outputs[where], r) > 0).sum())
                    fan_ins[where] = max(fan_ins[where], numel * moved / r.numel())
                    if moved:  # (an input element that moves no output says nothing of it)
                        ratios.setdefault(where, []).append(numel * moved / r.numel())
    # a resampling's coordinates, up to the largest input dimension, are
    # computed in the result's precision: their weights err by u times it
    span = max(spans, default=1) if SIZED.search(api) else 0
    outputs = max((o.numel() for k, o in mine_leaves.items() if not k.startswith("the gradient of ")), default=0)
    rounded: Dict[str, Any] = {}
    if layered:  # each sublayer's output rounded, at the unit roundoff of the least precise result
        u_most = max((unit_roundoff(y.dtype) or 0.0 for y in mine_leaves.values()), default=0.0)
        if getattr(mine, "precision", None) is not None:
            u_most = max(u_most, unit_roundoff(mine.precision) or 0.0)
        draws = (leaves(run(Rounded(u_most, seed + SIGN_DRAWS + k))) for k in range(ROUNDING_DRAWS))
        rounded = _folded(judged, draws, torch.maximum)
    # as many input elements as output elements, each moving one (or a broadcast one moving its copies); not a
    # scatter into a larger output (max pooling's gradient: a probed element moves one of 4x the elements, some
    # of which sum several), nor a layer of layers, whose fan-in, probed at one element, can miss what it sums
    elementwise = {
        where
        for where in judged
        if fan_ins[where] <= ELEMENTWISE
        and all(1 / ELEMENTWISE <= ratio <= ELEMENTWISE for ratio in ratios.get(where, []))
        and not span
        and not layered
        and where not in accumulated
    }
    elementwise -= _spread(run, judged, elementwise, [m.numel() for _, _, m in sizes], seed)
    # (sizes drawn where no output is elementwise: an elementwise function of one input moves as its one
    # term does, and where U already moves it past its linear reach (sinc, a Bessel function far out), a
    # drawn size scrambles what S measures of it)
    sized = not elementwise
    signed = _folded(judged, (leaves(run(signs(seed, k, sized))) for k in range(SIGN_DRAWS)), torch.maximum)
    ulps, saved = _elementwise_probes(run, judged, mine_leaves, elementwise, seed)
    out: Dict[str, Bound] = {}
    for where, r in judged.items():
        y = mine_leaves[where]
        u_out = unit_roundoff(y.dtype)
        if getattr(mine, "precision", None) is not None:
            # no more precise than the least precise input: float32 inputs and a float64 bias, say
            u_out = max(u_out, unit_roundoff(mine.precision) or u_out)
        r64 = plain(r).detach().cpu().to(torch.complex128 if r.is_complex() else torch.float64)
        magnitude = r64.abs().to(torch.float64)
        d = scaled[where] / U if where in scaled else torch.zeros_like(magnitude)
        s = signed[where] / U if where in signed else torch.zeros_like(magnitude)
        fan_in = fan_ins[where]
        if fan_in <= ALONE_FAN_IN and len(alone_paths) > 1 and where in alone:
            s = torch.maximum(s, alone[where] / U)
        tiny = torch.finfo(y.dtype if y.is_floating_point() else torch.float32).tiny
        gradient = where.startswith("the gradient of ")
        u_acc = accumulation_roundoff(y.dtype)
        if where in elementwise:
            out[where] = _elementwise(where, r, magnitude, s, u_out, u_acc, tiny, ulps, saved, gradient, fan_in)
            continue
        if gradient:  # made from what the forward saved, rounded to u: the largest input's size
            inputs, u_in = largest_input, u_out
            if span:  # and a resampling's weights, each erring by u * span, times the cotangents (at most 1)
                inputs += span * (outputs / max(r.numel(), 1) + 1)
        else:  # rounded on the way in what kernels compute in (outputs not judged as elementwise)
            # (not a resampling's: its grid may have the output's number of elements, and its coordinates' rounding
            # is what moves it)
            alike = fan_in <= 1.5 and not span
            own = [m.reshape(r.shape) for _, _, m in sizes if m.numel() == r.numel()] if alike else []
            # an output element for element of inputs broadcast to it (fewer elements than it): their largest
            broadcast = not own and fan_in <= 1.5 and any(0 < m.numel() < r.numel() for _, _, m in sizes)
            inputs = (
                torch.stack(own).amax(0)
                if own
                else largest_input * max(span, 1)
                if scalar_paths or broadcast or span
                else 0.0
            )
            u_in = u_acc if own or broadcast else u_out
        rounding = C_OUT * (u_out * magnitude + u_in * inputs)
        kept = u_out if gradient else 0.0
        terms: Any = fan_in
        known = accumulated.get(where)
        if known is not None:  # what the kernel adds up beyond the probes' sight (Accumulated)
            terms = _per_element(known.terms, magnitude).clamp(min=fan_in)
            fan_in = float(terms.max()) if terms.numel() else fan_in
            u_acc = u_out if known.in_output else u_acc
        # (underflow: each of the fan-in's terms may lose up to tiny, flushed to zero as subnormal)
        walk = u_acc * (terms.sqrt() if isinstance(terms, torch.Tensor) else math.sqrt(terms))
        allowed = rounding + C_ACC * (walk + kept) * (d + s) + C_MID * u_out * s + C_OUT * tiny * terms
        if known is not None and known.size is not None:  # (held in what it computes in, or in the result's dtype)
            allowed = allowed + (C_ACC * walk + C_MID * u_out) * _per_element(known.size, magnitude)
        if known is not None and known.normwise and allowed.dim() >= len(known.normwise) and allowed.numel():
            allowed = allowed.amax(dim=known.normwise, keepdim=True).expand_as(allowed)
        if where in rounded and r.numel():
            allowed = allowed + C_LAYERS * float(rounded[where].max())
        out[where] = Bound(torch.where(allowed.isnan(), math.inf, allowed), rounding, fan_in)
    return out


def _per_element(value: Any, like: Any) -> Any:
    """A number, or a tensor of `like`'s elements (in any shape), as a
    float64 tensor of `like`'s shape; another tensor as its largest."""
    import torch

    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().to(torch.float64)
        if value.numel() == like.numel():
            return value.reshape(like.shape)
        value = float(value.max()) if value.numel() else 0.0
    return torch.full_like(like, float(value))


def _elementwise_probes(
    run: RunSide, judged: Dict[str, Any], mine_leaves: Dict[str, Any], elementwise: set, seed: int
) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """For the elementwise outputs: the greatest move of each element when
    every input moves by one unit in its last place, up and down (at the
    precision a kernel computes in for an output, at the result's own for
    a gradient, which torch computes in its dtype: `Ulps`), and for the
    gradients, the move when what the forward saved is rounded to the
    result's dtype (`Saved`)."""
    import torch

    if not elementwise:
        return {}, {}

    def precision(where: str) -> float:
        u = unit_roundoff(mine_leaves[where].dtype)
        return u if where.startswith("the gradient of ") else accumulation_roundoff(mine_leaves[where].dtype)

    ulps: Dict[str, Any] = {}
    for u in sorted({precision(where) for where in elementwise}):
        wanted = {where: judged[where] for where in elementwise if precision(where) == u}
        moves = (leaves(run(Ulps(u, direction))) for direction in (1, -1))
        ulps.update(_folded(wanted, moves, torch.maximum))
    gradients = {where: judged[where] for where in elementwise if where.startswith("the gradient of ")}
    saved: Dict[str, Any] = {}
    if gradients:
        u_most = max(unit_roundoff(mine_leaves[where].dtype) or 0.0 for where in gradients)
        saved = _folded(gradients, [leaves(run(Saved(u_most, seed)))], torch.maximum)
    return ulps, saved


def _elementwise(
    where: str,
    r: Any,
    magnitude: Any,
    s: Any,
    u_out: float,
    u_acc: float,
    tiny: float,
    ulps: Dict[str, Any],
    saved: Dict[str, Any],
    gradient: bool,
    fan_in: float,
) -> Bound:
    """An elementwise output's Bound: its own rounding, and its inputs'
    roundings as the reference responds to them (see the module)."""
    import torch

    u_in = u_out if gradient else u_acc
    moved = ulps.get(where, torch.zeros_like(magnitude))
    # (a result below the smallest normal may be flushed to 0)
    rounding = C_RESULT * u_out * magnitude + tiny
    allowed = rounding + C_ULP * (moved + 2 * u_in * s)
    nan_allowed = None
    if gradient:  # made of what the forward saved, and of its own steps, each rounded to the result's dtype
        kept = saved.get(where, torch.zeros_like(magnitude))
        allowed = allowed + C_SAVED * kept + C_MID * u_out * s
        nan_allowed = kept.isnan()  # (a zero cotangent times a saved output that overflowed: 0 * inf)
    allowed = torch.where(allowed.isnan(), math.inf, allowed)
    return Bound(allowed, rounding, fan_in, elementwise=True, nan_allowed=nan_allowed)
