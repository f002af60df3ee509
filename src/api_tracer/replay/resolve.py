"""`Resolver`: the names of a config line to objects, walking from torch
through objects that are torch's own; a dunder only as a Tensor operator
or as the name of a registered operator (``torch.ops.aten.__and__``)."""
from __future__ import annotations

import types
from typing import Any, Callable

from .configs import Invalid, Skip


class Resolver:
    """Names to objects, inside torch only (Paddle's: paddle_replay.PaddleResolver)."""

    framework = "torch"  # whose configs it resolves (frameworks.py)

    def __init__(self) -> None:
        import torch
        from torch.overrides import get_overridable_functions, resolve_name

        self.torch = torch
        self.tensor_dunders = set()
        for func in get_overridable_functions()[torch.Tensor]:
            name = resolve_name(func) or ""
            last = name.rsplit(".", 1)[-1]
            if name.startswith("torch.Tensor.__") and last.startswith("__") and last.endswith("__"):
                self.tensor_dunders.add(last)

    def _inside(self, obj: Any) -> bool:
        torch = self.torch
        if isinstance(obj, types.ModuleType):
            return obj.__name__ == "torch" or obj.__name__.startswith("torch.")
        if isinstance(obj, type):
            return (getattr(obj, "__module__", "") or "").startswith("torch")
        return isinstance(obj, (torch._ops._OpNamespace, torch._ops.OpOverloadPacket))

    def _owned(self, obj: Any) -> bool:
        if self._inside(obj):
            return True
        if (getattr(obj, "__module__", None) or "").startswith("torch"):
            return True
        objclass = getattr(obj, "__objclass__", None)
        return objclass is not None and self._inside(objclass)

    def _registered_operator(self, obj: Any, part: str) -> bool:
        """Whether `part` of namespace `obj` is an operator registered under
        that name (aten::__and__), which getattr makes a packet of; any
        other dunder of a namespace is an attribute of the Python object."""
        return (isinstance(obj, self.torch._ops._OpNamespace) and not hasattr(type(obj), part)
                and bool(self.torch._C._jit_get_schemas_for_operator(f"{obj.name}::{part}")))

    def walk(self, name: str, line: str, dunder_ok: Callable[[Any, str], bool] = lambda obj, part: False) -> Any:
        """The object a dotted name starting at torch names, every step but
        the last staying inside torch; dunders only where dunder_ok(obj,
        part) allows them (as the last step)."""
        column = line.find(name) + 1 or 1
        parts = name.split(".")
        if parts[0] != "torch" or len(parts) < 2:
            raise Invalid(f"{name!r} is outside torch", column)
        obj: Any = self.torch
        for i, part in enumerate(parts[1:], 1):
            last = i == len(parts) - 1
            if (part.startswith("__") and part.endswith("__") and not (last and dunder_ok(obj, part))
                    and not self._registered_operator(obj, part)):
                raise Invalid(f"{name!r}: dunder access {part!r} is not allowed", column)
            try:
                obj = getattr(obj, part)
            except AttributeError:
                raise Skip(f"{'.'.join(parts[:i + 1])} does not exist in this torch") from None
            if not last and not self._inside(obj):
                raise Invalid(f"{name!r} leads out of torch at {'.'.join(parts[:i + 1])}", column)
        return obj

    def resolve(self, name: str, line: str) -> Any:
        """The torch callable an API name names (an operator torch registers
        from Python once the module that registers it is imported)."""
        from .policy import TORCH_PYTHON_OPERATORS

        parts = name.split(".")
        if len(parts) > 3 and parts[:2] == ["torch", "ops"] and parts[2] in TORCH_PYTHON_OPERATORS:
            import importlib

            importlib.import_module(TORCH_PYTHON_OPERATORS[parts[2]])
        obj = self.walk(name, line, lambda obj, part: obj is self.torch.Tensor and part in self.tensor_dunders)
        if isinstance(obj, types.ModuleType) or not self._owned(obj):
            raise Invalid(f"{name!r} is not one of torch's callables", line.find(name) + 1 or 1)
        return obj

    def constructible(self, cls: Any) -> bool:
        """Whether replay may call `cls` to build a value: the few torch
        classes it knows how to construct, and torch's dataclasses of options."""
        import dataclasses

        torch = self.torch
        return cls in (torch.device, torch.Size, torch.Generator) or isinstance(cls, type) and (
            issubclass(cls, (torch.nn.Module, torch.optim.Optimizer))
            or dataclasses.is_dataclass(cls) and self._inside(cls))
