"""What replay checks of a Paddle call's built arguments before it makes
the call, where Paddle's kernel does not (preconditions.py, for Paddle).

A config may give any indices (a value profile beside the file, a
Filled(...) tensor), and these kernels of Paddle 3.3 read or write where an
index points without checking it: each was probed with an index out of
range, and read garbage, wrote past the tensor silently, or corrupted the
heap and killed the process (tests/frameworks/paddle/test_replay_paddle.py keeps the
probes, run in a child process):

- indexing with tensors or lists (``paddle.Tensor.__getitem__``,
  ``__setitem__``) and ``index_put``: each integer index within the
  dimension it indexes, each boolean mask of the dimensions it covers;
- ``index_fill``: the index within its axis; ``select_scatter``: the index
  within its axis;
- ``ctc_loss``: labels and blank among the classes, one input and label
  length per batch entry, within the time steps and the labels;
  ``rnnt_loss`` likewise, within its logits' time and label steps;
- ``hsigmoid_loss``: labels among the classes and the default tree's
  weight rows, or a custom tree's path table within the weight's rows;
- ``max_unpool1d/2d/3d``: indices of x's shape, none negative;
  ``linalg.lu_solve``: pivots in [1, n];
- ``geometric.send_ue_recv``, ``send_uv``: source and destination indices
  among the rows they read (x's, y's); ``geometric.sample_neighbors``:
  colptr offsets in order within row, input nodes among colptr's, and a
  sample size of 1 or more (its default, -1, all neighbours, aborts the
  process on any graph: std::length_error).

A line that fails a check is invalid, with what is wrong. Views by sizes
and strides (``paddle.as_strided``, ``Tensor.set_``), which read any
window of memory they are given, are refused by the policy instead
(policy.py). Paddle's kernels have not been reviewed as torch's
were: a kernel not listed here may still trust its arguments, and
--isolate keeps a crash to its config.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, List, Optional

Check = Callable[[Dict[str, Any]], Optional[str]]  # bound arguments -> what is wrong, or None


def _paddle() -> Any:
    from . import paddle_module

    return paddle_module()


def _is_tensor(v: Any) -> bool:
    return isinstance(v, _paddle().Tensor)


def _array(v: Any) -> Any:
    """An index (a paddle tensor, a list, a numpy array) as a numpy array; None for others."""
    import numpy as np

    if _is_tensor(v):
        return np.asarray(v.numpy())
    if isinstance(v, (list, np.ndarray)):
        try:
            return np.asarray(v)
        except Exception:  # noqa: BLE001 - ragged: Paddle says so itself
            return None
    return None


def _outside(values: Any, size: int) -> Optional[int]:
    """The first of integer `values` outside [-size, size), if any."""
    flat = values.reshape(-1)
    bad = flat[(flat < -size) | (flat >= size)]
    return int(bad[0]) if bad.size else None


def _spans(item: Any) -> int:
    """How many dimensions an indexing item takes."""
    if item is None or item is Ellipsis or isinstance(item, bool):
        return 0
    array = _array(item)
    if array is not None and array.dtype == bool:
        return array.ndim
    return 1


def _key_problem(shape: List[int], items: tuple, what: str) -> Optional[str]:
    """What is wrong with the tensor and list indices among `items` (an
    indexing key's, index_put's) of a tensor of `shape`."""
    ellipsis = next((i for i, item in enumerate(items) if item is Ellipsis), None)
    front = items if ellipsis is None else items[:ellipsis]
    back = () if ellipsis is None else items[ellipsis + 1 :]
    placed = []
    dim = 0
    for item in front:
        placed.append((dim, item))
        dim += _spans(item)
    dim = len(shape) - sum(_spans(item) for item in back)
    for item in back:
        placed.append((dim, item))
        dim += _spans(item)
    for dim, item in placed:
        array = _array(item)
        if array is None or array.size == 0 and array.dtype != bool:
            continue
        if array.dtype == bool:
            covered = list(shape[dim : dim + array.ndim]) if dim >= 0 else []
            if list(array.shape) != covered:
                return (
                    f"{what}: a boolean mask of shape {list(array.shape)} for the dimensions {covered} of a "
                    f"tensor of shape {list(shape)}"
                )
            continue
        if array.dtype.kind not in "iu":
            continue
        if not 0 <= dim < len(shape):
            return f"{what}: an index for dimension {dim} of a tensor of {len(shape)} dimensions"
        bad = _outside(array, shape[dim])
        if bad is not None:
            return f"{what}: the index {bad} is out of range for dimension {dim} of size {shape[dim]}"
    return None


def _indexing(bound: Dict[str, Any]) -> Optional[str]:
    x, key = bound.get("self"), bound.get("item")
    if not _is_tensor(x):
        return None
    return _key_problem(list(x.shape), key if isinstance(key, tuple) else (key,), "the key")


def _index_put(bound: Dict[str, Any]) -> Optional[str]:
    x, indices = bound.get("x"), bound.get("indices")
    if not _is_tensor(x) or not isinstance(indices, (list, tuple)):
        return None
    return _key_problem(list(x.shape), tuple(indices), "indices")


def _axis(x: Any, axis: Any) -> Optional[int]:
    if not isinstance(axis, int) or isinstance(axis, bool) or not -max(x.ndim, 1) <= axis < max(x.ndim, 1):
        return None
    return axis % max(x.ndim, 1)


def _index_on_axis(index_name: str) -> Check:
    def check(bound: Dict[str, Any]) -> Optional[str]:
        x, index = bound.get("x"), bound.get(index_name)
        if not _is_tensor(x):
            return None
        axis = _axis(x, bound.get("axis"))
        if axis is None:
            return f"axis={bound.get('axis')!r} is out of range for a tensor of {x.ndim} dimensions"
        size = x.shape[axis] if x.ndim else 1
        values = _array(index) if not isinstance(index, int) else _array([index])
        if values is None or values.dtype.kind not in "iu":
            return None
        bad = _outside(values, size)
        return None if bad is None else f"{index_name}: {bad} is out of range for axis {axis} of size {size}"

    return check


def _ctc_loss(bound: Dict[str, Any]) -> Optional[str]:
    log_probs, labels = bound.get("log_probs"), bound.get("labels")
    input_lengths, label_lengths = bound.get("input_lengths"), bound.get("label_lengths")
    if not all(_is_tensor(t) for t in (log_probs, labels, input_lengths, label_lengths)):
        return "log_probs, labels, input_lengths and label_lengths must be tensors"
    if log_probs.ndim != 3 or labels.ndim != 2:
        return "log_probs must be 3-d (time, batch, classes) and labels 2-d (batch, length)"
    steps, batch, classes = log_probs.shape
    ranges = (("labels", 0, classes - 1), ("input_lengths", 0, steps), ("label_lengths", 0, labels.shape[1]))
    return _labels_and_lengths(bound, "labels", classes, batch, ranges)


def _labels_and_lengths(bound: Dict[str, Any], labels: str, classes: int, batch: int, ranges: tuple) -> Optional[str]:
    """A sequence loss's blank among the classes, its labels and lengths one
    entry per batch entry, each (name, low, high) of `ranges` within them."""
    blank = bound.get("blank", 0)
    if not isinstance(blank, int) or not 0 <= blank < classes:
        return f"blank={blank!r} is not one of the {classes} classes"
    counts = (bound[labels].shape[0], bound["input_lengths"].numel(), bound["label_lengths"].numel())
    if any(count != batch for count in counts):
        return f"{labels}, input_lengths and label_lengths must have one entry per batch entry ({batch})"
    for name, low, high in ranges:
        array = _array(bound[name])
        if array.size and (array.min() < low or array.max() > high):
            return f"{name} must be in [{low}, {high}]"
    return None


def _rnnt_loss(bound: Dict[str, Any]) -> Optional[str]:
    """RNN-T loss reads the logits (batch, time, label steps + 1, classes)
    at each label's class, for each entry's input and label lengths."""
    logits, labels = bound.get("input"), bound.get("label")
    input_lengths, label_lengths = bound.get("input_lengths"), bound.get("label_lengths")
    if not all(_is_tensor(t) for t in (logits, labels, input_lengths, label_lengths)):
        return "input, label, input_lengths and label_lengths must be tensors"
    if logits.ndim != 4 or labels.ndim != 2:
        return "input must be 4-d (batch, time, label steps + 1, classes) and label 2-d (batch, length)"
    batch, steps, label_steps, classes = logits.shape
    ranges = (
        ("label", 0, classes - 1),
        ("input_lengths", 1, steps),
        ("label_lengths", 0, min(label_steps - 1, labels.shape[1])),
    )
    return _labels_and_lengths(bound, "label", classes, batch, ranges)


def _hsigmoid_loss(bound: Dict[str, Any]) -> Optional[str]:
    """Hierarchical sigmoid reads weight and bias at the tree nodes on each
    label's path: the default tree's (num_classes - 1 nodes, by the label)
    or a custom tree's (path_table's node rows, -1 past a path's end)."""
    x, labels, weight = bound.get("input"), bound.get("label"), bound.get("weight")
    classes, table, code = bound.get("num_classes"), bound.get("path_table"), bound.get("path_code")
    if not (_is_tensor(x) and x.ndim == 2 and _is_tensor(labels) and _is_tensor(weight) and weight.ndim == 2):
        return "input and weight must be 2-d tensors and label a tensor"
    if not isinstance(classes, int) or classes < 2:
        return f"num_classes={classes!r} must be 2 or more"
    rows, batch = weight.shape[0], x.shape[0]
    if weight.shape[1] != x.shape[1] or labels.numel() != batch:
        return f"weight must have input's {x.shape[1]} columns and label one entry per row ({batch})"
    bias = bound.get("bias")
    if bias is not None and not (_is_tensor(bias) and bias.numel() >= rows):
        return f"bias must hold a value per weight row ({rows})"
    if table is None:
        array = _array(labels)
        if array.size and (array.min() < 0 or array.max() >= classes):
            return f"label must be classes in [0, {classes})"
        return None if rows >= classes - 1 else f"weight must have the default tree's {classes - 1} rows"
    if not (_is_tensor(table) and _is_tensor(code) and table.shape == code.shape and table.ndim == 2):
        return "path_table and path_code must be 2-d tensors of one shape"
    array = _array(table)
    if table.shape[0] != batch or (array.size and (array.min() < -1 or array.max() >= rows)):
        return f"path_table must hold a path per row ({batch}) of weight rows in [0, {rows}) or -1"
    return None


def _max_unpool(bound: Dict[str, Any]) -> Optional[str]:
    """Max unpooling writes each value at the output position its index
    names: indices of x's shape, none negative (the kernels check an index
    past the output's end, not one before its start: -1 corrupted the heap)."""
    x, indices = bound.get("x"), bound.get("indices")
    if not (_is_tensor(x) and _is_tensor(indices) and list(indices.shape) == list(x.shape)):
        return "indices must be a tensor of x's shape"
    array = _array(indices)
    return "indices must be positions of 0 or more" if array.size and array.min() < 0 else None


def _lu_pivots(bound: Dict[str, Any]) -> Optional[str]:
    """lu_solve swaps the rows of b its pivots name, without looking: each
    pivot in [1, n] for the n x n factor."""
    lu, pivots = bound.get("lu"), bound.get("pivots")
    if not (_is_tensor(lu) and lu.ndim >= 2 and _is_tensor(pivots)):
        return "lu must be a tensor of 2 or more dimensions and pivots a tensor"
    array, n = _array(pivots), lu.shape[-1]
    if array.size and (array.min() < 1 or array.max() > n):
        return f"pivots must be rows in [1, {n}]"
    return None


def _graph_indices(*pairs: tuple) -> Check:
    """A message-passing call reads the rows its index tensors name (each
    (index, tensor) of `pairs`) without looking: each in [0, rows)."""

    def check(bound: Dict[str, Any]) -> Optional[str]:
        for index_name, rows_of in pairs:
            index, x = bound.get(index_name), bound.get(rows_of)
            array = _array(index)
            if not _is_tensor(x) or array is None or not array.size or array.dtype.kind not in "iu":
                continue
            rows = x.shape[0] if x.ndim else 1
            if array.min() < 0 or array.max() >= rows:
                return f"{index_name} must be rows of {rows_of} in [0, {rows})"
        return None

    return check


def _sample_neighbors(bound: Dict[str, Any]) -> Optional[str]:
    """Sampling reads each input node's neighbours at colptr[node] to
    colptr[node + 1] of row, without looking: colptr in order within row,
    input_nodes among colptr's nodes."""
    row, colptr, nodes = (_array(bound.get(n)) for n in ("row", "colptr", "input_nodes"))
    if row is None or colptr is None or nodes is None or colptr.ndim != 1 or colptr.size < 1:
        return "row, colptr and input_nodes must be tensors, colptr 1-d and not empty"
    if colptr.min() < 0 or colptr.max() > row.size or (colptr.size > 1 and (colptr[1:] < colptr[:-1]).any()):
        return f"colptr must be offsets in order within row's {row.size} entries"
    if nodes.size and (nodes.min() < 0 or nodes.max() >= colptr.size - 1):
        return f"input_nodes must be nodes in [0, {colptr.size - 1})"
    size = bound.get("sample_size", -1)
    if not isinstance(size, int) or size < 1:  # (its default, -1, all neighbours: probed, std::length_error aborts)
        return f"sample_size={size!r}: Paddle 3.3's CPU kernel aborts on all neighbours (-1); 1 or more"
    return None


INDEXING = ("paddle.Tensor.__getitem__", "paddle.Tensor.__setitem__")
CHECKS: Dict[str, Check] = {
    **dict.fromkeys(INDEXING, _indexing),
    **dict.fromkeys(
        ("paddle.index_put", "paddle.index_put_", "paddle.Tensor.index_put", "paddle.Tensor.index_put_"), _index_put
    ),
    **dict.fromkeys(
        ("paddle.index_fill", "paddle.index_fill_", "paddle.Tensor.index_fill", "paddle.Tensor.index_fill_"),
        _index_on_axis("index"),
    ),
    **dict.fromkeys(("paddle.select_scatter", "paddle.Tensor.select_scatter"), _index_on_axis("index")),
    "paddle.nn.functional.ctc_loss": _ctc_loss,
    "paddle.nn.functional.rnnt_loss": _rnnt_loss,
    "paddle.nn.functional.hsigmoid_loss": _hsigmoid_loss,
    **dict.fromkeys((f"paddle.nn.functional.max_unpool{n}d" for n in (1, 2, 3)), _max_unpool),
    "paddle.linalg.lu_solve": _lu_pivots,
    "paddle.geometric.send_ue_recv": _graph_indices(("src_index", "x"), ("dst_index", "x")),
    "paddle.geometric.send_uv": _graph_indices(("src_index", "x"), ("dst_index", "y")),
    "paddle.geometric.sample_neighbors": _sample_neighbors,
}


def check_call(api: str, func: Any, args: list, kwargs: dict) -> Optional[str]:
    """What is wrong with the built arguments of a call of `api` that its
    kernel does not check (None where nothing is, or nothing is checked)."""
    check = CHECKS.get(api)
    if check is None:
        return None
    try:
        bound = inspect.signature(func).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None  # the call raises as Paddle has it
    bound.apply_defaults()
    why = check(dict(bound.arguments))
    return f"{api}: {why}" if why else None
