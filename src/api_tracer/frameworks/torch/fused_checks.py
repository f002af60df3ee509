"""operator_checks.py's checks for the fused kernels: the attention
kernels torch's scaled dot product attention reaches (the CPU's flash
attention; on CUDA flash, memory-efficient and cuDNN attention, and the
forms they run with offsets into packed sequences), the grouped matmuls
of a mixture of experts, and the fused optimizers. Most run only on
CUDA, where their arguments' sizes and offsets go to the kernel as given.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from .operator_checks import Check, expands, in_order, integer, is_tensor, shaped_as, sizes, values_in

# -- attention -------------------------------------------------------------------------------------


def _qkv(bound: Dict[str, Any], dims: int, layout: str) -> Optional[str]:
    if not all(is_tensor(bound.get(n)) and bound[n].dim() == dims for n in ("query", "key", "value")):
        return f"query, key and value must be {dims}-d tensors ({layout})"
    return None


def _heads(q_heads: int, k_heads: int, grouped: bool) -> bool:
    """Grouped-query attention: each key head serves as many query heads."""
    return k_heads > 0 and (q_heads % k_heads == 0 if grouped else q_heads == k_heads)


def _disagree(q: Any, k: Any, v: Any) -> str:
    return f"query {sizes(q)}, key {sizes(k)} and value {sizes(v)} do not agree"


def _offsets(bound: Dict[str, Any], name: str, total: int, longest: str) -> Optional[str]:
    """Cumulative sequence offsets into a packed length: in order within
    [0, total], no sequence longer than the maximum given with them."""
    t = bound.get(name)
    if not (integer(t) and t.dim() == 1 and t.numel() >= 1):
        return f"{name} must be a 1-d integer tensor of sequence offsets"
    v = t.tolist()
    if not in_order(v, total):
        return f"{name} {v[:8]}{' ...' if len(v) > 8 else ''} must be offsets in order within [0, {total}]"
    most, longest_given = max((b - a for a, b in zip(v, v[1:])), default=0), bound.get(longest)
    if longest_given is not None and not (isinstance(longest_given, int) and most <= longest_given):
        return f"{longest}={longest_given} must be at least the longest sequence of {name} ({most})"
    return None


def _dropout(bound: Dict[str, Any], seed_bytes: int) -> Optional[str]:
    """A dropout probability in [0, 1]; above 0, the random state the
    forward made, which the kernels read: the seed (flash attention's
    holds the offset too: 16 bytes) and the offset, 8 bytes each."""
    p = bound.get("dropout_p", 0.0)
    if not isinstance(p, (int, float)) or not 0 <= p <= 1:
        return f"dropout_p={p} must lie in [0, 1]"
    for name in ("philox_seed", "philox_offset", "rng_state"):
        need, t = 8 if name == "philox_offset" else seed_bytes, bound.get(name)
        if p > 0 and name in bound and not (is_tensor(t) and t.numel() * t.element_size() >= need):
            return f"{name} must hold the random state the forward made ({need} bytes, dropout_p={p})"
    return None


def attention(grouped: bool = True, exact_logsumexp: bool = False, seed_bytes: int = 8) -> Check:
    """scaled_dot_product_attention's kernels, on (batch, heads, length,
    head dim): query, key and value agree on the batch and key and value on
    their heads and length, query and key on the head dim; the query's
    heads a multiple of the key's where `grouped`, else as many; a mask or
    bias that broadcasts to (batch, heads, query length, key length); no
    offsets (those are nested inputs'), the lengths as given; a backward's
    output and gradient of the output's shape and a logsumexp per query
    (batch, heads, query length); the random state where dropout is on
    (`seed_bytes` of seed: flash attention's holds its offset too)."""

    def check(bound: Dict[str, Any]) -> Optional[str]:
        why = _qkv(bound, 4, "batch, heads, length, head dim")
        if why:
            return why
        q, k, v = (bound[n] for n in ("query", "key", "value"))
        (b, hq, lq, e), (hk, lk) = q.shape, k.shape[1:3]
        if v.shape[:3] != k.shape[:3] or k.shape[0] != b or k.shape[3] != e or not _heads(hq, hk, grouped):
            return _disagree(q, k, v)
        for name in ("attn_mask", "attn_bias"):
            m = bound.get(name)
            if is_tensor(m) and not expands(m, (b, hq, lq, lk)):
                return f"{name} {sizes(m)} must broadcast to {[b, hq, lq, lk]}"
        for name in ("cum_seq_q", "cum_seq_k"):
            offsets = bound.get(name)
            if is_tensor(offsets) and offsets.numel():
                return f"{name} must be None: these are the offsets of nested inputs, which this form does not take"
        for name, length in (("max_q", lq), ("max_k", lk)):
            if name in bound and bound[name] != length:
                return f"{name}={bound[name]} must be the length {length} of {'query' if name == 'max_q' else 'key'}"
        why = shaped_as(bound, [b, hq, lq, v.shape[3]], ("out", "grad_out", "grad_out_"))
        lse = bound.get("logsumexp")
        if not why and "logsumexp" in bound:
            fits = is_tensor(lse) and tuple(lse.shape[:2]) == (b, hq) and lse.dim() in (3, 4)
            fits = fits and (
                lse.shape[2] == lq if exact_logsumexp else lse.shape[2] >= lq and lse.shape[3:] in ((), (1,))
            )
            why = None if fits else f"logsumexp must have the shape {[b, hq, lq]}"
        return why or _dropout(bound, seed_bytes)

    return check


def flash_attention(bound: Dict[str, Any]) -> Optional[str]:
    """The flash attention kernels (CUDA): query, key and value of (batch,
    length, heads, head dim), or packed (total length, heads, head dim)
    where cum_seq_q and cum_seq_k give each sequence's offsets (in order,
    within the packed length, none longer than max_q, max_k); the query's
    heads a multiple of the key's; seqused_k one key length per sequence,
    alibi_slopes one slope per head; a backward's output and gradient of
    the query's shape (the value's head dim), its logsumexp (batch, heads,
    length), packed (heads, total length). Paged key and value
    (block_table) are not checked, so refused."""
    if bound.get("block_table") is not None:
        return "block_table (paged key and value) is not checked: replay calls this only without it"
    packed = is_tensor(bound.get("cum_seq_q")) or is_tensor(bound.get("cum_seq_k"))
    why = _qkv(
        bound, 3 if packed else 4, "total length, heads, head dim" if packed else "batch, length, heads, head dim"
    )
    if why:
        return why
    q, k, v = (bound[n] for n in ("query", "key", "value"))
    heads, key_length = q.shape[-2], k.shape[-3]
    if k.shape[:-1] != v.shape[:-1] or q.shape[-1] != k.shape[-1] or not _heads(heads, k.shape[-2], True):
        return _disagree(q, k, v)
    if packed:
        if not (is_tensor(bound.get("cum_seq_q")) and is_tensor(bound.get("cum_seq_k"))):
            return "cum_seq_q and cum_seq_k must be given together"
        why = _offsets(bound, "cum_seq_q", q.shape[0], "max_q") or _offsets(bound, "cum_seq_k", k.shape[0], "max_k")
        if why:
            return why
        if bound["cum_seq_q"].numel() != bound["cum_seq_k"].numel():
            return "cum_seq_q and cum_seq_k must hold as many offsets"
        sequences, key_length = bound["cum_seq_q"].numel() - 1, bound.get("max_k", key_length)
        lse = [heads, q.shape[0]]
    elif q.shape[0] != k.shape[0]:
        return _disagree(q, k, v)
    else:
        sequences, lse = q.shape[0], [q.shape[0], heads, q.shape[1]]
    used, slopes = bound.get("seqused_k"), bound.get("alibi_slopes")
    if is_tensor(used) and not (integer(used) and used.numel() == sequences and values_in(used, 0, key_length + 1)):
        return f"seqused_k must hold {sequences} key lengths in [0, {key_length}]"
    if is_tensor(slopes) and sizes(slopes) not in ([heads], [sequences, heads]):
        return f"alibi_slopes {sizes(slopes)} must hold one slope per head: [{heads}] or [{sequences}, {heads}]"
    why = shaped_as(bound, [*q.shape[:-1], v.shape[-1]], ("out", "grad_out"))
    if not why and "logsumexp" in bound and not (is_tensor(bound["logsumexp"]) and sizes(bound["logsumexp"]) == lse):
        why = f"logsumexp must have the shape {lse}"
    return why or _dropout(bound, 16)


def efficient_attention(bound: Dict[str, Any]) -> Optional[str]:
    """The memory-efficient attention kernels (CUDA): query, key and value
    of (batch, length, heads, head dim), as many heads each; with
    cu_seqlens_q and cu_seqlens_k, sequences packed along the length of a
    batch of 1 (offsets in order within it, none longer than
    max_seqlen_q, max_seqlen_k); a bias that broadcasts to (batch, heads,
    query length, key length); seqlen_k one key length per sequence; a
    backward's output and gradient of the query's shape (the value's head
    dim), its logsumexp (sequences, heads, at least the query length)."""
    why = _qkv(bound, 4, "batch, length, heads, head dim")
    if why:
        return why
    q, k, v = (bound[n] for n in ("query", "key", "value"))
    (b, lq, h, e), lk = q.shape, k.shape[1]
    if k.shape[0] != b or v.shape[0] != b or k.shape[1] != v.shape[1] or k.shape[3] != e:
        return _disagree(q, k, v)
    if not (k.shape[2] == v.shape[2] == h):
        return _disagree(q, k, v) + " (these kernels take as many key heads as query heads)"
    sequences, longest = b, bound.get("max_seqlen_q") or lq
    if is_tensor(bound.get("cu_seqlens_q")) or is_tensor(bound.get("cu_seqlens_k")):
        if not (is_tensor(bound.get("cu_seqlens_q")) and is_tensor(bound.get("cu_seqlens_k"))):
            return "cu_seqlens_q and cu_seqlens_k must be given together"
        if b != 1:
            return f"with cu_seqlens the batch must be 1 (sequences packed along the length), not {b}"
        why = _offsets(bound, "cu_seqlens_q", lq, "max_seqlen_q") or _offsets(bound, "cu_seqlens_k", lk, "max_seqlen_k")
        if why:
            return why
        if bound["cu_seqlens_q"].numel() != bound["cu_seqlens_k"].numel():
            return "cu_seqlens_q and cu_seqlens_k must hold as many offsets"
        sequences = bound["cu_seqlens_q"].numel() - 1
    bias, lengths = bound.get("bias"), bound.get("seqlen_k")
    if is_tensor(bias) and not expands(bias, (b, h, lq, lk)):
        return f"bias {sizes(bias)} must broadcast to {[b, h, lq, lk]}"
    if is_tensor(lengths) and not (integer(lengths) and lengths.numel() == sequences and values_in(lengths, 0, lk + 1)):
        return f"seqlen_k must hold {sequences} key lengths in [0, {lk}]"
    if bound.get("custom_mask_type", 0) not in (0, 1, 2):
        return f"custom_mask_type={bound.get('custom_mask_type')} must be 0, 1 or 2"
    why = shaped_as(bound, [b, lq, h, v.shape[3]], ("out", "grad_out_"))
    lse = bound.get("logsumexp")
    if not why and "logsumexp" in bound:
        fits = is_tensor(lse) and lse.dim() == 3 and tuple(lse.shape[:2]) == (sequences, h) and lse.shape[2] >= longest
        why = None if fits else f"logsumexp must have the shape [{sequences}, {h}, {longest} or more]"
    return why or _dropout(bound, 8)


# -- matmuls ---------------------------------------------------------------------------------------


def grouped_mm(bound: Dict[str, Any]) -> Optional[str]:
    """The grouped matmuls (a mixture of experts' layers: torch.nn.functional.grouped_mm)
    multiply groups of rows, columns or the contraction of one 2-d operand,
    which `offs` ends (cumulative group ends), each by its matrix of a 3-d
    one (or, both 2-d, by the same groups of the other). The CUDA kernels
    take offs unchecked: one end per group, in order, the last within the
    size it splits. Both 3-d: a batched matmul, without offs."""
    a, b, offs = bound.get("self"), bound.get("mat2"), bound.get("offs")
    if not (is_tensor(a) and is_tensor(b) and a.dim() in (2, 3) and b.dim() in (2, 3)):
        return "self and mat2 must be 2-d or 3-d tensors"
    if a.shape[-1] != b.shape[-2]:
        return f"self {sizes(a)} and mat2 {sizes(b)} must agree on the contraction"
    if a.dim() == 3 and b.dim() == 3:
        if a.shape[0] != b.shape[0]:
            return f"self {sizes(a)} and mat2 {sizes(b)} must hold as many matrices"
        return None if offs is None else "offs must be None where self and mat2 are both 3-d"
    if not (integer(offs) and offs.dim() == 1):
        return "offs must be a 1-d integer tensor of cumulative group ends"
    groups = b.shape[0] if b.dim() == 3 else a.shape[0] if a.dim() == 3 else offs.numel()
    size, what = (
        (a.shape[0], "self's rows")
        if b.dim() == 3
        else (b.shape[1], "mat2's columns")
        if a.dim() == 3
        else (a.shape[1], "the contraction")
    )
    ends = offs.tolist()
    if len(ends) != groups:
        return f"offs must hold one end per group: {groups}, not {len(ends)}"
    if not in_order(ends, size):
        return (
            f"offs {ends[:8]}{' ...' if len(ends) > 8 else ''} must be group ends in order within [0, {size}] ({what})"
        )
    return None


# -- optimizers -------------------------------------------------------------------------------------


def _dense(t: Any) -> bool:
    """Whether t's elements fill numel places from its first, none twice."""
    expected = 1
    for stride, size in sorted((st, s) for s, st in zip(t.shape, t.stride()) if s != 1):
        if stride != expected:
            return False
        expected *= size
    return True


_STATE_LISTS = ("grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs", "state_sums", "momentum_buffer_list", "out")


def fused_optimizer(bound: Dict[str, Any]) -> Optional[str]:
    """The fused optimizers' kernels (torch.optim's fused=True) walk each
    parameter's numel values and read the same places of its gradient and
    states: every list one tensor per parameter (the optional ones, or
    none), each of its parameter's shape, dense; a 1-element step per
    parameter; lr, grad_scale and found_inf tensors of 1 element."""
    params = bound.get("self")
    if not (isinstance(params, (list, tuple)) and all(is_tensor(p) for p in params)):
        return "self must be a list of tensors"
    n = len(params)
    for name in _STATE_LISTS:
        if name not in bound:
            continue
        states = bound[name]
        optional = name in ("max_exp_avg_sqs", "momentum_buffer_list")
        if not isinstance(states, (list, tuple)) or len(states) not in ((0, n) if optional else (n,)):
            return f"{name} must hold one tensor per parameter ({n}){' or none' if optional else ''}"
        for i, (p, t) in enumerate(zip(params, states)):
            if not (is_tensor(t) and t.shape == p.shape):
                return f"{name}[{i}] must have self[{i}]'s shape {sizes(p)}"
    for name in ("self", *_STATE_LISTS):
        for i, t in enumerate(bound.get(name) or ()):
            if is_tensor(t) and not _dense(t):
                return f"{name}[{i}] must be dense (the kernels read its numel values from its first)"
    steps = bound.get("state_steps")
    if "state_steps" in bound and not (
        isinstance(steps, (list, tuple)) and len(steps) == n and all(is_tensor(s) and s.numel() == 1 for s in steps)
    ):
        return f"state_steps must hold a 1-element tensor per parameter ({n})"
    for name in ("lr", "grad_scale", "found_inf"):
        if is_tensor(bound.get(name)) and bound[name].numel() != 1:
            return f"{name} must be a 1-element tensor"
    return None
