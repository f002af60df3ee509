"""api_tracer: records the API calls a PyTorch program makes, with their
argument configurations, and profiles models layer by layer.

    from api_tracer import APITracer
    with APITracer(dialect="torch", output_path="trace_output", levels=1):
        ...

See README.md and docs/ for the output files and the config-line format.
"""

from . import extension

_C = extension.load()  # or an ImportError: built for another torch, or not built

from .errors import ConfigSyntaxError, InputError  # noqa: E402 - after the extension is loaded and the value and error types registered
from .values import Call, Symbol, TensorSpec  # noqa: E402 - after the extension is loaded and the value and error types registered

_C.set_value_types(Call, Symbol, TensorSpec)
_C.set_error_types(ConfigSyntaxError, InputError)

from .config import parse_call  # noqa: E402 - after the extension is loaded and the value and error types registered
from .frameworks import format_call  # noqa: E402 - after the extension is loaded and the value and error types registered
from .frameworks.dialect import FrameworkDialect  # noqa: E402 - after the extension is loaded and the value and error types registered
from .frameworks.torch.dialect import PyTorchDialect  # noqa: E402 - after the extension is loaded and the value and error types registered
from .profile import Profile  # noqa: E402 - after the extension is loaded and the value and error types registered
from .trace.hooks import NativeHook, SetattrHook, TorchDispatchHook, TorchFunctionHook, TracingHook  # noqa: E402 - after the extension is loaded and the value and error types registered
from .trace.tracer import APITracer  # noqa: E402 - after the extension is loaded and the value and error types registered

__version__ = "0.1.0"
__all__ = [
    "APITracer",
    "Profile",
    "TracingHook",
    "SetattrHook",
    "TorchFunctionHook",
    "TorchDispatchHook",
    "NativeHook",
    "FrameworkDialect",
    "PyTorchDialect",
    "Call",
    "Symbol",
    "TensorSpec",
    "parse_call",
    "format_call",
    "ConfigSyntaxError",
]
