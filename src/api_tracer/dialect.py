"""Frameworks, as the tracer needs to know them.

A ``FrameworkDialect`` tells the tracer what is particular to one framework:
which hook serves each level, which APIs level 0 wraps and which it must
leave alone (and why), what a callable a mode meets is called, and how the
framework's own types are written in a config. ``PyTorchDialect`` is the
one for PyTorch; subclass it (or ``FrameworkDialect``) to serialize your own
types or to add levels, and pass the instance as ``APITracer(dialect=...)``.
"""
from __future__ import annotations

import dataclasses
import enum
import functools
import os
import sys
import types
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from .hooks import NativeHook, PatchTarget, SetattrHook, TorchDispatchHook, TorchFunctionHook
from . import _C
from . import objects
from .values import EVAL_MODE, MODULE_PLACEHOLDER, PARTIAL, Call, Symbol

# What classify() answers, as the converter (csrc/python/convert.h) reads it:
# (kind, payload), or (Rule.instance, fn, placeholder).
Rule = Tuple[Any, ...]

API_LIST_DIR = Path(__file__).resolve().parent / "api_list"


def read_api_list(path: os.PathLike) -> List[str]:
    """The API names of an api_list YAML file (a sequence of dotted names)."""
    stat = os.stat(path)
    return list(_read_api_list(os.fspath(path), stat.st_mtime_ns, stat.st_size))


@functools.lru_cache(maxsize=8)
def _read_api_list(path: str, mtime_ns: int, size: int) -> Tuple[str, ...]:
    """read_api_list's work, once per version of the file."""
    names = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if not line.startswith("- "):
                raise ValueError(f"{path}:{lineno}: expected '- api.name', got {line!r}")
            names.append(line[2:].strip())
    return tuple(names)


def public_name(obj: Any) -> str:
    """The shortest dotted path under which obj's module exports it.

    ``torch.nn.modules.linear.Linear`` is ``torch.nn.Linear``; a private
    name a module exports publicly too is written so
    (``torch.nn.functional._ScalingType`` is ``torch.nn.functional.ScalingType``);
    builtins are bare (``float``)."""
    module = getattr(obj, "__module__", None) or "builtins"
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__name__
    if module == "builtins":
        return qualname
    if "." not in qualname:
        parts = module.split(".")
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            mod = sys.modules.get(prefix)
            if mod is None:
                continue
            if i < len(parts) and getattr(mod, qualname, None) is obj:
                return f"{prefix}.{qualname}"
            if qualname.startswith("_"):
                alias = next((n for n, v in vars(mod).items() if v is obj and not n.startswith("_")), None)
                if alias:
                    return f"{prefix}.{alias}"
    return f"{module}.{qualname}"


class FrameworkDialect:
    """The base class of dialects. Subclasses provide at least ``name`` and
    ``hook_classes``; the rest has neutral defaults."""

    name: str = ""

    def hook_classes(self) -> Dict[int, type]:
        """Level number -> TracingHook subclass."""
        raise NotImplementedError

    def api_list(self, full: bool = False) -> List[str]:
        """The APIs level 0 wraps (full: everything a full scan found)."""
        return []

    def run_levels(self) -> List[int]:
        """The levels `api-tracer run` traces when not told: the lowest the
        dialect offers."""
        return [min(self.hook_classes())]

    def api_group(self, api: str) -> str:
        """The module `api` belongs to, as `api-tracer coverage` groups
        names: its dotted name up to the first part that starts with a
        capital letter, a class (whose constructor and methods go with the
        module that holds it: `torch.nn.Linear.forward` is torch.nn's),
        else its dotted name without its last part."""
        parts = api.split(".")
        cls = next((i for i, part in enumerate(parts) if i and part[:1].isupper()), len(parts) - 1)
        return ".".join(parts[:cls]) or api

    def operators(self) -> List[str]:
        """Every operator the framework's dispatcher has registered in this
        process, each named as the traces name its calls (levels 2 and 3);
        none for a framework without one."""
        return []

    def operator_namespace(self, api: str) -> Optional[str]:
        """The namespace of an operator, given its name as the traces write
        it; None for a name that is not an operator's."""
        return None

    def default_exclude(self) -> List[str]:
        """API-name patterns left out unless the user says otherwise."""
        return []

    def serializers(self) -> Dict[type, Callable[[Any], Any]]:
        """Per type (subclasses included), a function returning what to write
        for a value of it: a plain value or a ``values.Call``/``Symbol``/
        ``TensorSpec``. Consulted before the dialect's own rules."""
        return {}

    def direct_callable(self, func: Any) -> Callable:
        """What calling `func` comes down to, called instead of it by the
        modes' handlers (skipping a Python frame where there is one)."""
        return func

    def operator_name(self, func: Any) -> Optional[Tuple[str, str]]:
        """(name, overload) under which a callable a dispatch mode hands over
        is registered as an operator of the framework's dispatcher, whose
        schema says its defaults (level 2 leaves them out as level 3 does);
        None for others."""
        return None

    def api_name(self, func: Any) -> Optional[str]:
        """The API name of a callable a mode hands over (or a value names):
        the namespace of _namespaces() that exports it under its name, else
        its module and qualified name; None to ignore it."""
        short = getattr(func, "__name__", None)
        for prefix, ns in self._namespaces():
            if short and getattr(ns, short, None) is func:
                return f"{prefix}.{short}"
        module = getattr(func, "__module__", None)
        qualname = getattr(func, "__qualname__", None)
        return f"{module}.{qualname}" if module and qualname else None

    @staticmethod
    def _namespaces() -> Tuple[Tuple[str, Any], ...]:
        """(dotted name, module) of the namespaces whose functions api_name
        names by them, first first (none here)."""
        return ()

    def classify(self, tp: type) -> Rule:
        """How values of `tp` are written (see csrc/python/convert.h); asked
        once per type (values of exactly that type)."""
        return self._user_rule(tp) or (_C.Rule.opaque, public_name(tp))

    def _user_rule(self, tp: type) -> Optional[Rule]:
        """The rule serializers() gives `tp` or its nearest base, if any."""
        table = self._serializer_table
        for klass in tp.__mro__:
            fn = table.get(klass)
            if fn is not None:
                return (_C.Rule.replace, fn)
        return None

    def tensor_type_name(self, tp: type) -> str:
        return public_name(tp)

    def _python_rule(self, tp: type, name: str) -> Optional[Rule]:
        """The rule of a type of Python's or numpy's (named `name`), which
        every framework writes alike; None for another type."""
        np = sys.modules.get("numpy")
        if np is not None:
            if issubclass(tp, np.ndarray):
                return (_C.Rule.replace, lambda a: Call("numpy.ndarray", list(a.shape), str(a.dtype)))
            if issubclass(tp, np.generic):
                numpy_name = f"numpy.{tp.__name__}"
                return (_C.Rule.replace, lambda x: Call(numpy_name, x.item()))
        if issubclass(tp, enum.Enum):
            return (_C.Rule.replace, lambda e: Symbol(f"{name}.{e.name}"))
        if issubclass(tp, tuple):
            fields = getattr(tp, "_fields", None)
            if fields is None and hasattr(tp, "n_fields"):  # a structseq (torch.return_types)
                fields = getattr(tp, "__match_args__", None)
            if fields is not None:  # a namedtuple or a structseq
                return (_C.Rule.replace, lambda t: Call(name, **dict(zip(fields, t))))
            return (_C.Rule.replace, tuple)
        for base in (bool, int, float, complex, str, list, dict):
            if issubclass(tp, base):
                return (_C.Rule.replace, base)
        if issubclass(tp, type):
            return (_C.Rule.replace, lambda c: Symbol(public_name(c)))
        if issubclass(tp, types.ModuleType):
            return (_C.Rule.replace, lambda m: Symbol(m.__name__))
        return None

    def _callable_rule(self, tp: type, more: Tuple[type, ...] = ()) -> Optional[Rule]:
        """Callables (functions, methods, and the framework's `more`) as
        Callable("their API name"); a partial as the call that binds its
        arguments, functools.partial(its callable, *args, **keywords) (a
        class as its name, another callable as Callable(...)); None for
        another type."""
        if issubclass(tp, functools.partial):
            return (_C.Rule.instance, lambda f: Call(PARTIAL, f.func, *f.args, **f.keywords))
        if issubclass(tp, (types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                           types.MethodDescriptorType, types.WrapperDescriptorType) + more):
            # "instance": worked out once per callable, not per call
            return (_C.Rule.instance, lambda f: Call("Callable", self._callable_name(f)))
        return None

    def _callable_name(self, f: Any) -> str:
        name = self.api_name(f)
        if name:
            return name
        return public_name(f)

    def on_start(self, levels: List[int]) -> Callable[[], None]:
        """Called when tracing starts, before the hooks are installed; returns
        what undoes it at stop."""
        return lambda: None

    def stack_skip_prefixes(self) -> List[str]:
        """Files whose frames never appear in a recorded stack."""
        return [str(Path(__file__).resolve().parent) + os.sep]

    def skip_reason(self, api: str, raw: Any) -> Optional[str]:
        """Why level 0 must not wrap `api` (None: it may)."""
        return None

    def quiet_targets(self) -> List[PatchTarget]:
        """APIs level 0 does not record, nor anything called inside them
        (a framework's printing and pickling of its own objects)."""
        return []

    def note_wrappers(self, wrapped: List[Tuple[Any, Any]]) -> None:
        """Called once level 0 has put its wrappers in place, with the
        (wrapper, original) pairs of what it wrapped by setattr: where the
        framework knows its functions by identity, it is told that each
        wrapper stands for its original (what level 0 patches in place never
        needs this)."""

    def forget_wrappers(self, wrapped: List[Tuple[Any, Any]]) -> None:
        """Called as level 0 takes its wrappers away, with the pairs
        note_wrappers() had: the framework's caches that took a wrapper from
        its namespace meanwhile are put right."""

    def setattr_targets(self, names: Iterable[str]) -> Tuple[List[PatchTarget], Dict[str, str]]:
        """Resolves API names into the attributes level 0 replaces; also
        returns the names left out, with the reason."""
        targets: List[PatchTarget] = []
        skipped: Dict[str, str] = {}
        for api in names:
            target, why = self._target(api)
            if target is None:
                skipped[api] = why
                continue
            why = self.skip_reason(api, target.raw)
            if why:
                skipped[api] = why
            else:
                targets.append(target)
        return targets, skipped

    # -- helpers -----------------------------------------------------------

    @functools.cached_property
    def _serializer_table(self) -> Dict[type, Callable[[Any], Any]]:
        """serializers(), asked once per dialect instance."""
        return dict(self.serializers())

    def _target(self, api: str) -> Tuple[Optional[PatchTarget], str]:
        parts = api.split(".")
        try:
            owner = sys.modules.get(parts[0]) or __import__(parts[0])
        except ImportError as e:
            return None, f"cannot import {parts[0]}: {e}"
        for i, part in enumerate(parts[1:-1], 1):
            nxt = getattr(owner, part, None)
            if nxt is None:
                try:  # a submodule not imported yet
                    __import__(".".join(parts[: i + 1]))
                    nxt = getattr(owner, part, None)
                except Exception:  # noqa: BLE001 - any import failure means "not there"
                    nxt = None
            if nxt is None:
                return None, f"{'.'.join(parts[: i + 1])} does not exist"
            owner = nxt
        attr = parts[-1]
        if isinstance(owner, types.ModuleType):
            value = getattr(owner, attr, None)
            if value is None:
                return None, "does not exist"
            if isinstance(value, type):
                return self._constructor_target(api, value)
            if not callable(value) or isinstance(value, types.ModuleType):
                return None, "not callable"
            return PatchTarget(api, owner, attr, "function", value), ""
        if not isinstance(owner, type):
            return None, "owner is neither a module nor a class"
        raw = _lookup_static(owner, attr)
        if raw is None:
            return None, "does not exist"
        if isinstance(raw, staticmethod):
            return PatchTarget(api, owner, attr, "staticmethod", raw), ""
        if isinstance(raw, classmethod):
            return PatchTarget(api, owner, attr, "classmethod", raw), ""
        if isinstance(raw, property):
            if raw.fget is None:
                return None, "a property without a getter"
            return PatchTarget(api, owner, attr, "property", raw), ""
        if isinstance(raw, (types.GetSetDescriptorType, types.MemberDescriptorType)):
            return None, "a C-level attribute descriptor (level 1 sees its __get__)"
        if isinstance(raw, types.ClassMethodDescriptorType):
            return None, "a C-level classmethod"
        if isinstance(raw, type):
            return None, "a nested class"
        if not callable(raw):
            return None, "not callable"
        return PatchTarget(api, owner, attr, "method", raw), ""

    def _constructor_target(self, api: str, cls: type) -> Tuple[Optional[PatchTarget], str]:
        if not (cls.__flags__ & (1 << 9)):  # Py_TPFLAGS_HEAPTYPE
            return None, "a built-in class, whose attributes cannot be set"
        init = _lookup_static(cls, "__init__")
        if init is object.__init__ or not isinstance(init, types.FunctionType):
            return None, "a class without a Python __init__"
        return PatchTarget(api, cls, "__init__", "constructor", init), ""


def _lookup_static(cls: type, attr: str) -> Any:
    """cls's attribute as stored (no descriptor binding), searching the MRO."""
    for klass in cls.__mro__:
        if attr in klass.__dict__:
            return klass.__dict__[attr]
    return None


class PyTorchDialect(FrameworkDialect):
    """PyTorch: levels 0-3, torch's API lists, torch's types."""

    name = "torch"

    # Level 0 never wraps these: the reason is part of the documentation
    # (docs/design.md) and of the error a user's own list gets.
    SKIP: Dict[str, str] = {
        "torch.Tensor.__torch_function__": "the override protocol itself: every call re-enters it",
        "torch.Tensor.__torch_dispatch__": "the override protocol itself",
        # (TorchScript knows them by identity: a wrapper in their place would break scripting)
        "torch.nn.functional.has_torch_function": "the override protocol itself: every functional calls it",
        "torch.nn.functional.has_torch_function_unary": "the override protocol itself: every functional calls it",
        "torch.nn.functional.has_torch_function_variadic": "the override protocol itself: every functional calls it",
        "torch.Tensor.__new__": "object creation protocol",
        "torch.Tensor.__init__": "object creation protocol",
        "torch.Tensor.__init_subclass__": "class creation protocol",
        "torch.Tensor.__subclasshook__": "isinstance protocol",
        "torch.Tensor.__class_getitem__": "typing protocol",
        "torch.Tensor.__getattribute__": "attribute protocol",
        "torch.Tensor.__getattr__": "attribute protocol",
        "torch.Tensor.__setattr__": "attribute protocol",
        "torch.Tensor.__delattr__": "attribute protocol",
        "torch.Tensor.__dir__": "introspection",
        "torch.Tensor.__repr__": "printing a tensor would record its internals",
        "torch.Tensor.__str__": "printing a tensor would record its internals",
        "torch.Tensor.__format__": "printing a tensor would record its internals",
        "torch.Tensor.__hash__": "identity hashing underlies every dict and set of tensors",
        "torch.Tensor.__reduce__": "pickling",
        "torch.Tensor.__reduce_ex__": "pickling",
        "torch.Tensor.__getstate__": "pickling",
        "torch.Tensor.__setstate__": "pickling",
        "torch.Tensor.__deepcopy__": "copying protocol",
        "torch.Tensor.__sizeof__": "introspection",
        "torch.Tensor.__del__": "finalization",
        "torch.nn.Module": "the base class: every module's construction would be recorded twice",
        "torch.compile": "the compiler's entry point",
    }
    # Of those, level 0 leaves out what runs inside these too: the tensor
    # methods that printing, pickling and copying a tensor call are torch's,
    # not the program's.
    QUIET: Tuple[str, ...] = tuple(
        f"{owner}.{method}"
        for owner, methods in (
            ("torch.Tensor", ("__repr__", "__str__", "__format__", "__reduce__", "__reduce_ex__", "__getstate__",
                              "__setstate__", "__deepcopy__")),
            ("torch.nn.Parameter", ("__repr__", "__reduce_ex__", "__deepcopy__")),
            ("torch.storage.TypedStorage", ("__repr__", "__reduce__", "__deepcopy__", "__copy__")),
            ("torch.storage._StorageBase", ("__repr__", "__reduce__", "__deepcopy__", "__copy__")),
        )
        for method in methods) + ("torch.storage._load_from_bytes",)
    QUIET_PREFIXES: Tuple[str, ...] = ("torch._utils._rebuild_",)  # what unpickling a tensor calls
    # Namespaces that compilers and tracers walk through: wrapping them
    # would change what they see.
    SKIP_PREFIXES: Tuple[str, ...] = ("torch._", "torch.jit.", "torch.fx.", "torch.export.",
                                      "torch.compiler.", "torch.overrides.", "torch.utils._")
    # Operators torch 2.13 computes otherwise whenever a TorchDispatchMode is
    # active (any mode, a bare pass-through one too: level 2 cannot avoid
    # it), each with what changes. README.md, "Known torch issues", gives a
    # reproducer; level 2 warns once per process at the first call of each.
    DISPATCH_MODE_ISSUES: Dict[str, str] = {
        "aten::linalg_pinv": "complex inputs give a wrong pseudo-inverse (pinv(A) @ A off the identity by about 1)",
        "aten::linalg_lstsq": "complex inputs give wrong residuals",
        "aten::_linalg_svd": "calls for the singular values alone (svdvals, cond, the nuclear norm) compute the "
                             "vectors too: float32 values differ in their last bits",
        "aten::_linalg_eigh": "calls for the eigenvalues alone (eigvalsh) compute the vectors too: float32 values "
                              "differ in their last bits",
    }

    def hook_classes(self) -> Dict[int, type]:
        return {hook.level: hook for hook in (SetattrHook, TorchFunctionHook, TorchDispatchHook, NativeHook)}

    def run_levels(self) -> List[int]:
        # level 1: every torch function a program calls, its own wrappers'
        # calls of them included, without a list
        return [int(_C.Level.torch_function)]

    def api_list(self, full: bool = False) -> List[str]:
        name = "torch_api_list_full.yaml" if full else "torch_api_list.yaml"
        return read_api_list(API_LIST_DIR / name)

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
        namespace = api[len(self.OPERATORS):].partition(".")[0]
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
        import torch

        from .eager import run_compiled_code_eagerly

        # torch builds its function -> name table on first use and keeps it;
        # build it now, before level 0 puts wrappers where the originals are.
        # (Building it leaves a warning registry in torch.overrides, for the
        # warnings it silences; nothing of the tracer's stays in torch.)
        had_registry = "__warningregistry__" in vars(torch.overrides)
        torch.overrides._get_overridable_functions()
        if not had_registry:
            vars(torch.overrides).pop("__warningregistry__", None)
        self._cache_sizes = {name: fn.cache_info().currsize for name, fn in self._caches().items()}
        return run_compiled_code_eagerly(when_loaded=True, quietly=_C.suspended)

    # torch's caches of what its namespace holds, filled on first use.
    CACHING_MODULES = ("torch.overrides", "torch.utils._device", "torch._dynamo.trace_rules",
                       "torch.fx._symbolic_trace")

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

    def quiet_targets(self) -> List[PatchTarget]:
        import torch._utils

        names = list(self.QUIET)
        for prefix in self.QUIET_PREFIXES:
            module, _, start = prefix.rpartition(".")
            names += [f"{module}.{n}" for n in sorted(vars(sys.modules[module])) if n.startswith(start)]
        return [t for t in (self._target(api)[0] for api in names) if t is not None]

    def stack_skip_prefixes(self) -> List[str]:
        import torch

        return super().stack_skip_prefixes() + [str(Path(torch.__file__).resolve().parent) + os.sep]

    def skip_reason(self, api: str, raw: Any) -> Optional[str]:
        if api in self.SKIP:
            return self.SKIP[api]
        if api.startswith(self.SKIP_PREFIXES):
            return "a namespace compilers and tracers walk through"
        return None

    def api_name(self, func: Any) -> Optional[str]:
        import torch
        from torch.overrides import resolve_name

        if isinstance(func, torch._ops.OpOverload):
            return f"torch.ops.{func.namespace}.{func._opname}.{func._overloadname}"
        if isinstance(func, torch._ops.OpOverloadPacket):
            return f"torch.ops.{func._qualified_op_name.replace('::', '.')}"
        try:
            name = resolve_name(func)
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

        return (("torch", torch), ("torch.Tensor", torch.Tensor), ("torch.nn.functional", torch.nn.functional),
                ("torch.linalg", torch.linalg), ("torch.fft", torch.fft), ("torch.special", torch.special))

    def operator_name(self, func: Any) -> Optional[Tuple[str, str]]:
        import torch

        if isinstance(func, torch._ops.OpOverload):
            _warn_of_dispatch_mode_issue(func._schema.name, self.DISPATCH_MODE_ISSUES)
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
        if tp in (torch.SymInt, torch.SymFloat, torch.SymBool):
            sym_name = f"torch.{tp.__name__}"
            return (_C.Rule.replace, lambda s: Call(sym_name, str(s)))
        name = public_name(tp)
        python_rule = self._python_rule(tp, name)
        if python_rule is not None:
            return python_rule
        if name.startswith("torch.") and isinstance(getattr(tp, "__members__", None), dict) and \
                hasattr(tp, "name"):  # an enum of torch's C++ (pybind11): its member
            return (_C.Rule.replace, lambda e: Symbol(f"{name}.{e.name}"))
        if name.startswith("torch.") and dataclasses.is_dataclass(tp):  # torch's options and the like
            init = [f.name for f in dataclasses.fields(tp) if f.init]
            return (_C.Rule.replace, lambda d: Call(name, **{f: getattr(d, f) for f in init}))
        return self._callable_rule(tp, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)) or \
            (_C.Rule.opaque, name)

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
        call = self._container_call(module, name, mode if len(modes) <= 1 else True) \
            if name in self.CONTAINERS else \
            objects.module_call(module, name, self._written, lambda m: self._argument_module(m, mode))
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
        return _C.format_call("", (value,), {}, classify=self.classify, tensor_type_name=self.tensor_type_name)

    @functools.cached_property
    def _optimizers_verified(self) -> Dict[Tuple, bool]:
        """Per optimizer state, whether its call builds an equal one."""
        return {}

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


_warned_issues: set = set()


def _warn_of_dispatch_mode_issue(name: str, issues: Dict[str, str]) -> None:
    """A RuntimeWarning, once per process, where torch computes the operator
    `name` otherwise under a dispatch mode (PyTorchDialect.DISPATCH_MODE_ISSUES):
    met by level 2, the traced program's results change there."""
    if name in issues and name not in _warned_issues:
        import warnings

        import torch

        _warned_issues.add(name)
        # at the program's call: the first frame out of torch and the tracer
        ours = (os.path.dirname(torch.__file__) + os.sep, os.path.dirname(__file__) + os.sep)
        frame, level = sys._getframe(1), 2
        while frame is not None and frame.f_code.co_filename.startswith(ours):
            frame, level = frame.f_back, level + 1
        warnings.warn(f"api_tracer: under level 2's dispatch mode torch computes {name} otherwise: {issues[name]} "
                      "(a torch issue: README.md, 'Known torch issues')", RuntimeWarning, stacklevel=level)


# The dialects known by name (APITracer(dialect=NAME), the command line's
# --dialect): name -> "module:class", imported on first use, so that no
# framework is imported before it is asked for.
DIALECTS: Dict[str, str] = {"torch": "api_tracer.dialect:PyTorchDialect",
                            "paddle": "api_tracer.paddle_dialect:PaddleDialect"}


def dialect_named(name: str) -> FrameworkDialect:
    """A new instance of the dialect `name` (a key of DIALECTS)."""
    if name not in DIALECTS:
        raise ValueError(f"dialect must be one of {sorted(DIALECTS)}, not {name!r}")
    module, _, cls = DIALECTS[name].partition(":")
    import importlib

    return getattr(importlib.import_module(module), cls)()
