"""`NameResolver`: the names of a config line to objects, walking from a
framework's module (or a module the user imported, --import) through
objects that are its own, never evaluated. Each framework's resolver
(frameworks/torch/resolve.py, frameworks/paddle/replay.py) says where a
name starts, what is its own, and which dunders a line may name."""

from __future__ import annotations

import sys
import types
from typing import Any, Callable, Optional, Tuple

from .results import Invalid, Skip


class NameResolver:
    """Names to objects, inside one framework (and the user's modules)."""

    def start(self, name: str, line: str) -> Tuple[str, Any]:
        """(root, module) a dotted name is walked from: the framework's, or
        a module the user imported that it is under; Invalid for a name
        under neither."""
        raise NotImplementedError

    def inside(self, obj: Any, root: str) -> bool:
        """Whether a step of a walk from `root` may pass through `obj`: a
        module or class of its own (a framework's namespaces, more)."""
        if isinstance(obj, types.ModuleType):
            return _under(obj.__name__, root)
        if isinstance(obj, type):
            return _under(getattr(obj, "__module__", "") or "", root)
        return False

    def owned(self, obj: Any, root: str) -> bool:
        """Whether `obj` is one of `root`'s own objects (what it defines, or
        a method of one of its classes)."""
        if self.inside(obj, root) or _under(getattr(obj, "__module__", None) or "", root):
            return True
        objclass = getattr(obj, "__objclass__", None)
        return objclass is not None and self.inside(objclass, root)

    def named_dunder(self, obj: Any, part: str) -> bool:
        """Whether `part`, a dunder, names something of `obj` that is not
        Python's machinery (an operator registered under such a name)."""
        return False

    def walk(self, name: str, line: str, dunder_ok: Callable[[Any, str], bool] = lambda obj, part: False) -> Any:
        """The object a dotted name names, every step but the last staying
        inside its root; dunders only where dunder_ok(obj, part) allows them
        (as the last step), or named_dunder does."""
        column = line.find(name) + 1 or 1
        root, obj = self.start(name, line)
        parts = name[len(root) + 1 :].split(".")
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            if (
                part.startswith("__")
                and part.endswith("__")
                and not (last and dunder_ok(obj, part))
                and not self.named_dunder(obj, part)
            ):
                raise Invalid(f"{name!r}: dunder access {part!r} is not allowed", column)
            try:
                obj = getattr(obj, part)
            except AttributeError:
                raise Skip(f"{root}.{'.'.join(parts[: i + 1])} does not exist in this {root}") from None
            if not last and not self.inside(obj, root):
                raise Invalid(f"{name!r} leads out of {root} at {root}.{'.'.join(parts[: i + 1])}", column)
        return obj

    def root_of(self, name: str) -> str:
        """The root a name is walked from (start's)."""
        return self.start(name, name)[0]


def framework_start(name: str, framework: str, module: Any, line: str) -> Tuple[str, Any]:
    """start() for a name that must be under `framework` (its module)."""
    if not name.startswith(framework + ".") or name == framework + ".":
        raise Invalid(f"{name!r} is outside {framework}", line.find(name) + 1 or 1)
    return framework, module


def user_root(name: str) -> Optional[str]:
    """The module the user imported (--import) that `name` is under: the
    longest; None where none is."""
    from .user_code import modules

    return max((m for m in modules() if name.startswith(m + ".")), key=len, default=None)


def user_start(name: str) -> Optional[Tuple[str, Any]]:
    """start() for a name under a module the user imported, if it is."""
    root = user_root(name)
    return None if root is None else (root, sys.modules[root])


def _under(module_name: str, root: str) -> bool:
    return module_name == root or module_name.startswith(root + ".")
