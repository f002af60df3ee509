"""The checks of indices, lengths, offsets and saved statistics that
replay makes before calling the operators that take them
(indexing_operators.py's checked families, segment_reduce's gradient,
torch.ops.quantized's embedding bags): each states the contract autograd
and the public functions keep between such a value and the tensors it
points into, so a line the tracer wrote from a real program passes, and a
config of values out of range is invalid before the kernel runs. A check
takes the arguments bound to the schema's names and says what is wrong, or
None (operator_checks.py: the helpers, and the other checks).
"""

from __future__ import annotations

import math
from typing import Any, Dict, Optional

from .operator_checks import Check, in_order, integer, is_tensor, pooling_backward, shaped_as, sizes, values_in


def max_pool_indices(spatial: int) -> Check:
    """A max pooling's gradient writes grad_output's values at the input
    positions its indices name (the forward's argmax, flat within each
    plane of self's last `spatial` dimensions), without looking: indices
    of grad_output's shape, each inside the plane."""
    leading = pooling_backward(spatial)

    def check(bound: Dict[str, Any]) -> Optional[str]:
        why = leading(bound)
        if why:
            return why
        grad, x, indices = bound["grad_output"], bound["self"], bound.get("indices")
        if not (integer(indices) and sizes(indices) == sizes(grad)):
            return f"indices must be integers of grad_output's shape {sizes(grad)}"
        plane = math.prod(sizes(x)[-spatial:])
        if not values_in(indices, 0, plane):
            return f"indices must be positions in [0, {plane}) of self's last {spatial} dimensions"
        return None

    return check


def embedding_backward(bound: Dict[str, Any]) -> Optional[str]:
    """An embedding's gradient adds each row of grad at the weight row its
    index names, without looking: indices in [0, num_weights) (or the
    padding_idx), one row of grad per index."""
    grad = next((bound[k] for k in ("grad", "grad_output") if k in bound), None)
    indices, rows = bound.get("indices"), bound.get("num_weights")
    padding = bound.get("padding_idx", -1)
    if not (is_tensor(grad) and integer(indices) and isinstance(rows, int) and rows >= 0):
        return "grad must be a tensor, indices integers and num_weights a count"
    inside = indices[(indices != padding)] if isinstance(padding, int) and padding >= 0 else indices
    if not values_in(inside, 0, rows):
        return f"indices must be weight rows in [0, {rows})"
    if grad.dim() == 0 or grad.numel() != indices.numel() * grad.shape[-1]:
        return f"grad {sizes(grad)} must hold one row per index ({indices.numel()})"
    return None


def segment_reduce(bound: Dict[str, Any]) -> Optional[str]:
    """segment_reduce reads data at the segments its lengths or offsets
    give along `axis`, without looking when unsafe=True (and not all of it
    when not): lengths of 0 or more adding up to data's size there, or
    offsets in order within it."""
    data, axis = bound.get("data"), bound.get("axis", 0)
    if not (is_tensor(data) and isinstance(axis, int) and -data.dim() <= axis < max(data.dim(), 1)):
        return "data must be a tensor and axis one of its dimensions"
    size = data.shape[axis] if data.dim() else 1
    lengths, offsets = bound.get("lengths"), bound.get("offsets")
    if lengths is not None:
        if not (integer(lengths) and lengths.dim() >= 1 and values_in(lengths, 0, size + 1)):
            return f"lengths must be integers of 0 or more (data has {size} along axis {axis})"
        if any(int(s) != size for s in lengths.reshape(-1, lengths.shape[-1]).sum(-1).tolist()):
            return f"lengths must add up to data's {size} along axis {axis}"
    if offsets is not None:
        if not (integer(offsets) and offsets.dim() >= 1):
            return "offsets must be integers"
        if not all(in_order(row, size) for row in offsets.reshape(-1, offsets.shape[-1]).tolist()):
            return f"offsets must be in order within [0, {size}] (data's size along axis {axis})"
    return None


def layer_norm_backward(bound: Dict[str, Any]) -> Optional[str]:
    """Layer norm's gradient reads the forward's mean and rstd at each of
    the input's rows (its dimensions before normalized_shape) without
    looking: one of each per row, and a gradient of the input's shape."""
    x, shape = bound.get("input"), bound.get("normalized_shape")
    if not (is_tensor(x) and isinstance(shape, (list, tuple)) and x.dim() >= len(shape)):
        return "input must be a tensor of at least normalized_shape's dimensions"
    if list(shape) and sizes(x)[-len(shape) :] != list(shape):
        return f"input {sizes(x)} must end with normalized_shape {list(shape)}"
    rows = math.prod(sizes(x)[: x.dim() - len(shape)])
    for name in ("mean", "rstd"):
        if not (is_tensor(bound.get(name)) and bound[name].numel() == rows):
            return f"{name} must hold one value per row of input ({rows})"
    grad = bound.get("grad_out")
    if is_tensor(grad) and sizes(grad) != sizes(x):
        return f"grad_out {sizes(grad)} must have input's shape {sizes(x)}"
    return None


def fake_quant_observer(bound: Dict[str, Any]) -> Optional[str]:
    """The fused observer and fake quantizer reads and writes the running
    minimum and maximum, scale and zero point at each channel of self's
    ch_axis (per row), or at their first element, without looking."""
    x, axis, per_row = bound.get("self"), bound.get("ch_axis"), bound.get("per_row_fake_quant", False)
    if not (is_tensor(x) and isinstance(axis, int)):
        return "self must be a tensor and ch_axis an int"
    if per_row and not (x.dim() and -x.dim() <= axis < x.dim()):
        return f"ch_axis {axis} must be a dimension of self {sizes(x)}"
    count = x.shape[axis] if per_row else 1
    for name in ("running_min", "running_max", "scale", "zero_point"):
        t = bound.get(name)
        if not (is_tensor(t) and (t.numel() == count if per_row else t.numel() >= 1)):
            return f"{name} must hold {'one value per channel (' + str(count) + ')' if per_row else 'a value'}"
    return None


def packed_sequence(bound: Dict[str, Any]) -> Optional[str]:
    """A recurrent network over a packed sequence reads data in steps of
    batch_sizes rows, and its initial state at those rows: sizes of 1 or
    more, none larger than the one before, adding up to data's rows, the
    first the state's batch."""
    data, batch_sizes, hx = bound.get("data"), bound.get("batch_sizes"), bound.get("hx")
    if not (is_tensor(data) and data.dim() == 2 and integer(batch_sizes) and batch_sizes.dim() == 1):
        return "data must be 2-d and batch_sizes a 1-d tensor of integers"
    steps = batch_sizes.tolist()
    if not steps or steps[-1] < 1 or any(a < b for a, b in zip(steps, steps[1:])):
        return "batch_sizes must be 1 or more, none larger than the one before"
    if sum(steps) != data.shape[0]:
        return f"batch_sizes must add up to data's {data.shape[0]} rows"
    states = [hx] if is_tensor(hx) else list(hx) if isinstance(hx, (list, tuple)) else []
    if not states or any(not (is_tensor(h) and h.dim() == 3 and h.shape[1] == steps[0]) for h in states):
        return f"hx must be 3-d states of batch {steps[0]} (batch_sizes' first)"
    return None


def quantized_embedding_bag(bound: Dict[str, Any]) -> Optional[str]:
    """A quantized embedding bag reads weight's rows at its indices, through
    compressed_indices_mapping where given (pruned weights), without
    looking: indices within the mapping (or the rows), the mapping's
    values rows of weight or -1 (pruned), offsets in order within indices."""
    weight, indices, mapping = bound.get("weight"), bound.get("indices"), bound.get("compressed_indices_mapping")
    if not (is_tensor(weight) and weight.dim() == 2 and integer(indices)):
        return "weight must be 2-d and indices integers"
    rows = weight.shape[0]
    if mapping is not None:
        if not (integer(mapping) and values_in(mapping, -1, rows)):
            return f"compressed_indices_mapping must hold rows of weight in [0, {rows}) or -1"
        rows = mapping.numel()
    if not values_in(indices, 0, rows):
        return f"indices must be in [0, {rows})"
    offsets = bound.get("offsets")
    if offsets is not None and not (integer(offsets) and in_order(offsets.reshape(-1).tolist(), indices.numel())):
        return f"offsets must be in order within [0, {indices.numel()}]"
    return None


def segment_reduce_backward(bound: Dict[str, Any]) -> Optional[str]:
    """segment_reduce's gradient: segment_reduce's check, and the
    forward's output and its gradient, one value per segment, which it
    reads at each segment's position."""
    why = segment_reduce(bound)
    if why:
        return why
    data, axis = bound["data"], bound.get("axis", 0) % max(bound["data"].dim(), 1)
    given = bound.get("lengths") if bound.get("lengths") is not None else bound.get("offsets")
    if not is_tensor(given):
        return "lengths or offsets must be given"
    segments = given.shape[-1] - (0 if bound.get("lengths") is not None else 1)
    expected = sizes(data)[:axis] + [segments] + sizes(data)[axis + 1 :]
    return shaped_as(bound, expected, ("grad", "output"))
