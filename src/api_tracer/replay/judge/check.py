"""--check: a config judged, not only run. Its call is made twice from the
same seed, each side building its own arguments (so an in-place call on
one cannot spoil the other): as the replay makes it, then as the mode
says (`reference`): on float64 copies of its floating inputs (complex:
complex128), on another device, or compiled by torch.compile. Both run
with deterministic algorithms on (torch.empty and its kin fill with NaN,
so that no uninitialized memory is compared). Their outputs, and with
--backward the gradients of the floating inputs, are compared
(compare.py): against float64 within the error model's bound of each
element (error_model.py), else (another device, compiled, or --rtol/--atol
given) within torch.testing's default tolerance of the less precise dtype.
A call that ran a random operator is compared by shapes, dtypes and
devices only, and says so; one whose compared values are all NaN or
infinite on both sides tested nothing and is `vacuous` (`Verdict`)."""

from __future__ import annotations

import contextlib
import operator
import re
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

from ...frameworks import FRAMEWORKS
from ...util.units import fmt_bytes
from ...values import FILLED, Call, TensorSpec, walk
from ..draw import REGIONS
from ..memory import CHECK_FACTOR, WORKING_SLACK, bounded, byte_limit, out_of_memory
from ..options import Job, ReplayOptions
from ..results import Invalid, Refused, SideError, Skip, Status, first_line
from ..side import NoGradient, Outcome, Side, device_of, run_side
from .compare import Comparison, Errors, Mismatch

MODES = ("float64", "device:DEVICE", "compile", "repeat", "layout", *FRAMEWORKS)


def workspace_outputs(job: Job) -> Tuple[str, ...]:
    """The leaves of the job's output a check does not compare, as named
    ("output[1]"): those its framework says the call keeps for its
    backward in a form of the kernel's choosing (ReplayFramework.workspace_outputs)."""
    return tuple(f"output[{i}]" for i in job.framework.workspace_outputs(job.api))


def reference(check: str, device: str) -> Side:
    """The side `check` compares a replay on `device` against; raises
    ValueError for a mode that is none of MODES (the device of
    "device:DEVICE" is torch's to judge, when it is used)."""
    if check == "float64":
        return Side("float64", device, cast=upcast)
    if check == "compile":
        return Side("compiled", device, compiled=True)
    if check == "repeat":
        return Side("repeated", device)
    if check == "layout":
        return Side("contiguous", device, contiguous=True)
    if check in FRAMEWORKS:  # (its float64: across.py)
        return Side(f"{check} float64", device, cast=upcast)
    if check.startswith("device:") and check[len("device:") :]:
        other = check[len("device:") :]
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
    status: Status  # OK, MISMATCH or VACUOUS
    compared: str  # "values", or "shapes" (a random call)
    message: str = ""
    worst: Optional[Errors] = None  # the leaf furthest beyond, or nearest to, its tolerance
    hashes: Optional[Dict[str, str]] = None  # repeat: each output tensor's hash (output_hashes)
    region: str = ""  # the draw it was judged on (draw.REGIONS), "" for the usual one


def output_hashes(outcome: Outcome) -> Dict[str, str]:
    """A hash of each tensor of an outcome's output and gradients: the
    first 16 hex digits of the SHA-256 of its dtype, shape and bytes
    (contiguous), named as Comparison names them."""
    import hashlib

    import torch

    from .compare import plain

    hashes = {}
    for where, t in outcome.tensors():
        t = plain(t).detach().cpu().contiguous()
        digest = hashlib.sha256(f"{t.dtype} {list(t.shape)}".encode())
        digest.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        hashes[where] = digest.hexdigest()[:16]
    return hashes


@contextlib.contextmanager
def deterministic() -> Iterator[None]:
    """torch's deterministic algorithms on (warnings only, where an
    operator has none) and uninitialized memory filled; as before after.
    Set as torch.use_deterministic_algorithms sets them but for Inductor's
    flag, which it imports Inductor to set: only where Inductor is there
    already (a compile check), so that no other check imports a compiler."""
    import sys

    import torch
    import torch.utils.deterministic as flags

    def use(mode: bool, warn_only: bool) -> None:
        if "torch._inductor.config" in sys.modules:
            torch.use_deterministic_algorithms(mode, warn_only=warn_only)
        else:
            torch._C._set_deterministic_algorithms(mode, warn_only=warn_only)

    was = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        flags.fill_uninitialized_memory,
    )
    use(True, warn_only=True)
    flags.fill_uninitialized_memory = True
    try:
        yield
    finally:
        use(was[0], warn_only=was[1])
        flags.fill_uninitialized_memory = was[2]


def check(job: Job, judged: Optional[Callable[[Job], Tuple[Verdict, Optional[Dict[str, Any]]]]] = None) -> Verdict:
    """Both sides of the job's call, compared. Raises as run_side does for
    the replay's own side. Where the float64 side cannot run (no float64
    kernel), a computation of it the framework knows (torch's
    decompositions) in float64 is the reference, and where it knows none
    the config is skipped with the reason: the reference's failure is not
    the operator's. All of it, both sides and the judge, allocates at most
    CHECK_FACTOR times --max-bytes (and WORKING_SLACK): past that, Skip.
    `judged` judges each draw instead of `_judged` (across.py's, for
    --check FRAMEWORK), within the same bound and over the same regions."""
    limit = byte_limit(job.options.max_bytes, job.framework.memory_device(job.options.device))
    with bounded(limit, CHECK_FACTOR) as allowed:
        try:
            return _check(job, judged or _judged)
        except Exception as e:
            if not out_of_memory(getattr(e, "cause", e)):  # (a SideError holds what the side raised)
                raise
            raise Skip(
                f"checking it allocates more than a check may ({fmt_bytes(allowed, digits=1)}: {CHECK_FACTOR} x "
                f"the limit of {fmt_bytes(limit, digits=1)}, --max-bytes, and {fmt_bytes(WORKING_SLACK, digits=1)}"
                f"): {first_line(e) or type(e).__name__}"
            ) from None


def _check(job: Job, judged: Callable[[Job], Tuple[Verdict, Optional[Dict[str, Any]]]]) -> Verdict:
    options = job.options
    assert options.check, "check() needs options.check"
    if options.check == "layout":
        why = layout_unjudged(job)
        if why:
            raise Skip(why)
    verdict, bounds = judged(job)
    if verdict.status != Status.OK or not _elementwise(bounds):
        return verdict
    # an elementwise call: judged again on each region of values where such kernels go wrong
    worst, notes = verdict, []
    for region in REGIONS:
        try:
            there, bounds_there = judged(replace(job, region=region))
            there.region = region
        except Exception as e:  # noqa: BLE001 - a call that refuses these values (a domain check): not judged there
            notes.append(f"the {region} draw not judged ({first_line(e) or type(e).__name__})")
            continue
        if bounds is EXACT and not _elementwise(bounds_there):
            break  # (exact on the usual draw, and not an elementwise call: its regions are not judged)
        if there.status == Status.MISMATCH:
            there.message = f"on the {region} draw ({region_span(region)}): {there.message}"
            return there
        if there.worst is not None and (worst.worst is None or there.worst.excess > worst.worst.excess):
            where = f"of its bound ({there.worst.where})"
            worst = replace(there, message=there.message.replace(where, f"{where[:-1]}, on the {region} draw)"))
    worst.message = "; ".join(filter(None, [worst.message, *notes]))
    return worst


def _elementwise(bounds: Optional[Dict[str, Any]]) -> bool:
    """Whether a draw's bounds are an elementwise call's (EXACT: it may be
    one, its regions tell)."""
    return bounds is EXACT or bool(bounds) and all(b.elementwise for b in bounds.values())


def region_span(region: str) -> str:
    """What a region's draw spans, as a verdict says it."""
    span = REGIONS[region]
    if span is None:
        return "magnitudes over the dtype's range"
    return f"magnitudes {10 ** span[0]:.2g} to {10 ** span[1]:.2g}"


class _Exact(dict):
    """A draw's bounds where both sides hold the very same values."""


# _judged's bounds where the line's call gave exactly the float64 reference's
# values (a copy, an index, a max): no error model is needed to judge them,
# and its probes (a dozen calls more) are not made; an elementwise call is
# judged on the regions' draws all the same, where it may not be exact.
EXACT: Dict[str, Any] = _Exact()
EXACT_MEASURE = "exact"  # (a result's measure, as "error model" is the error model's)


def exactly_equal(mine: Outcome, theirs: Outcome) -> bool:
    """Whether each tensor of `mine` (its outputs and gradients) holds the
    very values of the same tensor of `theirs`, NaN where NaN, in the same
    shape; not for random calls, whose values are not compared, nor for an
    output with no tensor or with a Python float."""
    import torch

    ours, others = mine.tensors(), theirs.tensors()
    if mine.random or not ours or [w for w, _ in ours] != [w for w, _ in others] or _floats(mine.output):
        return False
    for (_, a), (_, b) in zip(ours, others):
        if a.shape != b.shape or a.is_complex() != b.is_complex() or a.is_sparse or b.is_sparse or a.is_quantized:
            return False
        integral = not (a.is_floating_point() or a.is_complex() or b.is_floating_point() or b.is_complex())
        wide = torch.int64 if integral else torch.complex128 if a.is_complex() else torch.float64
        a, b = a.detach().to("cpu", wide), b.detach().to("cpu", wide)
        if not bool(((a == b) | (a.isnan() & b.isnan())).all()):
            return False
    return True


def _floats(value: Any) -> bool:
    """Whether an output holds a Python float or complex (held to a
    tolerance of its own, not compared as a tensor is)."""
    if isinstance(value, (float, complex)):
        return True
    if isinstance(value, (list, tuple)):
        return any(_floats(v) for v in value)
    return isinstance(value, dict) and any(_floats(v) for v in value.values())


def judged_exact(verdict: Verdict) -> Verdict:
    """The verdict on a draw whose values are exactly the reference's
    (EXACT), its measure "exact"."""
    if verdict.status == Status.OK and verdict.worst is not None:
        verdict.worst = replace(verdict.worst, measure=EXACT_MEASURE)
    return verdict


def _judged(job: Job) -> Tuple[Verdict, Optional[Dict[str, Any]]]:
    """The verdict on one draw of the job's values, and the error model's
    bounds it was judged within (None: none)."""
    options, api = job.options, job.api
    other = reference(options.check, options.device)
    with deterministic():
        mine = run_side(job, Side("replay", options.device), watch=True)
        theirs, other, note = _reference_side(job, other)
        if options.check != "repeat":  # (a tie may be named either way by two kernels; by one, the same twice)
            theirs.output, settled = job.framework.settle_choices(api, mine.inputs, mine.output, theirs.output)
            note = "; ".join(filter(None, [note, settled]))
        theirs.inputs = None  # (what settling a choice needs is the replay side's alone)
        bounds = None
        extremes = holds_extremes(job.args, job.kwargs)  # (then no value is compared: no bound needed)
        modelled = other.cast is upcast and options.rtol is None and options.atol is None and not mine.random
        if modelled and not extremes and exactly_equal(mine, theirs):
            bounds = EXACT
        elif modelled and not extremes:
            from .error_model import bounds as error_bounds

            def rerun(perturb: Any) -> Any:
                return run_side(job, replace(other, perturb=perturb))

            try:
                accumulated = job.framework.accumulations(api, mine.inputs)
                bounds = error_bounds(rerun, mine, theirs, options.seed, api, accumulated)
            except Skip as e:  # a probe past --max-bytes, say
                raise Skip(f"on the {other.label} side (its error model's probes): {e}") from e
            except Exception as e:
                raise SideError(f"on the {other.label} side (its error model's probes)", e) from e
        if (
            options.check == "layout"
            and options.rtol is None
            and options.atol is None
            and not mine.random
            and not extremes
            and judge_repeat(mine, theirs).status != Status.OK
        ):  # (bitwise equal: no bound needed)
            bounds = layout_bounds(job, mine)
    if options.check == "repeat":
        verdict = judge_repeat(mine, theirs)
    elif bounds is EXACT:
        verdict = judged_exact(judge(mine, theirs, options, other, None, workspace_outputs(job), exact=True))
    else:
        verdict = judge(mine, theirs, options, other, bounds, workspace_outputs(job), overflow=extremes)
    if note:
        verdict.message = "; ".join(filter(None, [note, verdict.message]))
    return verdict, bounds if other.cast is upcast else None


# APIs whose result depends on their inputs' layout by what they do: no
# --check layout of theirs (as_strided's offset is into the storage;
# resize_ keeps a strided tensor's storage and reads it as contiguous).
READS_LAYOUT = re.compile(
    r"as_strided|\bset_\b|\.stride$|is_contiguous|storage_offset|data_ptr|untyped_storage|"
    r"\.storage$|_unsafe_view|\.view\b|_reshape_alias|\bresize_|\bresize_as_"
)


def layout_unjudged(job: Job) -> str:
    """Why --check layout cannot judge the job's call ("" where it can):
    it reads its inputs' layout itself, or it writes into an input whose
    elements share memory (an expanded one), which a contiguous copy does
    not."""
    api, args, kwargs = job.api, job.args, job.kwargs
    if READS_LAYOUT.search(api):
        return f"{api} reads its inputs' layout itself (storage, strides): a contiguous copy is another input"
    if not any(
        isinstance(leaf, TensorSpec) and (leaf.stride is not None or leaf.storage_size is not None)
        for _, leaf in walk(args, kwargs)
    ):
        return "every tensor input is contiguous: its contiguous copy is itself"
    overlapping = any(
        isinstance(leaf, TensorSpec)
        and leaf.stride is not None
        and any(st == 0 and d > 1 for d, st in zip(leaf.shape, leaf.stride))
        for _, leaf in walk(args, kwargs)
    )
    if overlapping and writes(job.framework.resolve(api, job.config.text), api, kwargs):
        return "it writes into its inputs, one of whose elements share memory: its contiguous copy has them apart"
    return ""


# Python's in-place operators as methods (__iadd__, __imul__, ...: operator's `iadd` where it has `add`), and
# item assignment: each writes into the object it is called on.
IN_PLACE_DUNDERS = frozenset(
    {f"__{name}__" for name in dir(operator) if name.startswith("i") and f"__{name[1:]}__" in dir(operator)}
    | {"__setitem__"}
)


def writes(func: Any, api: str, kwargs: dict) -> bool:
    """Whether a call writes into its arguments: an operator whose schema
    says so, an in-place method or function (add_, __iadd__, __setitem__),
    out=, or inplace=True."""
    import torch

    if isinstance(func, torch._ops.OpOverload):
        return any(a.alias_info is not None and a.alias_info.is_write for a in func._schema.arguments)
    name = api.rsplit(".", 1)[-1]
    in_place = (name.endswith("_") and not name.endswith("__")) or name in IN_PLACE_DUNDERS
    return in_place or "out" in kwargs or kwargs.get("inplace") is True


def layout_bounds(job: Job, mine: Outcome) -> Optional[Dict[str, Any]]:
    """--check layout's bounds: two correct kernels (the strided one and
    the contiguous one) may each stray from the exact result by the error
    model's bound (made from the call on float64 copies, as --check
    float64 makes it), so they may differ by twice it. None where float64
    cannot run: the dtype's tolerance then holds."""
    from .error_model import bounds as error_bounds

    wide = Side("float64", job.options.device, cast=upcast)
    try:
        exact = run_side(job, wide)
        made = error_bounds(
            lambda perturb: run_side(job, replace(wide, perturb=perturb)),
            mine,
            exact,
            job.options.seed,
            job.api,
            job.framework.accumulations(job.api, mine.inputs),
        )
    except Exception:  # noqa: BLE001 - no float64 kernel, a probe past --max-bytes: the tolerance holds
        return None
    return {where: replace(b, allowed=2 * b.allowed, measure="error model (both sides)") for where, b in made.items()}


def _reference_side(job: Job, other: Side) -> Tuple[Outcome, Side, str]:
    """The reference's outcome, the side that made it, and what it says of
    how (a fallback). The reference's failure is not the operator's: where
    float64 cannot run on the replay's device, float64 on the CPU is the
    reference; where it cannot run at all, the framework's other
    computations of it (torch's decompositions) in float64; where none
    runs, or another device's reference fails, the config is skipped with
    why."""
    why = job.framework.no_wider_reference(job.api) if other.cast is upcast else ""
    if why:
        raise Skip(f"no float64 reference: {why}")
    try:
        return run_side(job, other), other, ""
    except (Invalid, Refused):
        raise
    except Skip as e:  # its arguments need more bytes (float64), say
        raise Skip(f"on the {other.label} side: {e}") from e
    except Exception as e:
        failure = first_line(e)
        if other.compiled:
            raise SideError(f"on the {other.label} side", e) from e  # what --check compile is there to find
        if other.cast is not upcast:
            raise Skip(f"no reference: the call fails on {other.label} ({failure})") from e
    fallbacks = []
    if device_of(other.device).type != "cpu":
        fallbacks.append((replace(other, label="float64 on the CPU", device="cpu"), "float64 on the CPU"))
    framework = job.framework
    for what, substitute in framework.reference_fallbacks(framework.resolve(job.api, job.config.text)):
        fallbacks.append((replace(other, label="float64 decomposition", substitute=substitute), what))
    tried = []
    for fallback, what in fallbacks:
        try:
            outcome = run_side(job, fallback)
        except Exception as e:  # noqa: BLE001 - a fallback's failure: the next one is tried
            tried.append(f"{what} fails too ({first_line(e)})")
            continue
        return outcome, fallback, f"the reference is {what}: {failure}"
    if not tried:
        raise Skip(framework.no_reference(failure))
    raise Skip(f"no float64 reference: the operator fails in float64 ({failure}); " + "; ".join(tried))


def _compared(compare: Comparison, mine: Outcome, theirs: Outcome) -> Optional[Verdict]:
    """`compare` run over both sides' outputs and gradients (their errors
    noted in compare.errors); the mismatch where one differs past what
    `compare` allows, else None."""
    try:
        compare(mine.output, theirs.output, "output")
        for path, grad in mine.grads.items():
            compare(grad, theirs.grads.get(path), f"the gradient of {path}")
    except Mismatch as e:
        return Verdict(Status.MISMATCH, "values" if compare.values else "shapes", str(e))
    return None


def judge_repeat(mine: Outcome, theirs: Outcome) -> Verdict:
    """The same call made twice from the same seed: its outputs (and
    gradients) bitwise equal, random ones too; an operator torch marks
    nondeterministic_bitwise that ran makes it a comparison of shapes,
    dtypes and devices only, said."""
    compare = Comparison("repeated", values=not mine.unrepeatable, rtol=0.0, atol=0.0)
    differs = _compared(compare, mine, theirs)
    if differs:
        return differs
    hashes = output_hashes(mine)
    if mine.unrepeatable:
        return Verdict(
            Status.OK,
            "shapes",
            f"nondeterministic ({', '.join(mine.unrepeatable)}): compared shapes, dtypes and devices only",
            hashes=hashes,
        )
    worst = max(compare.errors, key=lambda e: e.excess, default=None)
    beyond = [e for e in compare.errors if e.beyond]
    if beyond:
        return Verdict(Status.MISMATCH, "values", worst.describe("repeated"), worst, hashes)
    theirs_hashes = output_hashes(theirs)
    unequal = [where for where, h in hashes.items() if theirs_hashes.get(where) != h]
    if unequal:  # equal in value, not in bits: signed zeros, NaN payloads
        return Verdict(
            Status.MISMATCH,
            "values",
            f"{', '.join(unequal)}: equal in value, not bitwise (signed zeros or NaN payloads)",
            worst,
            hashes,
        )
    return Verdict(Status.OK, "values", "", worst, hashes)


def holds_extremes(args: list, kwargs: dict) -> bool:
    """Whether the line fills a floating tensor with a finite value at the
    ends of its dtype (Filled(..., 3.4e38): at least half its largest; or
    at most its smallest normal, which kernels may flush to zero), or
    holds a finite float scalar beyond float32's range (1e308): a narrower dtype then overflows where float64 '
        'does not, as
    it must, and another order of summing overflows otherwise."""
    import math

    import torch

    def extreme(c: Call) -> bool:
        value = c.args[1] if len(c.args) == 2 else 0
        dtype = getattr(torch, getattr(c.args[0], "dtype", ""), None) if c.args else None
        if (
            not isinstance(value, (int, float))
            or not isinstance(dtype, torch.dtype)
            or not (dtype.is_floating_point or dtype.is_complex)
        ):
            return False
        info = torch.finfo(dtype)
        return math.isfinite(value) and (abs(value) >= info.max / 2 or 0 < abs(value) <= info.tiny)

    def huge(v: Any) -> bool:  # a finite float scalar no narrower dtype holds (1e308)
        return isinstance(v, float) and math.isfinite(v) and abs(v) >= 2.0**128

    def scalars(v: Any) -> Any:
        if isinstance(v, (list, tuple)):
            for x in v:
                yield from scalars(x)
        elif isinstance(v, float):
            yield v

    return any(
        isinstance(leaf, Call) and leaf.name == FILLED and extreme(leaf) for _, leaf in walk(args, kwargs)
    ) or any(huge(v) for v in scalars([args, list(kwargs.values())]))


def judge(
    mine: Outcome,
    theirs: Outcome,
    options: ReplayOptions,
    other: Side,
    bounds: Optional[Dict[str, Any]] = None,
    unjudged: Tuple[str, ...] = (),
    overflow: bool = False,
    exact: bool = False,
) -> Verdict:
    """The verdict on two sides' outcomes; the leaves `unjudged` are not
    compared, and the verdict says so; with `overflow` (inputs at the ends
    of their dtype) only shapes, dtypes and devices are compared; `exact`:
    the tensors are known to be equal (exactly_equal), and not measured."""
    here, there = device_of(options.device), device_of(other.device)
    # inputs at the ends of their dtype overflow on the way, in it and not in float64, and where another
    # kernel of it sums in another order differently: no value to hold either side to
    compare = Comparison(
        other.label,
        values=not mine.random and not overflow,
        dtype_of=other.cast or (lambda d: d),
        device_of=lambda d: there if d == here else d,
        scalar_dtype=mine.precision,
        rtol=options.rtol,
        atol=options.atol,
        bounds=bounds,
        unjudged=unjudged,
        exact=exact,
    )
    differs = _compared(compare, mine, theirs)
    if differs:
        return differs
    notes = [f"no gradient of {path} ({g.why})" for path, g in mine.grads.items() if isinstance(g, NoGradient)]
    if unjudged:
        notes.insert(
            0, f"{', '.join(unjudged)} not compared (kept for the backward, in a form of the kernel's choosing)"
        )
    if mine.random:
        notes.insert(0, f"random ({', '.join(mine.random)}): compared shapes, dtypes and devices only")
        return Verdict(Status.OK, "shapes", "; ".join(notes))
    if overflow:
        notes.insert(
            0,
            "inputs at the ends of their dtype, which overflow on the way (where float64 does not, and "
            "as the order of summing has it): compared shapes, dtypes and devices only",
        )
        return Verdict(Status.OK, "shapes", "; ".join(notes))
    worst = max(compare.errors, key=lambda e: e.excess, default=None)
    beyond = [e for e in compare.errors if e.beyond]
    if beyond:
        more = f"; {len(beyond) - 1} more beyond their tolerance" if len(beyond) > 1 else ""
        return Verdict(Status.MISMATCH, "values", worst.describe(other.label) + more, worst)
    floating = [e for e in compare.errors if e.total]
    # NaN everywhere tests nothing; infinities everywhere test nothing when
    # they come of random inputs (the log of 0), and do where the call's
    # scalars alone make them (torch.full of -inf)
    if floating and all(e.vacuous == "nan" or (e.vacuous and mine.floating_inputs) for e in floating):
        notes.insert(
            0,
            f"every value compared ({', '.join(e.where for e in floating)}) is NaN or infinite on both "
            "sides (inputs outside the operator's domain, or memory left uninitialized, which "
            "deterministic mode fills with NaN): nothing was tested",
        )
        return Verdict(Status.VACUOUS, "values", "; ".join(notes), worst)
    if worst is not None and worst.measure != "rtol/atol" and worst.excess > 0:
        notes.insert(0, f"{worst.measure}: the closest at {worst.excess:.2g} of its bound ({worst.where})")
    return Verdict(Status.OK, "values", "; ".join(notes), worst)
