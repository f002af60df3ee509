"""The comparison points of bench_overhead.py, in plain Python.

- FloorFunctionMode / FloorDispatchMode / PythonSetattr(): PyTorch's own
  machinery with a handler that only calls the function: the least any
  tracer built on the same hook point can cost.
- LoggerFunctionMode / LoggerDispatchMode / PythonSetattr(logger): the design of
  the original pure-Python tracer: the same hook points, and per call the
  same fields api_tracer records (API name, each tensor's shape, dtype,
  device and strides, scalars by repr), a config line deduplicated in a dict,
  and the YAML record and text line of the streamed trace.
- For Paddle (bench_paddle.py): PaddleLogger reads Paddle's tensors;
  PythonSetattr(logger, every=True) records every call of the API list, as
  Paddle's level 1 does; PaddleOperatorSetattr wraps paddle._C_ops, level 2;
  Together enters several at once, levels [0, 1, 2].
"""

from __future__ import annotations

import io
import threading

import torch
from torch.overrides import TorchFunctionMode, resolve_name
from torch.utils._python_dispatch import TorchDispatchMode


class FloorFunctionMode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class FloorDispatchMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class PythonLogger:
    """Serializes calls the way the original tracer did, in Python."""

    def __init__(self):
        self.configs = {}
        self.yaml = io.StringIO()
        self.txt = io.StringIO()

    def value(self, v):
        if isinstance(v, torch.Tensor):
            text = f'Tensor({list(v.shape)}, "{str(v.dtype)[6:]}"'
            if not v.is_contiguous():
                text += f", stride={list(v.stride())}"
            record = {"type": "torch.Tensor", "shape": list(v.shape), "dtype": str(v.dtype), "device": str(v.device)}
            return text + ")", record
        if isinstance(v, (list, tuple)):
            parts = [self.value(x) for x in v]
            inner = ", ".join(p[0] for p in parts)
            return (f"[{inner}]" if isinstance(v, list) else f"({inner})"), [p[1] for p in parts]
        if isinstance(v, str):
            return f'"{v}"', v
        return repr(v), v

    def record(self, name, args, kwargs):
        parts = [self.value(a) for a in args]
        kw = {k: self.value(v) for k, v in (kwargs or {}).items()}
        line = f"{name}({', '.join([p[0] for p in parts] + [f'{k}={v[0]}' for k, v in kw.items()])})"
        self.configs[line] = self.configs.get(line, 0) + 1
        self.yaml.write(
            f"- api: {name}\n  args: {[p[1] for p in parts]}\n  kwargs: {dict((k, v[1]) for k, v in kw.items())}\n"
        )
        self.txt.write(line + "\n")


class PaddleLogger(PythonLogger):
    """The same, for Paddle's tensors: the fields the paddle dialect reads
    (shape, dtype, strides where not contiguous, stop_gradient, place)."""

    def value(self, v):
        import paddle

        if isinstance(v, paddle.Tensor):
            shape = list(v.shape)
            text = f'Tensor({shape}, "{str(v.dtype)[7:]}"'
            if not v.is_contiguous():
                text += f", stride={list(v.strides)}"
            if not v.stop_gradient:
                text += ", requires_grad=True"
            record = {"type": "paddle.Tensor", "shape": shape, "dtype": str(v.dtype), "place": str(v.place)}
            return text + ")", record
        return super().value(v)


class LoggerFunctionMode(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.log = PythonLogger()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.log.record(resolve_name(func) or func.__qualname__, args, kwargs)
        return func(*args, **(kwargs or {}))


class LoggerDispatchMode(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.log = PythonLogger()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.log.record(f"torch.ops.{func}", args, kwargs)
        return func(*args, **(kwargs or {}))


def _every_call(fn, name, log, busy, drop_self=False):
    """A wrapper that records each call of fn, nested ones too, except those
    the logger itself makes while it records (reading a tensor's fields)."""

    def wrapper(*args, **kwargs):
        if getattr(busy, "n", 0):
            return fn(*args, **kwargs)
        busy.n = 1
        try:
            log.record(name, args[1:] if drop_self else args, kwargs)
        finally:
            busy.n = 0
        return fn(*args, **kwargs)

    return wrapper


class PythonSetattr:
    """Level 0 in Python: every API of the default list replaced by setattr
    with a Python wrapper. `logger` None: the floor (only calls through);
    else the wrapper records the outermost call of a thread, as level 0
    does, or with `every` each call, nested ones too, as Paddle's level 1
    does. `busy`: a threading.local shared with other wrappers recording
    into the same logger (Together), so that none records the logger's own
    calls."""

    def __init__(self, logger=None, dialect=None, every=False, busy=None):
        from api_tracer.frameworks.torch.dialect import PyTorchDialect

        dialect = dialect or PyTorchDialect()
        self.targets, _ = dialect.setattr_targets(dialect.api_list())
        self.log = logger
        self.every = every
        self.depth = busy if busy is not None else threading.local()

    def _wrap(self, fn, name, drop_self=False):
        if self.log is None:

            def wrapper(*args, **kwargs):
                return fn(*args, **kwargs)

            return wrapper
        log, depth = self.log, self.depth
        if self.every:
            return _every_call(fn, name, log, depth, drop_self)

        def wrapper(*args, **kwargs):
            if getattr(depth, "n", 0):
                return fn(*args, **kwargs)
            depth.n = 1  # before recording: reading tensors calls wrapped methods
            try:
                log.record(name, args[1:] if drop_self else args, kwargs)
                return fn(*args, **kwargs)
            finally:
                depth.n = 0

        return wrapper

    def __enter__(self):
        self.saved = []
        for t in self.targets:
            raw = t.raw
            if t.kind == "staticmethod":
                new = staticmethod(self._wrap(raw.__func__, t.api))
            elif t.kind == "classmethod":
                new = classmethod(self._wrap(raw.__func__, t.api))
            elif t.kind == "property":
                new = property(self._wrap(raw.fget, t.api), raw.fset, raw.fdel)
            else:
                new = self._wrap(raw, t.api, drop_self=t.kind == "constructor")
            self.saved.append((t.owner, t.attr, t.attr in vars(t.owner), vars(t.owner).get(t.attr)))
            setattr(t.owner, t.attr, new)
        return self

    def __exit__(self, *exc):
        for owner, attr, had, old in reversed(self.saved):
            if had:
                setattr(owner, attr, old)
            else:
                delattr(owner, attr)


class PaddleOperatorSetattr:
    """Paddle's level 2 in Python: every public builtin of paddle._C_ops (the
    operators api_tracer's level 2 patches) replaced by setattr on that
    module with a Python wrapper; Paddle's APIs look their operators up
    there at each call. `logger` None: the floor; else each call is
    recorded as paddle._C_ops.NAME. `busy` as PythonSetattr's."""

    def __init__(self, logger=None, busy=None):
        from api_tracer.frameworks.paddle.hooks import operators

        self.ops = operators()
        self.log = logger
        self.busy = busy if busy is not None else threading.local()

    def _wrap(self, fn, name):
        if self.log is None:

            def wrapper(*args, **kwargs):
                return fn(*args, **kwargs)

            return wrapper
        return _every_call(fn, f"paddle._C_ops.{name}", self.log, self.busy)

    def __enter__(self):
        from paddle import _C_ops

        for name, fn in self.ops:
            setattr(_C_ops, name, self._wrap(fn, name))
        return self

    def __exit__(self, *exc):
        from paddle import _C_ops

        for name, fn in self.ops:
            setattr(_C_ops, name, fn)


class Together:
    """Several of the above entered as one, in order, left in reverse."""

    def __init__(self, *parts):
        self.parts = parts

    def __enter__(self):
        for p in self.parts:
            p.__enter__()
        return self

    def __exit__(self, *exc):
        for p in reversed(self.parts):
            p.__exit__(*exc)


def handlers(level: int):
    """(floor, logger): the factories of the two comparison points at the
    hook point of `level` (0: setattr; 1: TorchFunctionMode; 2 and 3:
    TorchDispatchMode, the nearest Python has to level 3's observer)."""
    if level == 0:
        return PythonSetattr, lambda: PythonSetattr(PythonLogger())
    if level == 1:
        return FloorFunctionMode, LoggerFunctionMode
    return FloorDispatchMode, LoggerDispatchMode
