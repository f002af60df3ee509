"""Regenerates torch_api_list.yaml and torch_api_list_full.yaml from the
installed torch: ``python -m api_tracer.api_list [--check]``."""
from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
import sys
import types
import warnings
from pathlib import Path
from typing import Iterable, List, Set

HERE = Path(__file__).resolve().parent
FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType)
# Public namespaces whose functions are part of the default list.
FUNCTION_NAMESPACES = ("torch.nn.functional", "torch.linalg", "torch.fft", "torch.special",
                       "torch.nn.init", "torch.autograd")
# Modules a full scan does not import: they need optional dependencies,
# start services, or exist only for torch's own tests.
SCAN_SKIP = ("torch.testing._internal", "torch.utils.tensorboard", "torch.utils.benchmark",
             "torch.distributed", "torch.onnx", "torch.contrib", "torch.package", "torch.utils.bottleneck",
             "torch.utils.data.datapipes", "torch.ao", "torch.backends._coreml", "torch.utils.hipify",
             "torch.cuda", "torch.mtia", "torch.xpu", "torch.mps", "torch.distributions")


def _public(name: str) -> bool:
    return not name.startswith("_")


def _tensor_methods() -> Set[str]:
    import torch
    from torch.overrides import get_overridable_functions, resolve_name

    names = set()
    for func in get_overridable_functions()[torch.Tensor]:
        name = resolve_name(func)
        if name and name.startswith("torch.Tensor.") and name.count(".") == 2:
            names.add(name)
    return names


def public_apis() -> List[str]:
    import torch

    names: Set[str] = set()
    for name in dir(torch):
        if _public(name) and isinstance(getattr(torch, name), FUNCTION_TYPES):
            names.add(f"torch.{name}")
    names |= _tensor_methods()
    for ns in FUNCTION_NAMESPACES:
        mod = importlib.import_module(ns)
        for name in getattr(mod, "__all__", dir(mod)):
            if _public(name) and isinstance(getattr(mod, name, None), FUNCTION_TYPES):
                names.add(f"{ns}.{name}")
    for name in dir(torch.nn):
        cls = getattr(torch.nn, name)
        if _public(name) and isinstance(cls, type) and issubclass(cls, torch.nn.Module) and cls is not torch.nn.Module:
            names.add(f"torch.nn.{name}")
            if "forward" in vars(cls):
                names.add(f"torch.nn.{name}.forward")
    for name in dir(torch.optim):
        cls = getattr(torch.optim, name)
        if _public(name) and isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer) \
                and cls is not torch.optim.Optimizer:
            names.add(f"torch.optim.{name}")
            names.add(f"torch.optim.{name}.step")
            names.add(f"torch.optim.{name}.zero_grad")
    return _wrappable(names)


def _scan_module(mod: types.ModuleType) -> Iterable[str]:
    exported = getattr(mod, "__all__", None)
    for name in exported if exported is not None else dir(mod):
        if not _public(name):
            continue
        obj = getattr(mod, name, None)
        if obj is None:
            continue
        if exported is None and getattr(obj, "__module__", mod.__name__) != mod.__name__:
            continue  # imported from elsewhere: listed where it is defined
        if isinstance(obj, FUNCTION_TYPES):
            yield f"{mod.__name__}.{name}"
        elif isinstance(obj, type) and obj.__module__.startswith("torch"):
            yield f"{mod.__name__}.{name}"
            for attr, raw in vars(obj).items():
                if _public(attr) and (inspect.isfunction(raw) or isinstance(raw, (staticmethod, classmethod))):
                    yield f"{mod.__name__}.{name}.{attr}"


def full_apis() -> List[str]:
    import torch

    names: Set[str] = set(public_apis())
    modules = [torch]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for info in pkgutil.walk_packages(torch.__path__, "torch."):
            if any(part.startswith("_") for part in info.name.split(".")[1:]):
                continue
            if info.name.startswith(SCAN_SKIP):
                continue
            try:
                modules.append(importlib.import_module(info.name))
            except Exception:  # noqa: BLE001 - a module that does not import is not scanned
                continue
    for mod in modules:
        names.update(_scan_module(mod))
    return _wrappable(names)


def _wrappable(names: Iterable[str]) -> List[str]:
    from api_tracer.dialect import PyTorchDialect

    targets, _ = PyTorchDialect().setattr_targets(sorted(set(names)))
    return sorted(t.api for t in targets)


def write(path: Path, names: List[str], what: str) -> None:
    import torch

    header = (f"# {what}\n# Generated for torch {torch.__version__} by: python -m api_tracer.api_list\n"
              f"# {len(names)} APIs, each a dotted name level 0 records.\n")
    path.write_text(header + "".join(f"- {n}\n" for n in names), encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m api_tracer.api_list", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if the files are out of date")
    args = parser.parse_args(argv)
    lists = {
        HERE / "torch_api_list.yaml": (public_apis(), "torch's public API, wrapped by level 0 by default."),
        HERE / "torch_api_list_full.yaml": (full_apis(), "Everything a full scan of torch's public modules finds."),
    }
    stale = False
    for path, (names, what) in lists.items():
        if args.check:
            from api_tracer.dialect import read_api_list

            if not path.exists() or read_api_list(path) != names:
                print(f"{path.name} is out of date", file=sys.stderr)
                stale = True
        else:
            write(path, names, what)
            print(f"{path}: {len(names)} APIs")
    return 1 if stale else 0
