"""The values of a config line that Python has no literal for.

A parsed config line (``api_tracer.parse_call``) gives plain Python values
where Python has them (ints, floats, complex, strings, lists, tuples, dicts,
slices, Ellipsis, None) and these classes for the rest:

- ``TensorSpec``: ``Tensor([2, 3], "float32", stride=[1, 2])``
- ``Symbol``: a named constant written bare, ``torch.float16``
- ``Call``: ``name(args..., kw=v...)``: ``torch.device("cuda:0")``,
  ``torch.nn.Linear(3, 4)``, and the placeholders ``Opaque("T")``,
  ``Callable("f")``, ``Module("torch.nn.Linear")``; ``Eval(...)`` (a module
  in evaluation mode) and ``Filled(Tensor(...), nan)`` (a tensor every
  element of which holds one value) wrap another value.

A dialect's serializer returns these to say how a value is written.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple


class TensorSpec:
    """A tensor reduced to what a config line keeps of it."""

    __slots__ = (
        "shape",
        "dtype",
        "stride",
        "device",
        "requires_grad",
        "layout",
        "nnz",
        "qscheme",
        "scale",
        "zero_point",
        "axis",
        "storage_offset",
        "storage_size",
    )

    def __init__(
        self,
        shape: Sequence[int],
        dtype: str,
        stride: Optional[Sequence[int]] = None,
        device: str = "cpu",
        requires_grad: bool = False,
        layout: Optional[str] = None,
        *,
        nnz: Optional[int] = None,
        qscheme: Optional[str] = None,
        scale: Optional[float] = None,
        zero_point: Optional[int] = None,
        axis: Optional[int] = None,
        storage_offset: Optional[int] = None,
        storage_size: Optional[int] = None,
    ) -> None:
        self.shape = tuple(shape)
        self.dtype = dtype
        self.stride = None if stride is None else tuple(stride)
        self.device = device
        self.requires_grad = requires_grad
        self.layout = layout
        self.nnz = nnz  # sparse layouts: the specified elements
        self.qscheme = qscheme  # quantized dtypes: the scheme, and per tensor
        self.scale = scale  # its scale and zero point,
        self.zero_point = zero_point
        self.axis = axis  # per channel its axis
        # a view not covering its storage: its offset in it, and its size (elements)
        self.storage_offset = storage_offset
        self.storage_size = storage_size

    def _key(self) -> tuple:
        return (
            self.shape,
            self.dtype,
            self.stride,
            self.device,
            self.requires_grad,
            self.layout,
            self.nnz,
            self.qscheme,
            self.scale,
            self.zero_point,
            self.axis,
            self.storage_offset,
            self.storage_size,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TensorSpec) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        extra = "" if self.stride is None else f", stride={list(self.stride)}"
        return f'Tensor({list(self.shape)}, "{self.dtype}"{extra})'


class Symbol:
    """A named constant, such as ``torch.float16`` or ``torch.channels_last``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Symbol) and self.name == other.name

    def __hash__(self) -> int:
        return hash(("Symbol", self.name))

    def __repr__(self) -> str:
        return self.name


def _frozen(value: Any) -> Any:
    """`value` with its lists, dicts and slices made hashable, for hashing
    equal values alike."""
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return frozenset((k, _frozen(v)) for k, v in value.items())
    if isinstance(value, slice):
        return (slice, _frozen(value.start), _frozen(value.stop), _frozen(value.step))
    return value


# The placeholder of a value written by its type only, Opaque("qualified.Name"),
# which replay skips; and Callable("api.name"), a callable as its API name.
OPAQUE = "Opaque"
CALLABLE = "Callable"

# The placeholder call a module is written as where it cannot be rebuilt:
# Module("qualified.Name") (a module of the program's own, or one whose
# constructor arguments cannot be read back); replay skips it.
MODULE_PLACEHOLDER = "Module"

# A module in evaluation mode: Eval(torch.nn.Dropout(p=0.2)) is the module
# its call builds, with .eval() called on it (it and its submodules have
# training False); replay builds it so.
EVAL_MODE = "Eval"

# A tensor every element of which holds one value: Filled(Tensor([4],
# "float32"), nan), Filled(Tensor([3], "int64"), -1). The tracer never
# writes it; the fuzzer does (its value mutations: NaN, infinities, -0.0,
# subnormals, a dtype's extremes, an index just outside a range), and
# replay builds it, the value held in the recorded dtype.
FILLED = "Filled"

# A callable with arguments bound: functools.partial(paddle.nn.BatchNorm2D,
# epsilon=0.001) (a layer's norm_layer), its first argument the callable (a
# class, or Callable("...")) and the rest what is bound; replay builds it
# so, the callable through its policy like any other name.
PARTIAL = "functools.partial"


class Call:
    """``name(*args, **kwargs)`` as a value: a constructor call or a placeholder.

    Hashable whatever it holds, as the object it stands for may be: a
    ``torch.Size([2, 3])`` can be a dict key. ``name`` and ``self`` are free
    for keyword arguments (a namedtuple's fields)."""

    __slots__ = ("name", "args", "kwargs")

    def __init__(self, name: str, /, *args: Any, **kwargs: Any) -> None:
        self.name = name
        self.args = args
        self.kwargs = kwargs

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Call) and (self.name, self.args, self.kwargs) == (other.name, other.args, other.kwargs)

    def __hash__(self) -> int:
        return hash((self.name, _frozen(self.args), _frozen(self.kwargs)))

    def __repr__(self) -> str:
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{self.name}({', '.join(parts)})"


# -- where a value is in a call: its path ----------------------------------------
#
# A value's path names it inside a call: its value profile in
# api_value_ranges.yaml, the argument a replay's message or a gradient is
# about, the place a fuzzer's mutation changes. docs/format.md, "Value
# paths", is the grammar: `args[0]` and `kwargs.NAME` the call's arguments,
# then `[I]` an item of a list or tuple, `.keys[I]` the I-th key of a dict
# and `[KEY]` the value under it (KEY as a config line writes it: ["a"],
# [3]), `.args[I]` a call's I-th argument (a slice's start, stop and step
# too) and `.NAME` its keyword argument NAME. The C++ core writes the same
# paths (csrc/core/value_path.h, which the aggregator follows); this is the
# one walk Python has of them, and tests/formats/test_value_paths.py holds
# the two together on every kind of value.


def argument_path(i: int) -> str:
    """The path of a call's positional argument `i`."""
    return f"args[{i}]"


def keyword_path(name: str) -> str:
    """The path of a call's keyword argument `name`."""
    return f"kwargs.{name}"


def item_path(path: str, i: int) -> str:
    """The path of item `i` of the list or tuple at `path`."""
    return f"{path}[{i}]"


def key_path(path: str, i: int) -> str:
    """The path of the `i`-th key of the dict at `path`."""
    return f"{path}.keys[{i}]"


def value_path(path: str, key: Any) -> str:
    """The path of the value under `key` in the dict at `path`: the key as a
    config line writes it (by the core's formatter)."""
    from .config import format_value

    return f"{path}[{format_value(key)}]"


def call_argument_path(path: str, i: int) -> str:
    """The path of argument `i` of the call (or slice) at `path`."""
    return f"{path}.args[{i}]"


def call_keyword_path(path: str, name: str) -> str:
    """The path of keyword argument `name` of the call at `path`."""
    return f"{path}.{name}"


def children(value: Any, path: str) -> Iterator[Tuple[str, Any]]:
    """(path, value) of each value directly inside `value` (at `path`), in
    the order the converter writes them: a list's or tuple's items, a
    dict's keys and values (each key before its value), a slice's start,
    stop and step, a call's arguments then its keyword arguments."""
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield item_path(path, i), item
    elif isinstance(value, dict):
        for i, (k, v) in enumerate(value.items()):
            yield key_path(path, i), k
            yield value_path(path, k), v
    elif isinstance(value, slice):
        for i, part in enumerate((value.start, value.stop, value.step)):
            yield call_argument_path(path, i), part
    elif isinstance(value, Call):
        for i, a in enumerate(value.args):
            yield call_argument_path(path, i), a
        for k, v in value.kwargs.items():
            yield call_keyword_path(path, k), v


def arguments(args: Sequence[Any], kwargs: Dict[str, Any]) -> Iterator[Tuple[str, Any]]:
    """(path, value) of a call's arguments, positional first."""
    for i, a in enumerate(args):
        yield argument_path(i), a
    for k, v in kwargs.items():
        yield keyword_path(k), v


def walk(
    args: Sequence[Any], kwargs: Dict[str, Any], into: Callable[[Any], bool] = lambda value: True
) -> Iterator[Tuple[str, Any]]:
    """(path, value) of every value of a call, depth first, each before the
    values inside it (those of a value `into` refuses are left out)."""

    def below(path: str, value: Any) -> Iterator[Tuple[str, Any]]:
        yield path, value
        if into(value):
            for p, child in children(value, path):
                yield from below(p, child)

    for path, value in arguments(args, kwargs):
        yield from below(path, value)


def replace_at(args: List[Any], kwargs: Dict[str, Any], path: str, change: Callable[[Any], Any]) -> bool:
    """The value at `path` made change(value), in place in `args` and
    `kwargs` (the containers on its way rebuilt); False where no value has
    that path."""

    def rebuilt(value: Any, at: str) -> Tuple[bool, Any]:
        if at == path:
            return True, change(value)
        if not path.startswith(at):
            return False, value
        for p, child in children(value, at):
            found, new = rebuilt(child, p)
            if found:
                return True, _with_child(value, at, p, new)
        return False, value

    for p, value in arguments(args, kwargs):
        found, new = rebuilt(value, p)
        if found:
            if p.startswith("args["):
                args[int(p[5:-1])] = new
            else:
                kwargs[p[len("kwargs.") :]] = new
            return True
    return False


def _with_child(value: Any, path: str, child_path: str, new: Any) -> Any:
    """`value` (at `path`) with its child at `child_path` replaced by `new`."""
    items = list(children(value, path))
    index = next(i for i, (p, _) in enumerate(items) if p == child_path)
    if isinstance(value, (list, tuple)):
        parts = [v for _, v in items]
        parts[index] = new
        return type(value)(parts)
    if isinstance(value, dict):
        pairs = [v for _, v in items]
        pairs[index] = new
        return dict(zip(pairs[0::2], pairs[1::2]))
    if isinstance(value, slice):
        parts = [v for _, v in items]
        parts[index] = new
        return slice(*parts)
    positional = len(value.args)
    if index < positional:
        args = list(value.args)
        args[index] = new
        return Call(value.name, *args, **value.kwargs)
    keywords = dict(value.kwargs)
    keywords[list(keywords)[index - positional]] = new
    return Call(value.name, *value.args, **keywords)
