"""What level 0 must leave alone in Paddle, as data: each name or prefix with
the reason (PaddleDialect reads them, and so does the scan that makes the
API lists, api_list.py), and Paddle's dtypes.

Names are API names as the lists write them (``paddle.Tensor.__repr__``);
a prefix matches the start of a name (``paddle.jit.`` matches
``paddle.jit.to_static``). Nothing here imports paddle.
"""

from __future__ import annotations

from typing import Dict, Tuple

from ..dialect import PRINTING_AND_PICKLING, methods, protocol_of

# Paddle's dtypes, by the name paddle exports each under (paddle.float32),
# which the format writes as torch's are ("float32"), and which torch names
# alike: replay draws a Paddle tensor in torch first.
DTYPES: Tuple[str, ...] = (
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
    "float8_e4m3fn",
    "float8_e5m2",
)
FLOATING: Tuple[str, ...] = ("float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2")
COMPLEX: Tuple[str, ...] = ("complex64", "complex128")

# Beside Python's object protocol (OBJECT_PROTOCOL), what a paddle
# tensor's class has that level 0 must not wrap either.
_TENSOR_PROTOCOL: Dict[str, str] = {
    "__array_ufunc__": "numpy's dispatch protocol",
    "__cuda_array_interface__": "an interchange protocol other libraries probe for",
    "__c_dlpack_exchange_api__": "an interchange protocol (a capsule, not a call)",
    "__dlpack_c_exchange_api__": "an interchange protocol (a capsule, not a call)",
    "__tvm_ffi_env_stream__": "TVM FFI's stream protocol",
}

# Level 0 never wraps these (exact names): the reason is what a user's own
# list is told.
SKIP: Dict[str, str] = {
    **protocol_of("paddle.Tensor"),
    **protocol_of("paddle.nn.Parameter"),
    **{f"paddle.Tensor.{method}": why for method, why in _TENSOR_PROTOCOL.items()},
    **{f"paddle.nn.Parameter.{method}": why for method, why in _TENSOR_PROTOCOL.items()},
    "paddle.Tensor": "the tensor type: its construction is paddle's own (parameters, copies)",
    "paddle.nn.Parameter": "the parameter type: layers construct it, the program does not",
    "paddle.nn.Layer": "the base class: every layer's construction would be recorded twice",
    "paddle.nn.Module": "the base class (paddle.nn.Layer): every layer's construction would be recorded twice",
    "paddle.optimizer.Optimizer": "the base class: every optimizer's construction would be recorded twice",
    # global state: modes, devices, flags, defaults, random state
    "paddle.set_device": "global state: the current device",
    "paddle.get_device": "global state: the current device",
    "paddle.set_default_device": "global state: the current device",
    "paddle.get_default_device": "global state: the current device",
    "paddle.get_device_module": "global state: the current device",
    "paddle.get_cudnn_version": "build configuration",
    "paddle.is_compiled_with_cinn": "build configuration",
    "paddle.is_compiled_with_cuda": "build configuration",
    "paddle.is_compiled_with_custom_device": "build configuration",
    "paddle.is_compiled_with_distribute": "build configuration",
    "paddle.is_compiled_with_ipu": "build configuration",
    "paddle.is_compiled_with_rocm": "build configuration",
    "paddle.is_compiled_with_xpu": "build configuration",
    "paddle.seed": "global state: the random generators' seed",
    "paddle.manual_seed": "global state: the random generators' seed",
    "paddle.get_rng_state": "global state: the random generators",
    "paddle.set_rng_state": "global state: the random generators",
    "paddle.get_cuda_rng_state": "global state: the random generators",
    "paddle.set_cuda_rng_state": "global state: the random generators",
    "paddle.set_flags": "global state: paddle's flags",
    "paddle.get_flags": "global state: paddle's flags",
    "paddle.set_default_dtype": "global state: the default dtype",
    "paddle.get_default_dtype": "global state: the default dtype (every creation API asks for it)",
    "paddle.set_printoptions": "global state: how tensors print",
    "paddle.disable_static": "global state: the execution mode",
    "paddle.enable_static": "global state: the execution mode",
    "paddle.in_dynamic_mode": "global state: the execution mode (most APIs ask for it)",
    "paddle.in_dynamic_or_pir_mode": "global state: the execution mode (most APIs ask for it)",
    "paddle.is_grad_enabled": "global state: the grad mode",
    "paddle.autocast": "global state: automatic mixed precision (a context manager)",
    "paddle.is_autocast_enabled": "global state: automatic mixed precision",
    "paddle.get_autocast_dtype": "global state: automatic mixed precision",
    "paddle.get_autocast_cpu_dtype": "global state: automatic mixed precision",
    "paddle.get_autocast_gpu_dtype": "global state: automatic mixed precision",
    "paddle.enable_compat": "global state: paddle's torch-compatibility proxy (import machinery)",
    "paddle.disable_compat": "global state: paddle's torch-compatibility proxy (import machinery)",
    "paddle.use_compat_guard": "global state: paddle's torch-compatibility proxy (import machinery)",
    "paddle.disable_signal_handler": "global state: paddle's signal handlers",
    # files, models, machinery
    "paddle.save": "writes a file (QUIET: nothing it calls is recorded either)",
    "paddle.load": "reads a file (QUIET: nothing it calls is recorded either)",
    "paddle.async_save": "writes a file from a thread",
    "paddle.clear_async_save_task_queue": "waits for async_save's thread",
    "paddle.summary": "prints a model's summary by running it with hooks",
    "paddle.flops": "counts a model's FLOPs by running it with hooks",
    "paddle.batch": "a reader decorator of the old data API",
    "paddle.check_shape": "argument checking, called by the creation APIs",
    "paddle.new_init": "the tensor type's __init__, patched in at import",
    "paddle.monkey_patch_dtype": "import machinery (patches paddle's types)",
    "paddle.monkey_patch_generated_methods_for_tensor": "import machinery (patches paddle's types)",
    "paddle.monkey_patch_generated_methods_for_value": "import machinery (patches paddle's types)",
    "paddle.monkey_patch_math_tensor": "import machinery (patches paddle's types)",
    "paddle.monkey_patch_program": "import machinery (patches paddle's types)",
    "paddle.monkey_patch_value": "import machinery (patches paddle's types)",
    "paddle.monkey_patch_variable": "import machinery (patches paddle's types)",
}

# Namespaces level 0 never wraps, each with the reason.
SKIP_PREFIXES: Dict[str, str] = {
    "paddle._": "paddle's private modules (_C_ops and the like): what every API calls inside",
    "paddle.jit.": "dynamic-to-static: it reads and rewrites the functions it converts",
    "paddle.static.": "the static-graph API: it builds programs, computes nothing",
    "paddle.pir.": "the static-graph IR",
    "paddle.pir_utils.": "the static-graph IR",
    "paddle.decomposition.": "the static-graph IR's decomposition rules",
    "paddle.cinn_config.": "the CINN compiler's configuration",
    "paddle.distributed.": "collectives, launchers, process groups: they start services and talk to other ranks",
    "paddle.base.": "paddle's framework internals (the former fluid), called by every API",
    "paddle.framework.": "framework internals: dtypes, places, random state, files, modes",
    "paddle.utils.": "helpers (deprecation, unique names, C++ extension builds, downloads): no computation",
    "paddle.device.": "global state: devices, streams, events",
    "paddle.cuda.": "global state: devices, streams, events (torch.cuda's counterpart)",
    "paddle.inference.": "the inference predictor service",
    "paddle.profiler.": "the profiler: it times, does not compute",
    "paddle.io.": "data loading: datasets, samplers, worker processes",
    "paddle.hub.": "downloads models",
    "paddle.onnx.": "model export",
    "paddle.incubate.": "experimental APIs, many for GPUs or distributed training only",
    "paddle.audio.": "audio datasets, backends and features (optional dependencies, downloads)",
    "paddle.text.": "text datasets (downloads)",
    "paddle.dataset.": "the old datasets (downloads)",
    "paddle.reader.": "the old data API's readers",
    "paddle.vision.datasets.": "image datasets (downloads)",
    "paddle.sysconfig.": "build configuration paths",
    "paddle.version.": "build configuration",
    "paddle.check_import_scipy.": "an import check",
    "paddle.api_tracer.": "paddle's own API tracer",
    "paddle.DataParallel": "distributed data parallelism: process groups, collectives",
    "paddle.cost_model.": "the cost model of static programs",
    "paddle.library.": "custom operator registration",
}

# No level records these nor anything called inside them: printing,
# pickling and copying a tensor or parameter call paddle's own APIs
# (numpy(), tensor_to_string's slicing, to_tensor on unpickling); saving
# and loading files (paddle.save reads each tensor back to numpy), and
# saving a converted program; a function converted by paddle.jit.to_static
# runs a static program, and converting it calls paddle's APIs on the
# static graph's values, which no eager call would get.
QUIET: Tuple[str, ...] = (
    *methods("paddle.Tensor", *PRINTING_AND_PICKLING),
    *methods("paddle.nn.Parameter", "__repr__", "__str__", "__deepcopy__"),
    "paddle.base.dygraph.math_op_patch._rebuild_tensor",
    "paddle.save",
    "paddle.load",
    "paddle.jit.save",
    "paddle.jit.load",
    "paddle.jit.dy2static.program_translator.StaticFunction.__call__",
)
