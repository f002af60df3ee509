"""Values drawn for a tensor from what the traced program's argument held
(its value profile, `_C.ValueProfile`: core/value_profile.h; read from
api_value_ranges.yaml by formats/summaries.py): integers inside its range,
among its distinct values or its sentinels (each drawn as itself, never a
value between it and the others), in order where it was, adding up to its
sum where every call's did; floats inside its finite range, or the
non-finite value it held.

And the domains replay knows of operators' tensor arguments: where an
operator takes probabilities, non-negative rates, a positive-definite matrix,
values in order or bounds in order (clip's min and max), replay draws the
floating argument inside that domain, not from N(0, 1), and where it takes
a positive count (topk's k as a tensor) or a nonzero divisor, the integer
one, not zeros, when no value profile covers it (a profile, when there is
one, keeps its range: it says what the program passed). The fuzzer
mutates values outside them on purpose; this is what replay and the
judge draw.

One table (`DOMAINS`), framework-neutral: an entry names an operator by its
stem, and every name of it that a level records finds it (`stem`): torch's
`torch.X`, `torch.Tensor.X`, `torch.nn.functional.X`, `torch.linalg.X`
(stem `linalg_X`), `torch.special.X`, their `torch._C` bindings, the
operator `torch.ops.aten.X.<overload>` and its in-place `X_`; Paddle's
`paddle.X`, `paddle.Tensor.X`, `paddle.linalg.X`, `paddle.nn.functional.X`
and the in-place `X_`. The two frameworks' operators share an entry where
they take the argument at one place, under their own keyword names. A
layer's `forward` (`torch.nn.BCELoss.forward`, `paddle.nn.BCELoss.forward`)
takes its functional's arguments after the layer itself (`LAYERS`)."""

from __future__ import annotations

import math
import re
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

from ..values import argument_path, keyword_path

# Of the values drawn for a tensor with sentinels (a few negative values apart
# from the range of the rest, as an ignore_index of -100), this share.
SENTINEL_SHARE = 0.125


def draw_floats(profile: Any, numel: int, gen: Any, domain: Optional["Domain"] = None) -> Any:
    """`numel` float64 values inside what the floating argument profiled
    (_C.ValueProfile, float_ranges) held: uniform over its finite values'
    range, so that their sign, and [0, 1] for probabilities, hold; where it
    held no finite value, the non-finite one it held. Without a floating
    profile, inside the `domain` the API takes there (its `draw`)."""
    import torch

    if profile is None or not profile.floating:
        return domain.draw(numel, gen)
    if profile.finite:
        return profile.fmin + (profile.fmax - profile.fmin) * torch.rand(numel, dtype=torch.float64, generator=gen)
    held = next(v for v, f in ((math.nan, profile.nan), (math.inf, profile.posinf), (-math.inf, profile.neginf)) if f)
    return torch.full((numel,), held, dtype=torch.float64)


# -- regions: the judge's draws over a function's range ------------------------

# Where elementwise kernels go wrong, each a draw of its own (--check float64
# judges an elementwise call on each, after the usual one): name -> what it
# spans, the values' magnitudes as powers of ten (their signs at random), or
# None for the dtype's whole range of normal magnitudes.
REGIONS: Dict[str, Optional[Tuple[float, float]]] = {
    "tails": (math.log10(2), 2.0),  # |x| in [2, 100]: where erfc, sigmoid and GELU tails are small and exp's large
    "near zero": (-7.0, -0.3),  # |x| in [1e-7, 0.5]: near the zeros of log1p, expm1, sin, tanh
    # the square roots of the dtype's smallest normal and of its largest (1e-19 to 1e19 in float32), so that
    # a square, a product or a quotient of two stays in range; positive only: past 2^24 every float is an
    # integer, where the gamma family has its poles on the negative side, which float64's reflections miss
    "extremes": None,
}


def region_floats(region: str, profile: Any, numel: int, gen: Any, dtype: Any) -> Any:
    """`numel` float64 values of the region (REGIONS) for a floating
    tensor of `dtype`, their signs at random (the extremes' positive); where the argument has a
    profile of finite values, moved inside its range (the program passed
    no other values there: the region's ends become the range's)."""
    import torch

    span = REGIONS[region]
    if span is None:
        info = torch.finfo(dtype)
        span = (math.log10(info.tiny) / 2, math.log10(info.max) / 2)
    exponents = span[0] + (span[1] - span[0]) * torch.rand(numel, dtype=torch.float64, generator=gen)
    signs = torch.randint(0, 2, (numel,), generator=gen).to(torch.float64) * 2 - 1
    values = (signs if REGIONS[region] is not None else 1.0) * torch.pow(10.0, exponents)
    if profile is not None and profile.floating:
        if not profile.finite:
            return draw_floats(profile, numel, gen)
        values = values.clamp(profile.fmin, profile.fmax)
    return values


def sentinels(profile: Any) -> List[int]:
    """The sentinels of an integer profile (_C.ValueProfile): its few
    negative values, apart from the range of its others, [nonneg_min, max]
    (an ignore_index of -100 beside class indices); none where its negative
    values were many, or it held no other."""
    if profile.negatives and not profile.many_negatives and profile.nonneg_min <= profile.max:
        return list(profile.negatives)
    return []


def draw(profile: Any, numel: int, gen: Any, keep_sum: bool = False) -> Any:
    """`numel` int64 values the argument profiled (_C.ValueProfile) could
    have held: its distinct values where they are known; else the range of
    its non-negative values with its few negative ones (sentinels) among
    them; else its range. A sentinel is drawn as itself, never as a value
    between it and the others. A profile in order gives values in order,
    from its smallest to its largest (offsets start at 0). With `keep_sum`,
    where every call's values added up to one sum (a tie to another
    argument's size: segment lengths, a mask's count), the values then add
    up to it too, moved inside the range (the distinct values may then not
    hold; the sentinels still do)."""
    import torch

    def randint(lo: int, hi: int) -> Any:
        return torch.randint(lo, hi + 1, (numel,), generator=gen, dtype=torch.int64)

    marks = sentinels(profile)
    if not profile.many:
        pool = torch.tensor(profile.distinct, dtype=torch.int64)
        values = pool[randint(0, len(pool) - 1)]
    elif marks:
        values = randint(profile.nonneg_min, profile.max)
        chosen = torch.rand(numel, generator=gen) < SENTINEL_SHARE
        values[chosen] = torch.tensor(marks, dtype=torch.int64)[randint(0, len(marks) - 1)][chosen]
    else:
        values = randint(profile.min, profile.max)
    if profile.sorted and numel:
        values = values.sort().values
        values[0], values[-1] = profile.min, profile.max
    if keep_sum and profile.same_sum and numel:
        meet_sum(values, profile, gen)
    return values


def meet_sum(values: Any, profile: Any, gen: Any) -> None:
    """Moves `values` (in place, inside [min, max], the ends of sorted ones
    kept) until they add up to the profile's sum, the change spread over
    them in a random order; ValueError where they cannot. Where the profile
    has sentinels, a value stays one of them or inside the range of the
    others, [nonneg_min, max]: never between (a target of -73 beside an
    ignore_index of -100); values turn from sentinels to the others, or
    back, where moving the others alone cannot meet the sum. Values so
    large that their sum could pass int64 (random 64-bit numbers, not
    lengths or counts) are left as drawn: the arithmetic would wrap."""
    import torch

    if max(abs(profile.min), abs(profile.max)) * len(values) >= 2**62:
        return
    free = torch.arange(1, len(values) - 1) if profile.sorted else torch.arange(len(values))
    need = profile.sum - int(values.sum())
    if need == 0:
        return
    order = free[torch.randperm(len(free), generator=gen)]
    marks, lo = sentinels(profile), profile.min
    if marks:
        lo = profile.nonneg_min
        order = trade_sentinels(values, order, need, marks, lo, profile.max, gen)
        need = profile.sum - int(values.sum())
    room = (profile.max - values[order]) if need > 0 else (values[order] - lo)
    if int(room.sum()) < abs(need):
        raise ValueError(
            f"its values cannot add up to the sum of its profile, {profile.sum}: {len(values)} "
            f"values in [{profile.min}, {profile.max}]{' in order' if profile.sorted else ''}"
            f"{f' (sentinels {marks}, the others in [{lo}, {profile.max}])' if marks else ''} "
            "(api_value_ranges.yaml)"
        )
    before = room.cumsum(0) - room  # the room of the values moved before each one
    step = (abs(need) - before).clamp(min=0).minimum(room)
    values[order] += step if need > 0 else -step
    if profile.sorted:
        values[:] = values.sort().values


def trade_sentinels(values: Any, order: Any, need: int, marks: List[int], lo: int, hi: int, gen: Any) -> Any:
    """Where the values of `order` that are not sentinels (those >= lo)
    cannot move far enough inside [lo, hi] to add `need`, the fewest of
    them turn: sentinels into others (at `lo`, to move up) where the sum
    needs more, others into sentinels where it needs less. The positions
    of `order` that then hold others, in its order."""
    import torch

    others = values[order] >= lo
    room = (hi - values[order][others]) if need > 0 else (values[order][others] - lo)
    short = abs(need) - int(room.sum())
    if short > 0:
        if need > 0:  # a sentinel s turned to lo gives room hi - lo and adds lo - s
            turn = order[~others]
            new = torch.full((len(turn),), lo, dtype=torch.int64)
            gain = hi - values[turn]
        else:  # an other v turned to a sentinel s loses room v - lo and takes v - s off
            turn = order[others]
            new = torch.tensor(marks, dtype=torch.int64)[torch.randint(len(marks), (len(turn),), generator=gen)]
            gain = lo - new
        k = int((gain.cumsum(0) < short).sum()) + 1  # the fewest whose gains reach it (else all: it fails)
        values[turn[:k]] = new[:k]
    return order[values[order] >= lo]


# -- operators' domains --------------------------------------------------------


class Domain(NamedTuple):
    """What an argument must hold: `what`, as replay's skip message says it
    (run.DOMAIN_ERRORS); either `draw`, n float64 values inside it drawn
    from a generator (elementwise: a profile's range replaces it), or
    `shape`, the values drawn (float64 or complex128, of the tensor's
    shape) made to hold it (a structure no profile keeps: imposed on the
    profile's draws too); and `ints`, n int64 values inside it for an
    integer tensor there (a profile's values replace them)."""

    what: str
    draw: Optional[Callable[[int, Any], Any]] = None
    shape: Optional[Callable[[Any], Any]] = None
    ints: Optional[Callable[[int, Any], Any]] = None  # n int64 values inside it, for an integer tensor


def _unit(n: int, gen: Any) -> Any:
    import torch

    return torch.rand(n, dtype=torch.float64, generator=gen)


def _half_normal(n: int, gen: Any) -> Any:
    import torch

    return torch.randn(n, dtype=torch.float64, generator=gen).abs()


def _non_positive(n: int, gen: Any) -> Any:
    return -_half_normal(n, gen)


def _ones(n: int, gen: Any) -> Any:
    import torch

    return torch.ones(n, dtype=torch.int64)


def _nonzero(n: int, gen: Any) -> Any:
    """1 to 9, either sign."""
    import torch

    magnitude = torch.randint(1, 10, (n,), generator=gen)
    return torch.where(torch.rand(n, generator=gen) < 0.5, -magnitude, magnitude)


def _positive_definite(t: Any) -> Any:
    """A A^H + n I of the drawn square matrices A (the last two
    dimensions); other shapes as they are (the operator refuses them)."""
    import torch

    if t.dim() < 2 or t.shape[-1] != t.shape[-2]:
        return t
    n = t.shape[-1]
    return t @ t.mT.conj() + n * torch.eye(n, dtype=t.dtype)


def _in_order(t: Any) -> Any:
    return t.sort(dim=-1).values if t.dim() and not t.is_complex() else t


PROBABILITIES = Domain("probabilities in [0, 1]", draw=_unit)
NON_NEGATIVE = Domain("non-negative values", draw=_half_normal)
POSITIVE_DEFINITE = Domain("a positive-definite matrix", shape=_positive_definite)
IN_ORDER = Domain("values in non-decreasing order along the last dimension", shape=_in_order)
# a count of elements to take (topk's k, kthvalue's k), as a tensor: 1 is
# inside whatever the size (an int written in the line is the line's)
POSITIVE_COUNT = Domain("a positive count", ints=_ones)
NONZERO_DIVISOR = Domain("a nonzero integer divisor", ints=_nonzero)  # (a float one may be 0: inf, not an error)
# bounds in order (clip's min <= max), each drawn on its side of 0
LOWER_BOUND = Domain("a lower bound at most the upper one", draw=_non_positive)
UPPER_BOUND = Domain("an upper bound at least the lower one", draw=_half_normal)

# An argument: its position among a call's positional arguments, and its
# keyword names (torch's, its operator schema's, Paddle's).
Arg = Tuple[int, Tuple[str, ...]]
FIRST: Arg = (0, ("input", "self", "x"))

# Per operator stem, its arguments' domains. k of topk or kthvalue within
# the size is no entry: integers are written in the line (or drawn from
# their profile), not drawn here.
DOMAINS: Dict[str, Dict[Arg, Domain]] = {
    # probabilities: the sampling operators' and binary cross entropy's
    "multinomial": {FIRST: NON_NEGATIVE},
    "bernoulli": {FIRST: PROBABILITIES, (1, ("p",)): PROBABILITIES},
    "binomial": {(0, ("count",)): NON_NEGATIVE, (1, ("prob",)): PROBABILITIES},
    "binary_cross_entropy": {FIRST: PROBABILITIES, (1, ("target", "label")): PROBABILITIES},
    # rates, standard deviations, variances, weights: at least 0
    "poisson": {FIRST: NON_NEGATIVE},
    "normal": {(1, ("std",)): NON_NEGATIVE},
    "gaussian_nll_loss": {(2, ("var", "variance")): NON_NEGATIVE},
    "cov": {(4, ("aweights",)): NON_NEGATIVE},  # (keyword-only in torch: position 4 is Paddle's)
    # positive-definite matrices (and Cholesky factors, taken as such); linalg_cholesky(_ex) too
    "cholesky": {(0, ("A", "input", "self", "x")): POSITIVE_DEFINITE},
    "cholesky_solve": {(1, ("input2", "y")): POSITIVE_DEFINITE},
    "cholesky_inverse": {FIRST: POSITIVE_DEFINITE},
    # sorted boundaries
    "bucketize": {(1, ("boundaries", "sorted_sequence")): IN_ORDER},
    "searchsorted": {(0, ("sorted_sequence",)): IN_ORDER},
    "histogram": {(1, ("bins",)): IN_ORDER},
    # counts, divisors, bounds: what an integer or a bound tensor must hold
    "topk": {(1, ("k",)): POSITIVE_COUNT},
    "kthvalue": {(1, ("k",)): POSITIVE_COUNT},
    **{
        name: {(1, ("other", "y")): NONZERO_DIVISOR}
        for name in ("floor_divide", "remainder", "fmod", "mod", "floor_mod", "trunc_divide")
    },
    **{name: {(1, ("min",)): LOWER_BOUND, (2, ("max",)): UPPER_BOUND} for name in ("clip", "clamp")},
}

# Layers whose forward takes its functional's arguments (after the layer).
LAYERS = {"BCELoss": "binary_cross_entropy", "GaussianNLLLoss": "gaussian_nll_loss"}

# A name as levels record it -> the stem of its operator: (pattern, prefix to the stem).
_NAMES = (
    (re.compile(r"torch\.ops\.aten\.(\w+?)_?(?:\.\w+)?"), ""),
    (re.compile(r"torch\.(?:Tensor\.|nn\.functional\.|_C\._nn\.|_C\._VariableFunctions\.)?(\w+?)_?"), ""),
    (re.compile(r"torch\.linalg\.(\w+?)_?"), "linalg_"),
    (re.compile(r"torch\.special\.(\w+?)_?"), "special_"),
    (re.compile(r"torch\._C\._(?:linalg|special)\.(\w+?)_?"), ""),
    (re.compile(r"paddle\.(?:Tensor\.|linalg\.|nn\.functional\.|tensor\.)?(\w+?)_?"), ""),
)
_LAYER = re.compile(r"(?:torch|paddle)\.nn\.(\w+)\.forward")


# The Tensor operators whose operator takes a domain, by their dunder.
DUNDERS = {"__floordiv__": "floor_divide", "__mod__": "remainder"}


def stem(api: str) -> str:
    """The stem of the operator `api` names, as DOMAINS keys it ("" for
    none); a dunder is none but those of DUNDERS."""
    if "__" in api:
        return DUNDERS.get(api.rpartition(".")[2], "")
    for pattern, prefix in _NAMES:
        m = pattern.fullmatch(api)
        if m:
            return prefix + m.group(1)
    return ""


def entry_of(stem: str) -> Optional[Dict[Arg, Domain]]:
    """The DOMAINS entry of an operator's stem: its own, else its base's
    (linalg_cholesky_ex: cholesky), where the `_ex` form (an info tensor
    instead of an error) and the `linalg_` one take the same arguments."""
    base = stem[len("linalg_") :] if stem.startswith("linalg_") else stem
    return next(
        (DOMAINS[s] for s in (stem, stem.removesuffix("_ex"), base, base.removesuffix("_ex")) if s in DOMAINS), None
    )


def argument_domains(api: str) -> Dict[str, Domain]:
    """The domains of the arguments of a call of `api` that replay knows,
    by their value path (`args[1]`, `kwargs.std`: values.py); {} for an
    API it knows none of."""
    shift, entry = 0, entry_of(stem(api))
    layer = _LAYER.fullmatch(api)
    if layer and layer.group(1) in LAYERS:
        shift, entry = 1, DOMAINS[LAYERS[layer.group(1)]]
    out: Dict[str, Domain] = {}
    for (position, names), domain in (entry or {}).items():
        out[argument_path(position + shift)] = domain
        out.update((keyword_path(name), domain) for name in names)
    return out


def impose(domain: Optional[Domain], t: Any, dtype: Any) -> None:
    """The values of the floating tensor `t` (drawn in `dtype`, the
    recorded one; `t` may hold them cast) made, in place, to hold
    `domain`'s structure, where it has one: computed in float64
    (complex128) from the values drawn, then rounded to `dtype` once, so
    that every side of a check holds the same numbers. A tensor whose
    elements share memory (a stride of 0) is left as drawn."""
    import torch

    if domain is None or domain.shape is None or not (dtype.is_floating_point or dtype.is_complex):
        return
    if torch._debug_has_internal_overlap(t) == 1:  # (as copy_ itself tells it)
        return
    wide = torch.complex128 if dtype.is_complex else torch.float64
    with torch.no_grad():
        t.copy_(domain.shape(t.detach().to("cpu", wide)).to(dtype))
