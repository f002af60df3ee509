"""Paddle's replay (replay/framework.py: `ReplayFramework`): `PaddleReplay`
and its parts.

- `PaddleResolver`: names to objects, walking from `paddle` through
  Paddle's own objects (its modules and classes); a dunder only as a Tensor
  operator (``paddle.Tensor.__add__``). A name under a module the user
  imported on the command line (``--import MODULE``) walks from that
  module, through its own objects: the user's own APIs.
- `PaddleBuilder`: the arguments, built as torch's replay builds them (the
  same seed, the same draws, value profiles, Filled, strides: Builder),
  each tensor then converted to a paddle.Tensor through numpy (bfloat16
  and float8 by their bits; requires_grad as stop_gradient=False; strides
  by paddle.as_strided over a storage of the recorded size); dtypes,
  places, ParamAttr, initializers and layers made by Paddle (a layer's
  parameters drawn by Paddle's generator, seeded with the replay's seed;
  Eval(...) calls .eval()). A cast (the float64 side of a check) is made
  before the conversion, so both sides hold the very same numbers.
- `PaddleReplay.run_side`: one side of a config: Paddle's global generator seeded with
  the replay's seed (and put back after), grad mode kept, parameter names
  of its own (names_of_its_own), and whether the call drew from the
  generator (a random call: dropout, randn, ...); its output converted
  back to torch tensors through numpy (layers and optimizers as their
  state_dict), so that check.py, compare.py and error_model.py judge it as
  they judge torch's.

Paddle replays on the CPU; its checks are float64, repeat and torch (the
same call made in torch: judge/across.py), each with --backward too
(gradients.py: what a forward saved moved, for the error model, through
Paddle's saved-tensor hooks)."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
import types
from typing import Any, Iterator, List, Optional, Tuple

from ...replay.builder import BUILTIN_TYPES, UNPERTURBED, Builder, build
from ...replay.framework import ReplayFramework
from ...replay.options import Job
from ...replay.resolve import NameResolver, framework_start, user_root, user_start
from ...replay.results import Invalid, Refused, Skip, first_line
from ...replay.side import NoGradient, Outcome
from ...values import Call, Symbol, TensorSpec, call_keyword_path, walk
from . import paddle_module, policy, preconditions
from .gradients import floating_inputs, gradients, require_grad, saved_moved
from .names import COMPLEX, DTYPES, FLOATING
from .tensors import dtype_name, from_numpy, least_precise, paddle_tensors, tensor_to_torch, to_paddle, to_torch

# The Tensor operators a line may name (paddle.Tensor.__add__), where
# paddle.Tensor has them.
TENSOR_OPERATORS = frozenset(
    f"__{name}__"
    for name in (
        "add",
        "radd",
        "iadd",
        "sub",
        "rsub",
        "isub",
        "mul",
        "rmul",
        "imul",
        "truediv",
        "rtruediv",
        "itruediv",
        "floordiv",
        "rfloordiv",
        "ifloordiv",
        "mod",
        "rmod",
        "imod",
        "pow",
        "rpow",
        "ipow",
        "matmul",
        "rmatmul",
        "neg",
        "pos",
        "abs",
        "invert",
        "and",
        "rand",
        "iand",
        "or",
        "ror",
        "ior",
        "xor",
        "rxor",
        "ixor",
        "lshift",
        "rlshift",
        "rshift",
        "rrshift",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "getitem",
        "setitem",
        "len",
        "bool",
        "float",
        "int",
        "index",
        "complex",
        "nonzero",
        "div",
        "rdiv",
        "long",
        "array",
        "dlpack",
        "dlpack_device",
    )
)

# APIs whose first tensor must require grad (stop_gradient=False) to be called at all.
NEEDS_GRAD = frozenset({"paddle.Tensor.backward", "paddle.autograd.backward", "paddle.grad"})

# The checks Paddle's configs take (judge/check.py's MODES: the others are torch's).
CHECKS = ("float64", "repeat", "torch")


class PaddleResolver(NameResolver):
    """Names to objects, inside paddle (or the user's imported modules) only."""

    def __init__(self) -> None:
        import torch

        self.torch = torch  # (Builder draws the values with torch)
        self.paddle = paddle_module()
        self.tensor_dunders = {d for d in TENSOR_OPERATORS if callable(getattr(self.paddle.Tensor, d, None))}
        self.places = tuple(
            getattr(self.paddle, n)
            for n in ("CPUPlace", "CUDAPlace", "CUDAPinnedPlace", "XPUPlace", "CustomPlace")
            if isinstance(getattr(self.paddle, n, None), type)
        )

    def start(self, name: str, line: str) -> Tuple[str, Any]:
        return user_start(name) or framework_start(name, "paddle", self.paddle, line)

    def resolve(self, name: str, line: str) -> Any:
        """The callable an API name names."""
        obj = self.walk(name, line, lambda obj, part: obj is self.paddle.Tensor and part in self.tensor_dunders)
        root = self.root_of(name)
        if isinstance(obj, types.ModuleType) or not callable(obj) or not self.owned(obj, root):
            raise Invalid(f"{name!r} is not one of {root}'s callables", line.find(name) + 1 or 1)
        return obj

    def constructible(self, cls: Any) -> bool:
        """Whether replay may call `cls` to build a value (or, as the API,
        call it): places, layers, optimizers and their learning rate
        schedules, ParamAttr, initializers, regularizers and gradient
        clips; and
        paddle.set_grad_enabled, whose change replay undoes."""
        paddle = self.paddle
        if not isinstance(cls, type):
            return False
        if cls in self.places or cls is paddle.set_grad_enabled:  # (its change is undone: grad_mode_kept)
            return True
        bases = (
            paddle.nn.Layer,
            paddle.optimizer.Optimizer,
            paddle.optimizer.lr.LRScheduler,
            paddle.ParamAttr,
            paddle.nn.initializer.Initializer,
            paddle.regularizer.WeightDecayRegularizer,
            paddle.nn.clip.ClipGradBase,
        )
        return issubclass(cls, bases) and (self.inside(cls, "paddle") or user_root(f"{cls.__module__}.x") is not None)


# -- building -------------------------------------------------------------------


class PaddleBuilder(Builder):
    """Builder, for Paddle's configs (see the module)."""

    NEEDS_GRAD = NEEDS_GRAD
    LAYER = "layer"
    WRITTEN = ("paddle.nn", "paddle.vision")

    def symbol(self, name: str) -> Any:
        if name in BUILTIN_TYPES:
            return BUILTIN_TYPES[name]
        if name.startswith("numpy."):  # a numpy scalar type, which Paddle takes as a dtype (type(numpy.int64))
            return self.numpy_scalar(name)
        paddle = self.r.paddle
        obj = self.r.walk(name, self.line)
        if isinstance(obj, paddle.dtype):
            return obj
        root = self.r.root_of(name)
        enum_member = isinstance(getattr(type(obj), "__members__", None), dict) and self.r.inside(type(obj), root)
        if not (isinstance(obj, type) and self.r.inside(obj, root)) and not enum_member:
            raise Invalid(f"the name {name!r} is not a paddle constant", self.line.find(name) + 1)
        return obj

    def cast_name(self, name: str) -> str:
        """The dtype a floating value of dtype `name` is made in on this side."""
        return str(self.cast(getattr(self.r.torch, name))).replace("torch.", "")

    def _build(self, v: Any, path: str) -> Any:
        # A dtype argument naming an input's floating dtype follows the inputs
        # where they are cast (dtype=paddle.float32, or "float32", on float64 copies).
        if isinstance(v, Symbol) and v.name not in BUILTIN_TYPES:
            obj = self.symbol(v.name)
            name = dtype_name(obj) if isinstance(obj, self.r.paddle.dtype) else v.name.replace("numpy.", "")
            if name in FLOATING + COMPLEX and name in self.input_dtypes:
                cast = self.cast_name(name)
                numpy_type = not isinstance(obj, self.r.paddle.dtype)
                return self.numpy_scalar("numpy." + cast) if numpy_type else getattr(self.r.paddle, cast)
            return obj
        if isinstance(v, str) and v in FLOATING + COMPLEX and v in self.input_dtypes:
            return self.cast_name(v)
        return super()._build(v, path)

    def tensor(self, spec: TensorSpec, path: str, fill: Any = None) -> Any:
        if spec.layout not in (None, "torch.strided") or spec.qscheme is not None:
            raise Skip(f"a {spec.layout or spec.qscheme} tensor argument: Paddle's replay builds dense ones only")
        if spec.dtype not in DTYPES:
            raise Skip(f"a {spec.dtype} tensor argument: Paddle has no such dtype")
        return to_paddle(super().tensor(spec, path, fill))

    def layer_type(self) -> type:
        return self.r.paddle.nn.Layer

    def construct(self, target: Any, name: str, args: list, kwargs: dict, path: str) -> Any:
        paddle = self.r.paddle
        if isinstance(target, type) and issubclass(target, paddle.optimizer.Optimizer) and "parameters" in kwargs:
            # (a program's optimizer holds parameters: its groups' options are read from them)
            kwargs = dict(kwargs, parameters=_as_parameters(paddle, kwargs["parameters"]))
        value = target(*args, **kwargs)
        if isinstance(value, self.r.paddle.nn.Layer):
            self.layer(value, path)
        return value

    def layer(self, layer: Any, path: str) -> None:
        """A layer made (its parameters drawn by Paddle's generator, in their
        dtype), cast as this side casts, and its floating parameters and
        buffers handed to `perturb` (the error model's probes)."""
        paddle = self.r.paddle
        state = dict(layer.state_dict())
        floating = {dtype_name(t.dtype) for t in state.values()} & set(FLOATING + COMPLEX)
        casts = {self.cast_name(n) for n in floating if self.cast_name(n) != n}
        if len(casts) == 1:
            layer.to(dtype=casts.pop())
        elif casts:
            raise Skip("a layer of parameters of several floating dtypes, which its cast would make one")
        if self.perturb is UNPERTURBED:
            return
        with paddle.no_grad():
            for key, t in layer.state_dict().items():
                if dtype_name(t.dtype) in FLOATING + COMPLEX:
                    values = tensor_to_torch(t)
                    self.perturb.tensor(call_keyword_path(path, key), values.view(-1))
                    t.set_value(from_numpy(values.contiguous(), dtype_name(t.dtype)))
        if layer.sublayers():
            self.perturb.layer(path, functools.partial(round_layer_outputs, layer))


def _as_parameters(paddle: Any, value: Any) -> Any:
    """An optimizer's `parameters` (tensors, or groups: dicts of them) with
    each tensor made the parameter a program's would be, same values."""
    if isinstance(value, paddle.Tensor):
        return (
            value
            if isinstance(value, paddle.base.framework.EagerParamBase)
            else (paddle.base.framework.EagerParamBase.from_tensor(value))
        )
    if isinstance(value, (list, tuple)):
        return type(value)(_as_parameters(paddle, v) for v in value)
    if isinstance(value, dict):
        return {k: _as_parameters(paddle, v) if k == "params" else v for k, v in value.items()}
    return value


def round_layer_outputs(layer: Any, relative: float, seed: int) -> None:
    """Perturbation.layer's round_outputs for a Paddle layer: a forward post-hook on
    each of its sublayers moves their floating outputs' elements by
    `relative` at random signs (numpy's, not Paddle's generator)."""
    import numpy as np

    paddle = paddle_module()
    draw = np.random.default_rng(seed)

    def rounded(t: Any) -> Any:
        if not isinstance(t, paddle.Tensor) or dtype_name(t.dtype) not in FLOATING + COMPLEX:
            return t
        signs = draw.integers(0, 2, size=list(t.shape)).astype("float64") * 2 - 1
        return t * paddle.to_tensor(1 + relative * signs, dtype=t.real().dtype if t.is_complex() else t.dtype)

    def hook(_layer: Any, _inputs: Any, output: Any) -> Any:
        if isinstance(output, (tuple, list)):
            return type(output)(rounded(o) for o in output)
        return rounded(output)

    for sub in layer.sublayers():
        sub.register_forward_post_hook(hook)


# -- one side -------------------------------------------------------------------


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Paddle's global generator seeded with `seed`, and its state back after."""
    paddle = paddle_module()
    state = paddle.get_rng_state()
    paddle.seed(seed)
    try:
        yield
    finally:
        paddle.set_rng_state(state)


def names_of_its_own() -> Any:
    """A namespace of parameter names of a side's own (Paddle refuses a
    second parameter of one name in a process: ParamAttr(name="w") built
    by both sides of a check), the names numbered from 0 in it on every
    side alike, and the process's back after."""
    from paddle.base import unique_name

    return unique_name.guard()


@contextlib.contextmanager
def grad_mode_kept() -> Iterator[None]:
    """A call that sets Paddle's grad mode (paddle.set_grad_enabled) sets it
    for itself only."""
    paddle = paddle_module()
    enabled = paddle.is_grad_enabled()
    try:
        yield
    finally:
        paddle.set_grad_enabled(enabled)


def generator_state() -> List[str]:
    """What Paddle's generator state is (its mt19937 words and offset, as it
    prints them, less the address of the object that holds them): a call
    that changed it drew random numbers."""
    return [re.sub(r"0x[0-9a-fA-F]+", "", str(state)) for state in paddle_module().get_rng_state()]


# Outputs an eager operator keeps for its backward, or leaves
# uninitialized, not compared: batch norm's saved mean, saved variance and
# reserve space (in evaluation they are left as the allocator gives them),
# instance norm's saved mean and variance, the RNN's dropout state and
# reserve. Operator -> the output indices.
WORKSPACE_OUTPUTS = {
    **{
        f"paddle._C_ops.{op}": (3, 4, 5)
        for op in (
            "batch_norm",
            "batch_norm_",
            "sync_batch_norm_",
            "sparse_batch_norm_",
            "sparse_sync_batch_norm_",
            "fused_batch_norm_act",
            "fused_bn_add_activation",
        )
    },
    "paddle._C_ops.instance_norm": (1, 2),
    "paddle._C_ops.rnn": (1, 3),
}


# APIs whose output is memory as allocated (Paddle does not fill it): like
# a random call's, compared by shapes, dtypes and devices only.
UNINITIALIZED = frozenset({"paddle.empty", "paddle.empty_like"})

# Paddle's failure for a kernel it lacks: "(NotFound) The kernel with key
# (CPU, Undefined(AnyLayout), float16) of kernel `add` is not registered."
NO_KERNEL = re.compile(r"The kernel with key \((\w+), [^,]+, (\w+)\) of kernel `(\w+)` is not registered")
# ... and for an operator it has no CPU kernel of at all (its GPU-only fused
# operators): "The kernel `fused_bias_act` is not registered.", "(Unimplemented)
# Softmax mask fuse op only supports GPU now.", or its binding missing from
# the CPU build ("module 'paddle.base.libpaddle.eager.ops.legacy' has no
# attribute 'fused_attention'").
NO_KERNEL_AT_ALL = re.compile(
    r"The kernel `(\w+)` is not registered|\(Unimplemented\) (\w[\w ]*?) op only supports GPU|"
    r"module 'paddle[\w.]*\.ops(?:\.legacy)?' has no attribute '(\w+)'"
)


class PaddleReplay(ReplayFramework):
    """Paddle's configs (see the module): on the CPU, checked by float64,
    repeat or torch; no reference other than the call itself."""

    name = "paddle"
    title = "Paddle"
    builder = PaddleBuilder
    checks = CHECKS
    devices = ("cpu",)

    @functools.cached_property
    def resolver(self) -> PaddleResolver:
        return PaddleResolver()

    def prepare_process(self) -> None:
        paddle_module()  # imported quietly, before the user's code would print its warning

    def refusal(self, name: str, obj: Any = None) -> Optional[str]:
        return policy.refusal(name, obj)

    def preconditions(self, api: str, func: Any, args: list, kwargs: dict) -> str:
        return preconditions.check_call(api, func, args, kwargs) or ""

    def memory_device(self, device: str) -> str:
        return "cpu"

    def counterpart(self, job: Job, other: str) -> Job:
        if other != "torch":
            return super().counterpart(job, other)
        from ...replay.framework import replay_framework
        from ..torch_paddle import to_torch

        torch_replay = replay_framework("torch")
        func = self.resolve(job.api, job.config.text)
        made = to_torch(job.api, func, lambda name: torch_replay.resolve(name, name), job.args, job.kwargs)
        return dataclasses.replace(
            job, api=made.api, args=made.args, kwargs=made.kwargs, framework=torch_replay, adapt=made.adapt
        )

    def no_kernel(self, message: str) -> str:
        found = NO_KERNEL.search(message)
        if found:
            return f"Paddle has no {found[1]} kernel `{found[3]}` for {found[2]}"
        found = NO_KERNEL_AT_ALL.search(message)
        return f"this build of Paddle has no CPU kernel `{found[1] or found[2] or found[3]}`" if found else ""

    def names_of_its_own(self) -> Any:
        return names_of_its_own()

    def grad_mode_kept(self) -> Any:
        return grad_mode_kept()

    def seeded(self, seed: int, device: str) -> Any:
        return seeded(seed)

    def workspace_outputs(self, api: str) -> Tuple[int, ...]:
        return WORKSPACE_OUTPUTS.get(api, ())

    def constructors_traced(self, args: list, kwargs: dict) -> Tuple[str, ...]:
        return tuple(
            sorted(
                {
                    leaf.name
                    for _, leaf in walk(args, kwargs)
                    if isinstance(leaf, Call) and leaf.name.startswith("paddle.")
                }
            )
        )

    def run_side(self, job: Job, side: Any, watch: bool = False) -> Outcome:
        """One side of a Paddle config: the call built (cast and perturbed
        as the side says) and made with Paddle's generator seeded and grad
        mode kept; its Outcome, the output as torch tensors, with `watch`
        the call named as random where it drew from the generator, and
        with --backward the gradients of its floating inputs (gradients.py;
        a call that raises with its inputs requiring grad, an in-place one
        on a leaf, and runs without is made so, and none has a gradient)."""
        why = ("" if job.adapt else self.unsupported(job.options)) or (  # (a counterpart: the other's check)
            f"the {side.label} side is torch's"
            if side.compiled or side.substitute is not None or side.contiguous
            else ""
        )
        if why:
            raise Skip(why)
        try:
            return self._made(job, side, watch, None)
        except (Skip, Invalid, Refused):
            raise
        except Exception as e:
            if not job.options.backward:
                raise
            first = e
        refused = NoGradient(f"the call refuses inputs that require grad: {first_line(first)}")
        try:
            return self._made(job, side, watch, refused)
        except Exception:  # noqa: BLE001 - it fails without them too: the call's own failure
            raise first from None

    def _made(self, job: Job, side: Any, watch: bool, held: Optional[NoGradient]) -> Outcome:
        with seeded(job.options.seed), grad_mode_kept(), names_of_its_own():
            func, args, kwargs = build(job, side.cast, side.perturb, "cpu")
            precision = least_precise(args, kwargs)
            floating = any(dtype_name(t.dtype) in FLOATING + COMPLEX for t in paddle_tensors([args, kwargs]))
            inputs = floating_inputs(args, kwargs) if job.options.backward else []
            if held is None:
                require_grad(inputs)
            before = generator_state() if watch else None
            saved = side.perturb.saved if side.perturb is not None and inputs and held is None else None
            with saved_moved(saved) if saved else contextlib.nullcontext():
                output = func(*args, **kwargs)
            drew = watch and generator_state() != before
            grads = {path: held for path, _ in inputs} if held else gradients(output, inputs, job.options.seed)
            output = to_torch(output)
        unfilled = [f"{job.api}: memory as allocated"] if job.api in UNINITIALIZED else []
        return Outcome(output, grads, [job.api] * drew + unfilled, unfilled, precision, floating)
