"""torch's replay (replay/framework.py: `ReplayFramework`): `TorchReplay`,
what replay needs of torch, and `TorchBuilder`, how torch's values are made.
Names resolve inside torch (resolve.py), the policy and the preconditions
are torch's reviewed ones (policy.py, preconditions.py), and a side's call
is made by side.py."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
import sys
from typing import Any, Callable, Dict, Iterable, Iterator, Optional, Tuple

from ...replay.builder import UNPERTURBED, Builder
from ...replay.framework import ReplayFramework
from ...replay.results import Invalid
from ...replay.side import tensor_leaves
from ...values import call_keyword_path
from . import policy
from . import side as side_module
from .preconditions import check_call
from .resolve import Resolver


class TorchBuilder(Builder):
    """torch's values: its constants (dtypes, layouts, memory formats,
    qschemes, its classes and enums), torch.nn modules built on the
    device, cast as the side casts and charged against --max-bytes, and the
    outputs' bytes charged too where the meta device can tell them."""

    NEEDS_GRAD = frozenset({"torch.Tensor.backward", "torch.autograd.backward", "torch.autograd.grad"})
    LAYER = "module"
    WRITTEN = ("torch.nn",)

    def symbol(self, name: str) -> Any:
        torch = self.r.torch
        obj = self.r.walk(name, self.line)
        if not isinstance(obj, (torch.dtype, torch.layout, torch.memory_format, torch.qscheme)):
            enum_member = isinstance(getattr(type(obj), "__members__", None), dict) and self.r.inside(type(obj))
            if not (isinstance(obj, type) and self.r.inside(obj)) and not enum_member:
                raise Invalid(f"the name {name!r} is not a torch constant", self.line.find(name) + 1)
        return obj

    def cast_symbol(self, obj: Any) -> Any:
        torch = self.r.torch
        if (
            isinstance(obj, torch.dtype)
            and (obj.is_floating_point or obj.is_complex)
            and str(obj).replace("torch.", "") in self.input_dtypes
        ):
            return self.cast(obj)
        return obj

    def layer_type(self) -> type:
        return self.r.torch.nn.Module

    def construct(self, target: Any, name: str, args: list, kwargs: dict, path: str) -> Any:
        """A value made by calling `target` (a module: charged against the
        byte limit, moved and cast as this side's values are, its floating
        parameters and buffers handed to the perturbation, and itself where
        it holds modules)."""
        torch = self.r.torch
        if isinstance(target, type) and issubclass(target, torch.nn.Module):
            self.charge(module_bytes(target, args, kwargs, self.cast), f"its arguments (with {name}(...))")
        value = target(*args, **kwargs)
        if isinstance(value, torch.nn.Module):
            value = value.to(self.device)._apply(lambda t: t.to(self.cast(t.dtype)))
            if self.perturb is not UNPERTURBED:
                with torch.no_grad():
                    for key, t in (*value.named_parameters(), *value.named_buffers()):
                        if t.is_floating_point() or t.is_complex():
                            self.perturb.tensor(call_keyword_path(path, key), t.view(-1) if t.is_contiguous() else t)
                if next(value.children(), None) is not None:
                    self.perturb.layer(path, functools.partial(round_module_outputs, value))
        return value

    def built(self, func: Any, args: list, kwargs: dict) -> None:
        """The arguments built: what the outputs will take is charged too
        (output_bytes, where it can be known)."""
        outputs = output_bytes(func, args, kwargs)
        if outputs:
            self.charge(outputs, "its arguments and outputs")


# Outputs an operator keeps for its backward in a form of the kernel's
# choosing, not compared: the embedding bag's offset2bag, bag_size and
# maximum indices (its float32 fast path leaves offset2bag empty, the
# float64 kernel fills it). API -> the output indices.
WORKSPACE_OUTPUTS = {
    **{
        api: (1, 2, 3)
        for api in (
            "torch.embedding_bag",
            "torch.ops.aten.embedding_bag",
            "torch.ops.aten._embedding_bag",
            "torch.ops.aten._embedding_bag_forward_only",
        )
    },
    # (oneDNN's workspace for the layer's backward, in a layout of its own: its bytes differ run to run)
    "torch.ops.aten.mkldnn_rnn_layer": (3,),
}


# APIs whose float64 result is another function's, not theirs more exactly: no float64 reference. A step
# of the dtype's own representation (the next float32 after infinity is float32's largest, the next float64
# float64's); fractional max pooling's windows, drawn from its samples in its dtype's arithmetic
# (bfloat16's (i + sample) * alpha floors to other windows than float64's).
REPRESENTATION = {
    **{
        name: "its result is the next value of its own dtype, and float64's next value is another number"
        for name in ("nextafter", "nextafter_")
    },
    **{
        name: "its pooling windows are computed from its samples in its dtype's arithmetic: float64 pools others"
        for name in ("fractional_max_pool2d", "fractional_max_pool3d")
    },
}


# torch's failure for a kernel it lacks: "\"addmm_impl_cpu_\" not implemented for 'Half'".
NO_KERNEL = re.compile(r"\"(\w+)\" not implemented for '(\w+)'")


class TorchReplay(ReplayFramework):
    """torch's configs: names resolved inside torch (resolve.py), the
    reviewed policy (policy.py) and preconditions (preconditions.py), its
    side made by side.py; every --check mode, --backward, any device torch
    knows; a float64 reference an operator cannot make falls back to its
    decomposition (torch._decomp)."""

    name = "torch"
    title = "torch"
    builder = TorchBuilder

    @functools.cached_property
    def resolver(self) -> Resolver:
        return Resolver()

    def prepare_process(self) -> None:
        import torch

        # torch's intra-op threads (OpenMP) start at the first parallel kernel, each thread's stack mapped
        # then: inside a call bounded by --max-bytes (memory.bounded lowers RLIMIT_DATA) libgomp cannot make
        # them and aborts the whole process. So they start here, all of them (a parallel_for takes a thread
        # per GRAIN_SIZE elements, 32768), before any bound.
        torch.ones(32768 * torch.get_num_threads()).add_(1)

    def refusal(self, name: str, obj: Any = None) -> Optional[str]:
        return policy.refusal(name, obj)

    def preload(self, options: Any, checks: Iterable[str] = ()) -> Tuple[str, ...]:
        # A custom operator's first call (torch.library.custom_op: the user's code) and torch.compile
        # import torch._dynamo, about 1.5 s: in each worker, inside its first case's time (and past a
        # fuzz campaign's --timeout). Imported in the server, it costs that once.
        if options.imports or options.libraries or "compile" in (options.check, *checks):
            return ("torch", "torch._dynamo")
        return ("torch",)

    def counterpart(self, job: Any, other: str) -> Any:
        if other != "paddle":
            return super().counterpart(job, other)
        from ...replay.framework import replay_framework
        from ..torch_paddle import to_paddle

        made = to_paddle(job.api, job.args, job.kwargs)
        return dataclasses.replace(
            job,
            api=made.api,
            args=made.args,
            kwargs=made.kwargs,
            framework=replay_framework("paddle"),
            adapt=made.adapt,
        )

    def no_kernel(self, message: str) -> str:
        found = NO_KERNEL.search(message)
        return f"torch has no kernel `{found[1]}` for {found[2]}" if found else ""

    def preconditions(self, api: str, func: Any, args: list, kwargs: dict) -> str:
        return check_call(api, func, args, kwargs) or ""

    def run_side(self, job: Any, side: Any, watch: bool = False) -> Any:
        return side_module.run_side(job, side, watch)

    def grad_mode_kept(self) -> Any:
        return side_module.grad_mode_kept()

    def seeded(self, seed: int, device: str) -> Any:
        return side_module.seeded(seed, device)

    def timed_backward(self, job: Any) -> Any:
        return side_module.timed_backward(job)

    def reproducer(self, job: Any, verdict: Any, cast: Any, about: Any) -> str:
        from .repro import script

        return script(job, verdict, cast, about)

    def settle_choices(self, api: str, inputs: Any, mine: Any, theirs: Any) -> Tuple[Any, str]:
        from . import phases, ties

        theirs, tied = ties.settle(api, inputs, mine, theirs)
        theirs, turned = phases.settle(api, mine, theirs)
        return theirs, "; ".join(filter(None, [tied, turned]))

    def no_wider_reference(self, api: str) -> str:
        from .ties import name_of

        return REPRESENTATION.get(name_of(api)[0], "")

    def raises_by_design(self, api: str) -> bool:
        from .private_operators import raises_by_design
        from .ties import name_of

        return raises_by_design(name_of(api)[0])

    def accumulations(self, api: str, inputs: Any) -> Dict[str, Any]:
        from .accumulations import accumulations

        return accumulations(api, inputs)

    def workspace_outputs(self, api: str) -> Tuple[int, ...]:
        packet = api.rsplit(".", 1)[0] if api.startswith("torch.ops.") and api.count(".") == 4 else api
        return WORKSPACE_OUTPUTS.get(packet, ())

    def no_reference(self, failure: str) -> str:
        return (
            f"no float64 reference: the operator fails in float64 ({failure}) and torch._decomp has no "
            "decomposition of it"
        )

    def reference_fallbacks(self, func: Any) -> Iterable[Tuple[str, Callable[..., Any]]]:
        import torch

        if isinstance(func, torch._ops.OpOverload):
            from torch._decomp import decomposition_table

            decomposition = decomposition_table.get(func)
            if decomposition is not None:
                yield "its decomposition (torch._decomp) in float64", decomposition


def round_module_outputs(module: Any, relative: float, seed: int) -> None:
    """Perturbation.layer's round_outputs for a torch module: a forward hook
    on each of its submodules moves their floating outputs' elements by
    `relative` at random signs (judge/error_model.py)."""
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

    if not isinstance(
        func,
        (torch._ops.OpOverload, torch._ops.OpOverloadPacket, types.BuiltinFunctionType, types.MethodDescriptorType),
    ):
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
