"""Hook strategies: the ways the tracer sees API calls.

Each ``TracingHook`` serves one level and writes its records to that level's
output set. The per-call work is C++ (``api_tracer._C``): a hook only puts
the C++ callables in place and takes them away again.

- ``SetattrHook`` (level 0) makes the APIs of the dialect's API list record
  their calls: in place where it can (a Python function's code, a C
  function's vectorcall, a method descriptor's method table entry; the API
  stays the very object it was, csrc/python/inplace.h), else by setattr with
  a ``_C.ApiWrapper``. It sees calls from every thread, records the
  outermost API call of a thread (calls torch makes inside it are not
  recorded again), and undoes everything on uninstall.
- ``TorchFunctionHook`` (level 1) enters a ``TorchFunctionMode`` whose
  ``__torch_function__`` is ``_C.torch_function_handler``.
- ``TorchDispatchHook`` (level 2) enters a ``TorchDispatchMode`` whose
  ``__torch_dispatch__`` is ``_C.torch_dispatch_handler``: aten operators,
  forward and backward.

Modes are PyTorch's thread-local mechanism: levels 1 and 2 see the calls of
the thread that started the tracer (and nothing else).

To add a strategy, subclass ``TracingHook``, give it a ``level`` number and
implement ``install``/``uninstall``; ``record``, ``wrap`` and ``patch`` do
the work. Pass the class in ``APITracer(levels=[..., MyHook])``.
"""

from __future__ import annotations

import abc
import inspect
import sys
import types
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Protocol, Tuple

from torch.overrides import TorchFunctionMode, _get_current_function_mode
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode

from .. import _C
from . import instrument
from .options import TracerOptions


@dataclass
class PatchTarget:
    """One attribute level 0 replaces: ``owner.attr``, recorded as ``api``."""

    api: str
    owner: Any
    attr: str
    kind: str  # "function", "method", "staticmethod", "classmethod", "property", "constructor"
    raw: Any  # what owner.__dict__ (or the MRO) holds: the thing replaced


class Dialect(Protocol):
    """What the hooks ask of their dialect: a dialect.FrameworkDialect. That
    module names the hook of each level, so it imports this one, not the
    other way round."""

    def api_list(self, full: bool = False) -> List[str]: ...

    def setattr_targets(self, names: Iterable[str]) -> Tuple[List[PatchTarget], Dict[str, str]]: ...

    def quiet_targets(self) -> List[PatchTarget]: ...

    def note_wrappers(self, wrapped: List[Tuple[Any, Any]]) -> None: ...

    def forget_wrappers(self, wrapped: List[Tuple[Any, Any]]) -> None: ...


class TracingHook(abc.ABC):
    """One way of seeing API calls, recording them at ``level``."""

    level: int = -1

    def __init__(self, dialect: Dialect, options: Optional[TracerOptions] = None) -> None:
        self.dialect = dialect
        self.options = options if options is not None else TracerOptions()
        # Every level the session traces (the tracer sets it before install):
        # hooks that serve several levels together read it.
        self.traced_levels: Tuple[int, ...] = (self.level,)
        self._patches: List[Callable[[], None]] = []

    @abc.abstractmethod
    def install(self) -> None:
        """Starts seeing calls (the session is open)."""

    @abc.abstractmethod
    def uninstall(self) -> None:
        """Stops seeing calls and undoes everything install() did."""

    # -- what a hook builds on ---------------------------------------------

    def record(self, api: str, args: tuple = (), kwargs: Optional[dict] = None) -> None:
        """Records one call of `api` at this hook's level."""
        _C.record(self.level, api, tuple(args), kwargs)

    def arming(self) -> Tuple[int, int]:
        """How the patches of this hook record: the level whose outermost
        calls they record (and count their open calls at, so that calls
        inside are not recorded there again), and the level that records
        every call they see, nested ones too (-1: none). This hook's level
        and none; a dialect whose level records nested calls of the same
        APIs says otherwise (frameworks/paddle/hooks.py)."""
        return self.level, -1

    def wrap(self, fn: Callable, api: str, *, binds: bool = False, owner: Optional[type] = None) -> Any:
        """A C++ callable that records each call of `fn` as `api`, then calls
        `fn`. With `binds`, it binds `self` when looked up on an instance (as
        a function in a class does); with `owner`, `fn` is owner's __init__
        and calls are recorded as constructions."""
        level, every = self.arming()
        return _C.ApiWrapper(fn, api, level, binds=binds, owner=owner, every=every)

    def patch(self, owner: Any, attr: str, value: Any) -> None:
        """setattr(owner, attr, value), remembered for restore()."""
        had_own = attr in vars(owner)
        old = vars(owner)[attr] if had_own else None
        setattr(owner, attr, value)
        if had_own:
            self._patches.append(lambda: setattr(owner, attr, old))
        else:
            self._patches.append(lambda: delattr(owner, attr))

    def undo_with(self, undo: Callable[[], None]) -> None:
        """Remembers `undo` for restore(), which calls it in turn."""
        self._patches.append(undo)

    def restore(self) -> None:
        """Undoes every patch, the latest first: a patched attribute is put
        back (an inherited one deleted again), and what undo_with() was
        given is called."""
        errors = []
        while self._patches:
            undo = self._patches.pop()
            try:
                undo()
            except Exception as e:  # noqa: BLE001 - keep restoring the rest
                errors.append(e)
        if errors:
            raise errors[0]


class SetattrHook(TracingHook):
    """Level 0: the dialect's API list, recording in place where it can,
    else wrapped by setattr."""

    level = int(_C.Level.setattr)

    def __init__(self, dialect: Dialect, options: Optional[TracerOptions] = None) -> None:
        super().__init__(dialect, options)
        self.skipped: dict = {}
        self.wrapped: List[str] = []  # the APIs recorded by a wrapper, not in place
        self._wrappers: List[Tuple[Any, Any]] = []  # (wrapper, original)

    def install(self) -> None:
        names = self.options.api_list
        if names is None:
            names = self.dialect.api_list(full=self.options.disable_torch_api_list)
        targets, self.skipped = self.dialect.setattr_targets(names)
        # Per __init__ function, the classes in the list whose construction
        # it is (an inherited __init__ is shared: Module.__init__ makes Tanh).
        owners: Dict[int, List[Tuple[type, str]]] = defaultdict(list)
        # Per other object, the targets it is listed as: patched in place
        # once, it records each call under the name it was made through
        # (csrc/python/inplace.h).
        listed: Dict[int, List[PatchTarget]] = defaultdict(list)
        for t in targets:
            if t.kind == "constructor":
                if _C.allows(t.api):
                    owners[id(t.raw)].append((t.owner, t.api))
            else:
                listed[id(_inner(t))].append(t)
        done: set = set()  # what is patched in place, under all its names
        try:
            for target in targets:
                by_kind = owners.get(id(target.raw)) if target.kind == "constructor" else listed[id(_inner(target))]
                self._install_one(target, by_kind, done)
            for target in self.dialect.quiet_targets():
                if id(target.raw) not in done:
                    self._in_place(target.raw, None, None)
            self.dialect.note_wrappers(self._wrappers)
        except BaseException:
            self.restore()
            raise

    def uninstall(self) -> None:
        try:
            self.restore()
        finally:
            wrappers, self._wrappers = self._wrappers, []
            self.dialect.forget_wrappers(wrappers)

    def _install_one(self, t: "PatchTarget", listed: Optional[list], done: set) -> None:
        """Patches `t`: a constructor for the (class, api) whose
        construction it is (`listed`), another object under the names of
        all the PatchTargets it is listed as (`listed`)."""
        kind, raw = t.kind, t.raw
        api = _recorded_name(t)
        if not _C.allows(api):
            return
        inner = _inner(t)
        if kind == "constructor":
            inner = _binding_function(inner)
        if id(inner) in done:
            return
        if kind == "constructor":
            patched = self._in_place(inner, api, listed)
        else:
            patched = self._in_place(inner, api, None, _listings(t, listed or [t]))
        if patched:
            done.add(id(inner))
            return
        self.wrapped.append(api)
        if kind == "constructor":
            wrapper = self.wrap(raw, api, binds=True, owner=t.owner)
        else:  # a method binds as a function in a class does; a module's function never
            binds = kind == "classmethod" or (kind == "method" and hasattr(type(raw), "__get__"))
            wrapper = self.wrap(inner, api, binds=binds)
        self._wrappers.append((wrapper, inner))
        new = (
            property(wrapper, raw.fset, raw.fdel, raw.__doc__)
            if kind == "property"
            else staticmethod(wrapper)
            if kind == "staticmethod"
            else classmethod(wrapper)
            if kind == "classmethod"
            else wrapper
        )
        self.patch(t.owner, t.attr, new)

    def _in_place(
        self,
        fn: Any,
        api: Optional[str],
        owners: Optional[List[Tuple[type, str]]],
        listings: Optional["_Listings"] = None,
    ) -> bool:
        """Makes `fn` record its calls as `api` without replacing it (as
        constructions of `owners`' classes, for an __init__; each as the
        name of `listings` it was made through, for an object listed under
        several; with api None, record nothing inside it); False where it
        cannot be."""
        level, every = self.arming()
        if isinstance(fn, types.FunctionType):
            hook, code = instrument.instrumented(fn)
            if code is None:
                return False
            if listings is not None:
                hook.arm(listings.fallback, level, owners, names=listings.names, by=listings.by, every=every)
            else:
                hook.arm(api, level, owners, every=every)
            original = fn.__code__
            fn.__code__ = code

            def undo() -> None:
                if fn.__code__ is code:  # (not if the program has put code of its own there since)
                    fn.__code__ = original

            self.undo_with(undo)
            return True
        if api is None:
            return False
        patch = (
            _C.patch_c_function
            if isinstance(fn, types.BuiltinFunctionType)
            else _C.patch_method_descriptor
            if isinstance(fn, types.MethodDescriptorType)
            else None
        )
        if patch is _C.patch_c_function and listings is not None and listings.by == "site":
            patched = patch(fn, api, level, listings.names, every=every)
        else:  # (a method descriptor listed under several names records under the first)
            patched = patch is not None and patch(fn, api, level, every=every)
        if not patched:
            return False
        self.undo_with(lambda: _C.unpatch(fn))
        return True


def _inner(t: "PatchTarget") -> Any:
    """The function a target's calls run: a property's getter, what a
    staticmethod or classmethod holds, else what is stored."""
    raw = t.raw
    return raw.fget if t.kind == "property" else raw.__func__ if t.kind in ("staticmethod", "classmethod") else raw


def _recorded_name(t: "PatchTarget") -> str:
    """The name a target's calls are recorded as (a property's, its getter's)."""
    return t.api + ".__get__" if t.kind == "property" else t.api


@dataclass
class _Listings:
    """The names one object is listed under, for CodeHook.arm and
    patch_c_function: (owner, attr, name) each; how a call picks one (`by`:
    its call site, the class of its instance, its class); and the name of a
    call that none is picked for (`fallback`)."""

    names: List[Tuple[Any, str, str]]
    by: str
    fallback: str


def _listings(first: "PatchTarget", targets: List["PatchTarget"]) -> Optional[_Listings]:
    """How the calls of an object listed as `targets` (`first` the one
    patched) are named: None where it is listed once. A method's (or
    property's) by the class of the object it is called on: the first
    listed class in its MRO, else the class that defines it (a class of the
    program's own deriving from a listed one's base: Optimizer.zero_grad on
    a Lion is torch.optim.Optimizer.zero_grad); a classmethod's by its
    class; a function's by the name its call site reached it under, else
    the first name."""
    if len(targets) < 2:
        return None
    names = [(t.owner, t.attr, _recorded_name(t)) for t in targets]
    kinds = {t.kind for t in targets}
    classes = all(isinstance(t.owner, type) for t in targets)
    by = "instance" if classes and kinds <= {"method", "property"} else "class" if kinds == {"classmethod"} else "site"
    fallback = _recorded_name(first)
    if by != "site":
        definer = next((k for k in first.owner.__mro__ if first.attr in vars(k)), first.owner)
        mine = next((name for owner, _, name in names if owner is definer), None)
        own = mine or f"{_public_class_name(definer)}.{first.attr}" + (".__get__" if first.kind == "property" else "")
        fallback = own if _C.allows(own) else fallback
    return _Listings(names, by, fallback)


def _public_class_name(cls: type) -> str:
    """`cls` under the shortest prefix of its module that exports it under
    its name (torch.optim.optimizer.Optimizer is torch.optim.Optimizer)."""
    parts = cls.__module__.split(".")
    for i in range(1, len(parts) + 1):
        module = sys.modules.get(".".join(parts[:i]))
        if module is not None and getattr(module, cls.__name__, None) is cls:
            return f"{'.'.join(parts[:i])}.{cls.__name__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def _binding_function(fn: Any) -> Any:
    """The function whose parameters the calls of `fn` bind: where `fn` is a
    decorator's wrapper that takes only ``*args, **kwargs`` and hands them
    on to the function it wraps (``functools.wraps``' ``__wrapped__``), that
    function, as far down as such wrappers go. (A constructor is recorded
    from its parameters, ``self`` first: Paddle decorates layers'
    ``__init__`` so.)"""
    while (
        isinstance(fn, types.FunctionType)
        and fn.__code__.co_argcount == 0
        and fn.__code__.co_flags & inspect.CO_VARARGS
        and isinstance(getattr(fn, "__wrapped__", None), types.FunctionType)
    ):
        fn = fn.__wrapped__
    return fn


class _TracerFunctionMode(TorchFunctionMode):
    """api_tracer's level-1 mode; its handler is set per instance."""


class _TracerDispatchMode(TorchDispatchMode):
    """api_tracer's level-2 mode; its handler is set per instance."""


class _ModeHook(TracingHook):
    """Enters a mode (of `mode_class`) whose handler is one of the C++
    handlers; at the end, it must be the innermost (`current_mode`)."""

    handler_name = ""  # the mode's handler attribute
    _c_handler = ""  # the C++ handler's name in _C
    mode_class: type
    current_mode: Callable[[], Any]

    def install(self) -> None:
        mode = self.mode_class()
        # An instance attribute shadows the base class's method; PyTorch
        # requires it to be bound to the mode (its __self__ is checked).
        setattr(mode, self.handler_name, types.MethodType(getattr(_C, self._c_handler), mode))
        mode.__enter__()
        self.mode = mode

    def uninstall(self) -> None:
        mode = getattr(self, "mode", None)
        if mode is None:
            return
        if self.current_mode() is not mode:
            raise RuntimeError(
                f"{type(self).__name__}: another mode was entered inside the traced block and not "
                "exited; the tracer's mode is not on top of the mode stack"
            )
        mode.__exit__(None, None, None)
        delattr(mode, self.handler_name)  # break the mode <-> bound method cycle
        self.mode = None


class TorchFunctionHook(_ModeHook):
    """Level 1: a TorchFunctionMode (torch functions, Tensor methods,
    torch.nn.functional, factories), on the thread that starts tracing."""

    level = int(_C.Level.torch_function)
    handler_name = "__torch_function__"
    _c_handler = "torch_function_handler"
    mode_class = _TracerFunctionMode
    current_mode = staticmethod(_get_current_function_mode)


class TorchDispatchHook(_ModeHook):
    """Level 2: a TorchDispatchMode (aten operators, forward and backward),
    on the thread that starts tracing."""

    level = int(_C.Level.torch_dispatch)
    handler_name = "__torch_dispatch__"
    _c_handler = "torch_dispatch_handler"
    mode_class = _TracerDispatchMode
    current_mode = staticmethod(_get_current_dispatch_mode)


class NativeHook(TracingHook):
    """Level 3: the native observer (at::RecordFunction): every aten
    operator call on every thread, autograd's included, with no Python in
    the path. The session's options say what it keeps (``nesting``,
    ``value_ranges``, the API patterns)."""

    level = int(_C.Level.native)

    def install(self) -> None:
        _C.observer_install(self.level)

    def uninstall(self) -> None:
        _C.observer_remove()
