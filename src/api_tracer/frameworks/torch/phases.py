"""Eigenvectors and singular vectors: each is defined up to a sign (a
phase, complex), and torch's eig leaves the eigenvalues' order open. Two
correct kernels (a float32 and a float64 one) may choose differently, so a
check compares them after `settle`: the reference side's vectors turned
by the phase that best matches the replay side's (its inner product's, of
size 1), and for eig its eigenvalues and vectors put in the replay side's
order where that is a reordering. A vector that is wrong stays wrong: a
phase cannot make it the other, only its sign.

VECTORS names the operators by their last name (ties.name_of): the outputs
that hold eigenvalues and vectors, whether the vectors are columns (U, V,
eigenvectors) or rows (Vh), and the output whose vectors share their phase
(an SVD's U and Vh: u_i c goes with conj(c) vh_i, so U S Vh is kept)."""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from .ties import name_of

# name -> (eigenvalues' or singular values' output, vectors' output, rows?, the output of vectors paired with
# them or None, its rows?)
VECTORS: Dict[str, Tuple[Optional[int], int, bool, Optional[int], bool]] = {
    "eigh": (0, 1, False, None, False),
    "_linalg_eigh": (0, 1, False, None, False),
    "linalg_eigh": (0, 1, False, None, False),
    "eig": (0, 1, False, None, False),
    "linalg_eig": (0, 1, False, None, False),
    "_linalg_svd": (1, 0, False, 2, True),
    "linalg_svd": (1, 0, False, 2, True),
    "svd": (1, 0, False, 2, False),  # torch.svd: V, not Vh (torch.linalg.svd: see settle)
}
UNORDERED = ("eig", "linalg_eig")  # (LAPACK's geev orders eigenvalues as it finds them)


def settle(api: str, mine: Any, theirs: Any) -> Tuple[Any, str]:
    """`theirs` (the reference side's output) with its vectors turned to
    `mine`'s phases (and eig's put in `mine`'s order), and a note of it
    ("": nothing turned, or not an operator of VECTORS)."""
    import torch

    name, _ = name_of(api)
    spec = VECTORS.get(name)
    if spec is None or not isinstance(mine, (tuple, list)) or not isinstance(theirs, (tuple, list)):
        return theirs, ""
    values_at, at, rows, paired_at, paired_rows = spec
    if name == "svd" and "linalg" in api:
        paired_rows = True
    items = list(theirs)
    if max(i for i in (values_at, at, paired_at) if i is not None) >= min(len(items), len(mine)):
        return theirs, ""
    a, b = mine[at], items[at]
    if not all(isinstance(t, torch.Tensor) and t.dim() >= 2 for t in (a, b)) or a.shape != b.shape:
        return theirs, ""
    notes = []
    if name in UNORDERED:
        order = _order(mine[values_at], items[values_at])
        if order is not None:
            items[values_at] = items[values_at].gather(-1, order)
            items[at] = items[at].gather(-1, order.unsqueeze(-2).expand(items[at].shape))
            notes.append("eigenvalues in the replay side's order")
    vectors = (lambda t: t.transpose(-2, -1)) if rows else (lambda t: t)
    mine_v, their_v = vectors(a.detach()).to(items[at].device), vectors(items[at])
    k = min(mine_v.shape[-1], their_v.shape[-1])
    inner = (their_v.conj() * mine_v.to(their_v.dtype)).sum(-2)[..., :k]  # (per vector: <theirs, mine>)
    phase = torch.where(inner.abs() > 0, inner / inner.abs(), torch.ones_like(inner))
    if not phase.is_complex():
        phase = phase.sign().where(phase != 0, torch.ones_like(phase))
    turned = int((phase != 1).sum())
    if not turned:
        return (type(theirs)(items), "; ".join(notes)) if notes else (theirs, "")
    items[at] = vectors(_turn(their_v, phase))
    if paired_at is not None and isinstance(items[paired_at], torch.Tensor) and items[paired_at].dim() >= 2:
        paired = (lambda t: t.transpose(-2, -1)) if paired_rows else (lambda t: t)
        # (A = U S Vh: u_i c goes with conj(c) vh_i; as columns of V, v_i c)
        items[paired_at] = paired(_turn(paired(items[paired_at]), phase.conj() if paired_rows else phase))
    notes.append(f"{turned} vector{'s' if turned != 1 else ''} turned to the replay side's phase (defined up to one)")
    return type(theirs)(items), "; ".join(notes)


def _turn(vectors: Any, phase: Any) -> Any:
    """`vectors` (as columns) each times its phase, the first len(phase)."""
    import torch

    k = phase.shape[-1]
    head = vectors[..., :k] * phase.unsqueeze(-2).to(vectors.dtype)
    return torch.cat([head, vectors[..., k:]], -1)


def _order(mine: Any, theirs: Any) -> Optional[Any]:
    """The indices that put `theirs` (eigenvalues) in `mine`'s order, each
    to its nearest, where that is a reordering of all; None where it is not,
    or none is needed."""
    import torch

    if not (isinstance(mine, torch.Tensor) and isinstance(theirs, torch.Tensor)) or mine.shape != theirs.shape:
        return None
    if mine.dim() == 0 or not mine.numel():
        return None
    distance = (mine.detach().to(theirs.device, theirs.dtype).unsqueeze(-1) - theirs.unsqueeze(-2)).abs()
    order = distance.argmin(-1)
    if not bool((order.sort(-1).values == torch.arange(order.shape[-1], device=order.device)).all()):
        return None
    if bool((order == torch.arange(order.shape[-1], device=order.device)).all()):
        return None
    return order
