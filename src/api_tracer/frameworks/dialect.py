"""A framework, as the tracer needs to know it: `FrameworkDialect`.

A dialect tells the tracer what is particular to one framework: which hook
serves each level, which APIs level 0 wraps and which it must leave alone
(and why), what a callable a mode meets is called, and how the framework's
own types are written in a config. Each framework's folder has its own
(frameworks/torch/dialect.py: `PyTorchDialect`); subclass one (or this
base) to serialize your own types or to add levels, and pass the instance
as ``APITracer(dialect=...)``. docs/dialects.md, "Writing a dialect".
"""

from __future__ import annotations

import enum
import functools
import os
import sys
import types
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from .. import _C
from ..trace.hooks import PatchTarget
from ..util import PACKAGE_DIR
from ..values import PARTIAL, Call, Symbol

# What classify() answers, as the converter (csrc/python/convert.h) reads it:
# (kind, payload), or (Rule.instance, fn, placeholder).
Rule = Tuple[Any, ...]


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


# Python's object protocol on a framework's tensor class, which no level 0
# wraps, each with its reason: a wrapper would re-enter on every attribute
# access, print, pickle or copy (frameworks/NAME/names.py's SKIP holds
# them under its tensor classes: protocol_of).
OBJECT_PROTOCOL: Dict[str, str] = {
    "__new__": "object creation protocol",
    "__init__": "object creation protocol",
    "__init_subclass__": "class creation protocol",
    "__subclasshook__": "isinstance protocol",
    "__class_getitem__": "typing protocol",
    "__getattribute__": "attribute protocol",
    "__getattr__": "attribute protocol",
    "__setattr__": "attribute protocol",
    "__delattr__": "attribute protocol",
    "__dir__": "introspection",
    "__sizeof__": "introspection",
    "__repr__": "printing a tensor would record its internals",
    "__str__": "printing a tensor would record its internals",
    "__format__": "printing a tensor would record its internals",
    "__hash__": "identity hashing underlies every dict and set of tensors",
    "__reduce__": "pickling",
    "__reduce_ex__": "pickling",
    "__getstate__": "pickling",
    "__setstate__": "pickling",
    "__copy__": "copying protocol",
    "__deepcopy__": "copying protocol",
    "__del__": "finalization",
}
# Of those, the methods printing, pickling and copying a tensor call (those
# every framework's tensor has): level 0 records nothing inside them either
# (a names module's QUIET), since the tensor methods they call are the
# framework's, not the program's.
PRINTING_AND_PICKLING: Tuple[str, ...] = (
    "__repr__",
    "__str__",
    "__format__",
    "__reduce__",
    "__reduce_ex__",
    "__getstate__",
    "__deepcopy__",
)


def protocol_of(owner: str) -> Dict[str, str]:
    """OBJECT_PROTOCOL's methods of the class `owner`, as SKIP entries."""
    return {f"{owner}.{name}": why for name, why in OBJECT_PROTOCOL.items()}


def methods(owner: str, *names: str) -> Tuple[str, ...]:
    """The API names of methods `names` of the class `owner`:
    methods("torch.Tensor", "__repr__") is ("torch.Tensor.__repr__",)."""
    return tuple(f"{owner}.{name}" for name in names)


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
    # The framework's module of names (frameworks/NAME/names.py), whose
    # folder holds its API lists. Its tables, each optional: what level 0
    # never wraps, each with the reason (the error a user's own list gets):
    # SKIP, exact API names, and SKIP_PREFIXES, prefixes of names (a
    # namespace); what level 0 records neither itself nor anything called
    # inside (printing, pickling, copying the framework's objects: their
    # calls are the framework's, not the program's): QUIET, exact names, and
    # QUIET_PREFIXES, prefixes of the functions of a module
    # ("torch._utils._rebuild_").
    names: Optional[types.ModuleType] = None

    @property
    def folder(self) -> Optional[Path]:
        """The folder of the framework's own files (its names, its API lists)."""
        return Path(self.names.__file__).resolve().parent if self.names is not None else None

    def _table(self, name: str, empty: Any) -> Any:
        return getattr(self.names, name, empty)

    def hook_classes(self) -> Dict[int, type]:
        """Level number -> TracingHook subclass."""
        raise NotImplementedError

    def api_list(self, full: bool = False) -> List[str]:
        """The APIs level 0 wraps (full: everything a full scan found): the
        dialect's list file, where it has one."""
        return read_api_list(self.api_list_file(full)) if self.folder is not None else []

    def api_list_file(self, full: bool = False) -> Path:
        """Where the framework's API list is (frameworks/api_lists.py writes
        it there): NAME_api_list.yaml, NAME_api_list_full.yaml in its folder."""
        if self.folder is None:
            raise ValueError(f"dialect {self.name!r} has no folder of its own (no `names` module): no API list file")
        return self.folder / f"{self.name}_api_list{'_full' if full else ''}.yaml"

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
        if issubclass(
            tp,
            (
                types.FunctionType,
                types.BuiltinFunctionType,
                types.MethodType,
                types.MethodDescriptorType,
                types.WrapperDescriptorType,
            )
            + more,
        ):
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
        return [PACKAGE_DIR]

    def skip_reason(self, api: str, raw: Any) -> Optional[str]:
        """Why level 0 must not wrap `api` (None: it may): SKIP's reason, or
        the reason of the first of SKIP_PREFIXES it starts with."""
        skip = self._table("SKIP", {})
        if api in skip:
            return skip[api]
        return next((why for prefix, why in self._table("SKIP_PREFIXES", {}).items() if api.startswith(prefix)), None)

    def quiet_targets(self) -> List[PatchTarget]:
        """APIs level 0 does not record, nor anything called inside them:
        QUIET, and the functions of a module QUIET_PREFIXES name."""
        import importlib

        names = list(self._table("QUIET", ()))
        for prefix in self._table("QUIET_PREFIXES", ()):
            module, _, start = prefix.rpartition(".")
            names += [f"{module}.{n}" for n in sorted(vars(importlib.import_module(module))) if n.startswith(start)]
        return [t for t in (self._target(api)[0] for api in names) if t is not None]

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
