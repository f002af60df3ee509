"""How a replay runs: `ReplayOptions`, one object for what every config of
a run shares (the device, the value ranges, the seed, the policy switch,
the byte limit, what --check compares against, the framework), handed whole
from the command line to the runs, the workers and the checks. The flags
that give it are flags.py's REPLAY; run.py checks what they give. And
`Job`, what one config's replay hands each of its steps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Tuple

from ..formats.configs import Config


@dataclass(frozen=True)
class ReplayOptions:
    device: str = "cpu"  # where the tensors are made and the call runs
    ranges: Dict[str, Dict[str, Any]] = field(default_factory=dict)  # config -> argument -> _C.ValueProfile
    seed: int = 0  # of the arguments' values and of the framework's global generator during each call
    allow_unsafe: bool = False  # the policy (the framework's) off
    max_bytes: Optional[int] = None  # the tensor arguments' limit (None: half the device's free memory)
    check: Optional[str] = None  # compare against: "float64", "device:DEVICE", "compile", ... (judge/check.py)
    backward: bool = False  # with check: the gradients of the floating inputs too
    rtol: Optional[float] = None  # with check: instead of the dtype's default (torch.testing's)
    atol: Optional[float] = None
    imports: Tuple[str, ...] = ()  # the user's modules loaded into each replaying process (user_code.py)
    libraries: Tuple[str, ...] = ()  # the user's shared libraries, likewise
    dialect: Optional[str] = None  # the framework (None: each line's API says; framework.py)
    behaviour: bool = False  # without check: Result.behaviour, what the call did (behaviour.py; fuzz sets it)

    @property
    def watches_behaviour(self) -> bool:
        """Whether a call's behaviour is seen: asked for, on a plain run
        (a check's sides are judged, not signed)."""
        return self.behaviour and not self.check


@dataclass(frozen=True)
class Job:
    """One config's replay, what each of its steps is handed: the line
    (`config`) parsed into its API and the arguments as it describes them
    (values.py's), the run's options, and the framework that replays it
    (framework.py's ReplayFramework)."""

    config: Config
    api: str
    args: list
    kwargs: dict
    options: ReplayOptions
    framework: Any
    region: str = ""  # its floating values drawn over a region (draw.REGIONS) by the judge, or "" as usual
    # a counterpart's (judge/across.py): the built arguments, as the line lays them out, made the
    # other framework's call's (frameworks/torch_paddle.py); None for the line's own call
    adapt: Optional[Callable[[list, dict], Tuple[list, dict]]] = None
