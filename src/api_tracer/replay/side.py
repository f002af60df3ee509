"""One side of a replay: a config's call built and made on a device (its
floating values cast, or the call compiled, for the reference side of a
check), by the framework that replays it (its ReplayFramework.run_side:
frameworks/torch/side.py, frameworks/paddle/replay.py), within a bound on
what the call may allocate on its way; what it returned, the random
operators it ran, and, with --backward, the gradients of its floating
inputs (`Outcome`, its tensors torch's whatever the framework)."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from ..util.units import fmt_bytes
from ..values import item_path, value_path
from .builder import Perturbation
from .memory import CHECK_FACTOR, WORKING_FACTOR, WORKING_SLACK, bounded, byte_limit, out_of_memory
from .options import Job, ReplayOptions
from .results import Skip, first_line


@dataclass(frozen=True)
class Side:
    """Where and how a side calls: its name in what a check says, its
    device, the dtype its floating values are made in (`cast`, as Builder
    takes it), and whether the call is compiled (torch.compile)."""

    label: str
    device: str
    cast: Optional[Callable[[Any], Any]] = None
    compiled: bool = False
    perturb: Optional[Perturbation] = None  # see Builder: the check's error model
    substitute: Optional[Callable[..., Any]] = None  # called instead of the API (a decomposition, as reference)
    contiguous: bool = False  # each strided tensor argument a contiguous copy of the one built (--check layout)


@dataclass(frozen=True)
class NoGradient:
    """An input the backward gives no gradient of, and why: compared as
    itself, so both sides must agree."""

    why: str


@dataclass
class TimedCall:
    """A job's call built to be timed (timing/measure.py): `func` called
    with `args` and `kwargs`; with --backward, `backward` the same of the
    backward of one call already made (its graph kept)."""

    func: Callable[..., Any]
    args: list
    kwargs: dict
    backward: Optional[Tuple[Callable[..., Any], tuple, dict]] = None


@dataclass
class Outcome:
    output: Any
    grads: Dict[str, Any] = field(default_factory=dict)  # input's path -> its gradient (None: none reached it)
    random: List[str] = field(default_factory=list)  # the random operators that ran
    unrepeatable: List[str] = field(default_factory=list)  # operators torch marks nondeterministic_bitwise that ran
    precision: Any = None  # the least precise floating dtype of the tensor inputs (torch.float64 if none)
    floating_inputs: bool = False  # whether the call had floating (or complex) tensor inputs
    inputs: Any = None  # the side's built (args, kwargs), after the call (None: not kept)
    operators: Optional[List[str]] = None  # with options.behaviour: those the call ran inside (None: not seen)

    def tensors(self) -> List[Tuple[str, Any]]:
        """(where, tensor) of each tensor of the output and the gradients,
        named as Comparison names them ("output[1]", "the gradient of
        args[0]")."""
        found = list(tensor_leaves(self.output, "output"))
        for path, grad in self.grads.items():
            if not isinstance(grad, NoGradient) and grad is not None:
                found += tensor_leaves(grad, f"the gradient of {path}")
        return found


def tensor_leaves(value: Any, where: str) -> Iterator[Tuple[str, Any]]:
    """The torch tensors inside an output (or built arguments), each named
    below `where`: an item as a value's path has it ([1]), a dict's key as
    Python writes it (an output's keys are any objects, not a config
    line's); a module's or an optimizer's by its state_dict."""
    import torch

    if isinstance(value, torch.Tensor):
        yield where, value
    elif isinstance(value, (list, tuple)):
        for i, x in enumerate(value):
            yield from tensor_leaves(x, item_path(where, i))
    elif isinstance(value, dict):
        for k, x in value.items():
            yield from tensor_leaves(x, f"{where}[{k!r}]")
    elif isinstance(value, (torch.nn.Module, torch.optim.Optimizer)):
        yield from tensor_leaves(value.state_dict(), where)


def dict_item_path(path: str, key: Any) -> str:
    """The path of a built dict's value: its key's as the line wrote it
    (values.value_path), or as Python writes it where the key built is no
    config value (a dtype)."""
    try:
        return value_path(path, key)
    except TypeError:
        return f"{path}[{key!r}]"


def cotangent(t: Any, seed: int) -> Any:
    """Random weights for an output's gradient, the same on every side:
    multiples of 1/8 in [-1, 1], which every floating dtype holds exactly."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    parts = [
        torch.randint(-8, 9, t.shape, generator=gen, dtype=torch.float64) / 8 for _ in range(2 if t.is_complex() else 1)
    ]
    weights = torch.complex(*parts) if t.is_complex() else parts[0]
    return weights.to(device=t.device, dtype=t.dtype)


def device_of(device: str) -> Any:
    """The torch.device a tensor made on `device` has ("cuda" -> cuda:0)."""
    import torch

    return torch.empty(0, device=device).device


CHECKED = f", at most what is left of a check's {CHECK_FACTOR} x"  # (the check's bound holds too)


@contextmanager
def within_memory(options: ReplayOptions, device: str) -> Iterator[None]:
    """The block's allocations bounded (memory.bounded) by `options.max_bytes`
    on `device`: running out of memory on its way is Skip, saying the bound."""
    limit = byte_limit(options.max_bytes, device)
    with bounded(limit) as working:
        try:
            yield
        except Exception as e:
            if not out_of_memory(getattr(e, "cause", e)):  # (a BuildError holds what building raised)
                raise
            raise Skip(
                f"it allocates more than a call may on its way ({fmt_bytes(working, digits=1)}: "
                f"{WORKING_FACTOR} x the limit of {fmt_bytes(limit, digits=1)}, --max-bytes, and "
                f"{fmt_bytes(WORKING_SLACK, digits=1)}{CHECKED if options.check else ''}): "
                f"{first_line(e) or type(e).__name__}"
            ) from None


def run_side(job: Job, side: Side, watch: bool = False) -> Outcome:
    """The call of one side, made by the job's framework (a
    ReplayFramework: built on side.device, cast as side.cast says, from the
    options' seed; with options.backward the gradients of its floating
    inputs; `watch` notes the random operators that run). What it allocates
    on its way is bounded (within_memory): past that, Skip. Raises
    Invalid, Refused, Skip, BuildError or what the call raises."""
    with within_memory(job.options, job.framework.memory_device(side.device)):
        return job.framework.run_side(job, side, watch)
