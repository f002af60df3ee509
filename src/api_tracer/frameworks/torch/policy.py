"""What `api-tracer replay` calls from a config file it cannot trust: one
reviewed policy (docs/cli.md, "What replay calls").

Config files travel between teams, so by default replay calls only what
computes. The policy is an allow-list:

- the named APIs of the tracer's own API list (``PyTorchDialect().api_list()``,
  api_list/torch_api_list.yaml: torch's tensor functions, Tensor methods and
  operators, torch.nn.functional, linalg, fft, special, nn.init, autograd,
  nn modules and their forward, optimizers with step and zero_grad);
- the names level 1 records, which torch.overrides gives the functions it
  dispatches (``torch.functional.einsum``, ``torch.Tensor.shape.__get__``, ...),
  and the public Tensor methods it lists as ignored although they dispatch
  too (``torch.Tensor.new_zeros``, ``torch.Tensor.to_sparse_csr``, ...);
- the Python bindings of the aten operators, which may run as the operators
  they bind may (``torch._foreach_mul_`` is ``torch.ops.aten._foreach_mul_``,
  recorded by level 1: torch.overrides leaves out private names; a denied
  operator's binding is refused for the operator's reason);
- the values replay itself constructs (``torch.device``, ``torch.Size``,
  ``torch.Generator``), and ``torch._C._set_grad_enabled``, whose change
  replay undoes after each config (it restores grad mode);
- operators (``torch.ops.NS.op`` and its overloads) of the namespaces that
  compute on tensors (OPERATOR_NAMESPACES): aten, prims, quantized, ...;
  not c10d, _c10d_functional, profiler, debugprims (it loads files), ...;

less DENIED: the families of the lists above that must not run from an
untrusted file, each with its reason; less the operators that compute on no
tensor (TorchScript's operators of strings, lists and numbers); less the
private operators (`_`-prefixed aten operators and their bindings) whose
family (private_operators.py, where every private aten operator of the
installed torch is decided) is refused, with the family's reason, or that
no family decides yet, and the operators of `_`-prefixed namespaces
(`_quantized`); preconditions.py checks, after the arguments are built,
what kernels do not (views by sizes and strides, the checked families'
arguments). Everything else is refused, whatever torch holds under the
name (torch._C.*, torch.utils.*, torch.ops.load_library, torch.classes.*,
...). The check is by name, before any argument is built;
names inside arguments are held to it too: a ``Callable("...")`` (which the
API may call: Tensor.apply_ does), every ``name(...)`` value (the
constructor calls replay makes: nn modules, optimizers) and classes passed
as values.
"""

from __future__ import annotations

import fnmatch
import functools
from typing import Any, Dict, FrozenSet, Optional, Tuple

# Operator namespaces torch registers from Python (torch.library custom
# operators whose bodies compute with aten operators, which check their
# arguments: none is private in the sense of _private_refusal), each with the
# module whose import registers them: replay imports it to resolve them.
TORCH_PYTHON_OPERATORS = {"torch_nn": "torch.nn.modules.linear_cross_entropy"}

# Operator namespaces whose operators compute on tensors.
OPERATOR_NAMESPACES = (
    "aten",
    "prims",
    "rngprims",
    "quantized",
    "_quantized",
    "quantized_decomposed",
    "quantization",
    "sparse",
    "mkldnn",
    "mkldnn_prepacked",
    "mkl",
    "onednn",
    *TORCH_PYTHON_OPERATORS,
)

# Functions of torch.sparse, which torch.overrides' tables leave out and
# level 1 records under these names.
SPARSE_FUNCTIONS = tuple(
    f"torch.sparse.{name}"
    for name in ("addmm", "log_softmax", "mm", "sampled_addmm", "softmax", "spdiags", "spsolve", "sum")
)


def option_classes() -> FrozenSet[str]:
    """torch's dataclasses of options (torch.nn.LinearCrossEntropyOptions)
    that its public namespaces export: values the tracer writes as their
    constructor calls, which replay builds."""
    import dataclasses

    import torch
    import torch.nn.functional

    found = set()
    for prefix, module in (("torch", torch), ("torch.nn", torch.nn), ("torch.nn.functional", torch.nn.functional)):
        for name, value in vars(module).items():
            if not name.startswith("_") and isinstance(value, type) and dataclasses.is_dataclass(value):
                found.add(f"{prefix}.{name}")
    return frozenset(found)


# Classes replay constructs to rebuild argument values.
VALUE_CONSTRUCTORS = ("torch.device", "torch.Size", "torch.Generator")

# Calls that change state replay restores after each config.
SCOPED_STATE = ("torch._C._set_grad_enabled",)

# What the lists above hold but replay must not call, by family: reason ->
# patterns (fnmatch; a pattern also covers the names below it, as an
# operator's overloads or a class's methods).
DENIED: Dict[str, Tuple[str, ...]] = {
    "reads or writes files (torch.load unpickles: it can run code)": (
        "torch.save",
        "torch.load",
        "torch.from_file",
        "torch.ops.aten.save",
        "torch.ops.aten.from_file",
    ),
    "compiles or loads TorchScript": (
        "torch.import_ir_module",
        "torch.import_ir_module_from_buffer",
        "torch.parse_ir",
        "torch.parse_schema",
        "torch.parse_type_comment",
        "torch.merge_type_from_type_comment",
    ),
    "creates shared memory (files in /dev/shm; may start torch_shm_manager)": ("torch.Tensor.share_memory_",),
    "starts work on torch's inter-op thread pool that outlives the config": (
        "torch.fork",
        "torch.wait",
        "torch.ops.aten.wait",
    ),
    "changes process-wide state: thread pools": (
        "torch.set_num_threads",
        "torch.set_num_interop_threads",
        "torch.init_num_threads",
    ),
    "changes process-wide state: default dtype, device or tensor type": (
        "torch.set_default_dtype",
        "torch.set_default_device",
        "torch.set_default_tensor_type",
    ),
    "changes process-wide state: numerics, determinism, anomaly and warning flags": (
        "torch.use_deterministic_algorithms",
        "torch.set_deterministic_debug_mode",
        "torch.set_float32_matmul_precision",
        "torch.set_flush_denormal",
        "torch.set_anomaly_enabled",
        "torch.set_warn_always",
    ),
    "changes process-wide state: print options": ("torch.set_printoptions",),
    "changes process-wide state: autocast": (
        "torch.autocast",
        "torch.set_autocast_*",
        "torch.autocast_increment_nesting",
        "torch.autocast_decrement_nesting",
        "torch.clear_autocast_cache",
    ),
    "changes process-wide state: caches and process set-up": (
        "torch.ops.aten._cufft_set_plan_cache_max_size",
        "torch.ops.aten._cufft_clear_plan_cache",
        "torch.prepare_multiprocessing_environment",
        "torch.profiler_allow_cudagraph_cupti_lazy_reinit_cuda12",
    ),
    "compiles the functions it is given (a higher-order operator runs them through torch.compile)": (
        "torch.cond",
        "torch.while_loop",
    ),
    "prints (a config could write anything to replay's own output)": ("torch.ops.aten._print",),
    "talks to other processes (process groups, RPC, distributed autograd)": (
        "torch.nn.SyncBatchNorm",
        "torch.ops.aten.to_here",
        "torch.ops.aten.local_value",
        "torch.ops.aten.owner",
        "torch.ops.aten.owner_name",
        "torch.ops.aten.confirmed_by_owner",
        "torch.ops.aten.is_owner",
        "torch.ops.aten.dist_backward",
    ),
}


def denied(name: str) -> Optional[str]:
    """The reason DENIED gives for `name`, if it does: for a Python binding
    of an aten operator (torch._print), the operator's."""
    parts = name.split(".")
    if parts[:1] == ["torch"] and parts[1:2] != ["ops"] and _binds_operator(name):
        why = denied(f"torch.ops.aten.{parts[-1]}")
        if why:
            return why
    for reason, patterns in DENIED.items():
        for pattern in patterns:
            if fnmatch.fnmatchcase(name, pattern) or name.startswith(pattern + "."):
                return reason
    return None


@functools.lru_cache(maxsize=None)
def named_apis() -> FrozenSet[str]:
    """The allow-list's named APIs (operators aside)."""
    from torch.overrides import get_ignored_functions, get_overridable_functions, resolve_name

    from .dialect import PyTorchDialect

    names = (
        set(PyTorchDialect().api_list())
        | set(VALUE_CONSTRUCTORS)
        | set(SCOPED_STATE)
        | set(SPARSE_FUNCTIONS)
        | option_classes()
    )
    for functions in get_overridable_functions().values():
        names.update(filter(None, map(resolve_name, functions)))
    names.update(
        n
        for n in filter(None, map(resolve_name, get_ignored_functions()))
        if n.startswith("torch.Tensor.") and not n.split(".")[2].startswith("_")
    )
    names.update(operator_bindings())
    return frozenset(n for n in names if not denied(n))


def _binding_modules() -> Dict[str, Any]:
    """Where torch's generated Python bindings of aten operators are, by the
    name the tracer writes them under: torch.NAME, torch.Tensor.NAME, and
    torch._C's per-family modules (torch._C._nn.linear, _linalg, _special,
    _fft, _sparse: what level 1 sees torch.nn.functional, torch.linalg,
    torch.sparse... call)."""
    import torch

    modules = {"torch": torch._C._VariableFunctions, "torch.Tensor": torch._C.TensorBase}
    for family in ("_nn", "_linalg", "_special", "_fft", "_sparse"):
        modules[f"torch._C.{family}"] = getattr(torch._C, family)
    return modules


def _binds_operator(name: str) -> bool:
    """Whether `name` is a generated binding (_binding_modules) of the aten
    operator of its last part: torch.add, torch._C._nn.linear."""
    import types

    owner, _, op = name.rpartition(".")
    holder = _binding_modules().get(owner)
    return (
        holder is not None
        and op in _aten_names()
        and isinstance(getattr(holder, op, None), (types.BuiltinFunctionType, types.MethodDescriptorType))
    )


@functools.lru_cache(maxsize=None)
def _aten_names() -> FrozenSet[str]:
    import torch

    return frozenset(s.name.partition("::")[2] for s in torch._C._jit_get_all_schemas() if s.name.startswith("aten::"))


def operator_bindings() -> FrozenSet[str]:
    """The generated Python bindings of aten operators (_binding_modules:
    torch.NAME, torch.Tensor.NAME, torch._C._nn.NAME, ... a builtin named
    as the operator NAME), the operator not denied."""
    import types

    aten = _aten_names()
    bindings = set()
    for prefix, owner in _binding_modules().items():
        for name in aten.intersection(dir(owner)):
            builtin = isinstance(getattr(owner, name), (types.BuiltinFunctionType, types.MethodDescriptorType))
            if builtin and not name.startswith("__") and not denied(f"torch.ops.aten.{name}"):
                bindings.add(f"{prefix}.{name}")
    return frozenset(bindings)


@functools.lru_cache(maxsize=None)
def tensorless_operators() -> Tuple[FrozenSet[str], FrozenSet[str]]:
    """The operators (overloads, and the packets holding one) that take no
    tensor and return none: TorchScript's operators of Python values
    (strings, lists, numbers), as torch.ops.NS.OP.OVERLOAD and
    torch.ops.NS.OP."""
    import torch

    overloads, packets = set(), set()
    for s in torch._C._jit_get_all_schemas():
        if not any("Tensor" in str(a.type) for a in (*s.arguments, *s.returns)):
            namespace, _, op = s.name.partition("::")
            overloads.add(f"torch.ops.{namespace}.{op}.{s.overload_name or 'default'}")
            packets.add(f"torch.ops.{namespace}.{op}")
    return frozenset(overloads), frozenset(packets)


def _users(name: str) -> bool:
    """Whether `name` is an operator (torch.ops.NAMESPACE.OP[.OVERLOAD]) of
    the user's loaded code: allowed, private ones too (user_code.py)."""
    from ...replay.user_code import namespaces

    parts = name.split(".")
    return len(parts) in (4, 5) and parts[2] in namespaces()


def _private_refusal(name: str) -> Optional[str]:
    """Why `name`, a private operator (a `_`-prefixed one, or one of a
    `_`-prefixed namespace) or its Python binding, is refused: its family
    (private_operators.py) is refused, or no family decides it (a torch
    upgrade's new operator), or its namespace is private. (Such kernels
    often trust their arguments: a config's shapes could make them read
    or write out of bounds.)"""
    from .operator_families import REFUSED
    from .private_operators import decision

    parts = name.split(".")
    if name in SCOPED_STATE or name.endswith((".__get__", ".__set__", ".__delete__")):
        return None
    if name.startswith("torch.ops.") and len(parts) >= 4:
        namespace, op = parts[2], parts[3]
        private_namespace = namespace.startswith("_")
    else:
        namespace, op, private_namespace = "aten", parts[-1], False
    if not (private_namespace or (op.startswith("_") and not op.startswith("__"))):
        return None
    if namespace in TORCH_PYTHON_OPERATORS:
        return None
    if private_namespace:
        return (
            f"it is a private operator of the private namespace {namespace}, whose kernels replay has not "
            "reviewed (they may trust their arguments)"
        )
    if namespace != "aten" or op not in _aten_names():
        return "it is a private operator, which replay calls only once reviewed (its kernel may trust its arguments)"
    family = decision(op)
    if family is None:
        return (
            "it is a private operator no family decides yet (python -m api_tracer.frameworks.torch.private_operators "
            "lists them), which replay calls only once reviewed (its kernel may trust its arguments)"
        )
    if family.decision == REFUSED:
        return f"it is a private operator replay refuses (family: {family.name}): {family.why}"
    return None


def _indexing_refusal(name: str) -> Optional[str]:
    """Why `name`, a public aten operator that takes indices, lengths,
    offsets or statistics (or its Python binding), is refused: its family
    (indexing_operators.py) is refused, or no family decides it (a torch
    upgrade's new operator)."""
    from .indexing_operators import decision, indexing_operators
    from .operator_families import REFUSED

    parts = name.split(".")
    if name.startswith("torch.ops.") and (len(parts) < 4 or parts[2] != "aten"):
        return None
    op = parts[3] if name.startswith("torch.ops.") else parts[-1]
    if op not in indexing_operators():
        return None
    family = decision(op)
    if family is None:
        return (
            "it takes indices, lengths, offsets or statistics, and no family decides it yet (python -m "
            "api_tracer.frameworks.torch.indexing_operators lists them): its kernel may trust them"
        )
    if family.decision == REFUSED:
        return f"replay refuses its family ({family.name}): {family.why}"
    return None


def _operator_refusal(name: str, obj: Any) -> Optional[str]:
    parts = name.split(".")
    if len(parts) >= 3 and parts[2] in ("load_library", "import_module"):
        return "it loads code or a shared library"
    if len(parts) not in (4, 5):
        return "it is not an operator (torch.ops.NAMESPACE.OP[.OVERLOAD])"
    if parts[2] not in OPERATOR_NAMESPACES:
        return f"it is an operator of {parts[2]}, not of a computing namespace ({', '.join(OPERATOR_NAMESPACES)})"
    overloads, packets = tensorless_operators()
    if name in overloads:
        return "it computes on no tensor (an operator of TorchScript's strings, lists and numbers)"
    if name in packets:
        return "some of its overloads compute on no tensor: name the overload"
    import torch

    if obj is not None and not isinstance(obj, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return "it is not an operator"
    return None


def refusal(name: str, obj: Any = None) -> Optional[str]:
    """Why replay may not call `name` from an untrusted file; None if it may.
    `obj`, when given, is what the name resolved to (an operator's name must
    resolve to an operator)."""
    why = denied(name)
    if why:
        why = f"it {why}"
    elif name.startswith("torch.ops."):
        reviewed = _operator_refusal(name, obj) or _private_refusal(name) or _indexing_refusal(name)
        why = None if _users(name) else reviewed
    elif name not in named_apis():
        why = "it is not in replay's allow-list of computing APIs"
    else:
        why = _private_refusal(name) or _indexing_refusal(name)
    return f"{name} is refused: {why} (--allow-unsafe lifts the policy)" if why else None


def allow_list() -> FrozenSet[str]:
    """The whole allow-list as names: the named APIs and every operator
    (packet and overload) this torch has registered in OPERATOR_NAMESPACES."""
    import torch

    operators = set()
    for schema in torch._C._jit_get_all_schemas():
        namespace, _, op = schema.name.partition("::")
        if namespace in OPERATOR_NAMESPACES:
            packet = f"torch.ops.{namespace}.{op}"
            operators.update((packet, f"{packet}.{schema.overload_name or 'default'}"))
    overloads, packets = tensorless_operators()
    return frozenset(
        n
        for n in named_apis() | frozenset(n for n in operators if not denied(n))
        if not _private_refusal(n) and not _indexing_refusal(n) and n not in overloads and n not in packets
    )
