"""Type stub of api_tracer._C, the C++ engine (csrc/python). Every name and
parameter here is checked against the built module (tests/test_structure.py)."""

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

# -- hooks (hooks.cc) -------------------------------------------------------------

class ApiWrapper:
    """Records each call of `original` as `api` (the outermost at `level`,
    every call at `every` unless -1), then calls it."""

    __wrapped__: Callable[..., Any]
    def __init__(
        self,
        original: Callable[..., Any],
        api: str,
        level: int,
        *,
        binds: bool = ...,
        owner: Optional[type] = ...,
        every: int = ...,
    ) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    def __get__(self, instance: Any, owner: Optional[type] = ..., /) -> Any: ...

def torch_function_handler(mode: Any, func: Any, types: Any, args: tuple, kwargs: Optional[dict] = ..., /) -> Any: ...
def torch_dispatch_handler(mode: Any, func: Any, types: Any, args: tuple, kwargs: Optional[dict] = ..., /) -> Any: ...

# -- level 0 in place (inplace.cc) ------------------------------------------------

def patch_c_function(
    function: Any, api: str, level: int, names: Optional[List[Tuple[Any, str, str]]] = ..., every: int = ...
) -> bool: ...
def patch_method_descriptor(descriptor: Any, api: str, level: int, every: int = ...) -> bool: ...
def unpatch(obj: Any) -> None: ...
def set_call_site_reader(fn: Callable[[Any], Dict[int, Tuple[str, ...]]]) -> None: ...

class CodeHook:
    """Called by a function's instrumented code on entry, with its parameters."""

    def __init__(self, function: Callable[..., Any]) -> None: ...
    def arm(
        self,
        api: Optional[str],
        level: int,
        owners: Optional[List[Tuple[type, str]]] = ...,
        names: Optional[List[Tuple[Any, str, str]]] = ...,
        by: str = ...,
        every: int = ...,
    ) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...

class CodeExit:
    """Called by instrumented code with its token on its way out."""

    def __init__(self, returned: bool) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> None: ...

# -- the session (session_bindings.cc) --------------------------------------------

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
    __members__: Dict[str, Level]
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
    float_ranges: bool
    show_device: bool
    show_requires_grad: bool
    snapshot_interval: float
    trace_limit: int
    label: str
    include_apis: List[str]
    exclude_apis: List[str]
    def __init__(self) -> None: ...

def start(
    options: TraceOptions,
    *,
    stack_skip_prefixes: List[str],
    resolve: Callable[[Any], Tuple[Optional[str], Any]],
    classify: Callable[[type], Tuple[str, Any]],
    tensor_type_name: Callable[[type], str],
) -> None: ...
def stop() -> None: ...
def abandon_after_fork() -> None: ...
def on_exec(callback: Callable[[], None]) -> None: ...
def allows(api: str, /) -> bool: ...
def record(level: int, api: str, args: tuple, kwargs: Optional[dict] = ...) -> None: ...
def observer_install(level: int) -> None: ...
def observer_installed() -> bool: ...
def observer_remove() -> None: ...
def module_paths(paths: Sequence[str], /) -> None: ...
def module_paths_clear() -> None: ...
def module_enter(id: int) -> None: ...
def module_exit() -> None: ...

class suspended:
    def __init__(self) -> None: ...
    def __enter__(self) -> None: ...
    def __exit__(self, *args: Any) -> None: ...

# -- config lines and summary files (config_bindings.cc) --------------------------

class ValueProfile:
    valid: bool
    min: int
    max: int
    sorted: bool
    distinct: List[int]
    many: bool
    negatives: List[int]
    many_negatives: bool
    nonneg_min: int
    same_sum: bool
    sum: int
    floating: bool
    finite: bool
    fmin: float
    fmax: float
    nan: bool
    posinf: bool
    neginf: bool
    def __init__(self) -> None: ...
    def merge(self, other: ValueProfile) -> None: ...
    @staticmethod
    def of(values: Sequence[int]) -> ValueProfile: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __getstate__(self) -> tuple: ...
    def __setstate__(self, state: tuple, /) -> None: ...

class Rule:
    opaque: Rule
    replace: Rule
    instance: Rule
    tensor: Rule
    __members__: Dict[str, Rule]

class TensorReader:
    def __init__(
        self,
        *,
        shape: str,
        dtype: str,
        dtypes: Dict[Any, str],
        dtype_name: Optional[Callable[[Any], str]] = ...,
        stride: Optional[str] = ...,
        requires_grad: Optional[str] = ...,
        grad_negated: bool = ...,
        device: Optional[Callable[[Any], str]] = ...,
        values: Optional[Callable[[Any], Any]] = ...,
    ) -> None: ...

def set_value_types(call: type, symbol: type, tensor_spec: type, /) -> None: ...
def set_error_types(config_syntax_error: type, input_error: type) -> None: ...
def parse_call(line: str) -> Tuple[str, List[Any], Dict[str, Any]]: ...
def parse_value(text: str) -> Any: ...
def format_call(
    api: str,
    args: tuple,
    kwargs: dict,
    *,
    classify: Callable[[type], Tuple[str, Any]],
    tensor_type_name: Callable[[type], str],
    show_device: bool = ...,
    show_requires_grad: bool = ...,
) -> str: ...
def write_summary(
    dir: str,
    suffix: str,
    api_counts: Sequence[Tuple[str, int]],
    config_lines: Sequence[str],
    stacks: Optional[Sequence[Tuple[str, Sequence[Sequence[str]]]]] = ...,
    value_ranges: Optional[Sequence[Tuple[str, Sequence[Tuple[str, ValueProfile]]]]] = ...,
) -> None: ...
def trace_limit_note(limit: int, dropped: int) -> str: ...
def parse_trace_limit_note(line: str) -> Optional[Tuple[int, int]]: ...
def output_files() -> List[Tuple[str, str, Optional[str], bool]]: ...

MAX_STACKS: int
MAX_LABEL: int
MAX_VALUE_DEPTH: int  # how deep the converters follow nested arguments (core/key.h: kMaxValueDepth)

def count_trace_levels(path: str) -> Tuple[Dict[int, int], int, str]: ...

class SourcesReader:
    """api_config_sources.yaml read a record at a time, each checked; bad
    input raises InputError(path, message, line, column)."""
    def __init__(self, path: str) -> None: ...
    @property
    def labels(self) -> List[Tuple[str, int]]: ...
    def __iter__(self) -> "SourcesReader": ...
    # (line, config, calls, sources, ((label, calls), ...), at_most)
    def __next__(self) -> Tuple[int, str, int, int, Tuple[Tuple[str, int], ...], bool]: ...

def merge_sources(
    inputs: Sequence[Tuple[str, str]], configs_out: str, sources_out: str
) -> Tuple[int, List[List[Tuple[str, int]]]]: ...

# -- the layer profiler (profile_bindings.cc) -------------------------------------

class SpanKind(int):
    __members__: Dict[str, SpanKind]
    scope: SpanKind
    node: SpanKind
    op: SpanKind

class OpStats:
    name: str
    calls: int
    total_ns: int
    self_ns: int

class DirStats:
    calls: int
    total_ns: int
    self_ns: int
    mem_self: int
    mem_total: int
    cuda_mem_self: int
    cuda_mem_total: int
    device_self_ns: int
    device_total_ns: int
    ops: List[OpStats]

class ProfileSnapshot:
    forward: List[DirStats]
    backward: List[DirStats]
    block_ns: int
    unattributed_ns: int
    device_untimed: int

class Profiler:
    """Per-scope time and memory (core/profiler.h)."""

    def __init__(self, parents: Sequence[int], max_spans: Optional[int] = ..., cuda: bool = ...) -> None: ...
    def start(self, memory: bool, ops: bool = ...) -> None: ...
    def stop(self) -> None: ...
    def snapshot(self) -> ProfileSnapshot: ...
    def spans(self) -> List[Tuple[int, int, str, int, int, int]]:
        """(kind, scope, name, begin_ns, end_ns, thread) per span; kind: a SpanKind."""
    @property
    def dropped_spans(self) -> int: ...

class NestedOps:
    """The aten operators this thread calls while it is entered, each once, in the order of its first call."""

    def __init__(self) -> None: ...
    def __enter__(self) -> NestedOps: ...
    def __exit__(self, *args: Any) -> None: ...
    def names(self) -> List[str]:
        """ "aten::add.Tensor" for each operator seen, once."""

def scoped_forward(forward: Callable[..., Any], scopes: Sequence[int], profiler: Profiler) -> Callable[..., Any]: ...
def _empty_profile_callback(on: bool, ops: bool = ...) -> None: ...

# -- replay's crash note (crash_note.cc) -------------------------------------------

replay_crash_signals: Tuple[int, ...]

def replay_crash_note_install(report_fd: int = ...) -> None: ...
def replay_crash_note_set(notes: Dict[int, Tuple[str, str]]) -> None: ...
def replay_crash_note_uninstall() -> None: ...
