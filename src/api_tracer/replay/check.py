"""--check: a config judged, not only run. Its call is made twice from the
same seed, each side building its own arguments (so an in-place call on
one cannot spoil the other): as the replay makes it, then as the mode
says (`reference`): on float64 copies of its floating inputs (complex:
complex128), on another device, or compiled by torch.compile. Both run
with deterministic algorithms on (torch.empty and its kin fill with NaN,
so that no uninitialized memory is compared). Their outputs, and with
--backward the gradients of the floating inputs, are compared (compare.py)
within torch.testing's default tolerance of the less precise dtype; a call
that ran a random operator is compared by shapes, dtypes and devices
only, and says so (`Verdict`)."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from .compare import Comparison, Errors, Mismatch
from .configs import Config, Invalid, SideError, Skip, Status
from .options import ReplayOptions
from .resolve import Resolver
from .side import NoGradient, Outcome, Side, device_of, run_side

MODES = ("float64", "device:DEVICE", "compile")


def reference(check: str, device: str) -> Side:
    """The side `check` compares a replay on `device` against; raises
    ValueError for a mode that is none of MODES (the device of
    "device:DEVICE" is torch's to judge, when it is used)."""
    if check == "float64":
        return Side("float64", device, cast=upcast)
    if check == "compile":
        return Side("compiled", device, compiled=True)
    if check.startswith("device:") and check[len("device:"):]:
        other = check[len("device:"):]
        return Side(other, other)
    raise ValueError(f"{check!r} is not a check: one of {', '.join(MODES)}")


def upcast(dtype: Any) -> Any:
    """The dtype float64 mode makes a value of `dtype` in."""
    import torch

    if dtype.is_complex:
        return torch.complex128
    return torch.float64 if dtype.is_floating_point else dtype


@dataclass
class Verdict:
    status: Status  # OK or MISMATCH
    compared: str  # "values", or "shapes" (a random call)
    message: str = ""
    worst: Optional[Errors] = None  # the leaf furthest beyond, or nearest to, its tolerance


@contextlib.contextmanager
def deterministic() -> Iterator[None]:
    """torch's deterministic algorithms on (warnings only, where an
    operator has none) and uninitialized memory filled; as before after."""
    import torch
    import torch.utils.deterministic as flags

    was = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
           flags.fill_uninitialized_memory)
    torch.use_deterministic_algorithms(True, warn_only=True)
    flags.fill_uninitialized_memory = True
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(was[0], warn_only=was[1])
        flags.fill_uninitialized_memory = was[2]


def check(config: Config, api: str, args: list, kwargs: dict, options: ReplayOptions,
          resolver: Resolver) -> Verdict:
    """Both sides of config's call, compared. Raises as run_side does for
    the replay's own side; for the reference side, a Skip or a SideError
    that names it."""
    assert options.check, "check() needs options.check"
    other = reference(options.check, options.device)
    with deterministic():
        mine = run_side(config, api, args, kwargs, options, resolver, Side("replay", options.device), watch=True)
        try:
            theirs = run_side(config, api, args, kwargs, options, resolver, other)
        except Invalid:
            raise
        except Skip as e:  # its arguments need more bytes (float64), say
            raise Skip(f"on the {other.label} side: {e}") from e
        except Exception as e:  # noqa: BLE001 - the reference's failure, reported as such
            raise SideError(f"on the {other.label} side", e) from e
    return judge(mine, theirs, options, other)


def judge(mine: Outcome, theirs: Outcome, options: ReplayOptions, other: Side) -> Verdict:
    """The verdict on two sides' outcomes."""
    here, there = device_of(options.device), device_of(other.device)
    compare = Comparison(other.label, values=not mine.random, dtype_of=other.cast or (lambda d: d),
                         device_of=lambda d: there if d == here else d, scalar_dtype=mine.precision,
                         rtol=options.rtol, atol=options.atol)
    try:
        compare(mine.output, theirs.output, "output")
        for path, grad in mine.grads.items():
            compare(grad, theirs.grads.get(path), f"the gradient of {path}")
    except Mismatch as e:
        return Verdict(Status.MISMATCH, "values" if compare.values else "shapes", str(e))
    notes = [f"no gradient of {path} ({g.why})" for path, g in mine.grads.items() if isinstance(g, NoGradient)]
    if mine.random:
        notes.insert(0, f"random ({', '.join(mine.random)}): compared shapes, dtypes and devices only")
        return Verdict(Status.OK, "shapes", "; ".join(notes))
    worst = max(compare.errors, key=lambda e: e.excess, default=None)
    beyond = [e for e in compare.errors if e.beyond]
    if beyond:
        more = f"; {len(beyond) - 1} more beyond their tolerance" if len(beyond) > 1 else ""
        return Verdict(Status.MISMATCH, "values", worst.describe(other.label) + more, worst)
    return Verdict(Status.OK, "values", "; ".join(notes), worst)
