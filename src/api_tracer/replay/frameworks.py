"""Which framework replays a config: torch's (resolve.py, builder.py,
side.py) or Paddle's (paddle_replay.py), chosen per file. A file's framework is
read from the names of its lines' APIs (`paddle.concat` is Paddle's,
`torch.add` torch's; other names, a user's module or a line that does
not parse, say nothing), or given (`--dialect`, ReplayOptions.dialect);
a file of both is refused, naming the first line of the other. Without a
file (replay_one of one line), the line's own API decides."""
from __future__ import annotations

import functools
from typing import Any, Iterable, Optional

from ..dialect import DIALECTS
from ..filesets import api_of

FRAMEWORKS = tuple(DIALECTS)  # every dialect the tracer has replays its files
DEFAULT = "torch"  # a file none of whose names is a framework's


class MixedFile(ValueError):
    """A file of lines of two frameworks: the first line of the second one."""

    def __init__(self, config: Any, framework: str, first: Any, first_framework: str) -> None:
        super().__init__(f"{config.file}:{config.line}: a {framework} line in a file of {first_framework} lines "
                         f"({first.file}:{first.line} is {first_framework}'s): replay one framework's lines at a "
                         "time, or name it with --dialect (the other's lines are then invalid)")


def framework_of(api: str) -> Optional[str]:
    """The framework whose root name an API name starts with, if any."""
    root = api.split(".", 1)[0].strip()
    return root if root in FRAMEWORKS else None


def file_framework(configs: Iterable[Any], given: Optional[str] = None) -> str:
    """The framework of a file's configs: `given` if any, else the one
    their APIs name (DEFAULT where none does); MixedFile where they name
    two."""
    if given:
        return given
    first, first_framework = None, None
    for config in configs:
        framework = framework_of(api_of(config.text))
        if framework is None:
            continue
        if first is None:
            first, first_framework = config, framework
        elif framework != first_framework:
            raise MixedFile(config, framework, first, first_framework)
    return first_framework or DEFAULT


def line_framework(api: str, options: Any) -> str:
    """The framework that replays a line of API `api`: options.dialect
    (the file's) where set, else the one the API names (DEFAULT)."""
    return options.dialect or framework_of(api) or DEFAULT


def resolver_for(framework: str, given: Any = None) -> Any:
    """A resolver of `framework`'s names: `given` where it is one, else one
    made once per process (Paddle's) or anew (torch's, as replay always made it)."""
    if given is not None and getattr(given, "framework", "torch") == framework:
        return given
    if framework == "paddle":
        return _paddle_resolver()
    from .resolve import Resolver

    return Resolver()


@functools.lru_cache(maxsize=None)
def _paddle_resolver() -> Any:
    from .paddle_replay import PaddleResolver

    return PaddleResolver()

