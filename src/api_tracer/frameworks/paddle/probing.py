"""Building Paddle's objects to compare, without the program seeing it.

objects.py works out the call that rebuilds a layer, optimizer or scheduler
by building it and comparing. Those builds are never the program's and draw
nothing: layers under `paddle.LazyGuard`, parameters without values (no
random draw, no memory; an RNN, which packs its weights into one block,
built without packing them: `lazy_class`), names in a namespace of their
own, the default dtype float32 (as replay builds), the build's warnings not
shown (another thread's are). No generator is saved and put back: another
thread (a DataLoader's reader) may draw meanwhile, and would draw its
numbers twice. LazyGuard and the names' namespace are the process's: a
layer another thread built in the same milliseconds would be built lazily,
named in that namespace.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import warnings
from typing import Any, Dict, Iterator, Tuple

_depth = [0]  # whether in probing()


class _ThisThread:
    """A warnings filter's message pattern that matches every warning of one
    thread (the filters are the process's: the other threads' warnings pass
    it by, to the program's own filters)."""

    def __init__(self) -> None:
        self.ident = threading.get_ident()

    def match(self, text: str) -> bool:
        return threading.get_ident() == self.ident


@contextlib.contextmanager
def probing() -> Iterator[None]:
    """Around the objects built to compare (see the module)."""
    if _depth[0]:  # (inside another: already so)
        yield
        return
    import paddle
    from paddle.base import unique_name

    filters, dtype = warnings.filters, paddle.get_default_dtype()
    # (a new list, not catch_warnings: see torch's objects.probing)
    warnings.filters = [("ignore", _ThisThread(), Warning, None, 0), *filters]
    _depth[0] += 1
    try:
        with unique_name.guard(), paddle.LazyGuard():
            if dtype != "float32":
                paddle.set_default_dtype("float32")
            yield
    finally:
        _depth[0] -= 1
        if paddle.get_default_dtype() != dtype:
            paddle.set_default_dtype(dtype)
        warnings.filters = filters


# Methods of a layer that need its parameters' values, which a build under
# LazyGuard has not (an RNN packs its weights into one block), and the
# attributes and buffers they set: no-ops, and not compared, in the builds
# to compare (through `lazy_class`, `unset`).
NEEDS_VALUES: Dict[str, Tuple[Tuple[str, ...], Tuple[str, ...]]] = {
    "paddle.nn.layer.rnn.RNNBase": (
        ("flatten_parameters",),
        ("_non_persistable_buffer_names_set", "_dropout_state"),
    )
}


@functools.lru_cache(maxsize=None)
def lazy_class(cls: type) -> type:
    """`cls`, or where it has NEEDS_VALUES' methods, a subclass of the same
    name with them no-ops (`original` gives `cls` back)."""
    found = [NEEDS_VALUES[n] for n in (f"{k.__module__}.{k.__qualname__}" for k in cls.__mro__) if n in NEEDS_VALUES]
    if not found:
        return cls
    members: Dict[str, Any] = {m: lambda self, *args, **kwargs: None for methods, _ in found for m in methods}
    unset = frozenset(a for _, attributes in found for a in attributes)
    members.update(__module__=cls.__module__, __qualname__=cls.__qualname__, _lazy_of=cls, _unset=unset)
    return type(cls.__name__, (cls,), members)


def unset(layer: Any) -> frozenset:
    """What NEEDS_VALUES' methods set on a layer of this class, not compared."""
    return lazy_class(original(type(layer))).__dict__.get("_unset", frozenset())


def original(cls: type) -> type:
    """The class `lazy_class` made `cls` of; `cls` where none."""
    return cls.__dict__.get("_lazy_of", cls)
