"""APITracer: the user's entry point.

    from api_tracer import APITracer
    with APITracer(dialect="torch", output_path="trace_output", levels=[1, 2]):
        model(x).sum().backward()

The tracer validates its options when it is made, opens the output files
when it starts (so a bad path fails before any work), installs one hook per
level, and on stop removes the hooks and writes the files. Exactly one
tracer runs at a time in a process; one that gives way (``give_way``) stops
for another and is resumed after it.
"""

from __future__ import annotations

import atexit
import dataclasses
import multiprocessing.util as _mp_util
import os
import threading
from typing import Any, Callable, Dict, List, Optional, Union

from .. import _C
from ..formats.fileset import OUTPUT_FILES
from ..frameworks import FRAMEWORKS, dialect_named
from ..frameworks.dialect import FrameworkDialect
from .hooks import TracingHook
from .module_tree import ModuleHooks, ModuleTree
from .options import TracerOptions, fields, spec

_lock = threading.Lock()
_running: Optional["APITracer"] = None


class APITracer:
    """Records the API calls a program makes, at one or more levels.

    ``APITracer(dialect="torch", output_path="trace_output", levels=0,
    merge_output=False, record_stack=False, stack_format="short",
    disable_torch_api_list=False, *, ..., tag_modules=None)``

    dialect: "torch", or a FrameworkDialect instance.
    tag_modules: an nn.Module: each record made while one of its modules
        runs carries the module's path ("module: Net.features.0" in
        api_trace.yaml), so configs can be told apart by layer.
    The other parameters are the options of ``TracerOptions`` (options.py),
    checked there; a bad value raises ValueError naming it:

    """

    def __init__(
        self, dialect: Union[str, FrameworkDialect] = "torch", *args: Any, tag_modules: Any = None, **kwargs: Any
    ) -> None:
        if isinstance(dialect, FrameworkDialect):
            self.dialect = dialect
        elif isinstance(dialect, str) and dialect in FRAMEWORKS:
            self.dialect = dialect_named(dialect)
        else:
            raise ValueError(
                f"dialect must be one of {sorted(FRAMEWORKS)} or a FrameworkDialect instance, not {dialect!r}"
            )
        self.options = TracerOptions(*args, **kwargs)
        self.hook_classes = self._check_levels(self.options.levels)
        self.levels = sorted(self.hook_classes)
        if tag_modules is not None:
            import torch

            if not isinstance(tag_modules, torch.nn.Module):
                raise ValueError(f"tag_modules must be a torch.nn.Module or None, not {type(tag_modules).__name__}")
        self.tag_modules = tag_modules
        self._module_hooks: Optional[ModuleHooks] = None
        self._hooks: List[TracingHook] = []
        self._undo_start: Optional[Callable[[], None]] = None
        self._resume: Optional[Callable[[], None]] = None  # set by give_way
        self._output_dir: Optional[str] = None  # output_path as start() resolved it
        self._then_resume: Optional[Callable[[], None]] = None  # what gave way to this one

    def give_way(self, resume: Callable[[], None]) -> "APITracer":
        """Lets another tracer start while this one runs: this one then
        stops (its files written, final), and once the other stops,
        ``resume()`` is called to go on tracing (a new tracer, into other
        files). The pytest plugin's tracer gives way, so that tests which
        run a tracer of their own pass under it."""
        self._resume = resume
        return self

    def _check_levels(self, items: tuple) -> Dict[int, type]:
        offered = self.dialect.hook_classes()
        allowed = ", ".join(f"{n} ({cls.__name__})" for n, cls in sorted(offered.items()))
        if not items:
            raise ValueError(f"levels must name at least one level; allowed: {allowed}, or a TracingHook subclass")
        chosen: Dict[int, type] = {}
        for item in items:
            if isinstance(item, type) and issubclass(item, TracingHook):
                number, cls = item.level, item
                if not isinstance(number, int) or not 0 <= number <= _C.Level.max:
                    raise ValueError(
                        f"levels: {cls.__name__}.level must be an int in 0..{int(_C.Level.max)}, not {number!r}"
                    )
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
        return self.dialect.api_name(func), self.dialect.direct_callable(func), self.dialect.operator_name(func)

    # -- lifecycle -----------------------------------------------------------

    @property
    def running(self) -> bool:
        return _running is self

    def start(self) -> "APITracer":
        """Opens the output files and installs the hooks."""
        resume = None
        try:
            with _lock:
                resume = self._displace_running()
                self._start_locked()
                self._then_resume = resume
        except BaseException:
            if resume is not None:  # it gave way to a start that failed
                resume()
            raise
        atexit.register(self.stop)
        return self

    def _displace_running(self) -> Optional[Callable[[], None]]:
        """Under _lock: stops the running tracer if it gives way, and returns
        what resumes it; raises if it does not (or is this one)."""
        if _running is None:
            return None
        if _running is self or _running._resume is None:
            raise RuntimeError("an APITracer is already running in this process; stop it first")
        return _running._step_aside()

    def _start_locked(self) -> None:
        global _running
        native = self.options.to_native(self.levels, self.dialect.default_exclude())
        _C.start(
            native,
            stack_skip_prefixes=self.dialect.stack_skip_prefixes(),
            resolve=self._resolve,
            classify=self.dialect.classify,
            tensor_type_name=self.dialect.tensor_type_name,
        )
        _running = self
        self._output_dir = native.output_path
        try:
            self._undo_start = self.dialect.on_start(self.levels)
            with _C.suspended():
                for level in self.levels:
                    hook = self.hook_classes[level](self.dialect, self.options)
                    hook.traced_levels = tuple(self.levels)
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

    def stop(self) -> None:
        """Removes the hooks and writes the files. Does nothing if not running."""
        try:
            with _lock:
                if _running is not self:
                    return
                try:
                    self._teardown()
                finally:
                    atexit.unregister(self.stop)
        finally:
            self._resume_the_one_that_gave_way()

    def _step_aside(self) -> Callable[[], None]:
        """Under _lock: stops this tracer, which gives way, for another;
        returns what resumes its trace."""
        resume = self._resume
        assert resume is not None
        try:
            self._teardown()
        finally:
            atexit.unregister(self.stop)
        return resume

    def _resume_the_one_that_gave_way(self) -> None:
        """Once this tracer has stopped, or failed to start: the tracer that
        gave way to it goes on (outside _lock: that starts a tracer)."""
        resume, self._then_resume = self._then_resume, None
        if resume is not None:
            resume()

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
            except BaseException as e:  # noqa: BLE001 - every step of the stop runs; the first error is raised after
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
        self._then_resume = None  # the parent's trace: it is not this process's
        _running = None
        atexit.unregister(self.stop)

    def __enter__(self) -> "APITracer":
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> None:
        self.stop()

    # -- results -------------------------------------------------------------

    def files(self) -> Dict[str, str]:
        """The files this tracer writes, by kind ("api_trace.txt", ...), per
        level suffix when output is not merged; in the directory start()
        resolved output_path to, once started."""
        suffixes = [""] if self.options.merge_output else [f"_level_{n}" for n in self.levels]
        directory = self._output_dir or os.fspath(self.options.output_path)
        out = {}
        for suffix in suffixes:
            for f in OUTPUT_FILES.values():
                if f.option is None or getattr(self.options, f.option):
                    out[f.name(suffix)] = os.path.join(directory, f.name(suffix))
        return out


def _document_options() -> None:
    """help(APITracer) shows every option, its default and what it does,
    from TracerOptions, and the signature they make."""
    import inspect

    lines = []
    for f in fields():
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        lines.append(f"    {f.name} = {default!r}: {spec(f).help}")
    APITracer.__doc__ = (APITracer.__doc__ or "") + "\n".join(lines) + "\n"
    init = inspect.signature(APITracer.__init__)
    params = [
        init.parameters["self"],
        init.parameters["dialect"],
        *inspect.signature(TracerOptions).parameters.values(),
        init.parameters["tag_modules"],
    ]
    APITracer.__init__.__signature__ = init.replace(parameters=params)  # type: ignore[attr-defined]


_document_options()


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


def _stop_before_exec() -> None:
    """The process is about to exec another program (os.execv and its kin):
    the running tracer stops, so that every call it recorded is in its files
    (an exec that fails leaves the program going on untraced)."""
    if _running is not None:
        _running.stop()


_C.on_exec(_stop_before_exec)
os.register_at_fork(after_in_child=_after_fork_in_child)
_mp_util.register_after_fork(_ForkAnchor, _stop_at_multiprocessing_exit)
