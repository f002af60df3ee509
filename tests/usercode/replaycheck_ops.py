"""Custom operators with deliberately wrong kernels, for the tests of
replay --check (test_replay_check.py): importing this module registers
them, in the namespace `replaycheck`, in this process. Each is wrong on one
side of a check only, as a kernel bug would be."""

import torch


@torch.library.custom_op("replaycheck::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@torch.library.custom_op("replaycheck::twice_wrong_in_float64", mutates_args=())
def twice_wrong_in_float64(x: torch.Tensor) -> torch.Tensor:
    return x * 2 + (1e-3 if x.dtype == torch.float64 else 0.0)  # the bug --check float64 must find


@torch.library.custom_op("replaycheck::sort_wrong_in_float64", mutates_args=())
def sort_wrong_in_float64(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    values, indices = x.sort()
    return values, indices.flip(0) if x.dtype == torch.float64 else indices  # wrong int64 output only


@torch.library.custom_op(
    "replaycheck::noise_wrong_shape_in_float64", mutates_args=(), tags=(torch.Tag.nondeterministic_seeded,)
)
def noise_wrong_shape_in_float64(x: torch.Tensor) -> torch.Tensor:
    return torch.rand(x.numel() + (x.dtype == torch.float64), dtype=x.dtype)


@torch.library.custom_op("replaycheck::float32_only", mutates_args=())
def float32_only(x: torch.Tensor) -> torch.Tensor:
    if x.dtype == torch.float64:
        raise NotImplementedError("no float64 kernel")
    return x.clone()


@torch.library.custom_op("replaycheck::outside_domain", mutates_args=())
def outside_domain(x: torch.Tensor) -> torch.Tensor:
    return torch.full_like(x, float("nan"))  # as the log of negative numbers: a comparison that tests nothing


_CALLS = [0]


@torch.library.custom_op("replaycheck::differs_each_call", mutates_args=())
def differs_each_call(x: torch.Tensor) -> torch.Tensor:
    _CALLS[0] += 1
    return x + _CALLS[0] * 1e-3  # as a kernel that reads uninitialized memory or races: --check repeat must find it


@torch.library.custom_op("replaycheck::signed_zero_each_call", mutates_args=())
def signed_zero_each_call(x: torch.Tensor) -> torch.Tensor:
    _CALLS[0] += 1
    return torch.zeros_like(x) * (-1) ** _CALLS[0]  # equal in value, not in bits


@torch.library.custom_op("replaycheck::atomic_adds", mutates_args=(), tags=(torch.Tag.nondeterministic_bitwise,))
def atomic_adds(x: torch.Tensor) -> torch.Tensor:
    _CALLS[0] += 1
    return x + _CALLS[0] * 1e-7  # marked nondeterministic: repeat compares its shapes only


@torch.library.custom_op("replaycheck::cube", mutates_args=())
def cube(x: torch.Tensor) -> torch.Tensor:
    return x**3


def _cube_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def _cube_backward_wrong_in_float64(ctx, grad):
    (x,) = ctx.saved_tensors
    return grad * 3 * x**2 + (1e-3 if x.dtype == torch.float64 else 0.0)  # the bug --backward must find


torch.library.register_autograd("replaycheck::cube", _cube_backward_wrong_in_float64, setup_context=_cube_setup)

# A Python decomposition that differs once compiled: eager runs it outside
# compilation, torch.compile traces it with is_compiling() true.
LIB = torch.library.Library("replaycheck", "FRAGMENT")
LIB.define("twice_wrong_compiled(Tensor x) -> Tensor")
LIB.impl(
    "twice_wrong_compiled",
    lambda x: x * 2 + (1e-3 if torch.compiler.is_compiling() else 0.0),
    "CompositeImplicitAutograd",
)
