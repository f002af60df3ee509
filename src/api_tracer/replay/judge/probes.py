"""The error model's probes (error_model.py): how the reference side's
inputs are moved before it runs again, each a builder Perturbation. Every
floating input scaled by 1 + U (`Scale`, which notes what it saw), moved
at random signs (`signs`), alone (`Alone`), by one unit in its last place
(`Ulps`), at one element (`one_element`) or at a random half of them
(`Half`); what the forward saved moved as rounding it would (`Saved`); a
composite layer's sublayers' outputs rounded (`Rounded`). And the unit
roundoffs they move by."""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..builder import Perturbation

U = 2.0**-30  # the inputs' relative move of the probes (far above float64's rounding)


def accumulation_roundoff(dtype: Any) -> float:
    """The roundoff of what a kernel of `dtype` accumulates in: float32 for
    the dtypes below it, else the dtype's own."""
    import torch

    return min(unit_roundoff(dtype) or 2.0**-53, unit_roundoff(torch.float32))


def unit_roundoff(dtype: Any) -> Optional[float]:
    """The unit roundoff of a floating or complex dtype; None for others."""
    import torch

    if dtype.is_complex:
        dtype = {torch.complex32: torch.float16, torch.complex64: torch.float32}.get(dtype, torch.float64)
    if not dtype.is_floating_point:
        return None
    return torch.finfo(dtype).eps / 2


class Tensors(Perturbation):
    """Each floating input tensor changed by `change(path, storage)`; float
    scalars and layers left be."""

    def __init__(self, change: Callable[[str, Any], None]) -> None:
        self.change = change

    def tensor(self, path: str, storage: Any) -> None:
        self.change(path, storage)


class Rounded(Perturbation):
    """Each composite layer's sublayers' outputs moved by `relative` at
    random signs; the inputs left be (ROUNDING_DRAWS of them)."""

    def __init__(self, relative: float, seed: int) -> None:
        self.relative, self.seed = relative, seed

    def layer(self, path: str, round_outputs: Callable[[float, int], None]) -> None:
        round_outputs(self.relative, self.seed)


class Scale(Perturbation):
    """Every floating input tensor scaled by 1 + U, and noted first in
    `seen`: its path, its storage's number of elements and its elements'
    magnitudes in its own order (non-finite ones as 0), and its largest
    dimension in `spans`; the paths of nonzero float scalars noted in
    `scalars`, and those of layers holding layers in `layered`."""

    def __init__(self) -> None:
        self.seen: List[Tuple[str, int, Any]] = []
        self.scalars: List[str] = []
        self.layered: List[str] = []
        self.spans: List[int] = []

    def tensor(self, path: str, storage: Any) -> None:
        import torch

        # the elements' magnitudes in the tensor's own order (the builder hands its storage, and the tensor)
        logical = getattr(storage, "logical", storage)
        self.spans.append(max(logical.shape, default=1))
        magnitude = logical.detach().abs().to(torch.float64).reshape(-1)
        self.seen.append((path, storage.numel(), torch.where(magnitude.isfinite(), magnitude, 0.0)))
        storage.mul_(1 + U)

    def scalar(self, path: str, value: float) -> float:
        if value and math.isfinite(value):
            self.scalars.append(path)
        return value

    def layer(self, path: str, round_outputs: Callable[[float, int], None]) -> None:
        self.layered.append(path)


def signs(seed: int, draw: int, sized: bool) -> Perturbation:
    """Every floating input's elements each multiplied by 1 + U * m, m of
    a random sign, and (`sized`, after the first draw) of a size drawn
    from [1/2, 1]: with 1 +- U alone, a product's two factors moved apart
    cancel exactly one time in two, so that a dot of two terms had a 1 in
    256 chance of no move in any draw (a float32 matmul of inner size 2
    reported)."""
    import torch

    gen = torch.Generator().manual_seed(seed + draw)

    def change(path: str, t: Any) -> None:
        wide = t.dtype if not t.is_complex() else torch.float64
        signs = torch.randint(0, 2, t.shape, generator=gen).to(wide)
        sizes = 1 - 0.5 * torch.rand(t.shape, generator=gen, dtype=torch.float64).to(wide) if draw and sized else 1
        t.mul_(1 + U * (2 * signs - 1) * sizes)

    return Tensors(change)


class Alone(Perturbation):
    """The input `target` alone, a tensor or a float scalar, scaled by 1 + U."""

    def __init__(self, target: str) -> None:
        self.target = target

    def tensor(self, path: str, storage: Any) -> None:
        if path == self.target:
            storage.mul_(1 + U)

    def scalar(self, path: str, value: float) -> float:
        return value * (1 + U) if path == self.target else value


def ulp(t: Any, u: float) -> Any:
    """One unit in the last place of each value of `t` (float64), at the
    precision whose unit roundoff is `u` (the spacing of that dtype's
    values there; its smallest normal's below it, subnormals alike)."""
    import torch

    tiny = torch.finfo(precisions()[u]).tiny
    _, e = torch.frexp(t)
    least = int(math.log2(tiny)) + 1
    e = torch.where(t == 0, least, e.clamp(min=least))
    return torch.ldexp(torch.full_like(t, u), e)


@functools.lru_cache(maxsize=None)
def precisions() -> Dict[float, Any]:
    """Each floating dtype by its unit roundoff."""
    import torch

    return {unit_roundoff(d): d for d in (torch.float64, torch.float32, torch.float16, torch.bfloat16)}


class Ulps(Perturbation):
    """Every real floating input tensor moved by one unit in its last place
    at precision `u` (ulp), up (direction 1) or down (-1)."""

    def __init__(self, u: float, direction: int) -> None:
        self.u, self.direction = u, direction

    def tensor(self, path: str, storage: Any) -> None:
        if not storage.is_complex():
            storage.add_(self.direction * ulp(storage, self.u))


class Saved(Perturbation):
    """What the forward saved for the backward, each element moved by `u`
    at random signs (drawn from `seed`), as rounding it to the result's
    dtype would; the inputs left be."""

    def __init__(self, u: float, seed: int) -> None:
        import torch

        self.u, self.gen = u, torch.Generator().manual_seed(seed)

    def saved(self, t: Any) -> Any:
        import torch

        if not (t.is_floating_point() and t.layout == torch.strided) or t.is_complex():
            return t
        signs = torch.randint(0, 2, t.shape, generator=self.gen).to(device=t.device, dtype=t.dtype)
        moved = t * (1 + self.u * (2 * signs - 1))
        # (and past the dtype's largest, infinite: an exp's output that overflowed, which its gradient reads)
        return torch.where(moved.abs() > torch.finfo(precisions()[self.u]).max, moved * math.inf, moved)


def one_element(target: str, index: int) -> Perturbation:
    """The element `index` of the input `target`, in the tensor's own
    order (not its storage's, whose elements a strided tensor skips),
    moved by 2^-20 of its size (at least 2^-20)."""

    def change(path: str, t: Any) -> None:
        import numpy

        if path == target:
            logical = getattr(t, "logical", t)
            at = tuple(int(i) for i in numpy.unravel_index(index, tuple(logical.shape)))
            x = logical[at]
            logical[at] = x + max(abs(complex(x)), 1.0) * 2.0**-20

    return Tensors(change)


class Half(Perturbation):
    """A random half of the elements of each input tensor of `numel`
    elements moved as _one moves one, each tensor's choice kept in
    `chosen` (in the tensor's own order); the other inputs left be."""

    def __init__(self, numel: int, seed: int) -> None:
        import torch

        self.numel, self.gen = numel, torch.Generator().manual_seed(seed)
        self.chosen: List[Any] = []

    def tensor(self, path: str, storage: Any) -> None:
        import torch

        logical = getattr(storage, "logical", storage)
        if logical.numel() != self.numel:
            return
        chosen = torch.randint(0, 2, tuple(logical.shape), generator=self.gen).bool()
        size = logical.detach().abs().to(torch.float64).clamp(min=1.0).nan_to_num(1.0, 1.0, 1.0)
        logical.add_(torch.where(chosen, size * 2.0**-20, 0.0).to(logical.dtype))
        self.chosen.append(chosen.reshape(-1))
