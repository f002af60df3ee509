"""The one seam between replay and a framework: `ReplayFramework`.

Replay itself is framework-neutral: it parses a line, builds its arguments
(builder.py draws every value with torch), makes the call on one side or
two (side.py, judge/), and reports. What a framework adds, it hands over
in one object, a subclass of `ReplayFramework` that its folder names
(frameworks/NAME/__init__.py: `Framework.replay`): how its names resolve
(and which it may call: the policy), which built arguments its kernels do
not check (preconditions), the builder that makes its values, how one
side's call is made (seeded, gradients, random operators) and its outputs
made torch's for the judge, which checks and devices it takes, and what a
reference may fall back to. Nothing else in replay tells frameworks apart.

Which framework replays a config: a file's is read from its lines' API
names (`paddle.concat` is Paddle's, `torch.add` torch's; other names, a
user's module or a line that does not parse, say nothing) or given
(`--dialect`, ReplayOptions.dialect); a file of both is refused
(`MixedFile`), naming the first line of the other. Without a file
(replay_one of one line), the line's own API decides.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Dict, Iterable, Optional, Tuple

from ..config import api_of
from ..frameworks import FRAMEWORKS, framework, framework_of, load

DEFAULT = "torch"  # a file none of whose names is a framework's
NO_GRADIENT_REFERENCE = (
    "{}'s float64 cannot be a gradient's reference: the error model moves what a forward saved "
    "for its backward, through saved-tensor hooks this framework's replay has none of"
)


@dataclass
class Accumulated:
    """What a kernel adds up on the way to one output, beyond the probes'
    sight (the framework says: `ReplayFramework.accumulations`): `terms`,
    per element (or one number), how many terms it sums into it (a scatter
    that adds: the probes, moving one input element, see one); `size`, per
    element, an intermediate it rounds, in the output's units (a log-space
    reduction's log of its sum, of size 1 however small the result: each
    of the `terms` rounded at it, and the intermediate held in the
    result's dtype, as C_MID allows); `in_output`, whether the kernel adds
    into the output tensor itself, each partial sum rounded to its dtype;
    `normwise`, the dimensions along which the kernel's error is bounded
    as a whole, not element by element (an eigenvector, the eigenvalues:
    LAPACK's bounds are normwise, so a small component of a unit vector
    errs by the roundings of its large ones)."""

    terms: Any = 1.0
    size: Any = None
    in_output: bool = False
    normwise: Tuple[int, ...] = ()  # dims along which its error is bounded as a whole: each element the largest bound


class ReplayFramework:
    """What replay needs of one framework. One instance per process
    (replay_framework), which keeps what it made once (its resolver)."""

    name = ""  # the framework's name (frameworks.FRAMEWORKS)
    title = ""  # as messages name it ("Paddle")
    builder: type = type  # its Builder subclass (builder.py), which makes its values
    checks: Optional[Tuple[str, ...]] = None  # the --check modes it takes (None: every one)
    gradients = True  # whether its calls give the gradients of their floating inputs (--backward)
    backward = True  # whether its own float64 can be a gradient's reference (--check float64 --backward)
    devices: Optional[Tuple[str, ...]] = None  # the devices its calls run on (None: any torch knows)

    @functools.cached_property
    def resolver(self) -> Any:
        """Its names to objects: resolve(name, line), walk(name, line),
        constructible(cls) (frameworks/NAME: Resolver, PaddleResolver)."""
        raise NotImplementedError

    def prepare_process(self) -> None:
        """What a process that replays its configs does first (a quiet
        import of the framework)."""

    def preload(self, options: Any, checks: Iterable[str] = ()) -> Tuple[str, ...]:
        """The modules the server that worker processes fork from imports
        once (pool.py), so that no worker pays for them: what replaying
        with these options (and --check modes) imports lazily."""
        return ("torch",)

    def resolve(self, name: str, line: str) -> Any:
        """The callable an API name names (Invalid, Skip where none)."""
        return self.resolver.resolve(name, line)

    def refusal(self, name: str, obj: Any = None) -> Optional[str]:
        """Why replay may not call `name` (resolved to `obj` where given)
        from a file it cannot trust; None where it may: the framework's
        policy."""
        raise NotImplementedError

    def preconditions(self, api: str, func: Any, args: list, kwargs: dict) -> str:
        """What is wrong with a call's built arguments that its kernel would
        not check ("" where nothing is)."""
        return ""

    def unsupported(self, options: Any) -> str:
        """Why this framework cannot replay with these options ("" where it
        can): a --check mode, --backward or a device it does not take."""
        if options.check == self.name:
            return f"--check {self.name}: a {self.title} config is judged against another framework's call"
        if options.check in FRAMEWORKS and options.backward:
            reference = replay_framework(options.check)
            if not self.gradients:
                return f"--backward: {self.title}'s calls give no gradients"
            if not reference.backward:
                return f"--backward: --check {options.check}: {NO_GRADIENT_REFERENCE.format(reference.title)}"
        if options.check and self.checks is not None and options.check not in self.checks:
            return f"--check {options.check}: {self.title}'s configs are checked by {' or '.join(self.checks)}"
        if options.backward and not self.backward and options.check not in FRAMEWORKS:
            return f"--backward: {NO_GRADIENT_REFERENCE.format(self.title)}"
        if self.devices is not None and options.device not in self.devices:
            where = " or ".join("the CPU" if d == "cpu" else d for d in self.devices)
            return f"--device {options.device}: {self.title}'s configs replay on {where}"
        return ""

    def no_kernel(self, message: str) -> str:
        """What a failure's `message` says the framework lacks, where it says
        it has no kernel for the call's dtypes on the device ("" for any
        other failure): the config is skipped with that, not failed."""
        return ""

    def counterpart(self, job: Any, other: str) -> Any:
        """The job's call made in framework `other` (--check OTHER): a Job
        of that framework's, with the same arguments and an `adapt` that
        makes the built ones its call's; Unmapped where no mapping makes it."""
        from .results import Unmapped

        raise Unmapped(f"{self.title}'s calls have no mapping to {other}'s")

    def memory_device(self, device: str) -> str:
        """The device whose memory bounds a call made on `device`."""
        return device

    def run_side(self, job: Any, side: Any, watch: bool = False) -> Any:
        """One side of a job's call (options.py: `Job`; side.py: `Side`),
        built and made; its `Outcome`, the output's tensors torch's."""
        raise NotImplementedError

    def timed_backward(self, job: Any) -> Any:
        """The job's call built once on options.device, one call made, and
        its backward ready to be timed (side.py: `TimedCall`), or Skip
        where the framework gives none. Raises what build raises."""
        from .results import Skip

        raise Skip(f"--backward: {self.title}'s calls are timed forward only")

    def reproducer(self, job: Any, verdict: Any, cast: Any, about: Any) -> str:
        """The job's call as a standalone script of this framework alone
        (fuzz/repro.py says what it shows); NotWritable where the
        framework writes none."""
        from .results import NotWritable

        raise NotWritable(f"{job.api}: a {self.title} call: reproducers are written for torch's calls only")

    def reference_fallbacks(self, func: Any) -> Iterable[Tuple[str, Callable[..., Any]]]:
        """(what, substitute) for a float64 reference the call itself
        cannot make: another computation of it (torch's decompositions)."""
        return ()

    def no_reference(self, failure: str) -> str:
        """Why a call that fails in float64, and has no fallback that
        runs, has no float64 reference."""
        return f"no float64 reference: the call fails in float64 ({failure})"

    def workspace_outputs(self, api: str) -> Tuple[int, ...]:
        """The indices of the outputs `api` keeps for its backward in a form
        of the kernel's choosing, or leaves uninitialized: a check does not
        compare them."""
        return ()

    def settle_choices(self, api: str, inputs: Any, mine: Any, theirs: Any) -> Tuple[Any, str]:
        """The reference side's output `theirs` with each choice `api`
        leaves open made the replay side's `mine`'s (the index of one of
        equal elements, a tie; an eigenvector's sign), and a note of it
        ("": none); `inputs`, the replay side's built (args, kwargs)."""
        return theirs, ""

    def no_wider_reference(self, api: str) -> str:
        """Why `api`'s result on float64 copies is another function's, not
        its own more exactly (a step to the next value of its own dtype);
        "" where it is its own."""
        return ""

    def raises_by_design(self, api: str) -> bool:
        """Whether `api` exists to raise (an assertion): an error it raises,
        however worded ("INTERNAL ASSERT FAILED"), is its purpose, not a
        defect of it."""
        return False

    def accumulations(self, api: str, inputs: Any) -> Dict[str, Any]:
        """Per output leaf of `api` ("output"), what its kernel adds up
        beyond the error model's probes' sight (`Accumulated`: a
        scatter's counts, a log-space reduction's log of its sum); `inputs`,
        the replay side's built (args, kwargs). {}: the probes see all."""
        return {}

    def grad_mode_kept(self) -> ContextManager[Any]:
        """While inside, a call that sets the framework's grad mode sets it
        for itself only: the mode before comes back."""
        return contextlib.nullcontext()

    def seeded(self, seed: int, device: str) -> ContextManager[Any]:
        """While inside, the framework's global generators (the CPU's and
        `device`'s) are seeded with `seed`; their states come back after:
        what run_side does around a side's call, for callers that make
        the call themselves (bench's timing)."""
        return contextlib.nullcontext()

    def names_of_its_own(self) -> ContextManager[Any]:
        """What a config's call runs inside so that the names it gives its
        objects are its own (Paddle's parameter names)."""
        return contextlib.nullcontext()

    def constructors_traced(self, args: list, kwargs: dict) -> Tuple[str, ...]:
        """The constructors of the arguments that the tracer writes as the
        calls level 0 saw (Paddle's layers): a round trip builds the
        arguments while it traces them (retrace.py)."""
        return ()


class MixedFile(ValueError):
    """A file of lines of two frameworks: the first line of the second one."""

    def __init__(self, config: Any, framework_name: str, first: Any, first_framework: str) -> None:
        super().__init__(
            f"{config.file}:{config.line}: a {framework_name} line in a file of {first_framework} "
            f"lines ({first.file}:{first.line} is {first_framework}'s): replay one framework's lines at "
            "a time, or name it with --dialect (the other's lines are then invalid)"
        )


def file_framework(configs: Iterable[Any], given: Optional[str] = None) -> str:
    """The framework of a file's configs: `given` if any, else the one
    their APIs name (DEFAULT where none does); MixedFile where they name
    two."""
    if given:
        return given
    first, first_framework = None, None
    for config in configs:
        named = framework_of(api_of(config.text))
        if named is None:
            continue
        if first is None:
            first, first_framework = config, named
        elif named != first_framework:
            raise MixedFile(config, named, first, first_framework)
    return first_framework or DEFAULT


def line_framework(api: str, options: Any) -> str:
    """The framework that replays a line of API `api`: options.dialect
    (the file's) where set, else the one the API names (DEFAULT)."""
    return options.dialect or framework_of(api) or DEFAULT


@functools.lru_cache(maxsize=None)
def replay_framework(name: str) -> ReplayFramework:
    """The ReplayFramework of framework `name`, made once per process."""
    return load(framework(name).replay)()
