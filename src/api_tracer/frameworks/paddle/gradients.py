"""The gradients of a Paddle call, for `--check ... --backward`: its
floating tensor inputs made to require grad (stop_gradient=False) before
the call, and after it `paddle.grad` of its floating outputs, each weighted
by the same cotangent torch's side weights its outputs by
(replay/side.py's `cotangent`, made in torch and converted), so that both
frameworks' gradients of one line answer the same question. Each gradient
comes back as a torch tensor, keyed by its input's path in the line, as
torch's side keys its own (frameworks/torch/side.py). Where the error
model moves what the forward saved for the backward (a Perturbation's
`saved`), it moves Paddle's through paddle.autograd.saved_tensors_hooks
(`saved_moved`), as torch's side does through torch's."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

from ...replay.results import first_line
from ...replay.side import NoGradient, cotangent, dict_item_path
from ...values import argument_path, item_path, keyword_path
from . import paddle_module
from .names import COMPLEX, FLOATING
from .tensors import dtype_name, paddle_tensors, tensor_to_torch, to_paddle


def floating_inputs(args: list, kwargs: dict) -> List[Tuple[str, Any]]:
    """(path, tensor) of each floating (or complex) paddle.Tensor among
    built arguments, inside their lists, tuples and dicts."""
    paddle = paddle_module()
    found: List[Tuple[str, Any]] = []

    def walk(v: Any, path: str) -> None:
        if isinstance(v, paddle.Tensor):
            if dtype_name(v.dtype) in FLOATING + COMPLEX:
                found.append((path, v))
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                walk(x, item_path(path, i))
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(x, dict_item_path(path, k))

    for i, a in enumerate(args):
        walk(a, argument_path(i))
    for k, v in kwargs.items():
        walk(v, keyword_path(k))
    return found


def require_grad(inputs: List[Tuple[str, Any]]) -> None:
    for _, t in inputs:
        t.stop_gradient = False


def gradients(output: Any, inputs: List[Tuple[str, Any]], seed: int) -> Dict[str, Any]:
    """The gradient of each input (None: none reached it) of the output's
    floating tensors that require grad, all at once, else input by input,
    an input whose gradient raises having a NoGradient that says what it
    raised."""
    paddle = paddle_module()
    outs = [t for t in paddle_tensors(output) if not t.stop_gradient and dtype_name(t.dtype) in FLOATING + COMPLEX]
    if not outs or not inputs:
        return {path: None for path, _ in inputs}
    weights = [to_paddle(cotangent(tensor_to_torch(t), seed + i)) for i, t in enumerate(outs)]

    def grad(leaves: list) -> list:
        return paddle.grad(outs, leaves, weights, retain_graph=True, allow_unused=True)

    try:
        grads: Dict[str, Any] = dict(zip([path for path, _ in inputs], grad([t for _, t in inputs])))
    except Exception:  # noqa: BLE001 - Paddle raises what its kernels raise: input by input then
        grads = {}
        for path, t in inputs:
            try:
                grads[path] = grad([t])[0]
            except Exception as e:  # noqa: BLE001 - the input's own gradient fails: said
                grads[path] = NoGradient(f"{type(e).__name__}: {first_line(e)}")
    return {path: g if g is None or isinstance(g, NoGradient) else tensor_to_torch(g) for path, g in grads.items()}


def saved_moved(saved: Callable[[Any], Any]) -> Any:
    """A context in which each floating tensor Paddle's operators save for
    their backward is `saved` of it (made a torch tensor and back)."""
    paddle = paddle_module()

    def pack(t: Any) -> Any:
        if not isinstance(t, paddle.Tensor) or dtype_name(t.dtype) not in FLOATING:
            return t
        return to_paddle(saved(tensor_to_torch(t)))

    return paddle.autograd.saved_tensors_hooks(pack, lambda t: t)
