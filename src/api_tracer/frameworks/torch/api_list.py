"""torch's API lists: what its default list holds (torch's functions and
those of its public function namespaces, Tensor methods and operators,
torch.nn's modules and their forward, optimizers), and what a full scan of
its modules leaves out (frameworks/api_lists.py does the rest)."""

from __future__ import annotations

from typing import Any, List, Set, Tuple

from ..api_lists import ApiLists, functions, public, scan_package


def subclasses(module: Any, base: type) -> List[Tuple[str, type]]:
    """(name, class) of the public classes `module` exports that derive
    from `base`, `base` itself left out."""
    out = []
    for name in dir(module):
        cls = getattr(module, name)
        if public(name) and isinstance(cls, type) and issubclass(cls, base) and cls is not base:
            out.append((name, cls))
    return out


class TorchLists(ApiLists):
    framework = "torch"
    default_what = "torch's public API, wrapped by level 0 by default."
    full_what = "Everything a full scan of torch's public modules finds."
    # Public namespaces whose functions are part of the default list.
    FUNCTION_NAMESPACES = (
        "torch.nn.functional",
        "torch.linalg",
        "torch.fft",
        "torch.special",
        "torch.nn.init",
        "torch.autograd",
    )
    # Modules a full scan does not import: they need optional dependencies,
    # start services, or exist only for torch's own tests.
    SCAN_SKIP = (
        "torch.testing._internal",
        "torch.utils.tensorboard",
        "torch.utils.benchmark",
        "torch.distributed",
        "torch.onnx",
        "torch.contrib",
        "torch.package",
        "torch.utils.bottleneck",
        "torch.utils.data.datapipes",
        "torch.ao",
        "torch.backends._coreml",
        "torch.utils.hipify",
        "torch.cuda",
        "torch.mtia",
        "torch.xpu",
        "torch.mps",
        "torch.distributions",
    )

    def version(self) -> str:
        import torch

        return torch.__version__

    @staticmethod
    def _tensor_methods() -> Set[str]:
        import torch
        from torch.overrides import get_overridable_functions, resolve_name

        names = set()
        for func in get_overridable_functions()[torch.Tensor]:
            name = resolve_name(func)
            if name and name.startswith("torch.Tensor.") and name.count(".") == 2:
                names.add(name)
        return names

    def default(self) -> List[str]:
        import torch

        names = functions("torch", dir(torch)) | self._tensor_methods()
        for ns in self.FUNCTION_NAMESPACES:
            names |= functions(ns)
        for name, cls in subclasses(torch.nn, torch.nn.Module):
            names.add(f"torch.nn.{name}")
            if "forward" in vars(cls):
                names.add(f"torch.nn.{name}.forward")
        for name, _ in subclasses(torch.optim, torch.optim.Optimizer):
            names.update(f"torch.optim.{name}{method}" for method in ("", ".step", ".zero_grad"))
        return self.wrappable(names)

    def full(self) -> List[str]:
        import torch

        names = set(self.default()) | scan_package(torch, lambda name: name.startswith(self.SCAN_SKIP))
        return self.wrappable(names)
