"""A config line to a call: `parse` reads it, `build` resolves its API and
checks every name (the policy) and tensor description (sizes, bytes) before
`Builder` makes the arguments; `prepare` does both."""
from __future__ import annotations

import contextlib
import functools
import math
import re
import sys
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

from ..config import ConfigSyntaxError, parse_call
from ..values import EVAL_MODE, FILLED, MODULE_PLACEHOLDER, PARTIAL, Call, Symbol, TensorSpec
from .configs import BuildError, Config, Invalid, Skip
from .error_model import Sublayers
from .memory import byte_limit, contiguous_strides, human_bytes, storage_numel
from .options import ReplayOptions
from .policy import refusal
from .preconditions import check_call
from .resolve import Resolver

BUILTIN_TYPES = {"float": float, "int": int, "bool": bool, "complex": complex}


# APIs whose first tensor must require grad to be called at all.
NEEDS_GRAD = {"torch.Tensor.backward", "torch.autograd.backward", "torch.autograd.grad"}


class Builder:
    """Config values to Python objects. `cast`, when given, maps the dtype
    of every floating or complex value made (tensors, modules' parameters
    and buffers) to the dtype it is made in; the values are drawn in the
    recorded dtype first, so a cast side holds the very same numbers."""

    NEEDS_GRAD = NEEDS_GRAD  # APIs whose first tensor must require grad to be called at all
    LAYER = "module"  # what the framework calls a layer, in messages
    WRITTEN = ("torch.nn",)  # the namespaces whose layers the tracer writes as their constructor calls

    def __init__(self, resolver: Resolver, device: str, ranges: Dict[str, Any], generator: Any,
                 line: str, safe: bool = True, cast: Optional[Callable[[Any], Any]] = None,
                 perturb: Optional[Callable[[str, Any], None]] = None) -> None:
        self.r, self.device, self.ranges, self.gen, self.line = resolver, device, ranges, generator, line
        self.safe = safe  # the replay policy (policy.py) holds
        self.cast = cast or (lambda dtype: dtype)
        self.perturb = perturb  # changes each floating tensor made in place, and float scalars (error_model)
        self.input_dtypes: set = set()  # the dtypes of the line's tensors, by name ("float32")
        self.requires_grad = False
        self.limit: Optional[int] = None  # the bytes the arguments may take (--max-bytes)
        self.spent = 0  # what the arguments made so far take

    def allowed(self, name: str, obj: Any = None) -> None:
        """Raises Invalid if the policy refuses `name` (resolved to `obj`)."""
        why = refusal(name, obj) if self.safe else None
        if why:
            raise Invalid(why, self.line.find(name) + 1 or 1)

    def resolve(self, name: str) -> Any:
        """The callable `name` names, the policy asked before and after
        resolving (an operator's name must resolve to an operator)."""
        self.allowed(name)
        obj = self.r.resolve(name, self.line)
        self.allowed(name, obj)
        return obj

    def check_names(self, args: list, kwargs: dict) -> None:
        """Every name in the arguments that replay calls or hands to the API
        (constructor calls, Callable(...), classes named as constants) is
        checked against the policy, and numpy's names are numpy scalar
        types, before any argument is built."""
        for _, leaf in _arguments(args, kwargs):
            if isinstance(leaf, Symbol) and leaf.name not in BUILTIN_TYPES:
                if isinstance(self.symbol(leaf.name), type):
                    self.allowed(leaf.name)
            elif isinstance(leaf, Call) and leaf.name == "Callable":
                self.resolve(_callable_name(leaf))
            elif isinstance(leaf, Call) and leaf.name.startswith("numpy.") and leaf.name != "numpy.ndarray":
                self.numpy_scalar(leaf.name)
            elif isinstance(leaf, Call) and leaf.name not in PLACEHOLDERS + (EVAL_MODE, FILLED, PARTIAL) \
                    and not leaf.name.startswith("numpy."):
                self.allowed(leaf.name)

    def numpy_scalar(self, name: str) -> type:
        """The numpy scalar type `numpy.NAME` names (numpy.float32, ...)."""
        import numpy as np

        scalar = getattr(np, name[len("numpy."):], None)
        if not (isinstance(scalar, type) and issubclass(scalar, np.generic)):
            raise Invalid(f"{name!r} is not a numpy scalar type", self.line.find(name) + 1)
        return scalar

    def check_tensors(self, args: list, kwargs: dict, max_bytes: Optional[int]) -> None:
        """The tensors' descriptions, before any is made: a known dtype and
        sizes of at least 0 (else invalid); -1, the size the tracer writes for
        a symbolic one, skips the config, as do tensors that need more than
        max_bytes in all (in the dtype they are made in)."""
        specs = [(path, leaf) for path, leaf in _arguments(args, kwargs) if isinstance(leaf, TensorSpec)]
        for path, spec in specs:
            self.dtype(spec)
            bad = [d for d in spec.shape if d < -1]
            if bad:
                raise Invalid(f"{path}: Tensor({list(spec.shape)}, ...) has the size {bad[0]}: a size is at least 0, "
                              "or -1 for a symbolic one", self.line.find(str(bad[0])) + 1 or 1)
        if any(-1 in spec.shape for _, spec in specs):
            raise Skip("a tensor with a symbolic size")
        self.limit = max_bytes
        needed = sum(self.tensor_bytes(spec) for _, spec in specs)
        for _, leaf in _arguments(args, kwargs):
            if isinstance(leaf, Call) and leaf.name == "numpy.ndarray":
                needed += self.ndarray_bytes(leaf)
        self.charge(needed, "its tensor arguments")

    def charge(self, n: int, what: str) -> None:
        """Counts `n` more bytes of arguments, before they are made; Skip
        past the limit."""
        self.spent += n
        if self.limit is not None and self.spent > self.limit:
            raise Skip(f"{what} need {self.spent} bytes ({human_bytes(self.spent)}), more than the limit of "
                       f"{self.limit} bytes ({human_bytes(self.limit)}; --max-bytes)")

    def tensor_bytes(self, spec: TensorSpec) -> int:
        """What making the tensor `spec` describes allocates: its storage as
        its strides lay it out, or as large as it says (a view into a larger
        one); a sparse or quantized one is made dense first, whole, whatever
        strides it says it has."""
        itemsize = self.cast(self.dtype(spec)).itemsize
        if spec.layout in SPARSE_LAYOUTS or spec.qscheme is not None:
            numel = 1
            for d in spec.shape:
                numel *= d
            # the dense tensor, and the places drawn (int64) or the float32 values quantized
            return numel * (itemsize + (8 if spec.layout in SPARSE_LAYOUTS else 4))
        if spec.storage_size is not None:
            return spec.storage_size * itemsize
        return storage_numel(spec.shape, spec.stride) * itemsize

    def ndarray_bytes(self, c: Call) -> int:
        """What numpy.ndarray(shape, dtype) allocates."""
        import numpy as np

        if len(c.args) != 2 or c.kwargs or not isinstance(c.args[0], list) or not isinstance(c.args[1], str) \
                or not all(isinstance(d, int) and d >= 0 for d in c.args[0]):
            raise Invalid("numpy.ndarray(...) takes a list of sizes (0 or more) and a dtype's name",
                          self.line.find("numpy.ndarray") + 1)
        try:
            itemsize = np.dtype(c.args[1]).itemsize
        except TypeError:
            raise Invalid(f"unknown numpy dtype {c.args[1]!r}", self.line.find(c.args[1]) + 1) from None
        numel = 1
        for d in c.args[0]:
            numel *= d
        return numel * itemsize

    def dtype(self, spec: TensorSpec) -> Any:
        torch = self.r.torch
        dtype = getattr(torch, spec.dtype, None)
        if not isinstance(dtype, torch.dtype):
            raise Invalid(f"unknown dtype {spec.dtype!r}", self.line.find(spec.dtype) + 1 or 1)
        return dtype

    def build(self, v: Any, path: str) -> Any:
        """The value `v` describes; an exception that building raises comes
        out as a BuildError naming the argument (Invalid and Skip as they are)."""
        try:
            return self._build(v, path)
        except (Invalid, Skip, BuildError):
            raise
        except Exception as e:  # noqa: BLE001 - reported as the config's failure
            raise BuildError(path, e) from e

    def _build(self, v: Any, path: str) -> Any:
        if isinstance(v, TensorSpec):
            return self.tensor(v, path)
        if isinstance(v, list):
            return [self.build(x, f"{path}[{i}]") for i, x in enumerate(v)]
        if isinstance(v, tuple):
            return tuple(self.build(x, f"{path}[{i}]") for i, x in enumerate(v))
        if isinstance(v, dict):
            return {self.build(k, f"{path}.keys[{i}]"): self.build(x, f"{path}[{k!r}]")
                    for i, (k, x) in enumerate(v.items())}
        if isinstance(v, slice):
            return slice(self.build(v.start, path), self.build(v.stop, path), self.build(v.step, path))
        if isinstance(v, Symbol):
            obj = self.symbol(v.name)
            # A dtype argument naming an input's floating dtype follows the
            # inputs where they are cast (dtype=torch.float32 on float64 copies).
            torch = self.r.torch
            if isinstance(obj, torch.dtype) and (obj.is_floating_point or obj.is_complex) and \
                    str(obj).replace("torch.", "") in self.input_dtypes:
                return self.cast(obj)
            return obj
        if isinstance(v, Call):
            return self.call(v, path)
        if isinstance(v, float) and self.perturb is not None:
            return self.perturb(path, v)
        return v

    def symbol(self, name: str) -> Any:
        if name in BUILTIN_TYPES:
            return BUILTIN_TYPES[name]
        torch = self.r.torch
        obj = self.r.walk(name, self.line)
        if not isinstance(obj, (torch.dtype, torch.layout, torch.memory_format, torch.qscheme)):
            enum_member = isinstance(getattr(type(obj), "__members__", None), dict) and self.r._inside(type(obj))
            if not (isinstance(obj, type) and self.r._inside(obj)) and not enum_member:
                raise Invalid(f"the name {name!r} is not a torch constant", self.line.find(name) + 1)
        return obj

    def tensor(self, spec: TensorSpec, path: str, fill: Any = None) -> Any:
        """The tensor `spec` describes, its values drawn (see build), or
        every element `fill` where given (Filled(...))."""
        torch = self.r.torch
        if fill is not None and (spec.layout not in (None, "torch.strided") or spec.qscheme is not None):
            raise Invalid(f"{FILLED}(...) holds a strided tensor, not a {spec.layout or spec.qscheme} one",
                          self.line.find(FILLED) + 1)
        if spec.layout in SPARSE_LAYOUTS:
            return self.sparse(spec)
        if spec.layout not in (None, "torch.strided"):
            raise Skip(f"a {spec.layout} tensor argument")
        if spec.qscheme is not None:
            return self.quantized(spec)
        dtype = self.dtype(spec)
        shape = list(spec.shape)
        stride = list(spec.stride) if spec.stride is not None else contiguous_strides(shape)
        # its storage's elements: as its strides span them, or as many as the storage of a view held
        numel = storage_numel(shape, stride) if spec.storage_size is None else spec.storage_size
        profile = self.ranges.get(path)
        if fill is not None:  # in the recorded dtype (a float32 subnormal stays one on a float64 side)
            base = torch.full((numel,), fill, dtype=dtype)
        elif dtype.is_floating_point and profile is not None and profile.floating:
            base = draw_floats(profile, numel, self.gen).to(dtype)
        elif dtype.is_floating_point and dtype.itemsize == 1:  # the float8 types: no random kernel of their own
            base = torch.randn(numel, generator=self.gen).to(dtype)
        elif dtype.is_floating_point or dtype.is_complex:
            base = torch.randn(numel, dtype=dtype, generator=self.gen)
        elif profile is not None:
            # the sum is the values', each one element of the storage only where the tensor covers it once
            covered = spec.storage_size is None and numel == math.prod(shape)
            base = draw(profile, numel, self.gen, keep_sum=covered).to(dtype)
        elif dtype == torch.bool:
            base = torch.randint(0, 2, (numel,), generator=self.gen).bool()
        else:
            base = torch.zeros(numel, dtype=dtype)  # valid as an index wherever the size is not 0
        # A tensor of its own with the recorded strides, as the program's was
        # (a view would refuse in-place ops on views, detach_ among them): its
        # storage, numel elements, holds `base` (cast, for a check's other side);
        # at the recorded offset in a storage of the recorded size where the
        # program's was a window of a larger one (the parser checked it inside).
        if spec.storage_size is None:
            t = torch.empty_strided(shape, stride, dtype=self.cast(dtype), device=self.device)
            t.as_strided((numel,), (1,)).copy_(base)
        else:
            whole = torch.empty(numel, dtype=self.cast(dtype), device=self.device)
            whole.copy_(base)
            t = torch.empty(0, dtype=self.cast(dtype), device=self.device)
            t.set_(whole.untyped_storage(), spec.storage_offset, shape, stride)
        if self.perturb is not None and (dtype.is_floating_point or dtype.is_complex):
            storage = t.as_strided((numel,), (1,), 0)
            storage.logical = t.detach()  # (the error model reads the elements in the tensor's own order)
            self.perturb(path, storage)
        if (spec.requires_grad or self.requires_grad) and (dtype.is_floating_point or dtype.is_complex):
            t.requires_grad_(True)
        return t

    def sparse(self, spec: TensorSpec) -> Any:
        """A sparse tensor of the recorded layout with `nnz` specified
        elements, at random places, of random values."""
        torch = self.r.torch
        shape, numel = list(spec.shape), 1
        for d in spec.shape:
            numel *= d
        nnz = spec.nnz if spec.nnz is not None else min(numel, 1)
        if not 0 <= nnz <= numel:
            raise Invalid(f"a sparse tensor of {numel} elements cannot have nnz={nnz}", self.line.find("nnz") + 1 or 1)
        dense = torch.zeros(numel, dtype=self.cast(self.dtype(spec)))
        dense[torch.randperm(numel, generator=self.gen)[:nnz]] = torch.randn(nnz, generator=self.gen).to(dense.dtype)
        t = getattr(dense.reshape(shape), SPARSE_LAYOUTS[spec.layout])().to(self.device)
        return t.requires_grad_(True) if spec.requires_grad else t

    def quantized(self, spec: TensorSpec) -> Any:
        """A quantized tensor of the recorded scheme: per tensor with its
        scale and zero point, per channel along its axis (scales of 0.1,
        zero points of 0)."""
        torch = self.r.torch
        qscheme, dtype = self.symbol(spec.qscheme), self.dtype(spec)
        values = torch.randn(list(spec.shape), generator=self.gen)
        if qscheme in (torch.per_tensor_affine, torch.per_tensor_symmetric):
            scale = spec.scale if spec.scale is not None else 0.1
            t = torch.quantize_per_tensor(values, scale, spec.zero_point or 0, dtype)
        else:
            axis = spec.axis if spec.axis is not None else 0
            channels = spec.shape[axis] if 0 <= axis < len(spec.shape) else 0
            t = torch.quantize_per_channel(values, torch.full((channels,), 0.1, dtype=torch.float64),
                                           torch.zeros(channels, dtype=torch.int64), axis, dtype)
        return t.to(self.device)

    def partial(self, c: Call, path: str) -> Any:
        """functools.partial(callable, *args, **kwargs): its callable (a
        class the policy allows, or Callable(...), resolved through it)
        with the rest bound."""
        if not c.args or not isinstance(c.args[0], (Symbol, Call)):
            raise Invalid(f"{PARTIAL}(...) takes a callable first: a class, or Callable(\"name\")",
                          self.line.find(PARTIAL) + 1)
        func = self.build(c.args[0], f"{path}.args[0]")
        if not callable(func):
            raise Invalid(f"{PARTIAL}(...) takes a callable first, not {c.args[0]!r}", self.line.find(PARTIAL) + 1)
        args = [self.build(a, f"{path}.args[{i}]") for i, a in enumerate(c.args[1:], 1)]
        return functools.partial(func, *args, **{k: self.build(v, f"{path}.{k}") for k, v in c.kwargs.items()})

    def preconditions(self, api: str, func: Any, args: list, kwargs: dict) -> str:
        """What is wrong with the built arguments of a call whose kernel
        would not check them (preconditions.py); "" where nothing is."""
        return check_call(api, func, args, kwargs)

    def built(self, func: Any, args: list, kwargs: dict) -> None:
        """The arguments built: what the outputs will take is charged too
        (output_bytes, where it can be known)."""
        outputs = output_bytes(func, args, kwargs)
        if outputs:
            self.charge(outputs, "its arguments and outputs")

    def layer_type(self) -> type:
        """The framework's base class of layers (what Eval(...) holds)."""
        return self.r.torch.nn.Module

    def placeholder(self, c: Call, path: str) -> str:
        """Why a placeholder `c` at `path` skips the config."""
        return placeholder_reason(c, path, self.LAYER, self.WRITTEN)

    def call(self, c: Call, path: str) -> Any:
        name = c.name
        if name in ("Opaque", MODULE_PLACEHOLDER):
            raise Skip(self.placeholder(c, path))
        if name == "Callable":
            return self.resolve(_callable_name(c))
        if name == PARTIAL:
            return self.partial(c, path)
        if name == EVAL_MODE:
            if len(c.args) != 1 or c.kwargs or not isinstance(c.args[0], Call):
                raise Invalid(f"{EVAL_MODE}(...) takes one {self.LAYER}'s constructor call",
                              self.line.find(EVAL_MODE) + 1)
            layer = self.build(c.args[0], f"{path}.args[0]")
            if not isinstance(layer, self.layer_type()):
                raise Invalid(f"{EVAL_MODE}(...) holds {c.args[0].name}(...), which does not build a {self.LAYER}",
                              self.line.find(EVAL_MODE) + 1)
            layer.eval()
            return layer
        if name == FILLED:
            if len(c.args) != 2 or c.kwargs or not isinstance(c.args[0], TensorSpec) \
                    or not isinstance(c.args[1], (bool, int, float, complex)):
                raise Invalid(f"{FILLED}(...) takes a tensor's description and the value of its elements",
                              self.line.find(FILLED) + 1)
            return self.tensor(c.args[0], f"{path}.args[0]", fill=c.args[1])
        if name in ("torch.SymInt", "torch.SymFloat", "torch.SymBool"):
            raise Skip("a symbolic argument")
        args = [self.build(a, f"{path}.args[{i}]") for i, a in enumerate(c.args)]
        kwargs = {k: self.build(v, f"{path}.{k}") for k, v in c.kwargs.items()}
        if name == "numpy.ndarray":
            import numpy as np

            return np.zeros(args[0], dtype=np.dtype(args[1]))
        if name.startswith("numpy."):
            return self.numpy_scalar(name)(*args)
        target = self.resolve(name)
        if self.r.constructible(target):
            return self.construct(target, name, args, kwargs, path)
        raise Skip(f"argument {name}(...) is not one this replay rebuilds")

    def construct(self, target: Any, name: str, args: list, kwargs: dict, path: str) -> Any:
        """A value made by calling `target` (a module: charged against the
        byte limit, moved and cast as this side's values are, its floating
        parameters and buffers handed to `perturb`, and itself where it
        holds modules)."""
        torch = self.r.torch
        if isinstance(target, type) and issubclass(target, torch.nn.Module):
            self.charge(module_bytes(target, args, kwargs, self.cast), f"its arguments (with {name}(...))")
        value = target(*args, **kwargs)
        if isinstance(value, torch.nn.Module):
            value = value.to(self.device)._apply(lambda t: t.to(self.cast(t.dtype)))
            if self.perturb is not None:
                with torch.no_grad():
                    for key, t in (*value.named_parameters(), *value.named_buffers()):
                        if t.is_floating_point() or t.is_complex():
                            self.perturb(f"{path}.{key}", t.view(-1) if t.is_contiguous() else t)
                if next(value.children(), None) is not None:
                    self.perturb(path, Sublayers(functools.partial(round_module_outputs, value)))
        return value


def round_module_outputs(module: Any, relative: float, seed: int) -> None:
    """Sublayers.round_outputs for a torch module: a forward hook on each
    of its submodules moves their floating outputs' elements by `relative`
    at random signs (error_model.py)."""
    import torch

    gen = torch.Generator().manual_seed(seed)

    def rounded(t: Any) -> Any:
        if not isinstance(t, torch.Tensor) or not (t.is_floating_point() or t.is_complex()):
            return t
        signs = torch.randint(0, 2, t.shape, generator=gen).to(t.device, torch.float64 if t.is_complex() else t.dtype)
        return t * (1 + relative * (2 * signs - 1))

    def hook(_module: Any, _inputs: Any, output: Any) -> Any:
        if isinstance(output, (tuple, list)):
            return type(output)(rounded(o) for o in output)
        return rounded(output)

    for sub in module.modules():
        if sub is not module:
            sub.register_forward_hook(hook)


def module_bytes(cls: type, args: list, kwargs: dict, cast: Callable[[Any], Any]) -> int:
    """What cls(*args, **kwargs), a torch.nn module, allocates: its
    parameters and buffers, counted on a copy built on the meta device
    (which allocates nothing); 0 where that copy cannot be built."""
    import torch

    try:
        with torch.device("meta"):
            probe = cls(*args, **kwargs)
    except Exception:  # noqa: BLE001 - the real construction reports it
        return 0
    from torch.nn.parameter import is_lazy

    return sum(t.numel() * cast(t.dtype).itemsize for t in (*probe.parameters(), *probe.buffers()) if not is_lazy(t))


# The sparse layouts replay builds, with the Tensor method that makes one from dense.
SPARSE_LAYOUTS = {"torch.sparse_coo": "to_sparse", "torch.sparse_csr": "to_sparse_csr",
                  "torch.sparse_csc": "to_sparse_csc"}

# Of the values drawn for a tensor with sentinels (a few negative values apart
# from the range of the rest, as an ignore_index of -100), this share.
SENTINEL_SHARE = 0.125


def draw_floats(profile: Any, numel: int, gen: Any) -> Any:
    """`numel` float64 values inside what the floating argument profiled
    (_C.ValueProfile, float_ranges) held: uniform over its finite values'
    range, so that their sign, and [0, 1] for probabilities, hold; where it
    held no finite value, the non-finite one it held."""
    import torch

    if profile.finite:
        return profile.fmin + (profile.fmax - profile.fmin) * torch.rand(numel, dtype=torch.float64, generator=gen)
    held = next(v for v, f in ((math.nan, profile.nan), (math.inf, profile.posinf), (-math.inf, profile.neginf)) if f)
    return torch.full((numel,), held, dtype=torch.float64)


def draw(profile: Any, numel: int, gen: Any, keep_sum: bool = False) -> Any:
    """`numel` int64 values the argument profiled (_C.ValueProfile) could
    have held: its distinct values where they are known; else the range of
    its non-negative values with its few negative ones (sentinels) among
    them; else its range. A profile in order gives values in order, from its
    smallest to its largest (offsets start at 0). With `keep_sum`, where
    every call's values added up to one sum (a tie to another argument's
    size: segment lengths, a mask's count), the values then add up to it
    too, moved inside the range (the distinct values may then not hold)."""
    import torch

    def randint(lo: int, hi: int) -> Any:
        return torch.randint(lo, hi + 1, (numel,), generator=gen, dtype=torch.int64)

    if not profile.many:
        pool = torch.tensor(profile.distinct, dtype=torch.int64)
        values = pool[randint(0, len(pool) - 1)]
    elif profile.negatives and not profile.many_negatives and profile.nonneg_min <= profile.max:
        values = randint(profile.nonneg_min, profile.max)
        sentinels = torch.tensor(profile.negatives, dtype=torch.int64)
        chosen = torch.rand(numel, generator=gen) < SENTINEL_SHARE
        values[chosen] = sentinels[randint(0, len(sentinels) - 1)][chosen]
    else:
        values = randint(profile.min, profile.max)
    if profile.sorted and numel:
        values = values.sort().values
        values[0], values[-1] = profile.min, profile.max
    if keep_sum and profile.same_sum and numel:
        meet_sum(values, profile, gen)
    return values


def meet_sum(values: Any, profile: Any, gen: Any) -> None:
    """Moves `values` (in place, inside [min, max], the ends of sorted ones
    kept) until they add up to the profile's sum, the change spread over
    them in a random order; ValueError where they cannot. Values so large
    that their sum could pass int64 (random 64-bit numbers, not lengths or
    counts) are left as drawn: the arithmetic would wrap."""
    import torch

    if max(abs(profile.min), abs(profile.max)) * len(values) >= 2 ** 62:
        return
    free = torch.arange(1, len(values) - 1) if profile.sorted else torch.arange(len(values))
    need = profile.sum - int(values.sum())
    if need == 0:
        return
    order = free[torch.randperm(len(free), generator=gen)]
    room = (profile.max - values[order]) if need > 0 else (values[order] - profile.min)
    if int(room.sum()) < abs(need):
        raise ValueError(f"its values cannot add up to the sum of its profile, {profile.sum}: {len(values)} "
                         f"values in [{profile.min}, {profile.max}]{' in order' if profile.sorted else ''} "
                         "(api_value_ranges.yaml)")
    before = room.cumsum(0) - room  # the room of the values moved before each one
    step = (abs(need) - before).clamp(min=0).minimum(room)
    values[order] += step if need > 0 else -step
    if profile.sorted:
        values[:] = values.sort().values


# Calls that stand for a value replay cannot rebuild (it skips the config).
PLACEHOLDERS = ("Opaque", MODULE_PLACEHOLDER, "torch.SymInt", "torch.SymFloat", "torch.SymBool")


def placeholder_reason(c: Call, path: str, layer: str = "module", written: Tuple[str, ...] = ("torch.nn",)) -> str:
    """Why replay skips a config with the placeholder `c` at `path`: a
    `layer` (the framework's word) of one of the namespaces whose layers
    the tracer writes as their constructor calls (`written`), or another."""
    what = c.args[0] if len(c.args) == 1 and isinstance(c.args[0], str) else ""
    shown = f'{c.name}("{what}")' if what else repr(c)
    if c.name == "Opaque":
        return f"{path} is {shown}: the tracer wrote this value by its type only, it cannot be rebuilt"
    namespace = next((n for n in written if what.startswith(n + ".")), None)
    if namespace:
        return (f"{path} is {shown}: the tracer could not read this {namespace} {layer}'s constructor arguments "
                "back, it cannot be rebuilt")
    framework = written[0].split(".")[0]
    whose = f"of {framework}'s, outside {' and '.join(written)}:" if what.startswith(framework + ".") else \
        "of the program's own:"
    return (f"{path} is {shown}, a {layer} {whose} only {' and '.join(written)}'s {layer}s are written as their "
            "constructor calls, it cannot be rebuilt")


def _leaves(v: Any, path: str) -> Iterator[Tuple[str, Any]]:
    """The tensors, symbols and calls inside a parsed value (calls' own
    arguments too), with their paths as Builder.build names them."""
    if isinstance(v, (TensorSpec, Symbol)):
        yield path, v
    elif isinstance(v, (list, tuple)):
        for i, x in enumerate(v):
            yield from _leaves(x, f"{path}[{i}]")
    elif isinstance(v, dict):
        for i, (k, x) in enumerate(v.items()):
            yield from _leaves(k, f"{path}.keys[{i}]")
            yield from _leaves(x, f"{path}[{k!r}]")
    elif isinstance(v, slice):
        for x in (v.start, v.stop, v.step):
            yield from _leaves(x, path)
    elif isinstance(v, Call):
        yield path, v
        for i, x in enumerate(v.args):
            yield from _leaves(x, f"{path}.args[{i}]")
        for k, x in v.kwargs.items():
            yield from _leaves(x, f"{path}.{k}")


def _arguments(args: list, kwargs: dict) -> Iterator[Tuple[str, Any]]:
    """_leaves of a line's arguments."""
    for i, a in enumerate(args):
        yield from _leaves(a, f"args[{i}]")
    for k, v in kwargs.items():
        yield from _leaves(v, f"kwargs.{k}")


def _callable_name(c: Call) -> str:
    if len(c.args) != 1 or c.kwargs or not isinstance(c.args[0], str):
        raise Invalid("Callable(...) takes one name, as a string", 1)
    return c.args[0]


def parse(config: Config) -> Tuple[str, list, dict]:
    """(api, args, kwargs) of a config line; raises Invalid."""
    if config.error:
        raise Invalid(config.error, config.column)
    try:
        return parse_call(config.text, path=config.file, lineno=config.line)
    except ConfigSyntaxError as e:
        raise Invalid(e.message, e.column) from None


def build(config: Config, api: str, args: list, kwargs: dict, options: ReplayOptions, resolver: Resolver,
          cast: Optional[Callable[[Any], Any]] = None, perturb: Optional[Callable[[str, Any], None]] = None,
          kind: type = None, device: Optional[str] = None) -> Tuple[Callable, list, dict]:
    """The callable `api` names and the arguments, built on `device`
    (options.device) from options.seed (floating values cast, if `cast`:
    see Builder) by a Builder of `kind` (Builder; PaddleBuilder for
    Paddle's); raises Invalid, Skip or BuildError. Every name of the line
    passes the policy (unless options.allow_unsafe) and every tensor's
    description is checked before anything is built, the built arguments
    then by the builder's preconditions. The tensors may need
    options.max_bytes in all (None: half of available_bytes(device) now)."""
    import torch

    device = device or options.device
    b = (kind or Builder)(resolver, device, options.ranges.get(config.text, {}),
                          torch.Generator().manual_seed(options.seed), config.text, safe=not options.allow_unsafe,
                          cast=cast, perturb=perturb)
    b.input_dtypes = {leaf.dtype for _, leaf in _arguments(args, kwargs) if isinstance(leaf, TensorSpec)}
    func = b.resolve(api)
    if api.endswith(".__get__") or api.endswith(".__set__"):
        raise Skip("a property accessor")
    if isinstance(func, type) and not resolver.constructible(func):
        raise Skip(f"{api} is a class this replay does not construct")
    b.check_names(args, kwargs)
    b.check_tensors(args, kwargs, byte_limit(options.max_bytes, device))
    b.requires_grad = api in b.NEEDS_GRAD
    built_args = [b.build(a, f"args[{i}]") for i, a in enumerate(args)]
    built_kwargs = {k: b.build(v, f"kwargs.{k}") for k, v in kwargs.items()}
    if b.safe:
        why = b.preconditions(api, func, built_args, built_kwargs)
        if why:
            raise Invalid(why, 1)
    b.built(func, built_args, built_kwargs)
    return func, built_args, built_kwargs


def output_bytes(func: Any, args: list, kwargs: dict) -> Optional[int]:
    """What the outputs of an operator call or a C function of torch's take
    (a factory's sizes, a repeat's count), from the same call made on the
    meta device, which allocates nothing; None where that cannot be known
    (a Python function, an operator without a meta kernel, a size that
    depends on values, a meta kernel that would import the compiler:
    see without_compiler)."""
    import types
    import warnings

    import torch

    from .compare import tensor_leaves

    if not isinstance(func, (torch._ops.OpOverload, torch._ops.OpOverloadPacket, types.BuiltinFunctionType,
                             types.MethodDescriptorType)):
        return None

    def meta(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return v.detach().to("meta")
        if isinstance(v, torch.device) or isinstance(v, str) and DEVICE_NAME.fullmatch(v):
            return torch.device("meta")
        if isinstance(v, (list, tuple)):
            return type(v)(meta(x) for x in v)
        return v

    try:
        with torch.device("meta"), torch.no_grad(), warnings.catch_warnings(), without_compiler():
            warnings.simplefilter("ignore")
            out = func(*[meta(a) for a in args], **{k: meta(v) for k, v in kwargs.items()})
    except Exception:  # noqa: BLE001 - not known: the real call decides
        return None
    leaves = [t for _, t in tensor_leaves(out, "output")]
    if any(t.device.type != "meta" for t in leaves):
        return None
    return sum(t.numel() * t.element_size() for t in leaves)


# A string that names a device ("cpu", "cuda:1"), as Tensor.to takes one.
DEVICE_NAME = re.compile(r"(cpu|cuda|meta|mps|xpu|hpu|mtia|privateuseone)(:\d+)?")

# What a meta kernel written in Python may import on its first call
# (torch._compile's _disable_dynamo imports torch._dynamo, which sets up
# Inductor's cache directory): replay runs no compiler unless a check asks.
COMPILER_MODULES = ("torch._dynamo", "torch._inductor")


@contextlib.contextmanager
def without_compiler() -> Iterator[None]:
    """While inside, importing COMPILER_MODULES (not imported yet) raises
    ImportError: a meta probe that needs them fails, and says nothing."""
    import importlib.abc

    class Refuse(importlib.abc.MetaPathFinder):
        def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
            if name.startswith(COMPILER_MODULES) and name not in sys.modules:
                raise ImportError(f"replay does not import {name} to count a call's outputs")
            return None

    finder = Refuse()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


def prepare(config: Config, options: ReplayOptions = ReplayOptions(),
            resolver: Optional[Resolver] = None) -> Tuple[str, Callable, list, dict]:
    """(api, callable, args, kwargs) of a config; raises Invalid, Skip or BuildError."""
    api, args, kwargs = parse(config)
    return (api, *build(config, api, args, kwargs, options, resolver or Resolver()))
