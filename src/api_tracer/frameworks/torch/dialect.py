"""PyTorch, as the tracer needs to know it: `PyTorchDialect`, levels 0-3.

Its API lists (torch_api_list.yaml, torch_api_list_full.yaml, beside this
file: api_list.py makes them), what level 0 never wraps (SKIP, with the
reason), what it records nothing inside (QUIET), the names of callables the
modes meet, and how torch's types are written: modules and optimizers as the
constructor calls that rebuild them (objects.py), enums, dataclasses, SymInts.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
import types
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from ... import _C
from ...config import format_line
from ...trace.hooks import NativeHook, SetattrHook, TorchDispatchHook, TorchFunctionHook
from ...util import PACKAGE_DIR
from ...values import EVAL_MODE, MODULE_PLACEHOLDER, Call, Symbol
from ..dialect import FrameworkDialect, Rule, public_name
from . import names, objects


class PyTorchDialect(FrameworkDialect):
    """PyTorch: levels 0-3, torch's API lists, torch's types."""

    name = "torch"
    names = names

    def hook_classes(self) -> Dict[int, type]:
        return {hook.level: hook for hook in (SetattrHook, TorchFunctionHook, TorchDispatchHook, NativeHook)}

    def run_levels(self) -> List[int]:
        # level 1: every torch function a program calls, its own wrappers'
        # calls of them included, without a list
        return [int(_C.Level.torch_function)]

    OPERATORS = "torch.ops."  # how the traces' operator names begin: torch.ops.NAMESPACE.NAME.OVERLOAD

    def api_group(self, api: str) -> str:
        # Tensor methods are a namespace of their own (a third of the API
        # list); an operator's name is its namespace's (torch.ops.aten).
        if api.startswith("torch.Tensor."):
            return "torch.Tensor"
        namespace = self.operator_namespace(api)
        return self.OPERATORS + namespace if namespace else super().api_group(api)

    def operators(self) -> List[str]:
        import torch

        names = []
        for qualified in torch._C._dispatch_get_all_op_names():  # "aten::add.Tensor", "aten::addmm"
            namespace, _, rest = qualified.partition("::")
            name, _, overload = rest.partition(".")
            names.append(f"{self.OPERATORS}{namespace}.{name}.{overload or 'default'}")
        return sorted(names)

    def operator_namespace(self, api: str) -> Optional[str]:
        if not api.startswith(self.OPERATORS):
            return None
        namespace = api[len(self.OPERATORS) :].partition(".")[0]
        return namespace or None

    def default_exclude(self) -> List[str]:
        # Property getters and setters (tensor.shape, .requires_grad, .grad)
        # are a large share of a model's calls and no one fuzzes them; the
        # profiler's record_function markers (optimizers emit them) are not
        # computation; nor is Module.to's parsing of its arguments, which
        # level 1 sees.
        return ["*.__get__", "*.__set__", "*.__delete__", "torch.ops.profiler.*", "torch._C._nn._parse_to"]

    def on_start(self, levels: List[int]) -> Callable[[], None]:
        # A compiled function runs eagerly while a Python level traces, so
        # every call is seen (PyTorch does the same on its own for dispatch
        # modes) and no compiler internals are mistaken for the program's
        # calls; eager.py says when the stance is set. The previous stance
        # comes back at stop.
        python_levels = {_C.Level.setattr, _C.Level.torch_function, _C.Level.torch_dispatch}
        if not set(levels) & set(map(int, python_levels)):
            return lambda: None
        from ...trace.eager import run_compiled_code_eagerly

        # The function -> name table the modes' names come from, built now,
        # before level 0 puts wrappers where the originals are.
        torch_names()
        self._cache_sizes = {name: fn.cache_info().currsize for name, fn in self._caches().items()}
        return run_compiled_code_eagerly(when_loaded=True, quietly=_C.suspended)

    # torch's caches of what its namespace holds, filled on first use.
    CACHING_MODULES = (
        "torch.overrides",
        "torch.utils._device",
        "torch._dynamo.trace_rules",
        "torch.fx._symbolic_trace",
    )

    @staticmethod
    def _caches() -> Dict[str, Any]:
        """The functools caches of CACHING_MODULES imported now, by name."""
        found = {}
        for module_name in PyTorchDialect.CACHING_MODULES:
            module = sys.modules.get(module_name)
            for name, fn in list(vars(module).items()) if module is not None else ():
                if callable(getattr(fn, "cache_info", None)) and callable(getattr(fn, "cache_clear", None)):
                    found[f"{module_name}.{name}"] = fn
        return found

    @staticmethod
    def _builtin_table() -> Any:
        """TorchScript's table of builtins (id of a function -> its
        operator), where it is built; torch builds it on first use."""
        return getattr(sys.modules.get("torch.jit._builtins"), "_builtin_table", None)

    def note_wrappers(self, wrapped: List[Tuple[Any, Any]]) -> None:
        # TorchScript knows builtins by id(): a wrapper scripted code calls
        # is its original's operator.
        table = self._builtin_table()
        for w, o in wrapped if table is not None else ():
            if id(o) in table:
                table[id(w)] = table[id(o)]

    def forget_wrappers(self, wrapped: List[Tuple[Any, Any]]) -> None:
        if not wrapped:
            return
        # Each wrapper's entry in TorchScript's table goes (a dead wrapper's
        # id may be reused); where the table was built while tracing, it
        # becomes its original's.
        table = self._builtin_table()
        if table is not None:
            for w, o in wrapped:
                if id(w) in table:
                    table.setdefault(id(o), table.pop(id(w)))
            builtins = sys.modules["torch.jit._builtins"]
            originals = {id(w): o for w, o in wrapped}
            builtins._builtin_ops[:] = [(originals.get(id(f), f), op) for f, op in builtins._builtin_ops]
        # A functools cache filled while tracing may hold a wrapper: emptied,
        # it is filled again from the namespace as it is untraced.
        sizes = getattr(self, "_cache_sizes", {})
        for name, fn in self._caches().items():
            if fn.cache_info().currsize > sizes.get(name, 0):
                fn.cache_clear()

    def stack_skip_prefixes(self) -> List[str]:
        import torch

        return super().stack_skip_prefixes() + [str(Path(torch.__file__).resolve().parent) + os.sep]

    def api_name(self, func: Any) -> Optional[str]:
        import torch

        if isinstance(func, torch._ops.OpOverload):
            return f"torch.ops.{func.namespace}.{func._opname}.{func._overloadname}"
        if isinstance(func, torch._ops.OpOverloadPacket):
            return f"torch.ops.{func._qualified_op_name.replace('::', '.')}"
        try:
            name = torch_names().get(func)  # torch.overrides.resolve_name's name, without its cost (torch_names)
        except Exception:  # noqa: BLE001 - an unhashable or odd callable
            name = None
        if name:
            return name
        return super().api_name(func)  # not in torch's table: the namespace that exports it

    @staticmethod
    @functools.lru_cache(maxsize=None)
    def _namespaces() -> Tuple[Tuple[str, Any], ...]:
        import torch
        import torch.nn.functional

        return (
            ("torch", torch),
            ("torch.Tensor", torch.Tensor),
            ("torch.nn.functional", torch.nn.functional),
            ("torch.linalg", torch.linalg),
            ("torch.fft", torch.fft),
            ("torch.special", torch.special),
        )

    def operator_name(self, func: Any) -> Optional[Tuple[str, str]]:
        import torch

        if isinstance(func, torch._ops.OpOverload):
            _warn_of_dispatch_mode_issue(func._schema.name, names.DISPATCH_MODE_ISSUES)
            return func._schema.name, func._schema.overload_name
        return None

    def direct_callable(self, func: Any) -> Callable:
        import torch

        # OpOverload.__call__ is `return self._op(*args, **kwargs)`.
        if type(func) is torch._ops.OpOverload:
            return func._op
        return func

    def classify(self, tp: type) -> Rule:
        import torch

        user_rule = self._user_rule(tp)
        if user_rule is not None:
            return user_rule
        # Rules are per exact type: names are worked out here, once.
        if issubclass(tp, torch.nn.Module):
            # (True: its training flags count too, csrc/python/convert.h)
            return (_C.Rule.instance, self.describe_module, MODULE_PLACEHOLDER, True)
        if issubclass(tp, torch.optim.Optimizer):
            return (_C.Rule.replace, self.describe_optimizer)
        if tp is types.GeneratorType:  # model.parameters(): its items, where they can be known
            return (_C.Rule.replace, self.describe_generator)
        if issubclass(tp, torch.TypedStorage):  # as an untyped one is (csrc/python/convert.cc), with its dtype
            return (_C.Rule.replace, lambda s: Call("Storage", s._untyped_storage.nbytes(), dtype=s.dtype))
        if tp in (torch.SymInt, torch.SymFloat, torch.SymBool):
            sym_name = f"torch.{tp.__name__}"
            return (_C.Rule.replace, lambda s: Call(sym_name, str(s)))
        name = public_name(tp)
        python_rule = self._python_rule(tp, name)
        if python_rule is not None:
            return python_rule
        if (
            name.startswith("torch.") and isinstance(getattr(tp, "__members__", None), dict) and hasattr(tp, "name")
        ):  # an enum of torch's C++ (pybind11): its member
            return (_C.Rule.replace, lambda e: Symbol(f"{name}.{e.name}"))
        if name.startswith("torch.") and dataclasses.is_dataclass(tp):  # torch's options and the like
            init = [f.name for f in dataclasses.fields(tp) if f.init]
            return (_C.Rule.replace, lambda d: Call(name, **{f: getattr(d, f) for f in init}))
        return self._callable_rule(tp, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)) or (_C.Rule.opaque, name)

    # -- modules and optimizers ----------------------------------------------

    CONTAINERS = ("torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict")

    def describe_module(self, module: Any, context: bool = True) -> Any:
        """A module instance as the constructor call that builds an equal
        module, where that can be known: torch.nn's containers as the calls
        of their children, torch.nn's other modules as their arguments read
        back (objects.py); else the placeholder ``Module("class")``, as for
        a module of the program's own.

        Its mode too: a module whose submodules are all in evaluation mode
        is ``Eval(call)``, which replay builds and calls .eval() on
        (`context` is the mode its call is built in: training, unless an
        enclosing Eval(...) sets it); a container in training mode holding
        modules of both modes is the call of its children, each written
        with its own; any other mix is the placeholder, as no call says it."""
        cls = type(module)
        name = public_name(cls)
        placeholder = Call(MODULE_PLACEHOLDER, name)
        if not cls.__module__.startswith("torch.nn."):
            return placeholder
        modes = {m.training for m in module.modules()}
        if len(modes) > 1 and not (module.training and name in self.CONTAINERS):
            return placeholder
        mode = module.training if len(modes) > 1 else modes.pop()
        call = (
            self._container_call(module, name, mode if len(modes) <= 1 else True)
            if name in self.CONTAINERS
            else objects.module_call(module, name, self._written, lambda m: self._argument_module(m, mode))
        )
        # (Eval(Module("x")): where the call level 0 saw stands for the
        # placeholder, it is in evaluation mode too.)
        call = call if call is not None else placeholder
        return call if mode == context else Call(EVAL_MODE, call)

    @staticmethod
    def _placeholder(call: Call) -> bool:
        """Whether a module's description says it cannot be rebuilt."""
        if call.name == EVAL_MODE:
            call = call.args[0]
        return call.name == MODULE_PLACEHOLDER

    def _container_call(self, module: Any, name: str, context: bool) -> Optional[Call]:
        """A container as the call of its children (each written as its own
        call, in `context`), where it builds an equal container."""
        children = {key: self.describe_module(child, context) for key, child in module.named_children()}
        if any(map(self._placeholder, children.values())):
            return None
        real = dict(module.named_children())
        if name == "torch.nn.ModuleDict":
            call, probe = Call(name, children), type(module)(real)
        elif name == "torch.nn.ModuleList":
            call, probe = Call(name, list(children.values())), type(module)(list(real.values()))
        else:
            call, probe = Call(name, *children.values()), type(module)(*real.values())
        return call if objects.same_module(probe, module) else None

    def _argument_module(self, module: Any, context: bool) -> Optional[Call]:
        """A module that is a constructor's argument, as its call (None: it
        has none)."""
        call = self.describe_module(module, context)
        return None if self._placeholder(call) else call

    def _written(self, value: Any) -> str:
        """`value` as a config line writes it."""
        return format_line("", (value,), {}, dialect=self)

    @functools.cached_property
    def _optimizers_verified(self) -> Dict[Tuple, bool]:
        """Per optimizer state, whether its call builds an equal one."""
        return {}

    @staticmethod
    def describe_generator(gen: Any) -> Any:
        """A generator as the list of what it will yield, where that can be
        known without consuming it (objects.generator_items: torch.nn.Module's
        parameters(), named_parameters(), ...), so that the common
        ``torch.optim.Adam(model.parameters(), lr=...)`` is written with its
        tensors; else the placeholder ``Opaque("generator")``."""
        items = objects.generator_items(gen)
        return Call("Opaque", "generator") if items is None else items

    def describe_optimizer(self, optimizer: Any) -> Call:
        """An optimizer of torch.optim as the constructor call that builds an
        equal one over the same tensors (objects.py); else the placeholder
        ``Opaque("class")``, as for an optimizer of the program's own."""
        cls = type(optimizer)
        name = public_name(cls)
        if cls.__module__.startswith("torch.optim"):
            call = objects.optimizer_call(optimizer, name, self._optimizers_verified)
            if call is not None:
                return call
        return Call("Opaque", name)


@functools.lru_cache(maxsize=None)
def torch_names() -> Dict[Any, str]:
    """torch's function -> name table, the names torch.overrides.resolve_name
    gives (torch.Tensor.add, torch.nn.functional.linear,
    torch.Tensor.shape.__get__), built here, once, as
    torch.overrides._get_overridable_functions builds its index.

    Not asked of torch: resolve_name (and the first build of torch's table,
    through get_ignored_functions) runs under warnings.catch_warnings, and
    entering or leaving that, like any change of the warning filters,
    empties every module's registry of the warnings it has shown. Asked
    per new function level 1 meets, it made a traced program's "default"
    warnings (torch's and its own) show again and again; built by torch
    at the tracer's start, it made those the program had shown before
    show once more. Nothing here changes the filters, and reading torch's
    namespaces warns of nothing (tests/trace/test_levels12.py holds the
    table to torch's own, and the build to no warning)."""
    import torch
    import torch.functional
    import torch.nn.functional
    import torch.nn.init

    namespaces = [
        ("torch", torch, torch.__all__),
        ("torch.functional", torch.functional, torch.functional.__all__),
        ("torch.nn.functional", torch.nn.functional, dir(torch.nn.functional)),
        ("torch.nn.init", torch.nn.init, dir(torch.nn.init)),
        ("torch.Tensor", torch.Tensor, dir(torch.Tensor)),
        ("torch.linalg", torch.linalg, dir(torch.linalg)),
        ("torch.fft", torch.fft, dir(torch.fft)),
        ("torch.special", torch.special, dir(torch.special)),
    ]
    table: Dict[Any, str] = {}
    for prefix, namespace, attrs in namespaces:
        tensor = namespace is torch.Tensor
        for attr in attrs:
            if not tensor and (attr.startswith("__") or attr == "unique_dim"):
                continue
            if tensor and attr == "__weakref__":
                continue
            value = getattr(namespace, attr, None)
            if tensor and getattr(object, attr, None) == value:  # object's own (__eq__, __repr__, ...)
                continue
            if not callable(value) and hasattr(value, "__get__"):  # a property: its getter and setter
                table[value.__get__] = f"{prefix}.{attr}.__get__"
                if hasattr(value, "__set__"):
                    table[value.__set__] = f"{prefix}.{attr}.__set__"
            elif callable(value):
                table[value] = f"{prefix}.{attr}"
    return table


_warned_issues: set = set()


def _warn_of_dispatch_mode_issue(name: str, issues: Dict[str, str]) -> None:
    """A RuntimeWarning, once per process, where torch computes the operator
    `name` otherwise under a dispatch mode (names.DISPATCH_MODE_ISSUES):
    met by level 2, the traced program's results change there."""
    if name in issues and name not in _warned_issues:
        import warnings

        import torch

        _warned_issues.add(name)
        # at the program's call: the first frame out of torch and the tracer
        ours = (os.path.dirname(torch.__file__) + os.sep, PACKAGE_DIR)
        frame, level = sys._getframe(1), 2
        while frame is not None and frame.f_code.co_filename.startswith(ours):
            frame, level = frame.f_back, level + 1
        warnings.warn(
            f"api_tracer: under level 2's dispatch mode torch computes {name} otherwise: {issues[name]} "
            "(a torch issue: README.md, 'Known torch issues')",
            RuntimeWarning,
            stacklevel=level,
        )
