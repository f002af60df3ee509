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

from typing import Any, Optional, Sequence


class TensorSpec:
    """A tensor reduced to what a config line keeps of it."""

    __slots__ = ("shape", "dtype", "stride", "device", "requires_grad", "layout", "nnz", "qscheme", "scale",
                 "zero_point", "axis", "storage_offset", "storage_size")

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
        return (self.shape, self.dtype, self.stride, self.device, self.requires_grad, self.layout, self.nnz,
                self.qscheme, self.scale, self.zero_point, self.axis, self.storage_offset, self.storage_size)

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
        return (
            isinstance(other, Call)
            and (self.name, self.args, self.kwargs) == (other.name, other.args, other.kwargs)
        )

    def __hash__(self) -> int:
        return hash((self.name, _frozen(self.args), _frozen(self.kwargs)))

    def __repr__(self) -> str:
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{self.name}({', '.join(parts)})"
