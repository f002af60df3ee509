"""Regenerates the API lists level 0 wraps from the installed framework:
``python -m api_tracer.api_list [--dialect torch|paddle] [--check]``.

Each dialect scans its framework in a section of its own below (TorchLists,
PaddleLists: which namespaces make the default list, which modules a full
scan leaves out); what they share comes first: the scan of one module, the
walk over a package's modules, keeping what level 0 can wrap, writing the
files and checking them."""
from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
import sys
import types
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Set, Tuple

HERE = Path(__file__).resolve().parent
FUNCTION_TYPES = (types.FunctionType, types.BuiltinFunctionType)
COMMAND = "python -m api_tracer.api_list"


# -- shared --------------------------------------------------------------------


def _public(name: str) -> bool:
    return not name.startswith("_")


def _functions(ns: str, names: Optional[Iterable[str]] = None) -> Set[str]:
    """The public functions of namespace `ns` among `names` (default: its
    __all__, else everything it holds), as dotted names."""
    mod = importlib.import_module(ns)
    found = set()
    for name in names if names is not None else getattr(mod, "__all__", dir(mod)):
        if _public(name) and isinstance(getattr(mod, name, None), FUNCTION_TYPES):
            found.add(f"{ns}.{name}")
    return found


def _scan_module(mod: types.ModuleType, root: str) -> Iterable[str]:
    """What a full scan finds in one module: the functions it exports, and
    the classes of `root` (the framework's package) with their public
    methods."""
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
        elif isinstance(obj, type) and obj.__module__.startswith(root):
            yield f"{mod.__name__}.{name}"
            for attr, raw in vars(obj).items():
                if _public(attr) and (inspect.isfunction(raw) or isinstance(raw, (staticmethod, classmethod))):
                    yield f"{mod.__name__}.{name}.{attr}"


def _scan_package(package: types.ModuleType, skip: Callable[[str], bool]) -> Set[str]:
    """A full scan: _scan_module over the package and each public module of
    it that imports (pkgutil's walk), less those `skip` names."""
    modules = [package]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".", onerror=lambda _: None):
            if any(part.startswith("_") for part in info.name.split(".")[1:]) or skip(info.name):
                continue
            try:
                modules.append(importlib.import_module(info.name))
            except Exception:  # noqa: BLE001 - a module that does not import is not scanned
                continue
    names: Set[str] = set()
    for mod in modules:
        names.update(_scan_module(mod, package.__name__))
    return names


def _wrappable(names: Iterable[str], dialect: Any) -> List[Any]:
    """The patch targets of the names `dialect` resolves and does not skip."""
    targets, _ = dialect.setattr_targets(sorted(set(names)))
    return targets


class ApiLists:
    """One framework's two lists: what a dialect scans to make them."""

    framework = ""  # the dialect's name: --dialect, the files' prefix
    default_what = ""  # each file's first line
    full_what = ""
    order_note = ""  # a line of the header on the names' order, if any

    def version(self) -> str:
        raise NotImplementedError

    def default(self) -> List[str]:
        raise NotImplementedError

    def full(self) -> List[str]:
        raise NotImplementedError

    def command(self) -> str:
        return COMMAND if self.framework == "torch" else f"{COMMAND} --dialect {self.framework}"

    def files(self) -> Dict[Path, Tuple[List[str], str]]:
        """path -> (names, what the list is)."""
        return {
            HERE / f"{self.framework}_api_list.yaml": (self.default(), self.default_what),
            HERE / f"{self.framework}_api_list_full.yaml": (self.full(), self.full_what),
        }

    def header(self, names: List[str], what: str) -> str:
        return (f"# {what}\n# Generated for {self.framework} {self.version()} by: {self.command()}\n"
                f"# {len(names)} APIs, each a dotted name level 0 records.\n"
                + (f"# {self.order_note}\n" if self.order_note else ""))

    def write(self, path: Path, names: List[str], what: str) -> None:
        path.write_text(self.header(names, what) + "".join(f"- {n}\n" for n in names), encoding="utf-8")


# -- torch ----------------------------------------------------------------------


class TorchLists(ApiLists):
    framework = "torch"
    default_what = "torch's public API, wrapped by level 0 by default."
    full_what = "Everything a full scan of torch's public modules finds."
    # Public namespaces whose functions are part of the default list.
    FUNCTION_NAMESPACES = ("torch.nn.functional", "torch.linalg", "torch.fft", "torch.special",
                           "torch.nn.init", "torch.autograd")
    # Modules a full scan does not import: they need optional dependencies,
    # start services, or exist only for torch's own tests.
    SCAN_SKIP = ("torch.testing._internal", "torch.utils.tensorboard", "torch.utils.benchmark",
                 "torch.distributed", "torch.onnx", "torch.contrib", "torch.package", "torch.utils.bottleneck",
                 "torch.utils.data.datapipes", "torch.ao", "torch.backends._coreml", "torch.utils.hipify",
                 "torch.cuda", "torch.mtia", "torch.xpu", "torch.mps", "torch.distributions")

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

        names = _functions("torch", dir(torch)) | self._tensor_methods()
        for ns in self.FUNCTION_NAMESPACES:
            names |= _functions(ns)
        for name in dir(torch.nn):
            cls = getattr(torch.nn, name)
            if _public(name) and isinstance(cls, type) and issubclass(cls, torch.nn.Module) \
                    and cls is not torch.nn.Module:
                names.add(f"torch.nn.{name}")
                if "forward" in vars(cls):
                    names.add(f"torch.nn.{name}.forward")
        for name in dir(torch.optim):
            cls = getattr(torch.optim, name)
            if _public(name) and isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer) \
                    and cls is not torch.optim.Optimizer:
                names.update(f"torch.optim.{name}{method}" for method in ("", ".step", ".zero_grad"))
        return self._wrappable(names)

    def full(self) -> List[str]:
        import torch

        names = set(self.default()) | _scan_package(torch, lambda name: name.startswith(self.SCAN_SKIP))
        return self._wrappable(names)

    @staticmethod
    def _wrappable(names: Iterable[str]) -> List[str]:
        from api_tracer.dialect import PyTorchDialect

        return sorted(t.api for t in _wrappable(names, PyTorchDialect()))


# -- paddle ---------------------------------------------------------------------


class PaddleLists(ApiLists):
    """Paddle's lists. What level 0 must leave alone is paddle_names.py's
    (SKIP, SKIP_PREFIXES), which PaddleDialect.skip_reason reads too.

    paddle.Tensor's methods are mostly paddle's functions patched onto the
    class (``paddle.Tensor.reshape is paddle.reshape``), and level 0 records
    a function listed under several names under the first (it instruments
    the function itself): so the list is in that order, each function's
    preferred name first (_preferred), the rest sorted."""

    framework = "paddle"
    default_what = "paddle's public API, wrapped by level 0 by default."
    full_what = "Everything a full scan of paddle's public modules finds."
    order_note = ("Sorted, but a function (or class) listed under several names comes first under its own, "
                  "which level 0 records; its aliases follow the rest.")
    # Public namespaces whose functions are part of the default list (their
    # __all__). paddle.nn.initializer is not: its initializers are objects
    # that layers call on their parameters as they are built.
    FUNCTION_NAMESPACES = ("paddle.nn.functional", "paddle.linalg", "paddle.fft", "paddle.signal",
                           "paddle.special", "paddle.autograd")
    # paddle's functions that paddle's namespace holds but leaves out of its
    # __all__: the ones of the modules that define tensor computations.
    TENSOR_MODULES = ("paddle.tensor.", "paddle.base.dygraph.generated_tensor_methods_patch",
                      "paddle.audio.functional.window")
    OPTIMIZER_METHODS = ("step", "clear_grad", "zero_grad")
    # paddle.vision's layers, beside paddle.nn's: the models' classes and
    # their blocks (paddle.vision.models.resnet.BasicBlock), which a model
    # holds, and ConvNormActivation. Not the other layers of paddle.vision.ops
    # (RoIAlign, DeformConv2D...), whose kernels take boxes and indices that
    # replay has not reviewed; nor the model functions (resnet18(pretrained=True)
    # downloads weights).
    LAYER_PACKAGES = ("paddle.vision.models",)
    LAYER_CLASSES = ("paddle.vision.ops.ConvNormActivation",)
    # Modules a full scan does not import, beside paddle_names.SKIP_PREFIXES'
    # (whose names level 0 leaves alone anyway).
    SCAN_SKIP = ("paddle.tensorrt", "paddle.hapi.static_flops")

    def version(self) -> str:
        return self._paddle().__version__

    @staticmethod
    def _paddle() -> Any:
        with warnings.catch_warnings():  # paddle warns on import that ccache is missing
            warnings.simplefilter("ignore")
            import paddle
            import paddle.nn.functional  # noqa: F401 - the namespaces scanned
        return paddle

    def _tensor_methods(self) -> Set[str]:
        """paddle.Tensor's methods and operators: its functions and C methods
        (not its properties and C attributes), the dunders among them;
        the object protocol (SKIP) is left out by _wrappable."""
        tensor = self._paddle().Tensor
        names = set()
        for name in dir(tensor):
            raw = inspect.getattr_static(tensor, name)
            if name.startswith("_") and not (name.startswith("__") and name.endswith("__")):
                continue  # private
            if isinstance(raw, (types.FunctionType, types.MethodDescriptorType, types.WrapperDescriptorType)):
                names.add(f"paddle.Tensor.{name}")
        return names

    def _layers(self) -> Iterator[Tuple[str, Any]]:
        """The layer classes of the default list, each under a name that
        reaches it: paddle.nn's, then LAYER_PACKAGES' (each class of the
        package and of its public modules, under the module that defines
        it, and under the package where it exports it), then LAYER_CLASSES."""
        paddle = self._paddle()

        def layers(module: types.ModuleType, own: bool) -> Iterator[Tuple[str, Any]]:
            for name, cls in vars(module).items():
                if _public(name) and isinstance(cls, type) and issubclass(cls, paddle.nn.Layer) \
                        and (not own or cls.__module__ == module.__name__):
                    yield f"{module.__name__}.{name}", cls

        yield from layers(paddle.nn, own=False)
        for package_name in self.LAYER_PACKAGES:
            package = importlib.import_module(package_name)
            yield from ((api, cls) for api, cls in layers(package, own=False)
                        if cls.__module__.startswith(package_name + "."))
            for info in pkgutil.iter_modules(package.__path__, package_name + "."):
                if _public(info.name.rpartition(".")[2]):
                    yield from layers(importlib.import_module(info.name), own=True)
        for api in self.LAYER_CLASSES:
            module, _, name = api.rpartition(".")
            yield api, getattr(importlib.import_module(module), name)

    def default(self) -> List[str]:
        paddle = self._paddle()
        names = _functions("paddle") | self._tensor_methods()
        names |= {f"paddle.{name}" for name, obj in vars(paddle).items() if _public(name)
                  and isinstance(obj, FUNCTION_TYPES) and (obj.__module__ or "").startswith(self.TENSOR_MODULES)}
        for ns in self.FUNCTION_NAMESPACES:
            names |= _functions(ns)
        for api, cls in self._layers():
            names.add(api)  # (the base, paddle.nn.Layer, is skipped)
            if api.startswith("paddle.nn.") and "forward" in vars(cls) and cls is not paddle.nn.Layer:
                names.add(f"{api}.forward")  # (the base's raises)
        for name in dir(paddle.optimizer):
            cls = getattr(paddle.optimizer, name)
            if _public(name) and isinstance(cls, type) and issubclass(cls, paddle.optimizer.Optimizer):
                # (the base's construction is skipped; its methods are
                # listed: an optimizer that inherits them records them so)
                names.add(f"paddle.optimizer.{name}")
                names.update(f"paddle.optimizer.{name}.{method}" for method in self.OPTIMIZER_METHODS)
        return self._wrappable(names)

    def full(self) -> List[str]:
        from api_tracer.api_list.paddle_names import SKIP_PREFIXES

        def skip(module: str) -> bool:
            return module.startswith(self.SCAN_SKIP) or (module + ".").startswith(tuple(SKIP_PREFIXES))

        names = set(self.default()) | _scan_package(self._paddle(), skip)
        return self._wrappable(names)

    def _wrappable(self, names: Iterable[str]) -> List[str]:
        from api_tracer.dialect import FrameworkDialect
        from api_tracer.api_list import paddle_names

        class Names(FrameworkDialect):
            """Resolves names as level 0 does, leaving out what paddle_names
            says (as PaddleDialect.skip_reason does)."""

            name = "paddle"

            def skip_reason(self, api: str, raw: Any) -> Optional[str]:
                if api in paddle_names.SKIP:
                    return paddle_names.SKIP[api]
                return next((why for prefix, why in paddle_names.SKIP_PREFIXES.items() if api.startswith(prefix)),
                            None)

        return self._in_order(_wrappable(names, Names()))

    @staticmethod
    def _preferred(target: Any) -> Tuple:
        """How much a name is its function's own (the lowest first): a name
        of a module's before one of paddle.Tensor's; the name the function
        (or class) calls itself (``paddle.concat``, not ``paddle.cat``); a
        method under the class that defines it; a namespace that holds the
        function's module, the innermost (``paddle.nn.functional.conv2d``,
        not ``paddle.conv2d``); then the shorter, then in order."""
        api = target.api
        obj = target.raw.__func__ if isinstance(target.raw, (staticmethod, classmethod)) else target.raw
        if target.kind == "constructor":
            obj = target.owner
        owner, _, last = api.rpartition(".")
        qualname = getattr(obj, "__qualname__", "") or ""
        module = getattr(obj, "__module__", "") or ""
        return (api.startswith("paddle.Tensor."),
                last != getattr(obj, "__name__", last),
                "." in qualname and not api.endswith("." + qualname),
                -len(owner) if module.startswith(owner + ".") else 0,
                api.count("."), api)

    def _in_order(self, targets: List[Any]) -> List[str]:
        """The names sorted, but where one function (or class) is listed
        under several names, its preferred name comes before the others:
        in-place names first, aliases after them."""
        by_object: Dict[int, List[Any]] = {}
        for t in targets:
            key = t.owner if t.kind == "constructor" else t.raw
            by_object.setdefault(id(key), []).append(t)
        first, aliases = [], []
        for group in by_object.values():
            group.sort(key=self._preferred)
            first.append(group[0].api)
            aliases += [t.api for t in group[1:]]
        return sorted(first) + sorted(aliases)


DIALECTS = {lists.framework: lists for lists in (TorchLists, PaddleLists)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__)
    parser.add_argument("--dialect", choices=sorted(DIALECTS), default="torch",
                        help="the framework whose lists are made (default: torch)")
    parser.add_argument("--check", action="store_true", help="exit 1 if the files are out of date")
    args = parser.parse_args(argv)
    lists = DIALECTS[args.dialect]()
    stale = False
    for path, (names, what) in lists.files().items():
        if args.check:
            from api_tracer.dialect import read_api_list

            if not path.exists() or read_api_list(path) != names:
                print(f"{path.name} is out of date", file=sys.stderr)
                stale = True
        else:
            lists.write(path, names, what)
            print(f"{path}: {len(names)} APIs")
    return 1 if stale else 0
