"""Indices of ties: where torch leaves open which of equal elements an
index output names (an unstable sort's order of equal values, the
position of a maximum that occurs twice), two correct kernels (a strided
and a contiguous one, a float32 and a float64 one) may name different
ones. A check then compares an index by the value it names: `settle`
makes the reference side's index the replay side's wherever both name
equal elements of the replay side's input, so that the comparison after
it finds a wrong index (one naming another value) and no tie.

TIED names the operators, by their last name (torch.sort,
torch.Tensor.sort, torch.ops.aten.sort.default are all "sort"), with
their parameters in order as far as the index depends on them; the index
is output 1 (output 0 where the operator returns the indices alone).
POOLED names max pooling's operators, whose indices (output 1) are flat
over the pooled dimensions of each plane of the input."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

# name -> (the parameters up to the last the index depends on, the index output, dim's default)
# (None: the input flattened, as argmax without dim)
TIED: Dict[str, Tuple[Tuple[str, ...], Optional[int], Any]] = {
    "sort": (("input", "dim", "descending"), 1, -1),
    "argsort": (("input", "dim", "descending"), None, -1),
    "topk": (("input", "k", "dim", "largest", "sorted"), 1, -1),
    "kthvalue": (("input", "k", "dim", "keepdim"), 1, -1),
    "mode": (("input", "dim", "keepdim"), 1, -1),
    "median": (("input", "dim", "keepdim"), 1, "required"),
    "nanmedian": (("input", "dim", "keepdim"), 1, "required"),
    "max": (("input", "dim", "keepdim"), 1, "required"),
    "min": (("input", "dim", "keepdim"), 1, "required"),
    "cummax": (("input", "dim"), 1, "required"),
    "cummin": (("input", "dim"), 1, "required"),
    "argmax": (("input", "dim", "keepdim"), None, None),
    "argmin": (("input", "dim", "keepdim"), None, None),
}
SELF = ("self", "input")  # the input's names, aten's and the public API's
# max pooling's indices (output 1): each a flat index into its input's last POOLED[name] dimensions, per
# plane; which of a window's equal maxima it names is open
POOLED: Dict[str, int] = {
    "max_pool1d_with_indices": 1,
    "max_pool2d_with_indices": 2,
    "max_pool3d_with_indices": 3,
    "adaptive_max_pool1d": 1,
    "adaptive_max_pool2d": 2,
    "adaptive_max_pool3d": 3,
    "fractional_max_pool2d": 2,
    "fractional_max_pool3d": 3,
}


def name_of(api: str) -> Tuple[str, str]:
    """An API's last name and its overload ("" for a public API)."""
    parts = api.split(".")
    if api.startswith("torch.ops.") and len(parts) == 5:
        return parts[3], parts[4]
    return parts[-1], ""


def settle(api: str, inputs: Any, mine: Any, theirs: Any) -> Tuple[Any, str]:
    """`theirs` (the reference side's output) with its index output made
    `mine`'s wherever both index equal elements of `inputs` (the replay
    side's built (args, kwargs)), and a note of how many it settled ("":
    none, or not an operator of TIED)."""
    import torch

    name, _ = name_of(api)
    if name in POOLED and inputs is not None:
        return _pooled(POOLED[name], inputs, mine, theirs)
    spec = TIED.get(name)
    if spec is None or inputs is None:
        return theirs, ""
    params, at, default = spec
    args, kwargs = inputs
    bound = {p: args[i] for i, p in enumerate(params) if i < len(args)}
    for key, value in kwargs.items():
        bound["input" if key in SELF else key] = value
    x, dim = bound.get("input"), bound.get("dim", default)
    if kwargs.get("stable") is True or not isinstance(x, torch.Tensor):  # (a stable sort's order is defined)
        return theirs, ""
    if isinstance(dim, bool) or not isinstance(dim, (int, type(None))):
        return theirs, ""  # (no dim where one is required: no index; max(x, other): elementwise)
    index_of = (lambda out: out) if at is None else (lambda out: out[at] if isinstance(out, (tuple, list)) else None)
    a, b = index_of(mine), index_of(theirs)
    if not all(isinstance(t, torch.Tensor) and t.dtype == torch.int64 for t in (a, b)) or a.shape != b.shape:
        return theirs, ""
    try:
        values = x.detach().reshape(-1) if dim is None else x.detach()
        d = 0 if dim is None else dim % max(values.dim(), 1)
        ia, ib = a.to(values.device), b.to(values.device)
        if values.dim() == 0:
            return theirs, ""
        if dim is None:
            ia, ib = ia.reshape(-1), ib.reshape(-1)
        elif ia.dim() < values.dim():  # (a dimension reduced away: keepdim False)
            ia, ib = ia.unsqueeze(d), ib.unsqueeze(d)
        named_a, named_b = values.gather(d, ia), values.gather(d, ib)
    except (RuntimeError, IndexError):  # (an index out of range: no tie to settle; the comparison says so)
        return theirs, ""
    return _settled(theirs, at, named_a, named_b, ia, ib, b)


def _settled(theirs: Any, at: Optional[int], named_a: Any, named_b: Any, ia: Any, ib: Any, b: Any) -> Tuple[Any, str]:
    """`theirs` with its index output `at` (None: it is the index) made
    the replay side's (`ia`) where both name equal values."""
    import torch

    tie = ((named_a == named_b) | (named_a.isnan() & named_b.isnan())) & (ia != ib)
    if not bool(tie.any()):
        return theirs, ""
    settled = torch.where(tie, ia, ib).reshape(b.shape).to(b.device)
    n = int(tie.sum())
    note = f"{n} ti{'es' if n != 1 else 'e'} (indices of equal elements) compared by the values they index"
    if at is None:
        return settled, note
    items = list(theirs)
    items[at] = settled
    return type(theirs)(items), note  # (a tuple, a list, or torch.return_types' structseq: each takes a sequence)


def _pooled(k: int, inputs: Any, mine: Any, theirs: Any) -> Tuple[Any, str]:
    """settle for max pooling: its indices (output 1) name elements of each
    plane of the input, flattened over its last `k` dimensions."""
    import torch

    args, kwargs = inputs
    x = args[0] if args else next((kwargs[k_] for k_ in SELF if k_ in kwargs), None)
    pick = lambda out: out[1] if isinstance(out, (tuple, list)) and len(out) > 1 else None  # noqa: E731
    a, b = pick(mine), pick(theirs)
    if not isinstance(x, torch.Tensor) or not all(isinstance(t, torch.Tensor) for t in (a, b)) or a.shape != b.shape:
        return theirs, ""
    if a.dtype != torch.int64 or b.dtype != torch.int64 or x.dim() < k + 1 or a.dim() != x.dim():
        return theirs, ""
    try:
        values = x.detach().flatten(-k)
        ia, ib = a.to(values.device).flatten(-k), b.to(values.device).flatten(-k)
        named_a, named_b = values.gather(-1, ia), values.gather(-1, ib)
    except (RuntimeError, IndexError):  # (an index out of range: no tie to settle; the comparison says so)
        return theirs, ""
    return _settled(theirs, 1, named_a, named_b, ia, ib, b)
