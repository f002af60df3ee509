"""Type stub of api_tracer._C, the C++ engine (csrc/python)."""
from typing import Any, Callable, Dict, List, Optional, Tuple

class ApiWrapper:
    """Records each call of `original` as `api` at `level`, then calls it."""

    __wrapped__: Callable[..., Any]
    def __init__(self, original: Callable[..., Any], api: str, level: int, *, binds: bool = ...,
                 owner: Optional[type] = ...) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __get__(self, obj: Any, objtype: Any = ...) -> Any: ...

def torch_function_handler(mode: Any, func: Any, types: Any, args: tuple, kwargs: Optional[dict] = ...) -> Any: ...
def torch_dispatch_handler(mode: Any, func: Any, types: Any, args: tuple, kwargs: Optional[dict] = ...) -> Any: ...
class StackFormat:
    short: StackFormat
    full: StackFormat
    api: StackFormat
    __members__: Dict[str, StackFormat]

class Nesting:
    outermost: Nesting
    all: Nesting
    innermost: Nesting
    __members__: Dict[str, Nesting]

class Level(int):
    setattr: Level
    torch_function: Level
    torch_dispatch: Level
    native: Level
    max: Level

class TraceOptions:
    output_path: str
    levels: List[int]
    merge_output: bool
    record_stack: bool
    stack_format: StackFormat
    nesting: Nesting
    stream_trace: bool
    value_ranges: bool
    show_device: bool
    show_requires_grad: bool
    snapshot_interval: float
    trace_limit: int
    include_apis: List[str]
    exclude_apis: List[str]
    def __init__(self) -> None: ...

def start(options: TraceOptions, *, stack_skip_prefixes: List[str], resolve: Callable[[Any], Tuple[Optional[str], Any]],
          classify: Callable[[type], Tuple[str, Any]], tensor_type_name: Callable[[type], str]) -> None: ...
def stop() -> None: ...
def trace_limit_note(limit: int, dropped: int) -> str: ...
def parse_trace_limit_note(line: str) -> Optional[Tuple[int, int]]: ...
def allows(api: str) -> bool: ...
def record(level: int, api: str, args: tuple, kwargs: Optional[dict] = ...) -> None: ...

class suspended:
    def __init__(self) -> None: ...
    def __enter__(self) -> None: ...
    def __exit__(self, *args: Any) -> None: ...

def set_value_types(call: type, symbol: type, tensor_spec: type) -> None: ...
def parse_call(line: str) -> Tuple[str, List[Any], Dict[str, Any]]: ...
def parse_value(text: str) -> Any: ...
def format_call(api: str, args: tuple, kwargs: dict, *, classify: Callable[[type], Tuple[str, Any]],
                tensor_type_name: Callable[[type], str], show_device: bool = ...,
                show_requires_grad: bool = ...) -> str: ...

replay_crash_signals: Tuple[int, ...]
def replay_crash_note_install(report_fd: int = ...) -> None: ...
def replay_crash_note_set(notes: Dict[int, Tuple[str, str]]) -> None: ...
def replay_crash_note_uninstall() -> None: ...
