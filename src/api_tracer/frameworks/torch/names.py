"""What level 0 must leave alone in torch, as data, each with its reason
(PyTorchDialect reads them, and so does the scan that makes the API lists,
api_list.py), and the operators torch computes otherwise under a dispatch
mode. Names are API names as the lists write them (``torch.Tensor.__repr__``);
a prefix matches the start of a name. Nothing here imports torch.
"""

from __future__ import annotations

from typing import Dict, Tuple

from ..dialect import PRINTING_AND_PICKLING, methods, protocol_of

# Level 0 never wraps these: the reason is part of the documentation
# (docs/design.md) and of the error a user's own list gets.
SKIP: Dict[str, str] = {
    "torch.Tensor.__torch_function__": "the override protocol itself: every call re-enters it",
    "torch.Tensor.__torch_dispatch__": "the override protocol itself",
    # (TorchScript knows them by identity: a wrapper in their place would break scripting)
    "torch.nn.functional.has_torch_function": "the override protocol itself: every functional calls it",
    "torch.nn.functional.has_torch_function_unary": "the override protocol itself: every functional calls it",
    "torch.nn.functional.has_torch_function_variadic": "the override protocol itself: every functional calls it",
    **protocol_of("torch.Tensor"),
    "torch.nn.Module": "the base class: every module's construction would be recorded twice",
    "torch.compile": "the compiler's entry point",
}
# Of those, level 0 leaves out what runs inside these too: the tensor
# methods that printing, pickling and copying a tensor call are torch's,
# not the program's.
QUIET: Tuple[str, ...] = (
    *methods("torch.Tensor", *PRINTING_AND_PICKLING, "__setstate__"),
    *methods("torch.nn.Parameter", "__repr__", "__reduce_ex__", "__deepcopy__"),
    *methods("torch.storage.TypedStorage", "__repr__", "__reduce__", "__deepcopy__", "__copy__"),
    *methods("torch.storage._StorageBase", "__repr__", "__reduce__", "__deepcopy__", "__copy__"),
    "torch.storage._load_from_bytes",
)
QUIET_PREFIXES: Tuple[str, ...] = ("torch._utils._rebuild_",)  # what unpickling a tensor calls
# Namespaces that compilers and tracers walk through: wrapping them
# would change what they see.
SKIP_PREFIXES: Dict[str, str] = dict.fromkeys(
    ("torch._", "torch.jit.", "torch.fx.", "torch.export.", "torch.compiler.", "torch.overrides.", "torch.utils._"),
    "a namespace compilers and tracers walk through",
)
# Operators torch 2.13 computes otherwise whenever a TorchDispatchMode is
# active (any mode, a bare pass-through one too: level 2 cannot avoid
# it), each with what changes. README.md, "Known torch issues", gives a
# reproducer; level 2 warns once per process at the first call of each.
DISPATCH_MODE_ISSUES: Dict[str, str] = {
    "aten::linalg_pinv": "complex inputs give a wrong pseudo-inverse (pinv(A) @ A off the identity by about 1)",
    "aten::linalg_lstsq": "complex inputs give wrong residuals",
    "aten::_linalg_svd": "calls for the singular values alone (svdvals, cond, the nuclear norm) compute the "
    "vectors too: float32 values differ in their last bits",
    "aten::_linalg_eigh": "calls for the eigenvalues alone (eigvalsh) compute the vectors too: float32 values "
    "differ in their last bits",
}
