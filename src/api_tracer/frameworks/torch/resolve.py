"""`Resolver`: the names of a config line to torch's objects, walking from
torch through objects that are torch's own (replay/resolve.py); a dunder
only as a Tensor operator or as the name of a registered operator
(``torch.ops.aten.__and__``)."""

from __future__ import annotations

import types
from typing import Any, Tuple

from ...replay.resolve import NameResolver, framework_start
from ...replay.results import Invalid


class Resolver(NameResolver):
    """Names to objects, inside torch only."""

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

    def start(self, name: str, line: str) -> Tuple[str, Any]:
        return framework_start(name, "torch", self.torch, line)

    def inside(self, obj: Any, root: str = "torch") -> bool:
        torch = self.torch
        if isinstance(obj, types.ModuleType):
            return obj.__name__ == "torch" or obj.__name__.startswith("torch.")
        if isinstance(obj, type):
            return (getattr(obj, "__module__", "") or "").startswith("torch")
        return isinstance(obj, (torch._ops._OpNamespace, torch._ops.OpOverloadPacket))

    def owned(self, obj: Any, root: str = "torch") -> bool:
        if self.inside(obj):
            return True
        if (getattr(obj, "__module__", None) or "").startswith("torch"):
            return True
        objclass = getattr(obj, "__objclass__", None)
        return objclass is not None and self.inside(objclass)

    def named_dunder(self, obj: Any, part: str) -> bool:
        """Whether `part` of namespace `obj` is an operator registered under
        that name (aten::__and__), which getattr makes a packet of; any
        other dunder of a namespace is an attribute of the Python object."""
        return (
            isinstance(obj, self.torch._ops._OpNamespace)
            and not hasattr(type(obj), part)
            and bool(self.torch._C._jit_get_schemas_for_operator(f"{obj.name}::{part}"))
        )

    def resolve(self, name: str, line: str) -> Any:
        """The torch callable an API name names (an operator torch registers
        from Python once the module that registers it is imported)."""
        from .policy import TORCH_PYTHON_OPERATORS

        parts = name.split(".")
        if len(parts) > 3 and parts[:2] == ["torch", "ops"] and parts[2] in TORCH_PYTHON_OPERATORS:
            import importlib

            importlib.import_module(TORCH_PYTHON_OPERATORS[parts[2]])
        obj = self.walk(name, line, lambda obj, part: obj is self.torch.Tensor and part in self.tensor_dunders)
        if isinstance(obj, types.ModuleType) or not self.owned(obj):
            raise Invalid(f"{name!r} is not one of torch's callables", line.find(name) + 1 or 1)
        return obj

    def constructible(self, cls: Any) -> bool:
        """Whether replay may call `cls` to build a value: the few torch
        classes it knows how to construct, and torch's dataclasses of options."""
        import dataclasses

        torch = self.torch
        return (
            cls in (torch.device, torch.Size, torch.Generator)
            or isinstance(cls, type)
            and (
                issubclass(cls, (torch.nn.Module, torch.optim.Optimizer))
                or dataclasses.is_dataclass(cls)
                and self.inside(cls)
            )
        )
