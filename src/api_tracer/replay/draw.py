"""Values drawn for a tensor from what the traced program's argument held
(its value profile, `_C.ValueProfile`: core/value_profile.h; read from
api_value_ranges.yaml by formats/summaries.py): integers inside its range,
among its distinct values or its sentinels, in order where it was, adding
up to its sum where every call's did; floats inside its finite range, or
the non-finite value it held."""

from __future__ import annotations

import math
from typing import Any

# Of the values drawn for a tensor with sentinels (a few negative values apart
# from the range of the rest, as an ignore_index of -100), this share.
SENTINEL_SHARE = 0.125


def draw_floats(profile: Any, numel: int, gen: Any) -> Any:
    """`numel` float64 values inside what the floating argument profiled
    (_C.ValueProfile, float_ranges) held: uniform over its finite values'
    range, so that their sign, and [0, 1] for probabilities, hold; where it
    held no finite value, the non-finite one it held."""
    import torch

    if profile.finite:
        return profile.fmin + (profile.fmax - profile.fmin) * torch.rand(numel, dtype=torch.float64, generator=gen)
    held = next(v for v, f in ((math.nan, profile.nan), (math.inf, profile.posinf), (-math.inf, profile.neginf)) if f)
    return torch.full((numel,), held, dtype=torch.float64)


def draw(profile: Any, numel: int, gen: Any, keep_sum: bool = False) -> Any:
    """`numel` int64 values the argument profiled (_C.ValueProfile) could
    have held: its distinct values where they are known; else the range of
    its non-negative values with its few negative ones (sentinels) among
    them; else its range. A profile in order gives values in order, from its
    smallest to its largest (offsets start at 0). With `keep_sum`, where
    every call's values added up to one sum (a tie to another argument's
    size: segment lengths, a mask's count), the values then add up to it
    too, moved inside the range (the distinct values may then not hold)."""
    import torch

    def randint(lo: int, hi: int) -> Any:
        return torch.randint(lo, hi + 1, (numel,), generator=gen, dtype=torch.int64)

    if not profile.many:
        pool = torch.tensor(profile.distinct, dtype=torch.int64)
        values = pool[randint(0, len(pool) - 1)]
    elif profile.negatives and not profile.many_negatives and profile.nonneg_min <= profile.max:
        values = randint(profile.nonneg_min, profile.max)
        sentinels = torch.tensor(profile.negatives, dtype=torch.int64)
        chosen = torch.rand(numel, generator=gen) < SENTINEL_SHARE
        values[chosen] = sentinels[randint(0, len(sentinels) - 1)][chosen]
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
    them in a random order; ValueError where they cannot. Values so large
    that their sum could pass int64 (random 64-bit numbers, not lengths or
    counts) are left as drawn: the arithmetic would wrap."""
    import torch

    if max(abs(profile.min), abs(profile.max)) * len(values) >= 2**62:
        return
    free = torch.arange(1, len(values) - 1) if profile.sorted else torch.arange(len(values))
    need = profile.sum - int(values.sum())
    if need == 0:
        return
    order = free[torch.randperm(len(free), generator=gen)]
    room = (profile.max - values[order]) if need > 0 else (values[order] - profile.min)
    if int(room.sum()) < abs(need):
        raise ValueError(
            f"its values cannot add up to the sum of its profile, {profile.sum}: {len(values)} "
            f"values in [{profile.min}, {profile.max}]{' in order' if profile.sorted else ''} "
            "(api_value_ranges.yaml)"
        )
    before = room.cumsum(0) - room  # the room of the values moved before each one
    step = (abs(need) - before).clamp(min=0).minimum(room)
    values[order] += step if need > 0 else -step
    if profile.sorted:
        values[:] = values.sort().values
