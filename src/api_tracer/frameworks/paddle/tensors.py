"""Values across the boundary between torch and Paddle, for Paddle's replay
(replay.py) and its gradients (gradients.py): torch tensors made
paddle.Tensors and back, through numpy (bfloat16 and float8 by their bits,
strides as windows of a storage), Paddle's outputs as what compare.py
compares, and the least precise floating dtype of built arguments."""

from __future__ import annotations

from typing import Any, Iterator

from ...replay.results import Skip
from . import paddle_module
from .names import COMPLEX, DTYPES, FLOATING


def dtype_name(dtype: Any) -> str:
    """A paddle dtype's name ("float32"); "" for none of DTYPES."""
    name = str(dtype).replace("paddle.", "")
    return name if name in DTYPES else ""


def to_paddle(t: Any) -> Any:
    """A torch tensor as a paddle.Tensor on the CPU: its values (through
    numpy; bfloat16 and float8 by their bits), shape and strides (a window
    of its storage: paddle.as_strided over the whole of it), and
    requires_grad as stop_gradient=False. Skip for a dtype Paddle lacks."""
    import torch

    paddle = paddle_module()
    requires_grad = t.requires_grad
    t = t.detach()
    name = str(t.dtype).replace("torch.", "")
    if name not in DTYPES:
        raise Skip(f"a {name} tensor argument: Paddle has no such dtype")
    storage = t.untyped_storage().nbytes() // t.element_size() if t.element_size() else 0
    whole = t.storage_offset() == 0 and t.is_contiguous() and t.numel() == storage
    base = t if whole else torch.empty(0, dtype=t.dtype).set_(t.untyped_storage(), 0, (storage,), (1,))
    p = from_numpy(base, name)
    if not whole:
        try:
            p = paddle.as_strided(p, list(t.shape), list(t.stride()), t.storage_offset() * t.element_size())
        except Exception as e:  # noqa: BLE001 - a layout Paddle cannot view
            raise Skip(
                f"a tensor of strides {list(t.stride())} (offset {t.storage_offset()}): paddle.as_strided "
                f"cannot make it ({type(e).__name__})"
            ) from None
    if requires_grad:
        p.stop_gradient = False
    return p


def from_numpy(t: Any, name: str) -> Any:
    """A contiguous torch tensor's values as a paddle.Tensor of the same dtype."""
    import torch

    paddle = paddle_module()
    target = getattr(paddle, name)
    if name == "bfloat16":  # (paddle reads numpy's uint16 as bfloat16)
        p = paddle.to_tensor(t.view(torch.int16).numpy().view("uint16"), place=paddle.CPUPlace())
    elif name.startswith("float8"):
        p = paddle.to_tensor(t.view(torch.uint8).numpy(), place=paddle.CPUPlace()).view(target)
    else:
        p = paddle.to_tensor(t.numpy(), place=paddle.CPUPlace())
    if p.dtype != target:
        raise Skip(f"a {name} tensor argument: it came to Paddle as {p.dtype}")
    return p


def to_torch(value: Any) -> Any:
    """An output of Paddle's with its paddle.Tensors as torch tensors
    (copies, through numpy), its layers and optimizers as their
    state_dict, its dtypes as torch's and its places as their names: what
    compare.py compares."""
    import torch

    paddle = paddle_module()
    if isinstance(value, paddle.Tensor):
        return tensor_to_torch(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
        return type(value)(*(to_torch(v) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(to_torch(v) for v in value)
    if isinstance(value, dict):
        return {k: to_torch(v) for k, v in value.items()}
    if isinstance(value, (paddle.nn.Layer, paddle.optimizer.Optimizer)):
        return to_torch(dict(value.state_dict()))
    if isinstance(value, paddle.dtype):
        return getattr(torch, dtype_name(value) or "_", str(value))
    if type(value).__module__.startswith("paddle") and "Place" in type(value).__name__:
        return str(value)
    return value


def tensor_to_torch(p: Any) -> Any:
    """A paddle.Tensor's values as a torch tensor of its dtype and shape."""
    import numpy as np
    import torch

    name = dtype_name(p.dtype)
    if not name:
        raise TypeError(f"a paddle tensor of dtype {p.dtype}, which replay does not compare")
    array = np.array(p.detach().numpy(), order="C", copy=True)
    wanted = getattr(torch, name)
    t = torch.from_numpy(array.view(np.int16) if array.dtype == np.uint16 else array)
    if t.dtype != wanted:  # bfloat16 (uint16) and float8 (int8) come as their bits
        t = t.view(wanted)
    return t.reshape(list(p.shape))


def paddle_tensors(value: Any) -> Iterator[Any]:
    """The paddle.Tensors in built arguments (and layers' state)."""
    paddle = paddle_module()
    if isinstance(value, paddle.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from paddle_tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from paddle_tensors(v)
    elif isinstance(value, paddle.nn.Layer):
        yield from paddle_tensors(dict(value.state_dict()))


def least_precise(args: list, kwargs: dict) -> Any:
    """side.least_precise, of paddle's tensors: the torch dtype of the
    floating inputs of the greatest epsilon; torch.float64 if none."""
    import torch

    names = {dtype_name(t.dtype) for t in paddle_tensors([args, kwargs])}
    dtypes = [getattr(torch, n) for n in names if n in FLOATING + COMPLEX]
    return max(dtypes, key=lambda d: torch.finfo(d).eps, default=torch.float64)
