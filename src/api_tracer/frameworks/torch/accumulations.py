"""What some torch kernels add up on the way to an output, which the error
model's probes cannot see (replay/judge/error_model.py; replay/framework.py's
`Accumulated`):

- a scatter that adds (index_put with accumulate=True, index_add,
  scatter_add, scatter_reduce by sum or mean) sums into each element of
  its output its own value and every value its indices send there: the
  probes, moving one input element, see an element of fan-in 1, where one
  position may receive hundreds. The counts are exact: the operator itself
  run on ones, in float64. Its CPU kernels add into the output tensor
  itself, so each partial sum is rounded to the output's dtype.
- a log-space reduction (log_softmax, logsumexp, cross_entropy) computes
  log(s) of a sum s >= 1 of its row's K exponentials: s's relative rounding
  becomes an error of that size in the result, in absolute terms, however
  small the result (log_softmax of [0, -20] is -2.1e-9, and float32 gives
  0: torch's, like every framework's, subtracts log(s) rather than taking
  a log1p). The probes see it relative to the inputs, which can be far
  smaller.
- the gradient of log_softmax computes grad - exp(output) * sum(grad): its
  exp(output) is rounded once, at the size of exp(output) * |sum(grad)|,
  which the inputs' moves do not show where it cancels against grad.
- batch norm (BATCH_NORMS) computes x * a + (bias - mean * a), a = weight
  * invstd: where x is near its channel's mean (a batch of one: the result
  is the bias) the two cancel, at the size of x * a.
- a decomposition (eigh, eig, svd: phases.VECTORS) is accurate normwise,
  as LAPACK's error bounds are: each vector as a whole, the eigenvalues or
  singular values together; a small component of a unit vector errs by
  the roundings of its large ones.

Each is named by its last name (torch.index_add, torch.Tensor.index_add_
and torch.ops.aten.index_add.default are all "index_add"), its
parameters in order."""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

from .phases import VECTORS
from .ties import SELF, name_of


def _bound(inputs: Any, params: Tuple[str, ...]) -> Dict[str, Any]:
    """The built (args, kwargs) by parameter name (self and input alike)."""
    args, kwargs = inputs
    bound = {p: args[i] for i, p in enumerate(params) if i < len(args)}
    for key, value in kwargs.items():
        bound["self" if key in SELF else key] = value
    return bound


def _ones(t: Any) -> Any:
    import torch

    return torch.ones(t.shape, dtype=torch.float64)


def _zeros(t: Any) -> Any:
    import torch

    return torch.zeros(t.shape, dtype=torch.float64)


def _index_put(b: Dict[str, Any]) -> Optional[Any]:
    if not b.get("accumulate"):
        return None
    indices = [None if i is None else i.cpu() for i in b["indices"]]
    return _zeros(b["self"]).index_put_(indices, _ones(b["values"]).expand(b["values"].shape), accumulate=True)


def _index_add(b: Dict[str, Any]) -> Optional[Any]:
    return _zeros(b["self"]).index_add_(b["dim"], b["index"].cpu(), _ones(b["source"]))


def _scatter_add(b: Dict[str, Any]) -> Optional[Any]:
    if "reduce" in b and b["reduce"] not in ("sum", "mean"):
        return None
    return _zeros(b["self"]).scatter_add_(b["dim"], b["index"].cpu(), _ones(b["src"]))


# name -> (parameters in order, the count of values added into each output element beyond its own, or None)
SCATTERS: Dict[str, Tuple[Tuple[str, ...], Callable[[Dict[str, Any]], Optional[Any]]]] = {
    "index_put": (("self", "indices", "values", "accumulate"), _index_put),
    "index_put_": (("self", "indices", "values", "accumulate"), _index_put),
    "_index_put_impl_": (("self", "indices", "values", "accumulate"), _index_put),
    "_unsafe_index_put": (("self", "indices", "values", "accumulate"), _index_put),
    "index_add": (("self", "dim", "index", "source"), _index_add),
    "index_add_": (("self", "dim", "index", "source"), _index_add),
    "scatter_add": (("self", "dim", "index", "src"), _scatter_add),
    "scatter_add_": (("self", "dim", "index", "src"), _scatter_add),
    "scatter_reduce": (("self", "dim", "index", "src", "reduce"), _scatter_add),
    "scatter_reduce_": (("self", "dim", "index", "src", "reduce"), _scatter_add),
}

# name -> (parameters in order, whether it is the gradient (_log_softmax_backward_data))
LOG_SPACE: Dict[str, Tuple[Tuple[str, ...], bool]] = {
    "log_softmax": (("self", "dim"), False),
    "_log_softmax": (("self", "dim"), False),
    "logsumexp": (("self", "dim"), False),
    "cross_entropy": (("self",), False),
    "_log_softmax_backward_data": (("grad_output", "output", "dim"), True),
}


# name -> (parameters in order, training's default: None where the parameter is absent (no training), the leaf)
BATCH_NORMS: Dict[str, Tuple[Tuple[str, ...], Optional[bool], str]] = {
    "native_batch_norm": (
        ("self", "weight", "bias", "running_mean", "running_var", "training", "momentum", "eps"),
        False,
        "output[0]",
    ),
    "_native_batch_norm_legit": (
        ("self", "weight", "bias", "running_mean", "running_var", "training", "momentum", "eps"),
        False,
        "output[0]",
    ),
    "_native_batch_norm_legit_no_training": (
        ("self", "weight", "bias", "running_mean", "running_var", "momentum", "eps"),
        None,
        "output[0]",
    ),
    "batch_norm": (
        ("self", "running_mean", "running_var", "weight", "bias", "training", "momentum", "eps"),
        False,
        "output",
    ),
}


def accumulations(api: str, inputs: Any) -> Dict[str, Any]:
    """Per output leaf ("output", "output[1]"), the error model's
    Accumulated where `api` is one of SCATTERS, LOG_SPACE or VECTORS; `inputs`, the replay side's built
    (args, kwargs). {} for another API, or inputs it cannot read (the
    comparison then says what is wrong with them)."""
    from ...replay.framework import Accumulated

    name, _ = name_of(api)
    if name in VECTORS:
        return _normwise(api, name)
    if inputs is None or (name not in SCATTERS and name not in LOG_SPACE and name not in BATCH_NORMS):
        return {}
    try:
        if name in BATCH_NORMS:
            params, training, leaf = BATCH_NORMS[name]
            return {leaf: _batch_norm(_bound(inputs, params), training)}
        if name in SCATTERS:
            params, count = SCATTERS[name]
            added = count(_bound(inputs, params))
            return {} if added is None else {"output": Accumulated(terms=added + 1, in_output=True)}
        params, gradient = LOG_SPACE[name]
        return {"output": _log_space(_bound(inputs, params), gradient)}
    except (RuntimeError, IndexError, KeyError, TypeError, ValueError):
        return {}


def _normwise(api: str, name: str) -> Dict[str, Any]:
    """A decomposition's outputs (phases.VECTORS): each vector's error
    bounded as a whole, and the eigenvalues' or singular values' together."""
    from ...replay.framework import Accumulated
    from ...values import item_path

    values_at, at, rows, paired_at, paired_rows = VECTORS[name]
    if name == "svd" and "linalg" in api:
        paired_rows = True
    out = {item_path("output", values_at): Accumulated(normwise=(-1,))}
    out[item_path("output", at)] = Accumulated(normwise=(-1 if rows else -2,))
    if paired_at is not None:
        out[item_path("output", paired_at)] = Accumulated(normwise=(-1 if paired_rows else -2,))
    return out


def _batch_norm(b: Dict[str, Any], training: Optional[bool]) -> Any:
    """Batch norm as torch's CPU kernel computes it, x * a + (bias - mean * a)
    with a = weight * invstd: its two terms, of the size of x * a each,
    cancel where x is its channel's mean (a batch of one: the result is the
    bias, to that size's roundings)."""

    from ...replay.framework import Accumulated

    x = b["self"].detach().cpu().double()
    if x.dim() < 2:
        return Accumulated()
    dims = [d for d in range(x.dim()) if d != 1]
    shape = [1, -1] + [1] * (x.dim() - 2)
    eps = float(b.get("eps", 1e-5))
    if b.get("training", training) or b.get("running_var") is None:
        mean, var = x.mean(dims), x.var(dims, unbiased=False)
    else:
        mean, var = b["running_mean"].detach().cpu().double(), b["running_var"].detach().cpu().double()
    weight = b.get("weight")
    scale = (var + eps).rsqrt() * (weight.detach().cpu().double().abs() if weight is not None else 1.0)
    return Accumulated(size=(x.abs() + mean.abs().reshape(shape)) * scale.reshape(shape))


def _log_space(b: Dict[str, Any], gradient: bool) -> Any:

    from ...replay.framework import Accumulated

    if gradient:  # grad - exp(output) * sum(grad): exp(output) rounded at its product's size
        dim, g, y = b["dim"], b["grad_output"].detach().cpu().double(), b["output"].detach().cpu().double()
        return Accumulated(terms=1.0, size=(y.exp() * g.sum(dim, keepdim=True)).abs())
    x = b["self"]
    dims = b.get("dim", 1 if x.dim() >= 2 else 0)  # (cross_entropy's classes: dim 1, or 0 unbatched)
    dims = [dims] if isinstance(dims, int) else list(dims)
    terms = 1.0
    for d in dims:
        terms *= x.shape[d] if x.dim() else 1
    return Accumulated(terms=float(terms), size=1.0)
