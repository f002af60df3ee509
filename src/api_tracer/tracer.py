"""APITracer: the user's entry point.

    from api_tracer import APITracer
    with APITracer(dialect="torch", output_path="trace_output", levels=[1, 2]):
        model(x).sum().backward()

The tracer validates its options when it is made, opens the output files
when it starts (so a bad path fails before any work), installs one hook per
level, and on stop removes the hooks and writes the files. Exactly one
tracer runs at a time in a process.
"""
from __future__ import annotations

import atexit
import multiprocessing.util as _mp_util
import os
import threading
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Union

from . import _C
from .dialect import FrameworkDialect, PyTorchDialect
from .hooks import TracingHook
from .module_tree import ModuleHooks, ModuleTree
from .options import NESTINGS, SNAPSHOT_INTERVAL, STACK_FORMATS, TRACE_LIMIT


_DIALECTS = {"torch": PyTorchDialect}
_lock = threading.Lock()
_running: Optional["APITracer"] = None


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, not {value!r}")
    return value


def _check_amount(name: str, value: Any, kind: type, unit: str) -> Any:
    """A finite amount of `unit`, 0 or more, as `kind` (int or float)."""
    accepted = (int, float) if kind is float else int
    if isinstance(value, bool) or not isinstance(value, accepted) or not 0 <= value < 2 ** 63:
        raise ValueError(f"{name} must be a number of {unit} (0 or more), not {value!r}")
    return kind(value)


def _check_patterns(name: str, value: Any, default: List[str]) -> List[str]:
    if value is None:
        return list(default)
    if isinstance(value, str) or not all(isinstance(p, str) for p in value):
        raise ValueError(f"{name} must be a list of API-name patterns (strings), not {value!r}")
    return list(value)


class APITracer:
    """Records the API calls a program makes, at one or more levels.

    Parameters
    ----------
    dialect: "torch", or a FrameworkDialect instance.
    output_path: the directory the files go to (created if needed).
    levels: a level or a list of them: 0 SetattrHook, 1 TorchFunctionHook,
        2 TorchDispatchHook, 3 NativeHook (what the dialect offers), or
        TracingHook subclasses of your own.
    merge_output: one file set for all levels (a call several levels saw is
        one record), or one set per level with the suffix ``_level_N``.
    record_stack: also write api_stacks.yaml (up to 3 stacks per API).
    stack_format: "short" (file.py:12 in func), "full" (traceback style) or
        "api" (module.function).
    disable_torch_api_list: level 0 wraps everything a full scan of torch
        found (api_list/torch_api_list_full.yaml) instead of the public API
        list (api_list/torch_api_list.yaml).
    include_apis, exclude_apis: API-name glob patterns; a call is recorded
        when its API matches an include pattern (default: all) and no exclude
        pattern (default: the dialect's, property accessors for torch).
    api_list: level 0 wraps these API names instead of a list file.
    show_device, show_requires_grad: write these tensor fields in config
        lines too (YAML records always carry them).
    stream_trace: write api_trace.yaml/.txt (off: only configs, APIs and
        statistics, for very long runs).
    nesting: which operator calls level 3 keeps: "outermost" (the calls the
        program made), "all" (each with its nesting depth) or "innermost"
        (calls that called no other operator).
    value_ranges: also keep the smallest and largest value of each integer
        or bool tensor argument, per config (api_value_ranges.yaml). Reads
        tensor data; off by default.
    snapshot_interval: seconds between snapshots of the summary files
        (api_apis.txt, api_configs.yaml, api_statistics.yaml, and the
        stacks and value ranges), each rewritten whole and atomically, so
        that a process killed by a signal keeps them as of the last one
        (0: only at start and stop).
    trace_limit: the most bytes api_trace.yaml and api_trace.txt of a file
        set take together; past it they end with a line saying how many
        calls were not written (the summaries still count them). 0: no limit.
    tag_modules: an nn.Module: each record made while one of its modules
        runs carries the module's path ("module: Net.features.0" in
        api_trace.yaml), so configs can be told apart by layer.
    """

    def __init__(
        self,
        dialect: Union[str, FrameworkDialect] = "torch",
        output_path: Union[str, os.PathLike] = "trace_output",
        levels: Union[int, type, Sequence[Union[int, type]]] = 0,
        merge_output: bool = False,
        record_stack: bool = False,
        stack_format: str = "short",
        disable_torch_api_list: bool = False,
        *,
        include_apis: Optional[Iterable[str]] = None,
        exclude_apis: Optional[Iterable[str]] = None,
        api_list: Optional[Iterable[str]] = None,
        show_device: bool = False,
        show_requires_grad: bool = False,
        stream_trace: bool = True,
        nesting: str = "outermost",
        value_ranges: bool = False,
        snapshot_interval: float = SNAPSHOT_INTERVAL,
        trace_limit: int = TRACE_LIMIT,
        tag_modules: Any = None,
    ) -> None:
        if isinstance(dialect, FrameworkDialect):
            self.dialect = dialect
        elif isinstance(dialect, str) and dialect in _DIALECTS:
            self.dialect = _DIALECTS[dialect]()
        else:
            raise ValueError(
                f"dialect must be one of {sorted(_DIALECTS)} or a FrameworkDialect instance, not {dialect!r}"
            )
        if not isinstance(output_path, (str, os.PathLike)) or not os.fspath(output_path):
            raise ValueError(f"output_path must be a non-empty path, not {output_path!r}")
        if "\0" in os.fsdecode(output_path):
            raise ValueError(f"output_path must not contain a NUL character: {output_path!r}")
        self.output_path = os.fspath(output_path)
        self.hook_classes = self._check_levels(levels)
        self.levels = sorted(self.hook_classes)
        self.merge_output = _check_bool("merge_output", merge_output)
        self.record_stack = _check_bool("record_stack", record_stack)
        if stack_format not in STACK_FORMATS:
            raise ValueError(f"stack_format must be one of {list(STACK_FORMATS)}, not {stack_format!r}")
        self.stack_format = stack_format
        self.disable_torch_api_list = _check_bool("disable_torch_api_list", disable_torch_api_list)
        self.include_apis = _check_patterns("include_apis", include_apis, [])
        self.exclude_apis = _check_patterns("exclude_apis", exclude_apis, self.dialect.default_exclude())
        self.api_list = None if api_list is None else _check_patterns("api_list", api_list, [])
        self.show_device = _check_bool("show_device", show_device)
        self.show_requires_grad = _check_bool("show_requires_grad", show_requires_grad)
        self.stream_trace = _check_bool("stream_trace", stream_trace)
        if nesting not in NESTINGS:
            raise ValueError(f"nesting must be one of {list(NESTINGS)}, not {nesting!r}")
        self.nesting = nesting
        self.value_ranges = _check_bool("value_ranges", value_ranges)
        self.snapshot_interval = _check_amount("snapshot_interval", snapshot_interval, float, "seconds")
        self.trace_limit = _check_amount("trace_limit", trace_limit, int, "bytes")
        if tag_modules is not None:
            import torch

            if not isinstance(tag_modules, torch.nn.Module):
                raise ValueError(f"tag_modules must be a torch.nn.Module or None, not {type(tag_modules).__name__}")
        self.tag_modules = tag_modules
        self._module_hooks: Optional[ModuleHooks] = None
        self._hooks: List[TracingHook] = []
        self._undo_start: Optional[Callable[[], None]] = None

    def _check_levels(self, levels: Any) -> Dict[int, type]:
        offered = self.dialect.hook_classes()
        allowed = ", ".join(f"{n} ({cls.__name__})" for n, cls in sorted(offered.items()))
        items = list(levels) if isinstance(levels, (list, tuple)) else [levels]
        if not items:
            raise ValueError(f"levels must name at least one level; allowed: {allowed}, or a TracingHook subclass")
        chosen: Dict[int, type] = {}
        for item in items:
            if isinstance(item, type) and issubclass(item, TracingHook):
                number, cls = item.level, item
                if not isinstance(number, int) or not 0 <= number <= 63:
                    raise ValueError(f"levels: {cls.__name__}.level must be an int in 0..63, not {number!r}")
            elif isinstance(item, int) and not isinstance(item, bool) and item in offered:
                number, cls = item, offered[item]
            else:
                raise ValueError(f"levels: {item!r} is not a level; allowed: {allowed}, or a TracingHook subclass")
            if number in chosen:
                raise ValueError(f"levels: level {number} is given twice")
            chosen[number] = cls
        return chosen

    def _resolve(self, func: Any) -> tuple:
        """What the C++ handlers ask once per callable a mode meets."""
        return self.dialect.api_name(func), self.dialect.direct_callable(func)

    # -- lifecycle -----------------------------------------------------------

    @property
    def running(self) -> bool:
        return _running is self

    def start(self) -> "APITracer":
        """Opens the output files and installs the hooks."""
        global _running
        with _lock:
            if _running is not None:
                raise RuntimeError("an APITracer is already running in this process; stop it first")
            _C.start(
                output_dir=self.output_path,
                levels=self.levels,
                merge=self.merge_output,
                record_stack=self.record_stack,
                stack_format=self.stack_format,
                stream_trace=self.stream_trace,
                value_ranges=self.value_ranges,
                snapshot_interval=self.snapshot_interval,
                trace_limit=self.trace_limit,
                show_device=self.show_device,
                show_requires_grad=self.show_requires_grad,
                include=self.include_apis,
                exclude=self.exclude_apis,
                stack_skip_prefixes=self.dialect.stack_skip_prefixes(),
                resolve=self._resolve,
                classify=self.dialect.classify,
                tensor_type_name=self.dialect.tensor_type_name,
            )
            _running = self
            options = {"full_api_list": self.disable_torch_api_list, "api_list": self.api_list,
                       "nesting": self.nesting, "value_ranges": self.value_ranges}
            try:
                self._undo_start = self.dialect.on_start(self.levels)
                with _C.suspended():
                    for level in self.levels:
                        hook = self.hook_classes[level](self.dialect, options)
                        hook.install()
                        self._hooks.append(hook)
                    if self.tag_modules is not None:
                        tree = ModuleTree(self.tag_modules)
                        _C.module_paths(tree.names())
                        self._module_hooks = ModuleHooks(tree, _C.module_enter, lambda scope: _C.module_exit())
                        self._module_hooks.install()
            except BaseException:
                self._teardown()
                raise
        atexit.register(self.stop)
        return self

    def stop(self) -> None:
        """Removes the hooks and writes the files. Does nothing if not running."""
        with _lock:
            if _running is not self:
                return
            self._teardown()
        atexit.unregister(self.stop)

    def _teardown(self) -> None:
        """Uninstalls every hook (the latest first), then closes the session;
        raises the first error once all of it is done."""
        global _running
        errors = self._remove_hooks()
        _C.module_paths_clear()
        undo, self._undo_start = self._undo_start, None
        for step in (undo, _C.stop):
            try:
                if step is not None:
                    step()
            except BaseException as e:  # noqa: BLE001
                errors.append(e)
        _running = None
        if errors:
            raise errors[0]

    def _remove_hooks(self) -> List[BaseException]:
        """Uninstalls the module hooks and every hook (the latest first),
        going on past errors; returns them."""
        errors: List[BaseException] = []
        removals = [self._module_hooks.remove] if self._module_hooks is not None else []
        self._module_hooks = None
        with _C.suspended():
            while self._hooks:
                removals.append(self._hooks.pop().uninstall)
            for remove in removals:
                try:
                    remove()
                except BaseException as e:  # noqa: BLE001 - finish the teardown first
                    errors.append(e)
        return errors

    def _abandon_after_fork(self) -> None:
        """In a forked child: forget this tracer without writing anything (its
        files are the parent's), and put every patched attribute back."""
        global _running
        _C.abandon_after_fork()
        self._remove_hooks()  # errors ignored: nothing of the parent's may stay
        self._undo_start = None
        _running = None
        atexit.unregister(self.stop)

    def __enter__(self) -> "APITracer":
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> None:
        self.stop()

    # -- results -------------------------------------------------------------

    def files(self) -> Dict[str, str]:
        """The files this tracer writes, by kind ("api_trace.txt", ...), per
        level suffix when output is not merged."""
        stems = ["api_trace.yaml", "api_trace.txt", "api_apis.txt", "api_configs.yaml", "api_statistics.yaml"]
        if self.record_stack:
            stems.append("api_stacks.yaml")
        if self.value_ranges:
            stems.append("api_value_ranges.yaml")
        if not self.stream_trace:
            stems = stems[2:]
        suffixes = [""] if self.merge_output else [f"_level_{n}" for n in self.levels]
        out = {}
        for suffix in suffixes:
            for stem in stems:
                base, ext = os.path.splitext(stem)
                out[base + suffix + ext] = os.path.join(self.output_path, base + suffix + ext)
        return out


def _after_fork_in_child() -> None:
    """A forked child of a traced process stops tracing into the parent's
    files; with --follow-children it traces itself into its own."""
    global _lock
    _lock = threading.Lock()  # another thread may have held it at the fork
    tracer = _running
    if tracer is None:
        return
    tracer._abandon_after_fork()
    from .follow import ENV_OPTIONS, start_tracer

    if os.environ.get(ENV_OPTIONS):
        start_tracer(APITracer)


def _stop_at_multiprocessing_exit(_anchor: object) -> None:
    """multiprocessing's forked children leave through os._exit: atexit does
    not run, their finalizers do. Their bootstrap clears the finalizers it
    inherited, then runs these after-fork callbacks: the place to add ours."""
    if _running is not None:
        _mp_util.Finalize(None, _running.stop, exitpriority=100)


class _ForkAnchor:
    """Keeps the after-fork callback registered (multiprocessing holds its
    callbacks through weak references)."""


os.register_at_fork(after_in_child=_after_fork_in_child)
_mp_util.register_after_fork(_ForkAnchor, _stop_at_multiprocessing_exit)
