"""torch.compile'd code run eagerly while api_tracer watches.

While a Python level traces (or a Profile runs), compiled code runs eagerly,
under the compiler's ``force_eager`` stance: each call is then seen, and the
compiler never traces through the tracer's hooks. The stance lives in
torch._dynamo, which takes about a second to import and, once imported,
changes torch's namespace (it replaces ``torch.manual_seed``, adds
``torch._dynamo``, ``torch._inductor``, ``torch.onnx``...). A program that has
not imported it has no compiled code yet, so the stance is not set then:
with ``when_loaded=True`` it is set the moment torch._dynamo is imported
(the program compiles something inside the block), else not at all.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from typing import Any, Callable, Optional

DYNAMO = "torch._dynamo"


def _force_eager() -> Any:
    """The entered force_eager stance (its __exit__ restores the previous
    one), or None where it cannot be set: inside code dynamo is tracing or
    running (a frame under its callback cannot change the stance)."""
    import torch

    if torch.compiler.is_compiling():
        return None
    try:
        return torch.compiler.set_stance("force_eager")
    except RuntimeError:
        return None


class _WhenLoaded(importlib.abc.MetaPathFinder):
    """Runs `then` right after torch._dynamo's module has been executed,
    and takes itself off sys.meta_path. It finds the module as the path
    finder does and wraps its loader for that one import only: the module's
    __loader__ and __spec__.loader are the real loader."""

    def __init__(self, then: Callable[[], None]) -> None:
        self.then = then

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != DYNAMO:
            return None
        self.remove()
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        real, then = spec.loader, self.then

        class Loader(importlib.abc.Loader):
            def create_module(self, spec: Any) -> Any:
                return real.create_module(spec)

            def exec_module(self, module: Any) -> None:
                spec.loader = module.__loader__ = real
                real.exec_module(module)
                then()

        spec.loader = Loader()
        return spec

    def remove(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)


def run_compiled_code_eagerly(when_loaded: bool, quietly: Callable[[], Any]) -> Callable[[], None]:
    """Sets the force_eager stance now if torch._dynamo is loaded, else (with
    `when_loaded`) once it is; returns what undoes it. `quietly()` is the
    context the stance is set in (the tracer's suspended(): its own calls
    are never recorded)."""
    stance: Optional[Any] = None

    def set_now() -> None:
        nonlocal stance
        with quietly():
            stance = _force_eager()

    finder: Optional[_WhenLoaded] = None
    if DYNAMO in sys.modules:
        set_now()
    elif when_loaded:
        finder = _WhenLoaded(set_now)
        sys.meta_path.insert(0, finder)

    def undo() -> None:
        nonlocal stance
        if finder is not None:
            finder.remove()
        if stance is not None:
            entered, stance = stance, None
            entered.__exit__(None, None, None)

    return undo
