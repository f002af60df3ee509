"""What `api-tracer replay` calls from a Paddle config file it cannot
trust: the policy of policy.py, for Paddle (docs/cli.md, "What replay
calls").

An allow-list:

- the named APIs of the tracer's Paddle API list
  (api_list/paddle_api_list.yaml: paddle's tensor functions, Tensor
  methods and operators, paddle.nn.functional, linalg, fft, signal,
  sparse, nn layers and their forward, optimizers);
- the computing APIs outside that list that PaddleAPITest's corpus calls,
  each reviewed (REVIEWED), and the functions of paddle.compat that
  PaConvert's mapping makes torch's calls in (compat_functions);
- the values replay itself constructs (VALUE_CONSTRUCTORS: places,
  ParamAttr, the initializers, regularizers, learning-rate schedulers
  and gradient clips), and
  ``paddle.set_grad_enabled``, whose change replay undoes after each
  config (it restores grad mode);
- the functions of the modules the user imported on the command line
  (``--import MODULE``: the user's own code, never a config file's asking);

- Paddle's eager operators, ``paddle._C_ops.NAME`` (what level 2
  records), less DENIED_OPERATORS: their families that must not run from
  an untrusted file;

less DENIED: the families of the list that must not run from an untrusted
file, each with its reason (files, processes, devices, process-wide flags
and modes, distributed, JIT and static graphs, hub, utils and
cpp_extension, data loaders, views by strides); less NOT_REPLAYED, the
computing APIs replay does not call yet, each with its reason (boxes it
cannot draw, sparse tensors); less every private name
(a part that starts with `_`, but the Tensor operators:
``paddle.Tensor.__add__``). The check is by name, before any argument is
built, for the API and every name in the arguments (constructor calls,
``Callable(...)``, classes); preconditions.py then checks the built
arguments of the kernels that index without looking.
"""

from __future__ import annotations

import fnmatch
import functools
from typing import Any, Dict, FrozenSet, Optional, Tuple

from . import paddle_module

# Classes replay constructs to rebuild argument values (besides the
# initializers and regularizers: value_classes()).
VALUE_CONSTRUCTORS = (
    "paddle.CPUPlace",
    "paddle.CUDAPlace",
    "paddle.CUDAPinnedPlace",
    "paddle.XPUPlace",
    "paddle.ParamAttr",
    "paddle.framework.ParamAttr",
)

# Calls that change state replay restores after each config.
SCOPED_STATE = ("paddle.set_grad_enabled",)

DOWNLOADS = "downloads files and runs the code it fetches (hub), or downloads datasets and pretrained weights"

# What the API list holds but replay must not call, by family: reason ->
# patterns (fnmatch; a pattern also covers the names below it, as a
# module's functions or a class's methods).
DENIED: Dict[str, Tuple[str, ...]] = {
    "reads or writes files (paddle.load unpickles: it can run code)": (
        "paddle.save",
        "paddle.load",
        "paddle.async_save",
        "paddle.clear_async_save_task_queue",
        "paddle.framework.save",
        "paddle.framework.load",
        "paddle.framework.io",
        "paddle.onnx",
        "paddle.inference",
        "paddle.sysconfig",
        "paddle.audio.load",
        "paddle.audio.save",
        "paddle.audio.info",
        "paddle.audio.backends",
        "paddle.vision.image_load",
    ),
    DOWNLOADS: (
        "paddle.hub",
        "paddle.dataset",
        "paddle.vision.datasets",
        "paddle.text.datasets",
        "paddle.audio.datasets",
    ),
    "trains, saves and loads whole models, writing logs and checkpoints (hapi)": (
        "paddle.Model",
        "paddle.hapi",
        "paddle.callbacks",
    ),
    "loads, builds or imports code (paddle.utils: cpp_extension compiles, try_import imports any module; "
    "paddle.library registers operators)": ("paddle.utils", "paddle.library"),
    "starts processes or threads that outlive the config (data loaders' workers, multiprocessing)": (
        "paddle.io.DataLoader",
        "paddle.io.get_worker_info",
        "paddle.incubate.multiprocessing",
        "paddle.reader",
    ),
    "creates shared memory": ("paddle.Tensor._share_memory",),
    "views a window of memory by sizes, strides and an offset it does not check against the tensor's storage (a "
    "config's could read or write anywhere: it crashed the process)": (
        "paddle.as_strided",
        "paddle.Tensor.as_strided",
        "paddle.Tensor.set_",
    ),
    "changes process-wide state: devices (sets, guards, synchronizes, streams, caches)": (
        "paddle.set_device",
        "paddle.device",
        "paddle.device_guard",
        "paddle.set_default_device",
        "paddle.get_device_module",
        "paddle.cuda",
        "paddle.cuda_env",
    ),
    "changes process-wide state: flags, defaults and modes (static graph, the torch proxy, print options)": (
        "paddle.set_flags",
        "paddle.get_flags",
        "paddle.set_default_dtype",
        "paddle.enable_static",
        "paddle.disable_static",
        "paddle.enable_compat",
        "paddle.disable_compat",
        "paddle.use_compat_guard",
        "paddle.compat.enable_torch_proxy",
        "paddle.compat.disable_torch_proxy",
        "paddle.compat.extend_torch_proxy_blocked_modules",
        "paddle.set_printoptions",
        "paddle.monkey_patch_dtype",
        "paddle.disable_signal_handler",
        "paddle.ir_guard",
        "paddle.pir_utils",
        "paddle.LazyGuard",
        "paddle.incubate.autotune",
        "paddle.amp.auto_cast",
        "paddle.amp.amp_guard",
        "paddle.autocast",
    ),
    "changes process-wide state: the random generators (every device's: replay restores only its own)": (
        "paddle.seed",
        "paddle.manual_seed",
        "paddle.set_rng_state",
        "paddle.set_cuda_rng_state",
        "paddle.framework.seed",
        "paddle.framework.random",
        "paddle.compat.seed",
    ),
    "prints (a config could write anything to replay's own output) or profiles, writing files": (
        "paddle.summary",
        "paddle.flops",
        "paddle.profiler",
    ),
    "talks to other processes (process groups, collectives, parameter servers)": (
        "paddle.distributed",
        "paddle.DataParallel",
        "paddle.nn.SyncBatchNorm",
        "paddle.incubate.distributed",
    ),
    "compiles or traces programs (JIT, static graphs, CINN)": (
        "paddle.jit",
        "paddle.static",
        "paddle.incubate.jit",
        "paddle.pir",
        "paddle.decomposition",
    ),
}


# Paddle's computing APIs outside the tracer's list that PaddleAPITest's
# corpus calls, allowed: each probed on the CPU with counts, indices and
# boxes out of range (the crashes are in tests/frameworks/paddle/
# test_replay_paddle.py), and allowed where Paddle checks them, where
# preconditions.py does, or where Paddle's CPU build has no kernel of theirs
# (the fused attention and quantized operators: replay of Paddle runs on
# the CPU only, so they are skipped as "no kernel" before touching memory).
REVIEWED = (
    "paddle.nn.utils.vector_to_parameters",
    "paddle.nn.utils.parameters_to_vector",
    "paddle.audio.functional.get_window",
    *(
        f"paddle.nn.quant.{n}"
        for n in ("weight_only_linear", "weight_quantize", "weight_dequantize", "llm_int8_linear")
    ),
    *(
        f"paddle.incubate.nn.functional.{n}"
        for n in (
            "fused_bias_act",
            "fused_linear",
            "fused_linear_activation",
            "fused_matmul_bias",
            "fused_rms_norm",
            "fused_layer_norm",
            "fused_dropout_add",
            "fused_bias_dropout_residual_layer_norm",
            "fused_feedforward",
            "fused_multi_head_attention",
            "fused_rotary_position_embedding",
            "swiglu",
            "variable_length_memory_efficient_attention",
            "block_multihead_attention",
            "masked_multihead_attention",
            "blha_get_max_len",
        )
    ),
    "paddle.incubate.softmax_mask_fuse",
    "paddle.incubate.softmax_mask_fuse_upper_triangle",
    *(
        f"paddle.vision.ops.{n}"
        for n in (
            "prior_box",
            "box_coder",
            "yolo_box",
            "nms",
            "matrix_nms",
            "deform_conv2d",
            "generate_proposals",
        )
    ),
    *(f"paddle.geometric.{n}" for n in ("send_u_recv", "send_ue_recv", "send_uv", "sample_neighbors")),
    *(f"paddle.{m}.segment_{n}" for m in ("geometric", "incubate") for n in ("sum", "mean", "max", "min")),
)

# ... and those refused though they compute, each with its reason.
NOT_REPLAYED: Dict[str, Tuple[str, ...]] = {
    "takes boxes counted per image (boxes_num, rois_num), which must add up to the boxes' rows, and replay does "
    "not yet draw counts that do: roi_align and distribute_fpn_proposals read past the boxes where they do not "
    "(probed: SIGSEGV), roi_align aborts on non-finite or far boxes (SIGABRT), roi_pool hangs": (
        "paddle.vision.ops.roi_align",
        "paddle.vision.ops.roi_pool",
        "paddle.vision.ops.psroi_pool",
        "paddle.vision.ops.distribute_fpn_proposals",
    ),
    "takes sparse tensors, which a line writes by their dense shape (PaddleAPITest's lines) and replay builds "
    "dense: Paddle's sparse kernels refuse dense tensors": ("paddle.sparse",),
    "decodes image bytes (a parser of untrusted data; Paddle's runs on GPUs only)": ("paddle.vision.ops.decode_jpeg",),
    "lists an object's attribute names: no computation": ("paddle.Tensor.__dir__",),
}


@functools.lru_cache(maxsize=None)
def compat_functions() -> FrozenSet[str]:
    """The functions and layers of paddle.compat (Paddle's own, called as
    torch's are) that PaConvert's mapping makes torch's calls in
    (frameworks/torch_paddle.py), where this paddle has them: computing
    APIs --check paddle calls (less DENIED's, paddle.compat.seed)."""
    from ..torch_paddle import mapping

    found = set()
    for entry in mapping().values():
        name = entry.get("paddle_api", "")
        if name.startswith("paddle.compat."):
            obj: Any = paddle_module()
            for part in name.split(".")[1:]:
                obj = getattr(obj, part, None)
            if obj is not None:
                found.add(name)
    return frozenset(found)


def not_replayed(name: str) -> Optional[str]:
    """The reason NOT_REPLAYED gives for `name`, if it does."""
    return next(
        (why for why, names in NOT_REPLAYED.items() if any(name == n or name.startswith(n + ".") for n in names)),
        None,
    )


# Paddle's eager operators replay must not call, by family: reason -> the
# operators' names (fnmatch) in paddle._C_ops.
DENIED_OPERATORS: Dict[str, Tuple[str, ...]] = {
    "reads files": ("read_file",),
    "talks to other processes (collectives, sends and receives, distributed tensors)": (
        "all_gather",
        "all_reduce*",
        "all_to_all",
        "barrier",
        "broadcast",
        "broadcast_",
        "c_*",
        "global_gather",
        "global_scatter",
        "mp_allreduce_sum*",
        "partial_allgather*",
        "recv_v2",
        "send_v2",
        "reduce",
        "reduce_",
        "reduce_scatter",
        "sync_calc_stream*",
        "sync_comm_stream",
        "reshard*",
        "shard_tensor",
        "dtensor_*",
        "dist_reshape",
        "moe_global_mesh_tensor",
        "moe_sub_mesh_tensors",
        "distributed_fused_lamb_init*",
    ),
    "belongs to static graphs and programs (feeds, fetches, variables, arrays, program runs, layouts, copies "
    "between devices)": (
        "data",
        "fetch",
        "parameter",
        "set_parameter",
        "set_persistable_value",
        "share_var",
        "share_data*",
        "run_program",
        "tensorrt_engine",
        "builtin_*",
        "create_array*",
        "array_*",
        "slice_array*",
        "get_core_ops_*",
        "depend",
        "nop*",
        "ap_*",
        "memcpy*",
        "onednn_to_paddle_layout",
        "trans_layout",
        "coalesce_tensor*",
    ),
    "views a window of memory by sizes, strides and an offset it does not check against the tensor's storage": (
        "as_strided",
        "set",
        "set_",
        "view_slice",
        "tensor_unfold",
        "index_select_strided",
    ),
    "prints": ("print",),
    "changes process-wide state: flags": (
        "enable_check_model_nan_inf",
        "disable_check_model_nan_inf",
        "check_numerics",
    ),
    # (level 2 records them from the engine's C++ calls, which pass the
    # outputs; Paddle's Python bindings pass an empty list: concat_grad raises
    # "Input's size should be equal to the output's size", stack_grad and
    # meshgrid_grad segfault. The backward functions whose last parameter is
    # a list of outputs in csrc/paddle/backward_wrappers.inc)
    "fails or crashes on every input: Paddle's Python binding of this backward kernel gives it no outputs": (
        "broadcast_tensors_grad",
        "concat_grad",
        "cudnn_lstm_grad",
        "einsum_grad",
        "meshgrid_grad",
        "multi_dot_grad",
        "multiplex_grad",
        "partial_concat_grad",
        "partial_sum_grad",
        "rnn_grad",
        "stack_grad",
    ),
}
OPERATORS = "paddle._C_ops"


def operator_refusal(name: str) -> Optional[str]:
    """Why replay may not call the eager operator `name` (paddle._C_ops.NAME)
    from an untrusted file; None if it may."""
    op = name[len(OPERATORS) + 1 :]
    if op not in operator_names():
        return "it is not one of Paddle's eager operators"
    for reason, patterns in DENIED_OPERATORS.items():
        if any(fnmatch.fnmatchcase(op, pattern) for pattern in patterns):
            return f"it {reason}"
    return None


@functools.lru_cache(maxsize=None)
def operator_names() -> FrozenSet[str]:
    """The names of Paddle's eager operators (hooks.operators)."""
    from .hooks import operators

    return frozenset(name for name, _ in operators())


def denied(name: str) -> Optional[str]:
    """The reason DENIED gives for `name`, if it does; DOWNLOADS for the
    model functions of paddle.vision.models (model_functions)."""
    for reason, patterns in DENIED.items():
        for pattern in patterns:
            if fnmatch.fnmatchcase(name, pattern) or name.startswith(pattern + "."):
                return reason
    if name.startswith(VISION_MODELS + ".") and name in model_functions():
        return DOWNLOADS
    return None


VISION_MODELS = "paddle.vision.models"


@functools.lru_cache(maxsize=None)
def model_functions() -> FrozenSet[str]:
    """The functions of paddle.vision.models that take `pretrained`, at its
    top and in its modules (resnet18, paddle.vision.models.resnet.resnet18,
    ...): pretrained=True downloads weights. Its layer classes (ResNet,
    resnet.BasicBlock) are computing APIs of the list. Read from Paddle,
    as the list is."""
    import importlib
    import inspect
    import pkgutil
    import types

    paddle_module()
    package = importlib.import_module(VISION_MODELS)
    found = set()
    for module in [package] + [
        importlib.import_module(info.name) for info in pkgutil.iter_modules(package.__path__, VISION_MODELS + ".")
    ]:
        if isinstance(module, types.ModuleType):
            found.update(
                f"{module.__name__}.{name}"
                for name, value in vars(module).items()
                if isinstance(value, types.FunctionType)
                and not name.startswith("_")
                and "pretrained" in inspect.signature(value).parameters
            )
    return frozenset(found)


@functools.lru_cache(maxsize=None)
def value_classes() -> FrozenSet[str]:
    """Paddle's initializers (paddle.nn.initializer.Constant, ...),
    regularizers (paddle.regularizer.L2Decay), learning-rate schedulers
    (paddle.optimizer.lr.StepDecay) and gradient clips
    (paddle.nn.ClipGradByNorm): values the tracer writes as their
    constructor calls (in ParamAttr, in an optimizer's: objects.py), which
    replay builds."""
    paddle = paddle_module()
    found = set(VALUE_CONSTRUCTORS)
    for prefix, module, base in (
        ("paddle.nn.initializer", paddle.nn.initializer, paddle.nn.initializer.Initializer),
        ("paddle.regularizer", paddle.regularizer, paddle.regularizer.WeightDecayRegularizer),
        ("paddle.optimizer.lr", paddle.optimizer.lr, paddle.optimizer.lr.LRScheduler),
        ("paddle.nn", paddle.nn, paddle.nn.clip.ClipGradBase),
    ):
        for name, value in vars(module).items():
            if not name.startswith("_") and isinstance(value, type) and issubclass(value, base):
                found.add(f"{prefix}.{name}")
    return frozenset(found)


def api_list() -> Tuple[str, ...]:
    """The tracer's Paddle API list (empty where the file is not there)."""
    from .dialect import PaddleDialect

    dialect = PaddleDialect()
    return tuple(dialect.api_list()) if dialect.api_list_file().is_file() else ()


@functools.lru_cache(maxsize=None)
def named_apis() -> FrozenSet[str]:
    """The allow-list's named APIs (the user's modules aside)."""
    names = set(api_list()) | value_classes() | set(SCOPED_STATE) | set(REVIEWED) | compat_functions()
    return frozenset(n for n in names if not denied(n) and not _private(n))


def _private(name: str) -> bool:
    """Whether a part of `name` is private (`_`-prefixed), but a dunder."""
    return any(part.startswith("_") and not (part.startswith("__") and part.endswith("__")) for part in name.split("."))


def _users(name: str) -> bool:
    """Whether `name` is under a module the user imported (--import)."""
    from ...replay.user_code import modules

    return any(name.startswith(module + ".") for module in modules())


def refusal(name: str, obj: Any = None) -> Optional[str]:
    """Why replay may not call `name` from an untrusted Paddle file; None if
    it may. (`obj`, what the name resolved to, is not needed: Paddle has no
    operators named by a registry.)"""
    if _users(name):
        return None
    why: Optional[str] = None
    if name.startswith(OPERATORS + "."):
        why = operator_refusal(name)
    elif denied(name):
        why = f"it {denied(name)}"
    elif not_replayed(name):
        why = f"it {not_replayed(name)}"
    elif _private(name):
        why = "it is private: replay calls Paddle's public API only"
    elif name not in named_apis():
        why = "it is not in replay's allow-list of Paddle's computing APIs" + (
            "" if api_list() else " (api_list/paddle_api_list.yaml is missing)"
        )
    return f"{name} is refused: {why} (--allow-unsafe lifts the policy)" if why else None


def allow_list() -> FrozenSet[str]:
    """The whole allow-list as names (the user's modules aside)."""
    return named_apis()
