"""Mutations of a config line: each one a small, seeded, repeatable change
of the parsed line (api, args, kwargs: values.py), written back as a line
that replay runs as it is.

A mutation is data (`Mutation`: a kind, an operation, where, and its
parameters) and applying it is a pure function of the line, so that a
case is its seed line and a list of mutations: the minimizer drops or
shrinks some and applies the rest again. `propose` draws one.

The kinds (fuzz --mutate):
- shape: a size changed everywhere it occurs (so that operands stay
  compatible: mm's inner size to 0 on both), to 0, 1, larger, smaller, the
  neighbours of powers of two that vector kernels special-case, or so
  large that a tensor holds 2^31 elements (where --max-bytes allows); one
  tensor's size to 1 (broadcasting) or 0; a dimension added or removed;
- dtype: every floating (or integer) tensor, with the dtype arguments
  naming theirs, made another dtype; or one tensor alone (mixed dtypes);
- layout: transposed, sliced with a step, expanded (stride 0),
  channels_last, a window at an offset in a larger storage;
- value: a tensor filled with NaN, an infinity, -0.0, a subnormal, its
  dtype's extremes, -1, or a value just outside its recorded range (an
  index of -1, of the size): Filled(Tensor(...), value);
- scalar: an int, float or bool argument made 0, negative, huge, a
  dimension out of range; a list emptied or shortened."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ..config import format_line
from ..replay.memory import contiguous_strides, storage_numel
from ..values import FILLED, Call, Symbol, TensorSpec, walk
from ..values import replace_at as replace_value

KINDS = ("shape", "dtype", "layout", "value", "scalar")

FLOATING = ("float16", "bfloat16", "float32", "float64")
COMPLEX = ("complex64", "complex128")
INTEGER = ("uint8", "int8", "int16", "int32", "int64")
# sizes kernels special-case: around powers of two and vector widths
SPECIAL_SIZES = (3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1023, 1024, 1025)
ELEMENTS_PAST_INT32 = 2**31 + 1


class NotApplicable(Exception):
    """The mutation does not apply to this line (what it changes is gone)."""


@dataclass(frozen=True)
class Mutation:
    kind: str  # one of KINDS
    op: str  # what it does: "resize", "retype", "transpose", "fill", ...
    where: str = ""  # the argument it changes ("args[0]"; "" for all)
    params: Tuple[Any, ...] = ()

    def describe(self) -> str:
        at = f" {self.where}" if self.where else ""
        shown = ", ".join(_show(p) for p in self.params)
        return f"{self.kind}: {self.op}{at}" + (f" ({shown})" if shown else "")


def _show(v: Any) -> str:
    return repr(v) if isinstance(v, float) else str(v)


@dataclass
class Line:
    """A parsed line, mutable: api, args (a list) and kwargs."""

    api: str
    args: List[Any]
    kwargs: Dict[str, Any] = field(default_factory=dict)

    def copy(self) -> "Line":
        return Line(self.api, list(self.args), dict(self.kwargs))


# -- where values are -------------------------------------------------------


def mutable(value: Any) -> bool:
    """Whether a mutation may change what is inside `value`: a container's
    items (lists, tuples, dicts, slices) and a Filled tensor's description;
    not a constructor call's arguments (a module's sizes are its own)."""
    return not isinstance(value, Call) or value.name == FILLED


def leaves(line: Line) -> Iterator[Tuple[str, Any]]:
    """(where, value) of every value of the line a mutation may change,
    containers and their items both, outermost first; `where` its path
    (values.py: the path its value profile has)."""
    return walk(line.args, line.kwargs, into=mutable)


def replace_at(line: Line, where: str, fn: Callable[[Any], Any]) -> None:
    """The value at `where` replaced by fn(value), in place; NotApplicable
    where there is none."""
    if not replace_value(line.args, line.kwargs, where, fn):
        raise NotApplicable(where)


def plain_tensors(line: Line) -> List[Tuple[str, TensorSpec]]:
    """The strided, unquantized tensor descriptions of the line."""
    return [
        (w, v)
        for w, v in leaves(line)
        if isinstance(v, TensorSpec) and v.layout in (None, "torch.strided") and v.qscheme is None
    ]


def with_fields(spec: TensorSpec, **changes: Any) -> TensorSpec:
    """A copy of `spec` with some fields changed; a new shape drops the
    recorded layout (contiguous again) unless a stride is given too."""
    fields = {k: getattr(spec, k) for k in TensorSpec.__slots__}
    if "shape" in changes and "stride" not in changes:
        fields.update(stride=None, storage_offset=None, storage_size=None)
    fields.update(changes)
    shape, dtype = fields.pop("shape"), fields.pop("dtype")
    return TensorSpec(shape, dtype, **fields)


# -- applying ---------------------------------------------------------------


def apply(seed: Line, mutations: Sequence[Mutation]) -> Line:
    """The seed line with each mutation applied in turn (NotApplicable from
    one that no longer applies)."""
    line = seed.copy()
    for m in mutations:
        APPLY[m.op](line, m)
    return line


def _resize(line: Line, m: Mutation) -> None:
    """Every size `old` of every tensor (and, with ints, every int argument
    equal to it) becomes `new`."""
    old, new, ints = m.params
    hit = False
    for where, spec in plain_tensors(line):
        if old in spec.shape:
            hit = True
            replace_at(line, where, lambda s: with_fields(s, shape=[new if d == old else d for d in s.shape]))
    if ints:
        for where, v in list(leaves(line)):
            if type(v) is int and v == old:
                replace_at(line, where, lambda _: new)
    if not hit:
        raise NotApplicable("no size " + str(old))


def _set_dim(line: Line, m: Mutation) -> None:
    dim, new = m.params
    replace_at(line, m.where, lambda s: with_fields(s, shape=[new if i == dim else d for i, d in enumerate(s.shape)]))


def _unsqueeze(line: Line, m: Mutation) -> None:
    (pos,) = m.params
    replace_at(line, m.where, lambda s: with_fields(s, shape=list(s.shape[:pos]) + [1] + list(s.shape[pos:])))


def _merge_dims(line: Line, m: Mutation) -> None:
    (dim,) = m.params

    def merge(s: TensorSpec) -> TensorSpec:
        if dim + 1 >= len(s.shape):
            raise NotApplicable(m.where)
        shape = list(s.shape)
        return with_fields(s, shape=shape[:dim] + [shape[dim] * shape[dim + 1]] + shape[dim + 2 :])

    replace_at(line, m.where, merge)


def _retype(line: Line, m: Mutation) -> None:
    """Every tensor of dtype `old` (and every dtype argument naming it) becomes `new`."""
    old, new = m.params
    hit = False
    for where, spec in plain_tensors(line):
        if spec.dtype == old and (not m.where or where == m.where):
            hit = True
            replace_at(line, where, lambda s: with_fields(s, dtype=new))
    if not m.where:
        for where, v in list(leaves(line)):
            if isinstance(v, Symbol) and v.name == f"torch.{old}":
                replace_at(line, where, lambda _: Symbol(f"torch.{new}"))
    if not hit:
        raise NotApplicable(f"no {old} tensor")


def _layout(line: Line, m: Mutation) -> None:
    def relayout(s: TensorSpec) -> TensorSpec:
        shape = list(s.shape)
        if m.op == "transpose":
            i, j = m.params
            if j >= len(shape):
                raise NotApplicable(m.where)
            swapped = list(shape)
            swapped[i], swapped[j] = swapped[j], swapped[i]
            stride = contiguous_strides(swapped)
            stride[i], stride[j] = stride[j], stride[i]
        elif m.op == "step":
            dim, step = m.params
            if dim >= len(shape):
                raise NotApplicable(m.where)
            stride = contiguous_strides([d * step if i == dim else d for i, d in enumerate(shape)])
            stride[dim] *= step
        elif m.op == "expand":
            (dim,) = m.params
            if dim >= len(shape):
                raise NotApplicable(m.where)
            stride = contiguous_strides([1 if i == dim else d for i, d in enumerate(shape)])
            stride[dim] = 0
        elif m.op == "channels_last":
            if len(shape) != 4:
                raise NotApplicable(m.where)
            n, c, h, w = shape
            stride = [h * w * c, 1, w * c, c]
        else:  # offset
            (offset,) = m.params
            stride = list(s.stride) if s.stride is not None else contiguous_strides(shape)
            size = offset + storage_numel(shape, stride) + offset
            return with_fields(s, stride=None if s.stride is None else stride, storage_offset=offset, storage_size=size)
        return with_fields(s, stride=stride, storage_offset=None, storage_size=None)

    replace_at(line, m.where, relayout)


def _fill(line: Line, m: Mutation) -> None:
    (value,) = m.params
    replace_at(line, m.where, lambda s: Call(FILLED, s.args[0] if isinstance(s, Call) else s, value))


def _scalar(line: Line, m: Mutation) -> None:
    (value,) = m.params
    replace_at(line, m.where, lambda _: value)


def _shorten(line: Line, m: Mutation) -> None:
    (keep,) = m.params

    def cut(v: Any) -> Any:
        if not isinstance(v, (list, tuple)) or len(v) <= keep:
            raise NotApplicable(m.where)
        return type(v)(list(v)[:keep])

    replace_at(line, m.where, cut)


# What a mutation that is no longer (or never was) one of its line's raises in `apply`.
UNAPPLICABLE = (NotApplicable, ValueError, OverflowError)
# The kind each operation is of (a Mutation's kind and op go together).
KIND_OF = {
    **dict.fromkeys(("resize", "set_dim", "unsqueeze", "merge_dims"), "shape"),
    "retype": "dtype",
    **dict.fromkeys(("transpose", "step", "expand", "channels_last", "offset"), "layout"),
    "fill": "value",
    **dict.fromkeys(("scalar", "shorten"), "scalar"),
}
APPLY: Dict[str, Callable[[Line, Mutation], None]] = {
    "resize": _resize,
    "set_dim": _set_dim,
    "unsqueeze": _unsqueeze,
    "merge_dims": _merge_dims,
    "retype": _retype,
    "transpose": _layout,
    "step": _layout,
    "expand": _layout,
    "channels_last": _layout,
    "offset": _layout,
    "fill": _fill,
    "scalar": _scalar,
    "shorten": _shorten,
}


# -- drawing ----------------------------------------------------------------


def propose(
    rng: random.Random, line: Line, kinds: Sequence[str], ranges: Dict[str, Any], max_elements: Optional[int] = None
) -> Optional[Mutation]:
    """A mutation of `line` of one of `kinds`, drawn with `rng`; None where
    none of them has anything to change. `ranges` are the line's value
    profiles (argument -> _C.ValueProfile); `max_elements`, the most
    elements a tensor may grow to (from --max-bytes)."""
    order = list(kinds)
    rng.shuffle(order)
    for kind in order:
        m = DRAW[kind](rng, line, ranges, max_elements)
        if m is not None:
            return m
    return None


def _draw_shape(
    rng: random.Random, line: Line, ranges: Dict[str, Any], max_elements: Optional[int]
) -> Optional[Mutation]:
    tensors = plain_tensors(line)
    if not tensors:
        return None
    where, spec = rng.choice(tensors)
    choice = rng.randrange(10)
    if choice < 6 or not spec.shape:
        sizes = sorted({d for _, s in tensors for d in s.shape})
        if not sizes:
            return Mutation("shape", "unsqueeze", where, (0,))
        old = rng.choice(sizes)
        options = [0, 1, old + 1, max(old - 1, 0), old * 2, old * 4, max(old // 2, 1), rng.choice(SPECIAL_SIZES)]
        if max_elements and max_elements >= ELEMENTS_PAST_INT32:
            others = max(1, max(math.prod(d for d in s.shape if d != old) for _, s in tensors if old in s.shape))
            options.append(-(-ELEMENTS_PAST_INT32 // others))
        new = rng.choice([v for v in options if v != old] or [old + 1])
        return Mutation("shape", "resize", "", (old, new, rng.random() < 0.5))
    if choice < 8:
        return Mutation("shape", "set_dim", where, (rng.randrange(len(spec.shape)), rng.choice([0, 1])))
    if choice == 8 or len(spec.shape) < 2:
        return Mutation("shape", "unsqueeze", where, (rng.randrange(len(spec.shape) + 1),))
    return Mutation("shape", "merge_dims", where, (rng.randrange(len(spec.shape) - 1),))


def _draw_dtype(
    rng: random.Random, line: Line, ranges: Dict[str, Any], max_elements: Optional[int]
) -> Optional[Mutation]:
    tensors = [(w, s) for w, s in plain_tensors(line) if s.dtype in FLOATING + COMPLEX + INTEGER + ("bool",)]
    if not tensors:
        return None
    where, spec = rng.choice(tensors)
    family = FLOATING + COMPLEX if spec.dtype in FLOATING + COMPLEX else INTEGER + ("bool",)
    if rng.random() < 0.25:  # mixed: one tensor, any other dtype
        family = FLOATING + COMPLEX + INTEGER + ("bool",)
        return Mutation("dtype", "retype", where, (spec.dtype, rng.choice([d for d in family if d != spec.dtype])))
    return Mutation("dtype", "retype", "", (spec.dtype, rng.choice([d for d in family if d != spec.dtype])))


def _draw_layout(
    rng: random.Random, line: Line, ranges: Dict[str, Any], max_elements: Optional[int]
) -> Optional[Mutation]:
    tensors = [(w, s) for w, s in plain_tensors(line) if s.shape and math.prod(s.shape) > 1]
    if not tensors:
        return None
    where, spec = rng.choice(tensors)
    rank = len(spec.shape)
    ops = (
        ["step", "offset", "expand"]
        + (["transpose", "transpose"] if rank >= 2 else [])
        + (["channels_last"] if rank == 4 else [])
    )
    op = rng.choice(ops)
    if op == "transpose":
        i, j = sorted(rng.sample(range(rank), 2))
        return Mutation("layout", op, where, (i, j))
    if op == "step":
        return Mutation("layout", op, where, (rng.randrange(rank), rng.choice([2, 3])))
    if op == "expand":
        wide = [i for i, d in enumerate(spec.shape) if d > 1]
        return Mutation("layout", op, where, (rng.choice(wide),))
    if op == "channels_last":
        return Mutation("layout", op, where)
    return Mutation("layout", op, where, (rng.choice([1, 3, 8, 17]),))


def _draw_value(
    rng: random.Random, line: Line, ranges: Dict[str, Any], max_elements: Optional[int]
) -> Optional[Mutation]:
    import torch

    tensors = [(w, s) for w, s in plain_tensors(line) if not w.endswith(".args[0]")]
    if not tensors:
        return None
    where, spec = rng.choice(tensors)
    if spec.dtype in FLOATING + COMPLEX:
        info = torch.finfo(getattr(torch, spec.dtype))
        values = [
            math.nan,
            math.inf,
            -math.inf,
            -0.0,
            info.smallest_normal / 2,
            info.smallest_normal,
            info.max,
            -info.max,
            info.eps,
        ]
    elif spec.dtype in INTEGER:
        info = torch.iinfo(getattr(torch, spec.dtype))
        values = [info.max, info.min, -1, 0]
        profile = ranges.get(where)
        if profile is not None:
            values += [v for v in (profile.max + 1, profile.min - 1) if info.min <= v <= info.max]
        sizes = [d for _, s in plain_tensors(line) for d in s.shape if info.min <= d <= info.max]
        values += sizes[:1] + [max(sizes)] if sizes else []
    elif spec.dtype == "bool":
        values = [True, False]
    else:
        return None
    return Mutation("value", "fill", where, (rng.choice(values),))


def _draw_scalar(
    rng: random.Random, line: Line, ranges: Dict[str, Any], max_elements: Optional[int]
) -> Optional[Mutation]:
    found = [
        (w, v)
        for w, v in leaves(line)
        if type(v) in (int, float, bool) or (isinstance(v, (list, tuple)) and v and all(type(x) is int for x in v))
    ]
    if not found:
        return None
    where, v = rng.choice(found)
    if isinstance(v, (list, tuple)):
        if rng.random() < 0.5:
            return Mutation("scalar", "shorten", where, (rng.randrange(len(v)),))
        return Mutation("scalar", "scalar", where, (type(v)(),))
    if type(v) is bool:
        return Mutation("scalar", "scalar", where, (not v,))
    if type(v) is int:
        rank = max((len(s.shape) for _, s in plain_tensors(line)), default=1)
        options = [0, -1, -v, -abs(v) - 1, v + 1, 2**31, 2**63 - 1, rank, -rank - 1]
    else:
        options = [0.0, -v, -abs(v) - 1.0, 1e308, math.nan, math.inf, -math.inf]
    return Mutation("scalar", "scalar", where, (rng.choice([o for o in options if o != v] or [v]),))


DRAW = {
    "shape": _draw_shape,
    "dtype": _draw_dtype,
    "layout": _draw_layout,
    "value": _draw_value,
    "scalar": _draw_scalar,
}


# -- the edges of a line -----------------------------------------------------

# How far the edge stage grows a tensor when --max-bytes does not say: 2^24 elements (64 MiB in float32).
EDGE_ELEMENTS = 2**24


def edges(line: Line, kinds: Sequence[str], ranges: Dict[str, Any], max_elements: Optional[int]) -> List[Mutation]:
    """The classic edge cases of `line`, in a fixed order, one mutation
    each: where kernels that are right on ordinary inputs go wrong. Every
    size (largest first) made 0 and 1; the largest tensor grown one
    element past the power of two at least 8 times its size (a fixed
    buffer, a thread-block or grid limit); each tensor given a leading
    size-1 dimension; every floating dtype made each other one; each
    tensor transposed, strided and offset; filled with NaN, an infinity
    (floating) or -1 and one past its recorded range (integer); each
    number made 0, negative and NaN, each flag flipped, each list emptied.
    A campaign runs them all before it draws (campaign.py), so that what
    they find does not depend on chance."""
    out: List[Mutation] = []
    tensors = plain_tensors(line)
    if "shape" in kinds and tensors:
        sizes = sorted({d for _, s in tensors for d in s.shape}, reverse=True)
        for d in sizes[:3]:
            out += [Mutation("shape", "resize", "", (d, v, False)) for v in (0, 1) if v != d]
        where, spec = max(tensors, key=lambda t: math.prod(t[1].shape))
        numel = math.prod(spec.shape)
        if spec.shape and numel:
            old = max(spec.shape)
            others = numel // old
            past = 1 << (8 * numel - 1).bit_length()  # the power of two at least 8x numel
            new = -(-(past + 1) // others)
            if new * others <= (max_elements or EDGE_ELEMENTS):
                out.append(Mutation("shape", "resize", "", (old, new, False)))
        out += [Mutation("shape", "unsqueeze", w, (0,)) for w, _ in tensors]
    if "dtype" in kinds:
        for old in sorted({s.dtype for _, s in tensors if s.dtype in FLOATING}, key=FLOATING.index):
            out += [Mutation("dtype", "retype", "", (old, new)) for new in FLOATING if new != old]
    if "layout" in kinds:
        for w, s in tensors:
            if s.shape and math.prod(s.shape) > 1:
                rank = len(s.shape)
                out += [Mutation("layout", "transpose", w, (rank - 2, rank - 1))] if rank >= 2 else []
                out += [Mutation("layout", "step", w, (rank - 1, 2)), Mutation("layout", "offset", w, (3,))]
    if "value" in kinds:
        for w, s in tensors:
            if w.endswith(".args[0]"):
                continue  # (the description inside a Filled tensor)
            if s.dtype in FLOATING + COMPLEX:
                out += [Mutation("value", "fill", w, (v,)) for v in (math.nan, math.inf)]
            elif s.dtype in INTEGER and s.dtype != "uint8":
                profile = ranges.get(w)
                values = [-1] + ([profile.max + 1] if profile is not None else [])
                out += [Mutation("value", "fill", w, (v,)) for v in values]
    if "scalar" in kinds:
        for w, v in leaves(line):
            if type(v) is bool:
                out.append(Mutation("scalar", "scalar", w, (not v,)))
            elif type(v) is int:
                out += [Mutation("scalar", "scalar", w, (x,)) for x in (0, -1) if x != v]
            elif type(v) is float:
                out += [Mutation("scalar", "scalar", w, (x,)) for x in (0.0, -abs(v) - 1.0, math.nan) if x != v]
            elif isinstance(v, (list, tuple)) and v and all(type(x) is int for x in v):
                out.append(Mutation("scalar", "scalar", w, (type(v)(),)))
    return out


# -- shrinking --------------------------------------------------------------


def shrinks(line: Line) -> List[Mutation]:
    """Mutations making the line's tensors smaller, to try before its
    others: each size above 1 halved everywhere it occurs."""
    sizes = sorted({d for _, s in plain_tensors(line) for d in s.shape if d > 1}, reverse=True)
    return [Mutation("shape", "resize", "", (d, d // 2, True)) for d in sizes]


def smaller(m: Mutation) -> Optional[Mutation]:
    """`m` with a smaller effect where it grows a size (halfway back), else None."""
    if m.op == "resize" and m.params[1] > m.params[0] + 1:
        old, new, ints = m.params
        return Mutation(m.kind, m.op, m.where, (old, (old + new) // 2, ints))
    return None


def render(line: Line) -> str:
    """A parsed (and mutated) line written as a config line."""
    return format_line(line.api, line.args, line.kwargs, show_device=True, show_requires_grad=True)
