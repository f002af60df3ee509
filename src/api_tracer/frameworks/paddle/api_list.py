"""Paddle's API lists: what its default list holds (paddle's functions and
those of its computing namespaces, paddle.Tensor methods and operators,
paddle.nn's and paddle.vision's layers, optimizers), and what a full scan
of its modules leaves out (frameworks/api_lists.py does the rest)."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types
import warnings
from typing import Any, Dict, Iterator, List, Set, Tuple

from ..api_lists import FUNCTION_TYPES, ApiLists, functions, public, scan_package
from .names import SKIP_PREFIXES


class PaddleLists(ApiLists):
    """Paddle's lists. What level 0 must leave alone is names.py's
    (SKIP, SKIP_PREFIXES), which PaddleDialect.skip_reason reads too.

    paddle.Tensor's methods are mostly paddle's functions patched onto the
    class (``paddle.Tensor.reshape is paddle.reshape``), and level 0 records
    a function listed under several names under the first (it instruments
    the function itself): so the list is in that order, each function's
    preferred name first (_preferred), the rest sorted."""

    framework = "paddle"
    default_what = "paddle's public API, wrapped by level 0 by default."
    full_what = "Everything a full scan of paddle's public modules finds."
    order_note = (
        "Sorted, but a function (or class) listed under several names comes first under its own, "
        "which level 0 records; its aliases follow the rest."
    )
    # Public namespaces whose functions are part of the default list (their
    # __all__). paddle.nn.initializer is not: its initializers are objects
    # that layers call on their parameters as they are built.
    FUNCTION_NAMESPACES = (
        "paddle.nn.functional",
        "paddle.linalg",
        "paddle.fft",
        "paddle.signal",
        "paddle.special",
        "paddle.autograd",
    )
    # paddle's functions that paddle's namespace holds but leaves out of its
    # __all__: the ones of the modules that define tensor computations.
    TENSOR_MODULES = (
        "paddle.tensor.",
        "paddle.base.dygraph.generated_tensor_methods_patch",
        "paddle.audio.functional.window",
    )
    OPTIMIZER_METHODS = ("step", "clear_grad", "zero_grad")
    # paddle.vision's layers, beside paddle.nn's: the models' classes and
    # their blocks (paddle.vision.models.resnet.BasicBlock), which a model
    # holds, and ConvNormActivation. Not the other layers of paddle.vision.ops
    # (RoIAlign, DeformConv2D...), whose kernels take boxes and indices that
    # replay has not reviewed; nor the model functions (resnet18(pretrained=True)
    # downloads weights).
    LAYER_PACKAGES = ("paddle.vision.models",)
    LAYER_CLASSES = ("paddle.vision.ops.ConvNormActivation",)
    # Modules a full scan does not import, beside SKIP_PREFIXES'
    # (whose names level 0 leaves alone anyway).
    SCAN_SKIP = ("paddle.tensorrt", "paddle.hapi.static_flops")

    def version(self) -> str:
        return self._paddle().__version__

    @staticmethod
    def _paddle() -> Any:
        with warnings.catch_warnings():  # paddle warns on import that ccache is missing
            warnings.simplefilter("ignore")
            import paddle
            import paddle.nn.functional
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
                if (
                    public(name)
                    and isinstance(cls, type)
                    and issubclass(cls, paddle.nn.Layer)
                    and (not own or cls.__module__ == module.__name__)
                ):
                    yield f"{module.__name__}.{name}", cls

        yield from layers(paddle.nn, own=False)
        for package_name in self.LAYER_PACKAGES:
            package = importlib.import_module(package_name)
            yield from (
                (api, cls) for api, cls in layers(package, own=False) if cls.__module__.startswith(package_name + ".")
            )
            for info in pkgutil.iter_modules(package.__path__, package_name + "."):
                if public(info.name.rpartition(".")[2]):
                    yield from layers(importlib.import_module(info.name), own=True)
        for api in self.LAYER_CLASSES:
            module, _, name = api.rpartition(".")
            yield api, getattr(importlib.import_module(module), name)

    def default(self) -> List[str]:
        paddle = self._paddle()
        names = functions("paddle") | self._tensor_methods()
        names |= {
            f"paddle.{name}"
            for name, obj in vars(paddle).items()
            if public(name)
            and isinstance(obj, FUNCTION_TYPES)
            and (obj.__module__ or "").startswith(self.TENSOR_MODULES)
        }
        for ns in self.FUNCTION_NAMESPACES:
            names |= functions(ns)
        for api, cls in self._layers():
            names.add(api)  # (the base, paddle.nn.Layer, is skipped)
            # a forward of its own or inherited (BatchNorm2D's is _BatchNormBase's, LSTM's RNNBase's),
            # recorded under the class of the layer it runs on; not the base's, which raises
            if api.startswith("paddle.nn.") and cls.forward is not paddle.nn.Layer.forward:
                names.add(f"{api}.forward")
        for name in dir(paddle.optimizer):
            cls = getattr(paddle.optimizer, name)
            if public(name) and isinstance(cls, type) and issubclass(cls, paddle.optimizer.Optimizer):
                # (the base's construction is skipped; its methods are
                # listed: an optimizer that inherits them records them so)
                names.add(f"paddle.optimizer.{name}")
                names.update(f"paddle.optimizer.{name}.{method}" for method in self.OPTIMIZER_METHODS)
        return self.wrappable(names)

    def full(self) -> List[str]:
        def skip(module: str) -> bool:
            return module.startswith(self.SCAN_SKIP) or (module + ".").startswith(tuple(SKIP_PREFIXES))

        names = set(self.default()) | scan_package(self._paddle(), skip)
        return self.wrappable(names)

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
        return (
            api.startswith("paddle.Tensor."),
            last != getattr(obj, "__name__", last),
            "." in qualname and not api.endswith("." + qualname),
            -len(owner) if module.startswith(owner + ".") else 0,
            api.count("."),
            api,
        )

    def order(self, targets: List[Any]) -> List[str]:
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
