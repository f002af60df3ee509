"""What replay checks of a call's built arguments before it makes the call,
where the kernel would not: a config file may give any shapes, and some
operators read where their arguments point without looking. The checks
themselves are operator_checks.py's, index_checks.py's and fused_checks.py's.

- Views by sizes and strides (`as_strided`, `_reshape_alias`, `set_`, prims'
  `as_strided` and their _copy and _scatter forms: every operator whose
  schema takes `size` and `stride` for a tensor or storage it reads): the
  window must lie inside that storage: strides and sizes of 0 or more, an
  offset of 0 or more, the last element before the storage's end.
- Private operators (`torch.ops.aten._grouped_mm`, their bindings
  `torch._grouped_mm`, ...): each is decided by its family
  (private_operators.py): the checked ones get their family's check here;
  those whose kernels check what they read were probed with arguments of
  wrong sizes (tests/replay/test_private_operators.py); the policy
  (policy.py) refuses the rest, with their family's reason.
- Public operators that take indices, lengths, offsets or saved
  statistics: each is decided by its family (indexing_operators.py), and
  the checked ones get their family's check here (a config's value profile
  may hold any values); so do quantized embedding bags (QUANTIZED_CHECKS).
- Sparse tensors made by a call are checked (replay runs under
  torch.sparse.check_sparse_tensor_invariants), so a call that asks for
  no check (check_invariants=False) is refused; the inner COO
  constructors that check_sparse_tensor_invariants does not reach are
  checked as a family.
"""

from __future__ import annotations

import functools
from typing import Any, Dict, List, Optional, Tuple

from . import index_checks, indexing_operators, private_operators
from . import operator_checks as checks
from .operator_checks import Check
from .operator_families import CHECKED, Family

# Operators of torch.ops.quantized whose kernels read where their arguments'
# values point without checking them, with the check replay makes first.
QUANTIZED_CHECKS: Dict[str, Check] = {
    f"embedding_bag_{bits}_rowwise_offsets": index_checks.quantized_embedding_bag for bits in ("byte", "4bit", "2bit")
}


# Public Python functions that hand their arguments to a private operator
# as they are (level 1 records them): the operator and the names its
# schema gives their parameters.
WRAPPERS: Dict[str, Tuple[str, Dict[str, str]]] = {
    "torch.nn.functional.grouped_mm": ("_grouped_mm", {"mat_a": "self", "mat_b": "mat2"}),
    "torch.nn.functional.scaled_grouped_mm": ("_scaled_grouped_mm_v2", {"mat_a": "self", "mat_b": "mat2"}),
}


def _checked(family: Optional[Family]) -> Optional[Check]:
    return family.check if family is not None and family.decision == CHECKED else None


def private_check(op: str) -> Optional[Check]:
    """The check replay makes before calling the private aten operator `op`,
    where its family is checked."""
    return _checked(private_operators.decision(op))


def aten_check(op: str) -> Optional[Check]:
    """The check replay makes before calling the aten operator `op` (a
    private one's family's, or a public one's that takes indices)."""
    if op.startswith("_"):
        return private_check(op)
    return _checked(indexing_operators.decision(op)) if op in indexing_operators.indexing_operators() else None


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


def _bind_python(func: Any, args: list, kwargs: dict) -> Optional[Dict[str, Any]]:
    """The arguments bound to a Python function's parameters (None: they do
    not bind; the call then raises itself)."""
    import inspect

    try:
        return dict(inspect.signature(func).bind(*args, **kwargs).arguments)
    except (TypeError, ValueError):
        return None


def operator_name(schema: Any) -> str:
    return schema.name.partition("::")[2]


def check_call(api: str, func: Any, args: list, kwargs: dict) -> Optional[str]:
    """What is wrong with calling `func` (`api`) on these built arguments,
    that its kernel would not see; None if nothing is."""
    if kwargs.get("check_invariants") is False:  # (a binding's argument: no schema has it)
        return f"{api}: check_invariants=False: replay makes sparse tensors with their invariants checked"
    if api in WRAPPERS:
        op, names = WRAPPERS[api]
        bound, check = _bind_python(func, args, kwargs), private_check(op)
        why = check({names.get(k, k): v for k, v in bound.items()}) if bound is not None and check else None
        return f"{api}: {why}" if why else None
    views = view_operators()
    for schema in _schemas_of(func, api):
        bound = _bind(schema, args, kwargs)
        if bound is None:
            continue
        owner = views.get(schema.name)
        why = checks.window(bound, owner) if owner else None
        op = operator_name(schema)
        quantized = QUANTIZED_CHECKS.get(op) if schema.name.startswith("quantized::") else None
        check = aten_check(op) if schema.name.startswith("aten::") else quantized
        if not why and check is not None:
            why = check(bound)

        if why:
            return f"{api}: {why}"
    return None
