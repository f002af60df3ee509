"""What replay checks of a call's built arguments before it makes the call,
where the kernel would not: a config file may give any shapes, and some
operators read where their arguments point without looking.

- Views by sizes and strides (`as_strided`, `_reshape_alias`, `set_`, prims'
  `as_strided` and their _copy and _scatter forms: every operator whose
  schema takes `size` and `stride` for a tensor or storage it reads): the
  window must lie inside that storage: strides and sizes of 0 or more, an
  offset of 0 or more, the last element before the storage's end.
- Private operators (`torch.ops.aten._softmax_backward_data`, their
  bindings `torch._softmax`, ...): replay calls only the reviewed ones
  (REVIEWED), each with the check its kernel lacks, or None where the
  kernel checks what it reads itself (each such entry was probed with
  arguments of wrong shapes: tests/replay/test_replay_safety.py keeps the probes).
  Any other private operator is refused by the policy (policy.py).
- Public operators whose kernels index by argument values without
  looking (PUBLIC_CHECKS): a config's value profile may hold any values.
- Sparse tensors made by a call are checked (replay runs under
  torch.sparse.check_sparse_tensor_invariants), so a call that asks for
  no check (check_invariants=False) is refused.
"""

from __future__ import annotations

import fnmatch
import functools
from typing import Any, Callable, Dict, List, Optional, Tuple

Check = Callable[[Dict[str, Any]], Optional[str]]  # bound arguments -> what is wrong, or None


def _same_shape(*names: str) -> Check:
    def check(bound: Dict[str, Any]) -> Optional[str]:
        shapes = [tuple(bound[n].shape) for n in names if _is_tensor(bound.get(n))]
        if len(set(shapes)) > 1:
            return " and ".join(f"{n} {list(s)}" for n, s in zip(names, shapes)) + " must have one shape"
        return None

    return check


def _dim_in_range(tensor: str, dim: str = "dim") -> Check:
    def check(bound: Dict[str, Any]) -> Optional[str]:
        t, d = bound.get(tensor), bound.get(dim)
        if _is_tensor(t) and isinstance(d, int) and not -max(t.dim(), 1) <= d < max(t.dim(), 1):
            return f"{dim}={d} is out of range for {tensor} of {t.dim()} dimensions"
        return None

    return check


def _all(*checks: Check) -> Check:
    def check(bound: Dict[str, Any]) -> Optional[str]:
        return next((why for why in (c(bound) for c in checks) if why), None)

    return check


def _attention(bound: Dict[str, Any]) -> Optional[str]:
    """scaled dot product attention: query, key and value are 4-d (batch,
    heads, length, head dim); key and value agree on batch, heads and
    length, query and key on batch and head dim, and the query's heads are
    a multiple of the key's (grouped-query attention: each key head serves
    as many query heads)."""
    q, k, v = (bound.get(n) for n in ("query", "key", "value"))
    if not all(_is_tensor(t) and t.dim() == 4 for t in (q, k, v)):
        return "query, key and value must be 4-d tensors"
    if (
        k.shape[:3] != v.shape[:3]
        or q.shape[0] != k.shape[0]
        or q.shape[3] != k.shape[3]
        or not k.shape[1]
        or q.shape[1] % k.shape[1]
    ):
        return f"query {list(q.shape)}, key {list(k.shape)} and value {list(v.shape)} do not agree"
    return None


def _attention_backward(bound: Dict[str, Any]) -> Optional[str]:
    why = _attention(bound)
    if why:
        return why
    q, v, out, grad, lse = (bound.get(n) for n in ("query", "value", "out", "grad_out", "logsumexp"))
    expected = tuple(q.shape[:3]) + (v.shape[3],)
    if not (_is_tensor(out) and _is_tensor(grad) and tuple(out.shape) == tuple(grad.shape) == expected):
        return f"out and grad_out must have the shape {list(expected)}"
    if not (_is_tensor(lse) and tuple(lse.shape) == tuple(q.shape[:3])):
        return f"logsumexp must have the shape {list(q.shape[:3])}"
    return None


def _values_in(t: Any, low: int, high: int) -> bool:
    """Every value of the integer tensor t in [low, high)."""
    return t.numel() == 0 or (low <= int(t.min()) and int(t.max()) < high)


def _embedding_bag_backward(bound: Dict[str, Any]) -> Optional[str]:
    """The embedding bag's gradient writes rows `indices` of a
    [num_weights, dim] gradient, reading rows `offset2bag` of grad: every
    index within its range, the bags' tensors of their sizes."""
    grad, indices, offsets, offset2bag, bag_size, maximum = (
        bound.get(n) for n in ("grad", "indices", "offsets", "offset2bag", "bag_size", "maximum_indices")
    )
    num_weights, mode, weights = bound.get("num_weights"), bound.get("mode"), bound.get("per_sample_weights")
    if not all(_is_tensor(t) for t in (grad, indices, offsets, offset2bag, bag_size, maximum)):
        return "grad, indices, offsets, offset2bag, bag_size and maximum_indices must be tensors"
    if (
        grad.dim() != 2
        or indices.dim() != 1
        or offsets.dim() != 1
        or not isinstance(num_weights, int)
        or mode not in (0, 1, 2)
    ):
        return "grad must be 2-d, indices and offsets 1-d, num_weights an int and mode 0, 1 or 2"
    bags, n = grad.shape[0], indices.numel()
    if not _values_in(indices, 0, max(num_weights, 0)):
        return f"indices must lie in [0, {num_weights})"
    if offset2bag.numel() not in (0, n) or not _values_in(offset2bag, 0, bags):  # (0: the kernel makes it)
        return f"offset2bag must hold {n} values in [0, {bags}), or none"
    if not _values_in(offsets, 0, n + 1) or bag_size.numel() != bags or not _values_in(bag_size, 0, n + 1):
        return f"offsets and the {bags} bag sizes must lie in [0, {n}]"
    if mode == 2 and (tuple(maximum.shape) != tuple(grad.shape) or not _values_in(maximum, -1, max(num_weights, 0))):
        return f"maximum_indices must have grad's shape and lie in [0, {num_weights})"
    if _is_tensor(weights) and weights.numel() != n:
        return f"per_sample_weights must hold {n} values"
    return None


def _ctc_loss(bound: Dict[str, Any]) -> Optional[str]:
    """CTC loss reads log_probs at the targets' values and the lengths'
    positions: targets and blank among its classes, input lengths within
    its time, target lengths within the targets, one of each per batch."""
    log_probs, targets, blank = bound.get("log_probs"), bound.get("targets"), bound.get("blank", 0)
    if not (_is_tensor(log_probs) and log_probs.dim() in (2, 3) and _is_tensor(targets)):
        return "log_probs must be a 2-d or 3-d tensor and targets a tensor"
    time, classes = log_probs.shape[0], log_probs.shape[-1]
    batch = log_probs.shape[1] if log_probs.dim() == 3 else 1
    lengths = []
    for name in ("input_lengths", "target_lengths"):
        v = bound.get(name)
        v = v.reshape(-1).tolist() if _is_tensor(v) else list(v) if isinstance(v, (list, tuple)) else None
        if v is None or len(v) != batch or not all(isinstance(x, int) and x >= 0 for x in v):
            return f"{name} must hold {batch} lengths of 0 or more"
        lengths.append(v)
    if (
        targets.is_floating_point()
        or not _values_in(targets, 0, classes)
        or not (isinstance(blank, int) and 0 <= blank < classes)
    ):
        return f"targets and blank must be classes in [0, {classes})"
    if max(lengths[0], default=0) > time:
        return f"input_lengths must be at most the {time} steps of log_probs"
    room = targets.shape[-1] if targets.dim() == 2 and targets.shape[0] == batch else targets.numel()
    if (max(lengths[1], default=0) if targets.dim() == 2 else sum(lengths[1])) > room:
        return f"target_lengths must fit the {room} targets"
    return None


def _index_put(bound: Dict[str, Any]) -> Optional[str]:
    """index_put with `unsafe` skips its bounds checks: every index within
    the dimension it indexes, a mask of the shape of the dimensions it
    covers, no more indices than dimensions."""
    self, indices = bound.get("self"), bound.get("indices")
    if not _is_tensor(self) or not isinstance(indices, (list, tuple)):
        return "self must be a tensor and indices a list"
    dim = 0
    for i, index in enumerate(indices):
        if index is None:
            dim += 1
            continue
        if not _is_tensor(index) or index.is_floating_point() or index.is_complex():
            return f"indices[{i}] must be an integer or bool tensor, or None"
        if index.dtype in _mask_dtypes():
            if tuple(index.shape) != tuple(self.shape[dim : dim + index.dim()]):
                return f"indices[{i}], a mask of shape {list(index.shape)}, must match self's dimensions {dim} on"
            dim += index.dim()
            continue
        if dim >= self.dim() or not _values_in(index, -self.shape[dim], self.shape[dim]):
            return (
                f"indices[{i}] must lie in [-{self.shape[dim] if dim < self.dim() else 0}, "
                f"{self.shape[dim] if dim < self.dim() else 0}) for dimension {dim} of self"
            )
        dim += 1
    if dim > self.dim():
        return f"{len(indices)} indices for self of {self.dim()} dimensions"
    return None


def _batch_norm(bound: Dict[str, Any]) -> Optional[str]:
    """Batch norm's CPU kernels, forward and backward, read (and in training
    write) the weight, bias, running and saved statistics at each of the
    input's channels (its dimension 1) without looking at their sizes: each
    given must hold one value per channel, and a gradient the input's shape."""
    x = bound.get("input")
    if not (_is_tensor(x) and x.dim() >= 2):
        return "input must be a tensor of 2 or more dimensions (batch, channels, ...)"
    channels = x.shape[1]
    for name in ("weight", "bias", "running_mean", "running_var", "save_mean", "save_invstd", "save_var"):
        t = bound.get(name)
        if _is_tensor(t) and t.numel() != channels:
            return f"{name} must hold one value per channel of input ({channels}), not {t.numel()}"
    grad = bound.get("grad_out")
    if _is_tensor(grad) and tuple(grad.shape) != tuple(x.shape):
        return f"grad_out {list(grad.shape)} must have input's shape {list(x.shape)}"
    return None


def _fft(bound: Dict[str, Any]) -> Optional[str]:
    """The FFT kernels take `dim` as dimensions of self already wrapped,
    without looking (the public fft functions wrap and check them): each in
    [0, self's dimensions), none twice."""
    t, dims = bound.get("self"), bound.get("dim")
    if not (_is_tensor(t) and isinstance(dims, (list, tuple)) and all(isinstance(d, int) for d in dims)):
        return "self must be a tensor and dim a list of dimensions"
    if not all(0 <= d < t.dim() for d in dims) or len(set(dims)) != len(dims):
        return f"dim {list(dims)} must be distinct dimensions of self, in [0, {t.dim()})"
    return None


def _mask_dtypes() -> Tuple[Any, ...]:
    import torch

    return (torch.bool, torch.uint8)


# Public aten operators whose kernels read where their arguments' values
# point without checking them, with the check replay makes first.
PUBLIC_CHECKS: Dict[str, Check] = {
    "ctc_loss": _ctc_loss,
    "native_batch_norm": _batch_norm,
    "native_batch_norm_backward": _batch_norm,
    "batch_norm_backward": _batch_norm,
}


# Private aten operators replay calls (patterns on the operator's name), by
# family, with what replay checks first (None: the kernel checks its
# arguments, probed with wrong shapes in the tests).
REVIEWED: Dict[str, Optional[Check]] = {
    # conversions and queries
    "_to_copy": None,
    "_unsafe_view": None,  # checks the element count
    "_local_scalar_dense": None,
    "_has_compatible_shallow_copy_type": None,
    # softmax and its gradient
    "_softmax": None,
    "_log_softmax": None,
    "_safe_softmax": None,
    "_softmax_backward_data": _all(_same_shape("grad_output", "output"), _dim_in_range("output")),
    "_log_softmax_backward_data": _all(_same_shape("grad_output", "output"), _dim_in_range("output")),
    # optimizers' list operators: the lists' lengths are checked, each pair by
    # the operator it falls back to
    "_foreach_*": None,
    # attention
    "_scaled_dot_product_flash_attention_for_cpu": _attention,
    "_scaled_dot_product_flash_attention_for_cpu_backward": _attention_backward,
    # embedding bags: the indices are checked against the weight
    "_embedding_bag": None,
    "_embedding_bag_forward_only": None,
    "_embedding_bag_backward": _embedding_bag_backward,
    # indexing: index_put's implementation, whose `unsafe` skips the bounds checks
    "_index_put_impl_": _index_put,
    # float8 matmul with scales, and the form torch.nn.functional.scaled_mm calls
    # (their kernels check shapes, scales and bias)
    "_scaled_mm": None,
    "_scaled_mm_v2": None,
    # the sparse matmul torch.sparse.mm calls (its kernel checks the shapes)
    "_sparse_mm": None,
    # the CTC loss ctc_loss calls, with its arguments: the same check
    "_ctc_loss": _ctc_loss,
    # linalg's check of a LAPACK info tensor (it reads each value, raising on a nonzero one)
    "_linalg_check_errors": None,
    # what public operators call (each reached from torch.testing's OpInfo samples; the
    # kernels check shapes, dims and sizes: probed in tests/replay/test_replay_safety.py)
    "_conj": None,
    "_conj_physical": None,
    "_chunk_cat": None,
    "_linalg_svd": None,
    "_linalg_eigh": None,
    "_linalg_det": None,
    "_linalg_slogdet": None,
    "_linalg_solve_ex": None,
    "_lu_with_info": None,
    "_adaptive_avg_pool2d": None,
    "_adaptive_avg_pool3d": None,
    "_upsample_bilinear2d_aa": None,  # (a scale of 0 or less is not used: the sizes' ratio is)
    "_upsample_nearest_exact1d": None,
    "_trilinear": None,
    "_unique2": None,
    "_cdist_forward": None,
    "_pdist_forward": None,
    "_prelu_kernel": None,
    "_to_sparse": None,
    "_sparse_mm_reduce_impl": None,
    "_histogramdd_bin_edges": None,
    "_histogramdd_from_bin_cts": None,
    # masked indexing: the indices are clamped into self's sizes before they are used
    "_unsafe_masked_index": None,
    "_unsafe_masked_index_put_accumulate": None,
    # batch norm's forms: per-channel tensors of the input's channels
    "_batch_norm_with_update*": _batch_norm,
    "_batch_norm_no_update": _batch_norm,
    "_native_batch_norm_legit*": _batch_norm,
    # the FFT kernels the fft functions call, with their dims checked
    "_fft_c2c": _fft,
    "_fft_r2c": _fft,
    "_fft_c2r": _fft,
}


def reviewed(op: str) -> Tuple[bool, Optional[Check]]:
    """Whether the private operator named `op` (its aten name) is reviewed,
    and its check."""
    for pattern, check in REVIEWED.items():
        if fnmatch.fnmatchcase(op, pattern):
            return True, check
    return False, None


@functools.lru_cache(maxsize=None)
def view_operators() -> Dict[str, str]:
    """Per operator ("aten::as_strided") that reads a window of a storage
    given by sizes and strides, the argument whose storage it reads."""
    import torch

    found = {}
    for s in torch._C._jit_get_all_schemas():
        names = [a.name for a in s.arguments]
        if "size" not in names or "stride" not in names or "empty" in s.name or "_assert" in s.name:
            continue
        owner = (
            "source"
            if "source" in names
            else next(
                (a.name for a in s.arguments if str(a.type) == "Tensor" and names.index(a.name) < names.index("size")),
                None,
            )
        )
        if owner is not None:
            found[s.name] = owner
    return found


def _is_tensor(v: Any) -> bool:
    import torch

    return isinstance(v, torch.Tensor)


def _window(bound: Dict[str, Any], owner: str) -> Optional[str]:
    """Why the window of sizes and strides in `bound` is not inside the
    storage of bound[owner] (None: it is)."""
    import torch

    base = bound.get(owner)
    size, stride = bound.get("size"), bound.get("stride")
    if isinstance(base, torch.Tensor):
        elements, default_offset = base.untyped_storage().nbytes() // max(base.element_size(), 1), base.storage_offset()
    elif isinstance(base, (torch.UntypedStorage, torch.TypedStorage)):
        itemsize = bound["self"].element_size() if _is_tensor(bound.get("self")) else 1
        elements, default_offset = base.nbytes() // itemsize, 0
    else:
        return None
    offset = bound.get("storage_offset")
    offset = default_offset if offset is None else offset
    if not (isinstance(size, (list, tuple)) and isinstance(stride, (list, tuple)) and len(size) == len(stride)):
        return None  # the operator refuses it itself
    if any(not isinstance(x, int) or x < 0 for x in (*size, *stride, offset)):
        return f"sizes {list(size)}, strides {list(stride)} and offset {offset} must all be 0 or more"
    if 0 in size:
        return None
    last = offset + sum((d - 1) * s for d, s in zip(size, stride))
    if last >= elements:
        return (
            f"sizes {list(size)}, strides {list(stride)} and offset {offset} reach element {last} of a "
            f"storage of {elements}"
        )
    return None


def _schemas_of(func: Any, api: str) -> List[Any]:
    """The schemas a call of `func` (named `api`) may run: an operator's
    own, or those of the aten operator a Python binding is named after."""
    import torch

    if isinstance(func, torch._ops.OpOverload):
        return [func._schema]
    name = api.rsplit(".", 1)[-1]
    packet = getattr(torch.ops.aten, name, None) if not api.startswith("torch.ops.") else None
    if isinstance(func, torch._ops.OpOverloadPacket):
        packet = func
    if not isinstance(packet, torch._ops.OpOverloadPacket):  # (aten.__eq__ is the namespace object's own)
        return []
    return [getattr(packet, o)._schema for o in packet.overloads()]


def _bind(schema: Any, args: list, kwargs: dict) -> Optional[Dict[str, Any]]:
    names = [a.name for a in schema.arguments]
    if "input" in kwargs and "self" in names and "input" not in names:  # a binding's name for self
        kwargs = {("self" if k == "input" else k): v for k, v in kwargs.items()}
    if len(args) > len(names) or not set(kwargs) <= set(names):
        return None
    bound = dict(zip(names, args))
    if set(bound) & set(kwargs):
        return None
    bound.update(kwargs)
    return bound


def operator_name(schema: Any) -> str:
    return schema.name.partition("::")[2]


def check_call(api: str, func: Any, args: list, kwargs: dict) -> Optional[str]:
    """What is wrong with calling `func` (`api`) on these built arguments,
    that its kernel would not see; None if nothing is."""
    if kwargs.get("check_invariants") is False:  # (a binding's argument: no schema has it)
        return f"{api}: check_invariants=False: replay makes sparse tensors with their invariants checked"
    views = view_operators()
    for schema in _schemas_of(func, api):
        bound = _bind(schema, args, kwargs)
        if bound is None:
            continue
        owner = views.get(schema.name)
        why = _window(bound, owner) if owner else None
        op = operator_name(schema)
        if not why and op.startswith("_"):
            _, check = reviewed(op)
            why = check(bound) if check else None
        if not why and op in PUBLIC_CHECKS:
            why = PUBLIC_CHECKS[op](bound)

        if why:
            return f"{api}: {why}"
    return None
