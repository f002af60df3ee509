"""What two sides of a check returned, compared leaf by leaf: `Comparison`
walks both outputs together (tuples, lists, dicts, None, Python scalars,
tensors; modules and optimizers by their state_dict), holds their
structure, shapes, dtypes and devices to be the same, and, unless told to
compare only those, measures each numeric leaf's errors (`Errors`) within
torch.testing's default tolerance of the less precise of its two dtypes.
`Mismatch` is a difference in structure, which no tolerance covers."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from ...values import item_path


class Mismatch(Exception):
    """The two sides differ in structure, shape, dtype, device or an exact value."""


@dataclass
class Errors:
    """One numeric leaf's errors: the greatest absolute and relative
    difference (as torch.testing measures them: against the reference's
    magnitude; a NaN where the other side has none is infinitely wrong, NaN
    against NaN is equal), the tolerance it was held to, and how many of
    its elements are beyond it."""

    where: str
    max_abs: float
    max_rel: float
    rtol: float
    atol: float
    beyond: int  # elements beyond the tolerance
    total: int
    excess: float  # the greatest |difference| / what is allowed there: above 1 is a mismatch
    measure: str = "rtol/atol"  # or error_model.NAME
    allowed: float = 0.0  # error model: the bound at the element furthest past it (or nearest to it)
    difference: float = 0.0  # ... and the difference there
    fan_in: float = 1.0  # error model: the fan-in it estimated
    # "nan": every element is NaN on both sides; "infinite": NaN or infinite
    # on both sides, and not all NaN; "": some value is finite
    vacuous: str = ""
    index: int = 0  # error model: the element furthest past its bound (or nearest to it), in its row-major order

    def describe(self, other: str) -> str:
        share = f"{self.beyond} / {self.total} elements ({self.beyond / max(1, self.total):.1%})"
        if self.measure != "rtol/atol":
            return (
                f"{self.where}: {share} differ from the {other} side past the {self.measure}'s bound: "
                f"the worst {times(self.excess)} at element {self.index} (difference {self.difference:.3g}, "
                f"bound {self.allowed:.3g}; "
                f"fan-in ~{self.fan_in:.0f}); greatest absolute difference {self.max_abs:.3g}, greatest relative "
                f"difference {self.max_rel:.3g}"
            )
        return (
            f"{self.where}: {share} differ from the {other} side: greatest absolute difference "
            f"{self.max_abs:.3g} (up to {self.atol:.3g} allowed), greatest relative difference "
            f"{self.max_rel:.3g} (up to {self.rtol:.3g} allowed)"
        )


def times(excess: float) -> str:
    """How far past its bound an element is, as a verdict says it: "by
    3.2x"; an infinite excess (a NaN or an infinity on one side only) in words."""
    return f"by {excess:.3g}x" if math.isfinite(excess) else "past any bound (a NaN or an infinity on one side only)"


class Comparison:
    """Compares a replay's values (a) with the reference side's (b), named
    `other` in what it says. `dtype_of` maps a dtype of a to the one b may
    have instead (the float64 check casts), `device_of` a device of a to
    the one b may be on instead (the device check moves the inputs; a
    device the line itself names stays). Python floats (which carry no dtype of their own) are held to the
    tolerance of `scalar_dtype`. Only shapes, dtypes and devices are
    compared unless `values`; rtol and atol, when given, replace the
    dtypes' defaults."""

    def __init__(
        self,
        other: str,
        values: bool = True,
        dtype_of: Callable[[Any], Any] = lambda d: d,
        device_of: Callable[[Any], Any] = lambda d: d,
        scalar_dtype: Any = None,
        rtol: Optional[float] = None,
        atol: Optional[float] = None,
        bounds: Optional[Dict[str, Any]] = None,
        unjudged: Tuple[str, ...] = (),
        exact: bool = False,
    ) -> None:
        import torch

        self.other, self.values, self.dtype_of, self.device_of = other, values, dtype_of, device_of
        self.bounds = bounds or {}  # per leaf, the error model's Bound (float64 check)
        self.unjudged = unjudged  # leaves not compared (ReplayFramework.workspace_outputs)
        self.scalar_dtype = scalar_dtype or torch.float64
        self.rtol, self.atol = rtol, atol
        self.exact = exact  # both sides' tensors known to hold the very same values (check.exactly_equal)
        self.errors: List[Errors] = []  # of every numeric leaf compared by value

    def __call__(self, a: Any, b: Any, where: str) -> None:
        """Compares a with b, recording each numeric leaf's Errors; raises
        Mismatch at the first difference no tolerance covers."""
        import torch

        if where in self.unjudged:
            return
        if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
            self.tensors(a, b, where)
        elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            if len(a) != len(b):
                raise Mismatch(f"{where}: {len(a)} items, {len(b)} on the {self.other} side")
            for i, (x, y) in enumerate(zip(a, b)):
                self(x, y, item_path(where, i))
        elif isinstance(a, dict) and isinstance(b, dict):
            if list(a) != list(b):
                raise Mismatch(f"{where}: the keys {list(a)}, {list(b)} on the {self.other} side")
            for k in a:
                self(a[k], b[k], f"{where}[{k!r}]")  # (as tensor_leaves names it)
        elif _is_numpy(a) and _is_numpy(b):
            self.tensors(_numpy_tensor(a), _numpy_tensor(b), where)
        elif type(a) is not type(b):
            raise Mismatch(f"{where}: {_kind(a)}, {_kind(b)} on the {self.other} side")
        elif isinstance(a, (torch.nn.Module, torch.optim.Optimizer)):
            self(a.state_dict(), b.state_dict(), where)
        elif isinstance(a, (float, complex)):
            wide = torch.float64 if isinstance(a, float) else torch.complex128
            self.tensors(torch.tensor(a, dtype=wide), torch.tensor(b, dtype=wide), where, self.scalar_dtype)
        elif isinstance(a, torch.dtype):
            if b not in (a, self.dtype_of(a)):
                raise Mismatch(f"{where}: {a}, {b} on the {self.other} side")
        elif isinstance(a, torch.device):
            if b not in (a, self.device_of(a)):
                raise Mismatch(f"{where}: {a}, {b} on the {self.other} side")
        elif self.values and type(a).__eq__ is not object.__eq__ and not _equal(a, b):  # ints, strings, None ...
            raise Mismatch(f"{where}: {a!r}, {b!r} on the {self.other} side")  # (no __eq__ of its own: by type only)

    def tensors(self, a: Any, b: Any, where: str, tolerance_dtype: Any = None) -> None:
        from torch.testing._comparison import default_tolerances

        a, b = plain(a), plain(b)
        if a.shape != b.shape:
            raise Mismatch(f"{where}: shape {list(a.shape)}, {list(b.shape)} on the {self.other} side")
        if b.dtype not in (a.dtype, self.dtype_of(a.dtype)):
            raise Mismatch(f"{where}: {a.dtype}, {b.dtype} on the {self.other} side")
        if b.device not in (a.device, self.device_of(a.device)):  # (a device the line names is kept)
            raise Mismatch(f"{where}: on {a.device}, on {b.device} on the {self.other} side")
        if self.values and self.exact:  # (nothing to measure: no float64 copy of a large output made to say 0)
            self.errors.append(Errors(where, 0.0, 0.0, 0.0, 0.0, 0, a.numel(), 0.0, vacuous=_non_finite(a, a)))
            return
        if self.values:
            dtype = a.dtype  # (the tolerance of its own dtype, after rounded_to_infinity widens it)
            bound = self.bounds.get(where)
            floating = (a.is_floating_point() or a.is_complex()) and (b.is_floating_point() or b.is_complex())
            if floating and b.dtype != a.dtype:
                a = rounded_to_infinity(a, b, bound.allowed if bound is not None else 0.0)
            if bound is not None:
                self.errors.append(measure_bounded(a, b, bound, where))
                return
            rtol, atol = default_tolerances(*([tolerance_dtype] if tolerance_dtype else [dtype, b.dtype]))
            rtol = rtol if self.rtol is None else self.rtol
            atol = atol if self.atol is None else self.atol
            self.errors.append(measure(a, b, rtol, atol, where))


def rounded_to_infinity(a: Any, b: Any, allowed: Any = 0.0) -> Any:
    """a, in b's wider dtype, holding b's value where b is finite but past
    a's dtype's largest (less what a's error may be, `allowed`) and a is
    the infinity of b's sign: b correctly rounded to a's dtype (pow(1e-38,
    -4) is inf in float32), or a result within its error of overflowing
    (float16's 1 + tan(x)^2 near a pole, of a tan(x) rounded up); a
    complex value part by part."""
    import torch

    if a.is_complex():  # (each part rounded apart: a complex64 holds two float32s)
        if not b.is_complex():
            return a
        part = torch.float16 if a.dtype == torch.complex32 else torch.float32 if a.dtype == torch.complex64 else None
        if part is None:
            return a
        real = rounded_to_infinity(a.real.to(part), b.real, allowed)
        imag = rounded_to_infinity(a.imag.to(part), b.imag, allowed)
        return torch.complex(real, imag)
    largest = torch.finfo(a.dtype).max
    a, b = a.detach().cpu().to(b.dtype), b.detach().cpu()
    if not bool(a.isinf().any()):  # (no infinity to round: the masks below are as large as the output)
        return a
    past = a.isinf() & b.isfinite() & (b.abs() + allowed > largest) & (a.sign() == b.sign())
    return torch.where(past, b, a)


def measure(a: Any, b: Any, rtol: float, atol: float, where: str) -> Errors:
    """a's errors against b (same shape), on the CPU in the wider dtype."""
    import torch

    common = torch.promote_types(a.dtype, b.dtype)
    a, b = a.detach().cpu().to(common), b.detach().cpu().to(common)
    wide = torch.complex128 if common.is_complex else torch.float64
    x, y = a.to(wide), b.to(wide)
    diff = _difference(x, y)
    # as torch.isclose, but complex values part by part (an infinite part equal on both sides)
    close = (diff == 0) | (diff.isfinite() & (diff <= atol + rtol * y.abs()))
    rel = _nan_is_inf(torch.where(diff == 0, 0.0, diff / y.abs()))
    excess = _nan_is_inf(torch.where(diff == 0, 0.0, diff / (atol + rtol * y.abs())))
    if not diff.numel():
        return Errors(where, 0.0, 0.0, rtol, atol, 0, 0, 0.0)
    vacuous = _non_finite(x, y)
    return Errors(
        where,
        diff.max().item(),
        rel.max().item(),
        rtol,
        atol,
        int((~close).sum()),
        close.numel(),
        excess.max().item(),
        vacuous=vacuous,
    )


def _differences(a: Any, b: Any) -> Tuple[Any, Any, Any]:
    """|a - b| and |b| in float64 (0 where both are equal, infinities and
    NaN against NaN too; infinite for a NaN against a number), and whether
    both sides are non-finite everywhere."""
    import torch

    common = torch.promote_types(a.dtype, b.dtype)
    wide = torch.complex128 if common.is_complex else torch.float64
    x, y = a.detach().cpu().to(wide), b.detach().cpu().to(wide)
    diff = _difference(x, y)
    return diff, y.abs().to(torch.float64), _non_finite(x, y)


def _difference(x: Any, y: Any) -> Any:
    """|x - y| in float64: 0 where both are equal (equal infinities too),
    and NaN against NaN; infinite for a NaN against a number. Two
    complex values each with a non-finite part are equal: which of
    inf+infj, inf+nanj and nan+nanj a product or a sum with an infinity
    gives depends on the formula (C's Annex G recovers infinities that the
    textbook formula, and a BLAS kernel, makes NaN), and torch promises
    none; a non-finite value against a finite one is infinitely far."""
    import torch

    if x.is_complex():  # (each non-finite on both sides: equal, whichever the formula made)
        re, im = _difference(x.real, y.real), _difference(x.imag, y.imag)
        bad_x, bad_y = ~x.isfinite(), ~y.isfinite()
        return torch.where(bad_x & bad_y, 0.0, torch.where(bad_x | bad_y, math.inf, torch.hypot(re, im)))
    diff = (x - y).abs().to(torch.float64)
    return _nan_is_inf(torch.where((x == y) | (x.isnan() & y.isnan()), 0.0, diff))


def _non_finite(x: Any, y: Any) -> str:
    """Errors.vacuous of two sides' values."""
    if not x.numel() or bool(x.isfinite().any() or y.isfinite().any()):  # (x, y: not always float64)
        return ""
    return "nan" if bool(x.isnan().all() and y.isnan().all()) else "infinite"


def measure_bounded(a: Any, b: Any, bound: Any, where: str) -> Errors:
    """a's errors against b within the error model's bound, element by
    element (error_model.py)."""
    import torch

    diff, magnitude, vacuous = _differences(a, b)
    if not diff.numel():
        return Errors(where, 0.0, 0.0, 0.0, 0.0, 0, 0, 0.0, bound.measure)
    # (an infinite bound allows any number, an infinity too: a gradient of an overflowed output; never a
    # NaN where the other side has a number, nor a number where it has NaN)
    nan_against_number = a.detach().cpu().isnan() ^ b.detach().cpu().isnan()
    if bound.nan_allowed is not None:
        nan_against_number &= ~bound.nan_allowed
    excess = torch.where((diff == 0) | (bound.allowed.isinf() & ~nan_against_number), 0.0, diff / bound.allowed)
    excess = _nan_is_inf(excess)
    worst = int(excess.reshape(-1).argmax())
    rel = _nan_is_inf(torch.where(diff == 0, 0.0, diff / magnitude))
    return Errors(
        where,
        diff.max().item(),
        rel.max().item(),
        0.0,
        0.0,
        int((excess > 1).sum()),
        diff.numel(),
        excess.reshape(-1)[worst].item(),
        bound.measure,
        bound.allowed.reshape(-1)[worst].item(),
        diff.reshape(-1)[worst].item(),
        bound.fan_in,
        vacuous,
        worst,
    )


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an == that gives no truth value: not equal
        return False


def _nan_is_inf(t: Any) -> Any:
    import torch

    return torch.where(t.isnan(), math.inf, t)


def _is_numpy(v: Any) -> bool:
    """A numpy array or scalar (numpy only loaded if the output holds one)."""
    return type(v).__module__ == "numpy"


def _numpy_tensor(v: Any) -> Any:
    import numpy as np
    import torch

    return torch.from_numpy(np.array(v))


def plain(t: Any) -> Any:
    """A strided tensor of t's values (sparse: dense; quantized: dequantized)."""
    import torch

    if t.is_quantized:
        t = t.dequantize()
    return t.to_dense() if t.layout != torch.strided else t


def _kind(v: Any) -> str:
    return "None" if v is None else f"a {type(v).__name__}"
