"""A kernel developer's own operators, loaded into a replaying process:
`api-tracer replay --import MODULE --load-library PATH` (and the pytest
plugin's --api-replay-import / --api-replay-load-library). Loading is the
user's explicit act, on the command line; a config file can never ask for
it. The operator namespaces the loaded code registers are then allowed by
the policy, private operators and all: they are the user's own; so are,
for Paddle's configs, the functions of the modules imported."""

from __future__ import annotations

import importlib
from typing import FrozenSet, Iterable, List, Set, Tuple

_loaded: List[str] = []  # what this process loaded, as the summary says it
_namespaces: Set[str] = set()  # the operator namespaces it registered
_modules: List[str] = []  # the modules it imported (--import), whose functions Paddle's replay may call


def _operator_namespaces() -> Set[str]:
    import torch

    return {name.partition("::")[0] for name in torch._C._dispatch_get_all_op_names()}


def load(imports: Iterable[str], libraries: Iterable[str]) -> None:
    """Imports each module and loads each shared library (torch.ops.
    load_library), once per process, and notes the operator namespaces they
    register. Raises what a failed import or load raises."""
    import torch

    todo = [("library", p) for p in libraries if f"--load-library {p}" not in _loaded] + [
        ("module", m) for m in imports if f"--import {m}" not in _loaded
    ]
    if not todo:
        return
    before = _operator_namespaces()
    for kind, what in todo:
        if kind == "library":
            torch.ops.load_library(what)
            _loaded.append(f"--load-library {what}")
        else:
            importlib.import_module(what)
            _loaded.append(f"--import {what}")
            _modules.append(what)
    _namespaces.update(_operator_namespaces() - before)


def namespaces() -> FrozenSet[str]:
    """The operator namespaces the user's loaded code registered."""
    return frozenset(_namespaces)


def modules() -> Tuple[str, ...]:
    """The modules the user's --import loaded into this process: a Paddle
    config may name their functions (`mymodule.matmul(...)`: the user's
    own APIs, see paddle_replay.py)."""
    return tuple(_modules)


def loaded() -> str:
    """What was loaded, for the summary ("" where nothing was)."""
    if not _loaded:
        return ""
    spaces = f" (operators of {', '.join(sorted(_namespaces))})" if _namespaces else " (no operators)"
    return f"loaded {', '.join(_loaded)}{spaces}"
