"""Frameworks: everything api_tracer knows of one framework, in one folder.

A framework's folder (frameworks/torch/, frameworks/paddle/) holds its
dialect (what the tracer needs: the hook of each level, the API list and
what level 0 leaves alone, how the framework's values are written), its API
lists and the scan that makes them, its replay (names resolved inside the
framework, the policy of what replay may call, the preconditions its
kernels do not check, the call made and its outputs made torch's for the
judge) and the formats of other tools it exports to or reads. Its
__init__.py describes it as a `Framework`, naming those parts without
importing them (nor the framework).

FRAMEWORKS is the registry: adding a framework is a folder and a name
there. Nothing outside a framework's folder imports from it; the generic
stages ask this module (dialect_named, framework, framework_of) or take
the object it names (replay/framework.py: `ReplayFramework`).
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

# The frameworks, by the name APITracer(dialect=NAME) and --dialect take:
# each is the folder frameworks/NAME/, and the API names of its configs
# begin with NAME (torch.add, paddle.concat).
FRAMEWORKS: Tuple[str, ...] = ("torch", "paddle")


@dataclass(frozen=True)
class Export:
    """A format of another tool that `api-tracer export` writes a
    framework's config lines in: `write` ("module:function", (configs,
    left_out) -> (text, left_out)) and `holds` (text -> what it holds, "3
    operators")."""

    help: str
    write: str
    holds: str


@dataclass(frozen=True)
class Framework:
    """One framework's parts, each as "module:attribute" (loaded on first use)."""

    name: str
    dialect: str  # its FrameworkDialect
    api_lists: str  # its ApiLists, the scan that makes its API lists (api_lists.py)
    replay: str  # its ReplayFramework (replay/framework.py)
    exports: Dict[str, Export] = field(default_factory=dict)  # export's formats, by --format name
    # The formats of files of config lines replay, fuzz and export read
    # besides the project's own (formats/configs.py): objects with
    # sniff(data) -> bool and read(path, data) -> [(line, config, calls)].
    reads: Tuple[str, ...] = ()


def load(where: str) -> Any:
    """The attribute a "module:attribute" string names, its module imported."""
    module, _, attribute = where.partition(":")
    return getattr(importlib.import_module(module), attribute)


def framework(name: str) -> Framework:
    """The framework `name` (one of FRAMEWORKS); ValueError for another."""
    if name not in FRAMEWORKS:
        raise ValueError(f"dialect must be one of {sorted(FRAMEWORKS)}, not {name!r}")
    return importlib.import_module(f"{__name__}.{name}").FRAMEWORK


def dialect_named(name: str) -> Any:
    """A new instance of the dialect of framework `name` (a FrameworkDialect)."""
    return load(framework(name).dialect)()


def format_call(api: str, /, *args: Any, _dialect: Optional[Any] = None, **kwargs: Any) -> str:
    """The config line of a call of `api` with these arguments (Python's
    objects: tensors, modules...), as the tracer would write it: by
    `_dialect` (torch's by default). A keyword argument may be named `api`."""
    from ..config import format_line

    return format_line(api, args, kwargs, dialect=_dialect or _torch_dialect())


@functools.lru_cache(maxsize=None)
def _torch_dialect() -> Any:
    return dialect_named("torch")


def framework_of(api: str) -> Optional[str]:
    """The framework whose name an API name starts with (torch.add: torch),
    if any."""
    root = api.split(".", 1)[0].strip()
    return root if root in FRAMEWORKS else None


def exports() -> Dict[str, Export]:
    """Every framework's export formats, by name."""
    return {name: form for f in FRAMEWORKS for name, form in framework(f).exports.items()}


def readers() -> Tuple[Any, ...]:
    """Every framework's readers of foreign config files (Framework.reads), loaded."""
    return tuple(load(where) for f in FRAMEWORKS for where in framework(f).reads)
