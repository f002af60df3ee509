"""The checks replay makes of an operator's built arguments before the
call, where its kernel reads or writes where they point without looking
(preconditions.py applies them; private_operators.py names the private
operators each serves). A check takes the arguments bound to the
schema's names and says what is wrong, or None.

Each states the contract torch's own callers keep (the public operator
that calls the private one, its meta function, its derivative formula),
so a line the tracer wrote from a real program passes it, and a config
of other sizes or values is refused before the kernel runs.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Optional, Sequence

Check = Callable[[Dict[str, Any]], Optional[str]]  # bound arguments -> what is wrong, or None


# -- helpers ---------------------------------------------------------------------------------------


def is_tensor(v: Any) -> bool:
    import torch

    return isinstance(v, torch.Tensor)


def integer(t: Any) -> bool:
    return is_tensor(t) and not (t.is_floating_point() or t.is_complex()) and t.dtype is not _bool()


def _bool() -> Any:
    import torch

    return torch.bool


def values_in(t: Any, low: int, high: int) -> bool:
    """Every value of the integer tensor t in [low, high)."""
    return t.numel() == 0 or (low <= int(t.min()) and int(t.max()) < high)


def in_order(values: Sequence[int], high: int) -> bool:
    """Offsets: in order, within [0, high]."""
    return all(0 <= a <= b for a, b in zip([0, *values], values)) and (not values or values[-1] <= high)


def sizes(t: Any) -> List[int]:
    return list(t.shape)


def expands(t: Any, shape: Sequence[int]) -> bool:
    """Whether t broadcasts to `shape` (as an attention mask or bias does)."""
    if t.dim() > len(shape):
        return False
    return all(a in (1, b) for a, b in zip(reversed(sizes(t)), reversed(list(shape))))


def shaped_as(bound: Dict[str, Any], expected: List[int], names: Sequence[str]) -> Optional[str]:
    """A backward's output and gradient: each of the shape the forward made."""
    for name in names:
        if name in bound and not (is_tensor(bound[name]) and sizes(bound[name]) == expected):
            return f"{name} must have the shape {expected}"
    return None


def same_shape(*names: str) -> Check:
    def check(bound: Dict[str, Any]) -> Optional[str]:
        shapes = [tuple(bound[n].shape) for n in names if is_tensor(bound.get(n))]
        if len(set(shapes)) > 1:
            return " and ".join(f"{n} {list(s)}" for n, s in zip(names, shapes)) + " must have one shape"
        return None

    return check


def dim_in_range(tensor: str, dim: str = "dim") -> Check:
    def check(bound: Dict[str, Any]) -> Optional[str]:
        t, d = bound.get(tensor), bound.get(dim)
        if is_tensor(t) and isinstance(d, int) and not -max(t.dim(), 1) <= d < max(t.dim(), 1):
            return f"{dim}={d} is out of range for {tensor} of {t.dim()} dimensions"
        return None

    return check


def all_of(*checks: Check) -> Check:
    def check(bound: Dict[str, Any]) -> Optional[str]:
        return next((why for why in (c(bound) for c in checks) if why), None)

    return check


def _lengths(v: Any) -> Optional[List[int]]:
    """A list of lengths given as a list or a tensor; None if neither."""
    if is_tensor(v):
        return v.reshape(-1).tolist()
    return list(v) if isinstance(v, (list, tuple)) else None


# -- views -----------------------------------------------------------------------------------------


def window(bound: Dict[str, Any], owner: str) -> Optional[str]:
    """Why the window of sizes and strides in `bound` is not inside the
    storage of bound[owner] (None: it is)."""
    import torch

    base = bound.get(owner)
    size, stride = bound.get("size"), bound.get("stride")
    if isinstance(base, torch.Tensor):
        elements, default_offset = base.untyped_storage().nbytes() // max(base.element_size(), 1), base.storage_offset()
    elif isinstance(base, (torch.UntypedStorage, torch.TypedStorage)):
        itemsize = bound["self"].element_size() if is_tensor(bound.get("self")) else 1
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


def view_of_self(bound: Dict[str, Any]) -> Optional[str]:
    return window(bound, "self")


# -- softmax, losses, normalization ----------------------------------------------------------------

softmax_backward = all_of(same_shape("grad_output", "output"), dim_in_range("output"))


def _embedding_bags(bound: Dict[str, Any], n: int, bags: int, num_weights: int) -> Optional[str]:
    offsets, offset2bag, bag_size = (bound.get(k) for k in ("offsets", "offset2bag", "bag_size"))
    if not all(integer(t) for t in (offset2bag, bag_size)) or ("offsets" in bound and not integer(offsets)):
        return "offsets, offset2bag and bag_size must be integer tensors"
    if offset2bag.numel() not in (0, n) or not values_in(offset2bag, 0, bags):  # (0: the kernel makes it)
        return f"offset2bag must hold {n} values in [0, {bags}), or none"
    if is_tensor(offsets) and (offsets.dim() != 1 or not values_in(offsets, 0, n + 1)):
        return f"offsets must be 1-d and lie in [0, {n}]"
    if bag_size.numel() != bags or not values_in(bag_size, 0, n + 1):
        return f"the {bags} bag sizes must lie in [0, {n}]"
    return None


def embedding_bag_backward(bound: Dict[str, Any]) -> Optional[str]:
    """The embedding bag's gradient writes rows `indices` of a
    [num_weights, dim] gradient, reading rows `offset2bag` of grad: every
    index within its range, the bags' tensors of their sizes."""
    grad, indices, maximum = bound.get("grad"), bound.get("indices"), bound.get("maximum_indices")
    num_weights, mode, weights = bound.get("num_weights"), bound.get("mode"), bound.get("per_sample_weights")
    if not (is_tensor(grad) and integer(indices) and (maximum is None or integer(maximum))):
        return "grad must be a tensor, indices and maximum_indices integer tensors"
    if grad.dim() != 2 or indices.dim() != 1 or not isinstance(num_weights, int) or mode not in (0, 1, 2):
        return "grad must be 2-d, indices 1-d, num_weights an int and mode 0, 1 or 2"
    n = indices.numel()
    if not values_in(indices, 0, max(num_weights, 0)):
        return f"indices must lie in [0, {num_weights})"
    why = _embedding_bags(bound, n, grad.shape[0], num_weights)
    if why:
        return why
    if mode == 2 and (
        not is_tensor(maximum)
        or tuple(maximum.shape) != tuple(grad.shape)
        or not values_in(maximum, -1, max(num_weights, 0))
    ):
        return f"maximum_indices must have grad's shape and lie in [0, {num_weights})"
    if is_tensor(weights) and weights.numel() != n:
        return f"per_sample_weights must hold {n} values"
    return None


def embedding_bag_weights_backward(bound: Dict[str, Any]) -> Optional[str]:
    """The gradient of per_sample_weights reads rows `indices` of weight and
    rows `offset2bag` of grad, per index."""
    grad, weight, indices = bound.get("grad"), bound.get("weight"), bound.get("indices")
    if not (is_tensor(grad) and is_tensor(weight) and integer(indices)):
        return "grad and weight must be tensors, indices an integer tensor"
    if grad.dim() != 2 or weight.dim() != 2 or grad.shape[1] != weight.shape[1] or indices.dim() != 1:
        return f"grad {sizes(grad)} and weight {sizes(weight)} must be 2-d of one width, indices 1-d"
    if not values_in(indices, 0, weight.shape[0]):
        return f"indices must lie in [0, {weight.shape[0]})"
    offset2bag = bound.get("offset2bag")
    if not (integer(offset2bag) and offset2bag.numel() == indices.numel() and values_in(offset2bag, 0, grad.shape[0])):
        return f"offset2bag must hold {indices.numel()} values in [0, {grad.shape[0]})"
    return None


def ctc_loss(bound: Dict[str, Any]) -> Optional[str]:
    """CTC loss reads log_probs at the targets' values and the lengths'
    positions: targets and blank among its classes, input lengths within
    its time, target lengths within the targets, one of each per batch."""
    log_probs, targets, blank = bound.get("log_probs"), bound.get("targets"), bound.get("blank", 0)
    if not (is_tensor(log_probs) and log_probs.dim() in (2, 3) and is_tensor(targets)):
        return "log_probs must be a 2-d or 3-d tensor and targets a tensor"
    time, classes = log_probs.shape[0], log_probs.shape[-1]
    batch = log_probs.shape[1] if log_probs.dim() == 3 else 1
    lengths = []
    for name in ("input_lengths", "target_lengths"):
        v = _lengths(bound.get(name))
        if v is None or len(v) != batch or not all(isinstance(x, int) and x >= 0 for x in v):
            return f"{name} must hold {batch} lengths of 0 or more"
        lengths.append(v)
    if (
        not integer(targets)
        or not values_in(targets, 0, classes)
        or not (isinstance(blank, int) and 0 <= blank < classes)
    ):
        return f"targets and blank must be classes in [0, {classes})"
    if max(lengths[0], default=0) > time:
        return f"input_lengths must be at most the {time} steps of log_probs"
    room = targets.shape[-1] if targets.dim() == 2 and targets.shape[0] == batch else targets.numel()
    if (max(lengths[1], default=0) if targets.dim() == 2 else sum(lengths[1])) > room:
        return f"target_lengths must fit the {room} targets"
    return None


def ctc_loss_backward(bound: Dict[str, Any]) -> Optional[str]:
    """The CTC loss's gradient: ctc_loss's check, and the forward's
    log_alpha (batch, time, 2 x the longest target + 1) and a loss and a
    gradient per batch entry, which it reads at those positions."""
    why = ctc_loss(bound)
    if why:
        return why
    log_probs, alpha = bound["log_probs"], bound.get("log_alpha")
    batch = log_probs.shape[1] if log_probs.dim() == 3 else 1
    states = 2 * max(_lengths(bound["target_lengths"]) or [0]) + 1
    if not (is_tensor(alpha) and alpha.dim() == 3 and alpha.shape[0] == batch):
        return f"log_alpha must be 3-d, {batch} first"
    if alpha.shape[1] < log_probs.shape[0] or alpha.shape[2] < states:
        return f"log_alpha {sizes(alpha)} must hold [{batch}, {log_probs.shape[0]}, {states}] (the forward's)"
    for name in ("grad", "neg_log_likelihood"):
        if not (is_tensor(bound.get(name)) and bound[name].numel() in (1, batch)):
            return f"{name} must hold one value per batch entry ({batch})"
    return None


def batch_norm(bound: Dict[str, Any]) -> Optional[str]:
    """Batch norm's CPU kernels, forward and backward, read (and in training
    write) the weight, bias, running and saved statistics at each of the
    input's channels (its dimension 1) without looking at their sizes: each
    given must hold one value per channel (the saved ones, in evaluation,
    none), and a gradient the input's shape."""
    x = bound.get("input")
    if not (is_tensor(x) and x.dim() >= 2):
        return "input must be a tensor of 2 or more dimensions (batch, channels, ...)"
    channels = x.shape[1]
    training = next((bound[k] for k in ("train", "training", "update") if k in bound), True)
    saved = ("save_mean", "save_invstd", "save_var", "save_var_transform")
    for name in ("weight", "bias", "running_mean", "running_var", *saved):
        t = bound.get(name)
        unused = name.startswith("save_") and training is False  # (evaluation saves no statistics)
        if is_tensor(t) and t.numel() not in ((channels, 0) if unused else (channels,)):
            return f"{name} must hold one value per channel of input ({channels}), not {t.numel()}"
    for name in ("grad_out", "grad_output"):
        grad = bound.get(name)
        if is_tensor(grad) and tuple(grad.shape) != tuple(x.shape):
            return f"{name} {sizes(grad)} must have input's shape {sizes(x)}"
    return None


def weight_norm(bound: Dict[str, Any]) -> Optional[str]:
    """Weight norm's fused kernels read and write one norm and one g per
    slice of v along `dim` (its first or last), unchecked: g (saved_g,
    saved_norms) of that many values, a gradient of v's shape."""
    v = bound.get("v", bound.get("saved_v"))
    dim = bound.get("dim", 0)
    if not (is_tensor(v) and v.dim() >= 1 and isinstance(dim, int)):
        return "v must be a tensor and dim an int"
    if dim not in (0, v.dim() - 1):
        return None  # not the fused kernels: norm_except_dim's public operators
    slices = v.shape[dim]
    for name in ("g", "saved_g", "saved_norms"):
        t = bound.get(name)
        if name in bound and not (is_tensor(t) and t.numel() == slices):
            return f"{name} must hold one value per slice of v along dim {dim} ({slices})"
    grad = bound.get("grad_w")
    if "grad_w" in bound and not (is_tensor(grad) and grad.shape == v.shape):
        return f"grad_w must have v's shape {sizes(v)}"
    return None


def rms_norm(bound: Dict[str, Any]) -> Optional[str]:
    """RMS norm's kernels normalize input's last dims, normalized_shape,
    scaled by weight (of that shape); the gradient reads grad_out at
    input's places and one rstd per row before them."""
    x, shape, weight = bound.get("input"), bound.get("normalized_shape"), bound.get("weight")
    if not (is_tensor(x) and isinstance(shape, (list, tuple)) and 0 < len(shape) <= x.dim()):
        return "input must be a tensor and normalized_shape a list of its last sizes"
    if sizes(x)[x.dim() - len(shape) :] != list(shape):
        return f"normalized_shape {list(shape)} must be the last sizes of input {sizes(x)}"
    if is_tensor(weight) and sizes(weight) != list(shape):
        return f"weight {sizes(weight)} must have the shape {list(shape)}"
    rows = x.numel() // max(1, math.prod(shape))
    rstd = bound.get("rstd")
    if "rstd" in bound and not (is_tensor(rstd) and rstd.numel() == rows):
        return f"rstd must hold one value per row of input ({rows})"
    return shaped_as(bound, sizes(x), ("grad_out",))


def fused_rnn_cell(gates: int) -> Check:
    """CUDA's fused LSTM (4 gates) and GRU (3 gates) cells, which
    nn.LSTMCell and nn.GRUCell run there: gates (batch, gates x hidden), a
    state and gradients (batch, hidden), biases of the gates' width; their
    gradient's workspace the forward's (batch, 4 x hidden; a GRU's 5 x)."""
    slots = 5 if gates == 3 else gates

    def check(bound: Dict[str, Any]) -> Optional[str]:
        first = next((bound[n] for n in ("input_gates", "cx", "hx", "grad_hy") if is_tensor(bound.get(n))), None)
        if not (is_tensor(first) and first.dim() == 2):
            return "the gates and the state must be 2-d tensors (batch, width)"
        batch, hidden = first.shape[0], first.shape[1] // gates if "input_gates" in bound else first.shape[1]
        expected: Dict[str, List[int]] = {}
        expected.update(dict.fromkeys(("input_gates", "hidden_gates"), [batch, gates * hidden]))
        expected.update(dict.fromkeys(("input_bias", "hidden_bias"), [gates * hidden]))
        expected.update(dict.fromkeys(("cx", "hx", "cy", "grad_hy", "grad_cy"), [batch, hidden]))
        expected["workspace"] = [batch, slots * hidden]
        for name, shape in expected.items():
            t = bound.get(name)
            if (is_tensor(t) or (name in ("input_gates", "hidden_gates", "workspace") and name in bound)) and (
                not is_tensor(t) or sizes(t) != shape
            ):
                return f"{name} must have the shape {shape}"
        return None

    return check


def pooling_backward(spatial: int) -> Check:
    """An adaptive pooling's gradient reads grad_output at each batch and
    channel of self: of self's leading dimensions, `spatial` after them."""

    def check(bound: Dict[str, Any]) -> Optional[str]:
        grad, x = bound.get("grad_output"), bound.get("self")
        if not (is_tensor(grad) and is_tensor(x) and grad.dim() == x.dim() >= spatial + 1):
            return f"grad_output and self must be tensors of one count of dimensions, {spatial + 1} or more"
        if grad.shape[:-spatial] != x.shape[:-spatial]:
            return f"grad_output {sizes(grad)} must have self's {sizes(x)[:-spatial]} before its last {spatial}"
        return None

    return check


def distance_backward(bound: Dict[str, Any]) -> Optional[str]:
    """cdist's gradient reads grad and the forward's cdist, (batch..., rows
    of x1, rows of x2) over x1's and x2's broadcast batch; pdist's reads one
    value per pair of self's rows. Their kernels take those sizes as given."""
    import torch

    grad, result = bound.get("grad"), bound.get("cdist", bound.get("pdist"))
    if not (is_tensor(grad) and is_tensor(result)):
        return "grad and the forward's result must be tensors"
    if "pdist" in bound:
        x = bound.get("self")
        if not (is_tensor(x) and x.dim() == 2):
            return "self must be 2-d"
        pairs = x.shape[0] * (x.shape[0] - 1) // 2
        expected = [pairs]
    else:
        x1, x2 = bound.get("x1"), bound.get("x2")
        if not (is_tensor(x1) and is_tensor(x2) and x1.dim() >= 2 and x2.dim() >= 2 and x1.shape[-1] == x2.shape[-1]):
            return "x1 and x2 must be tensors of 2 or more dimensions, of one width"
        try:
            batch = list(torch.broadcast_shapes(x1.shape[:-2], x2.shape[:-2]))
        except RuntimeError:
            return f"x1 {sizes(x1)} and x2 {sizes(x2)} must have batches that broadcast"
        expected = [*batch, x1.shape[-2], x2.shape[-2]]
    for name, t in (("grad", grad), ("the forward's result", result)):
        if sizes(t) != expected:
            return f"{name} {sizes(t)} must have the shape {expected}"
    return None


def cumulative_helper(bound: Dict[str, Any]) -> Optional[str]:
    """cummax's and cummin's kernels write values and indices at each
    element of self: both of self's shape (the public operators resize
    them first), dim within self's."""
    x = bound.get("self")
    if not is_tensor(x):
        return "self must be a tensor"
    for name in ("values", "indices"):
        if not (is_tensor(bound.get(name)) and bound[name].shape == x.shape):
            return f"{name} must have self's shape {sizes(x)}"
    return dim_in_range("self")(bound)


def cholesky_solve_helper(bound: Dict[str, Any]) -> Optional[str]:
    """LAPACK's solve from a Cholesky factor: A square matrices (n, n), self
    (n, k), one batch (cholesky_solve broadcasts them before)."""
    x, a = bound.get("self"), bound.get("A")
    if not (is_tensor(x) and is_tensor(a) and x.dim() >= 2 and a.dim() == x.dim()):
        return "self and A must be tensors of one count of dimensions, 2 or more"
    if a.shape[-1] != a.shape[-2] or a.shape[-1] != x.shape[-2] or a.shape[:-2] != x.shape[:-2]:
        return f"A {sizes(a)} must be square matrices of self's {sizes(x)} rows, one batch"
    return None


def coo_to_csr(bound: Dict[str, Any]) -> Optional[str]:
    """Row indices of a coalesced COO matrix of `size` rows (in order, each
    below size) to its compressed rows: the kernel writes up to the index
    each gives."""
    rows, size = bound.get("self"), bound.get("size")
    if not (integer(rows) and rows.dim() == 1 and isinstance(size, int) and size >= 0):
        return "self must be a 1-d integer tensor and size an int of 0 or more"
    if not (in_order(rows.tolist(), size) and values_in(rows, 0, size)):
        return f"self must hold row indices in order within [0, {size})"
    return None


def csr_to_coo(bound: Dict[str, Any]) -> Optional[str]:
    """Compressed rows to row indices: the kernel writes each row's index
    from its offset to the next's, into as many as there are columns."""
    crow, col = bound.get("crow_indices"), bound.get("col_indices")
    if not (integer(crow) and integer(col) and crow.dim() == col.dim() >= 1 and crow.shape[:-1] == col.shape[:-1]):
        return "crow_indices and col_indices must be integer tensors of one batch"
    if crow.shape[-1] == 0:
        return "crow_indices must hold an offset per row and one more"
    nnz = col.shape[-1]
    for row in crow.reshape(-1, crow.shape[-1]).tolist():
        if not in_order(row, nnz):
            return f"crow_indices must be offsets in order within [0, {nnz}] (the column indices)"
    return None


def linear_combination(bound: Dict[str, Any]) -> Optional[str]:
    """The kernel sums input's first-dimension slices by coefficients'
    columns: coefficients 2-d, as many columns as input has slices."""
    x, c = bound.get("input"), bound.get("coefficients")
    if not (is_tensor(x) and is_tensor(c) and x.dim() >= 1 and c.dim() == 2 and c.shape[1] == x.shape[0]):
        return "coefficients must be 2-d, with one column per slice of input's first dimension"
    return None


def grid_sampler(bound: Dict[str, Any]) -> Optional[str]:
    """grid_sample's CPU fallback: input (batch, channels, height, width),
    grid (batch, height, width, 2), modes among torch's, and for its
    gradient grad_output (batch, channels, grid's height and width)."""
    x, grid = bound.get("input"), bound.get("grid")
    if not (is_tensor(x) and is_tensor(grid) and x.dim() == 4 and grid.dim() == 4):
        return "input and grid must be 4-d tensors"
    if grid.shape[0] != x.shape[0] or grid.shape[3] != 2:
        return f"grid {sizes(grid)} must be ({x.shape[0]}, height, width, 2)"
    if bound.get("interpolation_mode") not in (0, 1, 2) or bound.get("padding_mode") not in (0, 1, 2):
        return "interpolation_mode and padding_mode must be 0, 1 or 2"
    expected = [x.shape[0], x.shape[1], grid.shape[1], grid.shape[2]]
    return shaped_as(bound, expected, ("grad_output",))


def pack_padded_sequence(bound: Dict[str, Any]) -> Optional[str]:
    """Sequences packed by their lengths: each at most the input's length."""
    x, lengths = bound.get("input"), bound.get("lengths")
    if not (is_tensor(x) and x.dim() >= 2 and integer(lengths) and lengths.dim() == 1):
        return "input must be a tensor of 2 or more dimensions and lengths a 1-d integer tensor"
    longest = x.shape[1] if bound.get("batch_first") else x.shape[0]
    if not values_in(lengths, 0, longest + 1):
        return f"lengths must lie in [0, {longest}], the input's length"
    return None


def gather_sparse_backward(bound: Dict[str, Any]) -> Optional[str]:
    """gather's sparse gradient makes a sparse tensor of self's shape at
    the indices gather read: index within self's dim, of grad's shape."""
    x, index, grad, dim = bound.get("self"), bound.get("index"), bound.get("grad"), bound.get("dim")
    if not (is_tensor(x) and integer(index) and is_tensor(grad) and isinstance(dim, int)):
        return "self and grad must be tensors, index an integer tensor, dim an int"
    why = dim_in_range("self")(bound)
    if why:
        return why
    if index.shape != grad.shape or index.dim() != x.dim() or not values_in(index, 0, x.shape[dim] if x.dim() else 1):
        return f"index must have grad's shape and lie in [0, {x.shape[dim] if x.dim() else 1})"
    return None


def sparse_coo(bound: Dict[str, Any]) -> Optional[str]:
    """A COO tensor made from its indices and values without the checks of
    torch.sparse_coo_tensor (which replay's check_sparse_tensor_invariants
    does not reach here): indices (sparse dims, nnz), each within its
    size; values (nnz, the dense sizes); coalesced, if it says so."""
    indices, values, size = bound.get("indices"), bound.get("values"), bound.get("size")
    if not (integer(indices) and indices.dim() == 2 and is_tensor(values) and isinstance(size, (list, tuple))):
        return "indices must be a 2-d integer tensor, values a tensor, size a list"
    if values.dim() == 0:
        return "values must hold one value (or slice) per index: 1 or more dimensions"
    sparse, dense = bound.get("sparse_dim", indices.shape[0]), bound.get("dense_dim", values.dim() - 1)
    if (sparse, dense) != (indices.shape[0], values.dim() - 1) or len(size) != sparse + dense:
        return f"indices {sizes(indices)} and values {sizes(values)} must make {len(size)} dimensions, as size"
    if values.shape[0] != indices.shape[1] or list(values.shape[1:]) != list(size[sparse:]):
        return f"values must be (nnz={indices.shape[1]}, {list(size[sparse:])})"
    for d in range(sparse):
        if not values_in(indices[d], 0, size[d]):
            return f"indices of dimension {d} must lie in [0, {size[d]})"
    if bound.get("is_coalesced") and indices.shape[1] > 1:
        import torch

        flat = torch.zeros(indices.shape[1], dtype=torch.int64)
        for d in range(sparse):
            flat = flat * size[d] + indices[d]
        if not bool((flat[1:] > flat[:-1]).all()):
            return "is_coalesced=True needs indices in order, none twice"
    return None


# -- indexing and FFT ------------------------------------------------------------------------------


def _mask_dtypes() -> Any:
    import torch

    return (torch.bool, torch.uint8)


def index_put(bound: Dict[str, Any]) -> Optional[str]:
    """index_put with `unsafe` skips its bounds checks: every index within
    the dimension it indexes, a mask of the shape of the dimensions it
    covers, no more indices than dimensions."""
    self, indices = bound.get("self"), bound.get("indices")
    if not is_tensor(self) or not isinstance(indices, (list, tuple)):
        return "self must be a tensor and indices a list"
    dim = 0
    for i, index in enumerate(indices):
        if index is None:
            dim += 1
            continue
        if not is_tensor(index) or index.is_floating_point() or index.is_complex():
            return f"indices[{i}] must be an integer or bool tensor, or None"
        if index.dtype in _mask_dtypes():
            if tuple(index.shape) != tuple(self.shape[dim : dim + index.dim()]):
                return f"indices[{i}], a mask of shape {sizes(index)}, must match self's dimensions {dim} on"
            dim += index.dim()
            continue
        if dim >= self.dim() or not values_in(index, -self.shape[dim], self.shape[dim]):
            return (
                f"indices[{i}] must lie in [-{self.shape[dim] if dim < self.dim() else 0}, "
                f"{self.shape[dim] if dim < self.dim() else 0}) for dimension {dim} of self"
            )
        dim += 1
    if dim > self.dim():
        return f"{len(indices)} indices for self of {self.dim()} dimensions"
    return None


def fft(bound: Dict[str, Any]) -> Optional[str]:
    """The FFT kernels take `dim` as dimensions of self already wrapped,
    without looking (the public fft functions wrap and check them): each in
    [0, self's dimensions), none twice."""
    t, dims = bound.get("self"), bound.get("dim")
    if not (is_tensor(t) and isinstance(dims, (list, tuple)) and all(isinstance(d, int) for d in dims)):
        return "self must be a tensor and dim a list of dimensions"
    if not all(0 <= d < t.dim() for d in dims) or len(set(dims)) != len(dims):
        return f"dim {list(dims)} must be distinct dimensions of self, in [0, {t.dim()})"
    return None
