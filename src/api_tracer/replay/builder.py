"""A config line to a call: `parse` reads it, `build` resolves its API and
checks every name (the framework's policy) and tensor description (sizes,
bytes) before a `Builder` makes the arguments, then the framework's
preconditions check them; `prepare` does both.

Every framework's values are drawn here, with torch (random values of the
recorded shape, dtype and strides; integer tensors from their value
profile, draw.py; Filled(...) tensors filled), and each framework's
Builder (its ReplayFramework.builder) makes them its own: torch's keeps
them and builds torch.nn modules, Paddle's converts them. A check's
reference side hands the builder a `Perturbation` (the error model's
probes, judge/error_model.py), which sees every floating value made."""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Dict, Optional, Tuple

from ..config import ConfigSyntaxError, parse_call
from ..formats.configs import Config
from ..util.units import fmt_bytes
from ..values import (
    EVAL_MODE,
    FILLED,
    MODULE_PLACEHOLDER,
    OPAQUE,
    PARTIAL,
    Call,
    Symbol,
    TensorSpec,
    argument_path,
    call_argument_path,
    call_keyword_path,
    item_path,
    key_path,
    keyword_path,
    value_path,
    walk,
)
from .draw import argument_domains, draw, draw_floats, impose, region_floats
from .memory import byte_limit, contiguous_strides, storage_numel
from .options import Job, ReplayOptions
from .results import BuildError, Invalid, Refused, Skip

BUILTIN_TYPES = {"float": float, "int": int, "bool": bool, "complex": complex}

# Calls that stand for a value replay cannot rebuild (it skips the config).
PLACEHOLDERS = (OPAQUE, MODULE_PLACEHOLDER, "torch.SymInt", "torch.SymFloat", "torch.SymBool")

STORAGE = "Storage"  # Storage(48), Storage(48, dtype=torch.float32): a storage by its size in bytes (docs/format.md)

# The sparse layouts replay builds, with the Tensor method that makes one from dense.
SPARSE_LAYOUTS = {
    "torch.sparse_coo": "to_sparse",
    "torch.sparse_csr": "to_sparse_csr",
    "torch.sparse_csc": "to_sparse_csc",
}


class Perturbation:
    """What a side may have done to the values its builder makes, as they
    are made: the error model's probes (judge/error_model.py) move them by
    a unit in their last place. This one leaves every value be."""

    def tensor(self, path: str, storage: Any) -> None:
        """A floating tensor made (its storage's elements, to change in
        place; `storage.logical` is the tensor), or a floating parameter or
        buffer of a layer made (`path` then names it inside the layer)."""

    def scalar(self, path: str, value: float) -> float:
        """A float scalar of the line: what the call gets instead."""
        return value

    def layer(self, path: str, round_outputs: Callable[[float, int], None]) -> None:
        """A layer made that holds layers: round_outputs(relative, seed)
        moves each of its sublayers' floating outputs by `relative` at
        random signs (drawn from `seed`), as a rounding at each would (the
        framework's forward hooks)."""

    # What a backward reads of what the forward saved, given the saved
    # tensor (the framework's saved-tensor hooks, where it has them); None:
    # as saved.
    saved: Optional[Callable[[Any], Any]] = None


UNPERTURBED = Perturbation()


class Builder:
    """Config values to the objects a framework's call takes. `cast`, when
    given, maps the dtype of every floating or complex value made (tensors,
    layers' parameters and buffers) to the dtype it is made in; the values
    are drawn in the recorded dtype first, so a cast side holds the very
    same numbers. A framework's builder (its ReplayFramework.builder)
    subclasses this one: what its constants are, which layers it makes and
    how, how its tensors are made from the ones drawn here."""

    NEEDS_GRAD: frozenset = frozenset()  # APIs whose first tensor must require grad to be called at all
    LAYER = "layer"  # what the framework calls a layer, in messages
    WRITTEN: Tuple[str, ...] = ()  # the namespaces whose layers the tracer writes as their constructor calls

    def __init__(
        self,
        framework: Any,
        device: str,
        ranges: Dict[str, Any],
        generator: Any,
        line: str,
        safe: bool = True,
        cast: Optional[Callable[[Any], Any]] = None,
        perturb: Optional[Perturbation] = None,
    ) -> None:
        self.framework, self.r = framework, framework.resolver
        self.device, self.ranges, self.gen, self.line = device, ranges, generator, line
        self.safe = safe  # the replay policy holds
        self.cast = cast or (lambda dtype: dtype)
        self.perturb = perturb or UNPERTURBED
        self.input_dtypes: set = set()  # the dtypes of the line's tensors, by name ("float32")
        self.requires_grad = False
        self.limit: Optional[int] = None  # the bytes the arguments may take (--max-bytes)
        self.spent = 0  # what the arguments made so far take
        self.domains = argument_domains(line.partition("(")[0])  # its API's arguments' known ones, by path
        self.region = ""  # the judge's draw over a region of values (draw.REGIONS), or "" for the usual one

    # -- what the framework says ------------------------------------------------

    def allowed(self, name: str, obj: Any = None) -> None:
        """Raises Refused if the framework's policy refuses `name`
        (resolved to `obj`)."""
        why = self.framework.refusal(name, obj) if self.safe else None
        if why:
            raise Refused(why, self.line.find(name) + 1 or 1)

    def resolve(self, name: str) -> Any:
        """The callable `name` names, the policy asked before and after
        resolving (an operator's name must resolve to an operator)."""
        self.allowed(name)
        obj = self.framework.resolve(name, self.line)
        self.allowed(name, obj)
        return obj

    def symbol(self, name: str) -> Any:
        """The constant a bare name names (a dtype, a layout, a class): one
        of the framework's; Invalid for anything else."""
        raise NotImplementedError

    def cast_symbol(self, obj: Any) -> Any:
        """A constant of the line as this side takes it: a dtype argument
        naming an input's floating dtype follows the inputs where they are
        cast (dtype=torch.float32 on float64 copies)."""
        return obj

    def layer_type(self) -> type:
        """The framework's base class of layers (what Eval(...) holds)."""
        raise NotImplementedError

    def construct(self, target: Any, name: str, args: list, kwargs: dict, path: str) -> Any:
        """A value made by calling `target` (a class the resolver allows)."""
        return target(*args, **kwargs)

    def preconditions(self, api: str, func: Any, args: list, kwargs: dict) -> str:
        """What is wrong with the built arguments of a call whose kernel
        would not check them; "" where nothing is."""
        return self.framework.preconditions(api, func, args, kwargs)

    def built(self, func: Any, args: list, kwargs: dict) -> None:
        """The arguments built: what the outputs will take is charged too,
        where the framework can know it before the call."""

    # -- checks before anything is built ----------------------------------------

    def check_names(self, args: list, kwargs: dict) -> None:
        """Every name in the arguments that replay calls or hands to the API
        (constructor calls, Callable(...), classes named as constants) is
        checked against the policy, and numpy's names are numpy scalar
        types, before any argument is built."""
        for _, leaf in walk(args, kwargs):
            if isinstance(leaf, Symbol) and leaf.name not in BUILTIN_TYPES:
                if isinstance(self.symbol(leaf.name), type) and not leaf.name.startswith("numpy."):
                    self.allowed(leaf.name)  # (a numpy scalar type, numpy.int64, is data: a dtype)
            elif isinstance(leaf, Call) and leaf.name == "Callable":
                self.resolve(_callable_name(leaf))
            elif isinstance(leaf, Call) and leaf.name.startswith("numpy.") and leaf.name != "numpy.ndarray":
                self.numpy_scalar(leaf.name)
            elif (
                isinstance(leaf, Call)
                and leaf.name not in PLACEHOLDERS + (EVAL_MODE, FILLED, PARTIAL, STORAGE)
                and not leaf.name.startswith("numpy.")
            ):
                self.allowed(leaf.name)

    def numpy_scalar(self, name: str) -> type:
        """The numpy scalar type `numpy.NAME` names (numpy.float32, ...)."""
        import numpy as np

        scalar = getattr(np, name[len("numpy.") :], None)
        if not (isinstance(scalar, type) and issubclass(scalar, np.generic)):
            raise Invalid(f"{name!r} is not a numpy scalar type", self.line.find(name) + 1)
        return scalar

    def check_tensors(self, args: list, kwargs: dict, max_bytes: Optional[int]) -> None:
        """The tensors' descriptions, before any is made: a known dtype and
        sizes of at least 0 (else invalid); -1, the size the tracer writes for
        a symbolic one, skips the config, as do tensors that need more than
        max_bytes in all (in the dtype they are made in)."""
        specs = [(path, leaf) for path, leaf in walk(args, kwargs) if isinstance(leaf, TensorSpec)]
        for path, spec in specs:
            self.dtype(spec)
            bad = [d for d in spec.shape if d < -1]
            if bad:
                raise Invalid(
                    f"{path}: Tensor({list(spec.shape)}, ...) has the size {bad[0]}: a size is at least 0, "
                    "or -1 for a symbolic one",
                    self.line.find(str(bad[0])) + 1 or 1,
                )
        if any(-1 in spec.shape for _, spec in specs):
            raise Skip("a tensor with a symbolic size")
        self.limit = max_bytes
        needed = sum(self.tensor_bytes(spec) for _, spec in specs)
        for _, leaf in walk(args, kwargs):
            if isinstance(leaf, Call) and leaf.name == "numpy.ndarray":
                needed += self.ndarray_bytes(leaf)
        self.charge(needed, "its tensor arguments")

    def charge(self, n: int, what: str) -> None:
        """Counts `n` more bytes of arguments, before they are made; Skip
        past the limit."""
        self.spent += n
        if self.limit is not None and self.spent > self.limit:
            raise Skip(
                f"{what} need {self.spent} bytes ({fmt_bytes(self.spent, digits=1)}), more than the limit of "
                f"{self.limit} bytes ({fmt_bytes(self.limit, digits=1)}; --max-bytes)"
            )

    def tensor_bytes(self, spec: TensorSpec) -> int:
        """What making the tensor `spec` describes allocates: its storage as
        its strides lay it out, or as large as it says (a view into a larger
        one); a sparse or quantized one is made dense first, whole, whatever
        strides it says it has."""
        itemsize = self.cast(self.dtype(spec)).itemsize
        if spec.layout in SPARSE_LAYOUTS or spec.qscheme is not None:
            # the dense tensor, and the places drawn (int64) or the float32 values quantized
            return math.prod(spec.shape) * (itemsize + (8 if spec.layout in SPARSE_LAYOUTS else 4))
        if spec.storage_size is not None:
            return spec.storage_size * itemsize
        return storage_numel(spec.shape, spec.stride) * itemsize

    def ndarray_bytes(self, c: Call) -> int:
        """What numpy.ndarray(shape, dtype) allocates."""
        import numpy as np

        if (
            len(c.args) != 2
            or c.kwargs
            or not isinstance(c.args[0], list)
            or not isinstance(c.args[1], str)
            or not all(isinstance(d, int) and d >= 0 for d in c.args[0])
        ):
            raise Invalid(
                "numpy.ndarray(...) takes a list of sizes (0 or more) and a dtype's name",
                self.line.find("numpy.ndarray") + 1,
            )
        try:
            itemsize = np.dtype(c.args[1]).itemsize
        except TypeError:
            raise Invalid(f"unknown numpy dtype {c.args[1]!r}", self.line.find(c.args[1]) + 1) from None
        return math.prod(c.args[0]) * itemsize

    def dtype(self, spec: TensorSpec) -> Any:
        """The torch dtype a tensor description names (every framework's
        tensors are drawn in torch first)."""
        import torch

        dtype = getattr(torch, spec.dtype, None)
        if not isinstance(dtype, torch.dtype):
            raise Invalid(f"unknown dtype {spec.dtype!r}", self.line.find(spec.dtype) + 1 or 1)
        return dtype

    # -- making the values ---------------------------------------------------

    def build(self, v: Any, path: str) -> Any:
        """The value `v` describes; an exception that building raises comes
        out as a BuildError naming the argument (Invalid and Skip as they are)."""
        try:
            return self._build(v, path)
        except (Invalid, Refused, Skip, BuildError):
            raise
        except Exception as e:
            raise BuildError(path, e) from e

    def _build(self, v: Any, path: str) -> Any:
        if isinstance(v, TensorSpec):
            return self.tensor(v, path)
        if isinstance(v, list):
            return [self.build(x, item_path(path, i)) for i, x in enumerate(v)]
        if isinstance(v, tuple):
            return tuple(self.build(x, item_path(path, i)) for i, x in enumerate(v))
        if isinstance(v, dict):
            return {
                self.build(k, key_path(path, i)): self.build(x, value_path(path, k))
                for i, (k, x) in enumerate(v.items())
            }
        if isinstance(v, slice):
            return slice(*(self.build(x, call_argument_path(path, i)) for i, x in enumerate((v.start, v.stop, v.step))))
        if isinstance(v, Symbol):
            return BUILTIN_TYPES[v.name] if v.name in BUILTIN_TYPES else self.cast_symbol(self.symbol(v.name))
        if isinstance(v, Call):
            return self.call(v, path)
        if isinstance(v, float):
            return self.perturb.scalar(path, v)
        return v

    def tensor(self, spec: TensorSpec, path: str, fill: Any = None) -> Any:
        """The torch tensor `spec` describes, its values drawn (integers from
        the value profile at `path`, where the trace kept one), or every
        element `fill` where given (Filled(...))."""
        import torch

        if fill is not None and (spec.layout not in (None, "torch.strided") or spec.qscheme is not None):
            raise Invalid(
                f"{FILLED}(...) holds a strided tensor, not a {spec.layout or spec.qscheme} one",
                self.line.find(FILLED) + 1,
            )
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
        domain = self.domains.get(path) if fill is None else None  # what the API takes there, where known
        if fill is not None:  # in the recorded dtype (a float32 subnormal stays one on a float64 side)
            base = torch.full((numel,), fill, dtype=dtype)
        elif dtype.is_floating_point and self.region and not (domain and domain.draw):
            base = region_floats(self.region, profile, numel, self.gen, dtype).to(dtype)
        elif dtype.is_floating_point and ((profile is not None and profile.floating) or (domain and domain.draw)):
            base = draw_floats(profile, numel, self.gen, domain).to(dtype)
        elif dtype.is_floating_point and dtype.itemsize == 1:  # the float8 types: no random kernel of their own
            base = torch.randn(numel, generator=self.gen).to(dtype)
        elif dtype.is_floating_point or dtype.is_complex:
            base = torch.randn(numel, dtype=dtype, generator=self.gen)
        elif profile is not None:  # (the sum kept: each element one of the storage's, where it covers it once)
            covered = spec.storage_size is None and numel == math.prod(shape)
            base = draw(profile, numel, self.gen, keep_sum=covered).to(dtype)
        elif dtype == torch.bool:
            base = torch.randint(0, 2, (numel,), generator=self.gen).bool()
        elif domain and domain.ints:  # a count or a divisor, say, drawn inside what the API takes
            base = domain.ints(numel, self.gen).to(dtype)
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
        impose(domain, t, dtype)  # a structure no profile keeps (order, positive-definiteness), where the API asks it
        if self.perturb is not UNPERTURBED and (dtype.is_floating_point or dtype.is_complex):
            storage = t.as_strided((numel,), (1,), 0)
            storage.logical = t.detach()  # (the error model reads the elements in the tensor's own order)
            self.perturb.tensor(path, storage)
        if (spec.requires_grad or self.requires_grad) and (dtype.is_floating_point or dtype.is_complex):
            t.requires_grad_(True)
        return t

    def sparse(self, spec: TensorSpec) -> Any:
        """A sparse tensor of the recorded layout with `nnz` specified
        elements, at random places, of random values."""
        import torch

        shape, numel = list(spec.shape), math.prod(spec.shape)
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
        import torch

        qscheme, dtype = self.symbol(spec.qscheme), self.dtype(spec)
        values = torch.randn(list(spec.shape), generator=self.gen)
        if qscheme in (torch.per_tensor_affine, torch.per_tensor_symmetric):
            scale = spec.scale if spec.scale is not None else 0.1
            t = torch.quantize_per_tensor(values, scale, spec.zero_point or 0, dtype)
        else:
            axis = spec.axis if spec.axis is not None else 0
            channels = spec.shape[axis] if 0 <= axis < len(spec.shape) else 0
            t = torch.quantize_per_channel(
                values,
                torch.full((channels,), 0.1, dtype=torch.float64),
                torch.zeros(channels, dtype=torch.int64),
                axis,
                dtype,
            )
        return t.to(self.device)

    def storage(self, c: Call) -> Any:
        """Storage(nbytes[, dtype=...]): an untyped storage of that many
        bytes, zeros, on the replay's device; where its elements' dtype is
        known (a typed one's, or the line's tensors' one dtype) and this side
        makes them in another, as many elements of that."""
        import torch

        nbytes, held = c.args[0] if len(c.args) == 1 else None, c.kwargs.get("dtype")
        if type(nbytes) is not int or nbytes < 0 or set(c.kwargs) - {"dtype"}:
            raise Invalid(f"{STORAGE}(...) takes its size in bytes (and dtype=)", self.line.find(STORAGE) + 1)
        one = getattr(torch, min(self.input_dtypes), None) if len(self.input_dtypes) == 1 else None
        held = self.symbol(held.name) if isinstance(held, Symbol) else one
        if isinstance(held, torch.dtype) and nbytes % held.itemsize == 0:
            nbytes = nbytes // held.itemsize * self.cast(held).itemsize
        self.charge(nbytes, "its storage arguments")
        return torch.zeros(nbytes, dtype=torch.uint8, device=self.device).untyped_storage()

    def partial(self, c: Call, path: str) -> Any:
        """functools.partial(callable, *args, **kwargs): its callable (a
        class the policy allows, or Callable(...), resolved through it)
        with the rest bound."""
        if not c.args or not isinstance(c.args[0], (Symbol, Call)):
            raise Invalid(
                f'{PARTIAL}(...) takes a callable first: a class, or Callable("name")', self.line.find(PARTIAL) + 1
            )
        func = self.build(c.args[0], call_argument_path(path, 0))
        if not callable(func):
            raise Invalid(f"{PARTIAL}(...) takes a callable first, not {c.args[0]!r}", self.line.find(PARTIAL) + 1)
        args = [self.build(a, call_argument_path(path, i)) for i, a in enumerate(c.args[1:], 1)]
        return functools.partial(
            func, *args, **{k: self.build(v, call_keyword_path(path, k)) for k, v in c.kwargs.items()}
        )

    def placeholder(self, c: Call, path: str) -> str:
        """Why a placeholder `c` at `path` skips the config."""
        return placeholder_reason(c, path, self.LAYER, self.WRITTEN)

    def call(self, c: Call, path: str) -> Any:
        name = c.name
        if name in (OPAQUE, MODULE_PLACEHOLDER):
            raise Skip(self.placeholder(c, path))
        if name == "Callable":
            return self.resolve(_callable_name(c))
        if name == PARTIAL:
            return self.partial(c, path)
        if name == EVAL_MODE:
            if len(c.args) != 1 or c.kwargs or not isinstance(c.args[0], Call):
                raise Invalid(
                    f"{EVAL_MODE}(...) takes one {self.LAYER}'s constructor call", self.line.find(EVAL_MODE) + 1
                )
            layer = self.build(c.args[0], call_argument_path(path, 0))
            if not isinstance(layer, self.layer_type()):
                raise Invalid(
                    f"{EVAL_MODE}(...) holds {c.args[0].name}(...), which does not build a {self.LAYER}",
                    self.line.find(EVAL_MODE) + 1,
                )
            layer.eval()
            return layer
        if name == FILLED:
            if (
                len(c.args) != 2
                or c.kwargs
                or not isinstance(c.args[0], TensorSpec)
                or not isinstance(c.args[1], (bool, int, float, complex))
            ):
                raise Invalid(
                    f"{FILLED}(...) takes a tensor's description and the value of its elements",
                    self.line.find(FILLED) + 1,
                )
            return self.tensor(c.args[0], call_argument_path(path, 0), fill=c.args[1])
        if name in ("torch.SymInt", "torch.SymFloat", "torch.SymBool"):
            raise Skip("a symbolic argument")
        if name == STORAGE:
            return self.storage(c)
        args = [self.build(a, call_argument_path(path, i)) for i, a in enumerate(c.args)]
        kwargs = {k: self.build(v, call_keyword_path(path, k)) for k, v in c.kwargs.items()}
        if name == "numpy.ndarray":
            import numpy as np

            return np.zeros(args[0], dtype=np.dtype(args[1]))
        if name.startswith("numpy."):
            return self.numpy_scalar(name)(*args)
        target = self.resolve(name)
        if self.r.constructible(target):
            return self.construct(target, name, args, kwargs, path)
        raise Skip(f"argument {name}(...) is not one this replay rebuilds")


def placeholder_reason(c: Call, path: str, layer: str = "module", written: Tuple[str, ...] = ("torch.nn",)) -> str:
    """Why replay skips a config with the placeholder `c` at `path`: a
    `layer` (the framework's word) of one of the namespaces whose layers
    the tracer writes as their constructor calls (`written`), or another."""
    what = c.args[0] if len(c.args) == 1 and isinstance(c.args[0], str) else ""
    shown = f'{c.name}("{what}")' if what else repr(c)
    if c.name == OPAQUE:
        return f"{path} is {shown}: the tracer wrote this value by its type only, it cannot be rebuilt"
    namespace = next((n for n in written if what.startswith(n + ".")), None)
    if namespace:
        return (
            f"{path} is {shown}: the tracer could not read this {namespace} {layer}'s constructor arguments "
            "back, it cannot be rebuilt"
        )
    framework = written[0].split(".")[0]
    whose = (
        f"of {framework}'s, outside {' and '.join(written)}:"
        if what.startswith(framework + ".")
        else "of the program's own:"
    )
    return (
        f"{path} is {shown}, a {layer} {whose} only {' and '.join(written)}'s {layer}s are written as their "
        "constructor calls, it cannot be rebuilt"
    )


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


def build(
    job: Job,
    cast: Optional[Callable[[Any], Any]] = None,
    perturb: Optional[Perturbation] = None,
    device: Optional[str] = None,
) -> Tuple[Callable, list, dict]:
    """The callable the job's API names and its arguments, built on
    `device` (options.device) from options.seed (floating values cast, if
    `cast`: see Builder) by the framework's builder, a counterpart's made
    its call's (job.adapt); raises Invalid, Refused, Skip or BuildError.
    Names pass the policy (unless allow_unsafe) and tensors' descriptions
    (max_bytes in all) first, the built arguments the preconditions."""
    import torch

    options, framework, api, args, kwargs = job.options, job.framework, job.api, job.args, job.kwargs
    device = device or options.device
    b = framework.builder(
        framework,
        device,
        options.ranges.get(job.config.text, {}),
        torch.Generator().manual_seed(options.seed),
        job.config.text,
        safe=not options.allow_unsafe,
        cast=cast,
        perturb=perturb,
    )
    b.input_dtypes = {leaf.dtype for _, leaf in walk(args, kwargs) if isinstance(leaf, TensorSpec)}
    func = b.resolve(api)
    if api.endswith(".__get__") or api.endswith(".__set__"):
        raise Skip("a property accessor")
    if isinstance(func, type) and not b.r.constructible(func):
        raise Skip(f"{api} is a class this replay does not construct")
    b.check_names(args, kwargs)
    b.check_tensors(args, kwargs, byte_limit(options.max_bytes, framework.memory_device(device)))
    b.requires_grad = api in b.NEEDS_GRAD
    b.region = job.region
    built_args = [b.build(a, argument_path(i)) for i, a in enumerate(args)]
    built_kwargs = {k: b.build(v, keyword_path(k)) for k, v in kwargs.items()}
    if job.adapt:
        built_args, built_kwargs = job.adapt(built_args, built_kwargs)
    if b.safe:
        why = b.preconditions(api, func, built_args, built_kwargs)
        if why:
            raise Invalid(why, 1)
    b.built(func, built_args, built_kwargs)
    return func, built_args, built_kwargs


def prepare(config: Config, options: ReplayOptions = ReplayOptions()) -> Tuple[str, Callable, list, dict]:
    """(api, callable, args, kwargs) of a config, by the framework that
    replays it (framework.py); raises Invalid, Refused, Skip or BuildError."""
    from .framework import line_framework, replay_framework

    api, args, kwargs = parse(config)
    return (api, *build(Job(config, api, args, kwargs, options, replay_framework(line_framework(api, options)))))
