"""api-tracer replay: call the APIs of config lines and report each one.

A line is data: it is parsed by the project's parser (never evaluated), and
every name in it is resolved by walking from `torch` through objects that
are torch's own (its modules, its classes, torch.ops' namespaces); a dunder
is allowed only as a Tensor operator (torch.Tensor.__add__). Unless
allow_unsafe, every name replay calls or hands to the API (the API itself,
Callable(...) arguments, the constructors it calls, classes passed as
values) must also pass the policy of replay_policy.py, which allows only
what computes. Anything else is reported invalid, with file:line:column, as
is a line that does not parse or is not UTF-8, and the other lines still run.

Arguments are made from their description: tensors of the recorded shape,
dtype and strides, with random values (integer tensors: zeros, or values
drawn from the recorded range when api_value_ranges.yaml has one; bool
tensors: random), module constructor calls built, devices, dtypes, sizes as
written. Before anything is built, the names pass the policy and the
tensors' descriptions are checked: sizes of at least 0 (-1, a symbolic size,
skips the config), and no more bytes in all than max_bytes (by default half
the memory free on the device). Each config is reported "ok", "failed" (the
exception; "building ARG: ..." when an argument could not be built),
"skipped" (why it cannot be rebuilt, e.g. an Opaque argument) or "invalid".

In process, a fatal signal still kills the process, but first CrashNote has
it say which config died and how far the replay got, and append that
config's line to the report, whose lines are written as results come.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
import types
from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from . import _C
from .config import ConfigSyntaxError, parse_call
from .filesets import api_of
from .replay_policy import refusal
from .values import Call, Symbol, TensorSpec

BUILTIN_TYPES = {"float": float, "int": int, "bool": bool, "complex": complex}


@dataclass
class Config:
    file: str
    line: int
    text: str
    error: str = ""  # why the line cannot be read (it is not UTF-8)
    column: int = 0  # where, when error


@dataclass
class Result:
    file: str
    line: int
    config: str
    api: str = ""
    status: str = ""  # ok, failed, skipped, invalid
    error: str = ""  # the exception's type (failed, invalid)
    message: str = ""  # the exception's message, the skip reason, the syntax error
    column: int = 0
    seconds: float = 0.0


class Invalid(Exception):
    """A line that is not a replayable config: bad syntax or a name outside torch."""

    def __init__(self, message: str, column: int) -> None:
        super().__init__(message)
        self.column = column


class Skip(Exception):
    """A config that cannot be rebuilt (an Opaque argument, say)."""


class BuildError(Exception):
    """An argument whose building raised: the exception, and which argument."""

    def __init__(self, path: str, cause: Exception) -> None:
        super().__init__(f"building {path}: {_first_line(cause)}")
        self.cause = cause


def read_configs(path: str) -> List[Config]:
    """The distinct config lines of a file, each with the line it was first
    on. A line that is not UTF-8 is kept (as its text with the bad bytes
    escaped), with the error and the column of its first bad byte."""
    seen = set()
    configs = []
    with open(path, "rb") as f:
        data = f.read()
    for lineno, raw in enumerate(data.splitlines(), 1):  # the line ends text mode knows: \n, \r, \r\n
        error, column = "", 0
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            text = raw.decode("utf-8", "backslashreplace")
            error = f"the line is not UTF-8: byte 0x{raw[e.start]:02x} ({e.reason})"
            column = len(raw[:e.start].decode("utf-8")) + 1
        text = text.strip()
        if not text or text.startswith("#") or text in seen:
            continue
        seen.add(text)
        configs.append(Config(path, lineno, text, error, column))
    return configs


def read_value_ranges(path: Optional[str]) -> Dict[str, Dict[str, List[int]]]:
    if not path or not os.path.isfile(path):
        return {}
    import yaml

    with open(path, encoding="utf-8") as f:
        return {entry["config"]: entry["ranges"] for entry in yaml.safe_load(f) or []}


def ranges_beside(config_file: str) -> Optional[str]:
    """api_value_ranges[_level_N].yaml next to a file of the same set."""
    directory, name = os.path.split(config_file)
    stem = os.path.splitext(name)[0]
    suffix = stem[stem.index("_level_"):] if "_level_" in stem else ""
    path = os.path.join(directory, f"api_value_ranges{suffix}.yaml")
    return path if os.path.isfile(path) else None


class Resolver:
    """Names to objects, inside torch only."""

    def __init__(self) -> None:
        import torch
        from torch.overrides import get_overridable_functions, resolve_name

        self.torch = torch
        self.tensor_dunders = set()
        for func in get_overridable_functions()[torch.Tensor]:
            name = resolve_name(func) or ""
            last = name.rsplit(".", 1)[-1]
            if name.startswith("torch.Tensor.__") and last.startswith("__") and last.endswith("__"):
                self.tensor_dunders.add(last)

    def _inside(self, obj: Any) -> bool:
        torch = self.torch
        if isinstance(obj, types.ModuleType):
            return obj.__name__ == "torch" or obj.__name__.startswith("torch.")
        if isinstance(obj, type):
            return (getattr(obj, "__module__", "") or "").startswith("torch")
        return isinstance(obj, (torch._ops._OpNamespace, torch._ops.OpOverloadPacket))

    def _owned(self, obj: Any) -> bool:
        if self._inside(obj):
            return True
        if (getattr(obj, "__module__", None) or "").startswith("torch"):
            return True
        objclass = getattr(obj, "__objclass__", None)
        return objclass is not None and self._inside(objclass)

    def walk(self, name: str, line: str, dunder_ok: Callable[[Any, str], bool] = lambda obj, part: False) -> Any:
        """The object a dotted name starting at torch names, every step but
        the last staying inside torch; dunders only where dunder_ok(obj,
        part) allows them (as the last step)."""
        column = line.find(name) + 1 or 1
        parts = name.split(".")
        if parts[0] != "torch" or len(parts) < 2:
            raise Invalid(f"{name!r} is outside torch", column)
        obj: Any = self.torch
        for i, part in enumerate(parts[1:], 1):
            last = i == len(parts) - 1
            if part.startswith("__") and part.endswith("__") and not (last and dunder_ok(obj, part)):
                raise Invalid(f"{name!r}: dunder access {part!r} is not allowed", column)
            try:
                obj = getattr(obj, part)
            except AttributeError:
                raise Skip(f"{'.'.join(parts[:i + 1])} does not exist in this torch") from None
            if not last and not self._inside(obj):
                raise Invalid(f"{name!r} leads out of torch at {'.'.join(parts[:i + 1])}", column)
        return obj

    def resolve(self, name: str, line: str) -> Any:
        """The torch callable an API name names."""
        obj = self.walk(name, line, lambda obj, part: obj is self.torch.Tensor and part in self.tensor_dunders)
        if isinstance(obj, types.ModuleType) or not self._owned(obj):
            raise Invalid(f"{name!r} is not one of torch's callables", line.find(name) + 1 or 1)
        return obj

    def constructible(self, cls: Any) -> bool:
        """Whether replay may call `cls` to build a value: the few torch
        classes it knows how to construct."""
        torch = self.torch
        return cls in (torch.device, torch.Size, torch.Generator) or (
            isinstance(cls, type) and issubclass(cls, (torch.nn.Module, torch.optim.Optimizer)))


class Builder:
    """Config values to Python objects."""

    def __init__(self, resolver: Resolver, device: str, ranges: Dict[str, List[int]], generator: Any,
                 line: str, safe: bool = True) -> None:
        self.r, self.device, self.ranges, self.gen, self.line = resolver, device, ranges, generator, line
        self.safe = safe  # the replay policy (replay_policy.py) holds
        self.requires_grad = False

    def allowed(self, name: str, obj: Any = None) -> None:
        """Raises Invalid if the policy refuses `name` (resolved to `obj`)."""
        why = refusal(name, obj) if self.safe else None
        if why:
            raise Invalid(why, self.line.find(name) + 1 or 1)

    def resolve(self, name: str) -> Any:
        """The callable `name` names, the policy asked before and after
        resolving (an operator's name must resolve to an operator)."""
        self.allowed(name)
        obj = self.r.resolve(name, self.line)
        self.allowed(name, obj)
        return obj

    def check_names(self, args: list, kwargs: dict) -> None:
        """Every name in the arguments that replay calls or hands to the API
        (constructor calls, Callable(...), classes named as constants) is
        checked against the policy, and numpy's names are numpy scalar
        types, before any argument is built."""
        for _, leaf in _arguments(args, kwargs):
            if isinstance(leaf, Symbol) and leaf.name not in BUILTIN_TYPES:
                if isinstance(self.symbol(leaf.name), type):
                    self.allowed(leaf.name)
            elif isinstance(leaf, Call) and leaf.name == "Callable":
                self.resolve(_callable_name(leaf))
            elif isinstance(leaf, Call) and leaf.name.startswith("numpy.") and leaf.name != "numpy.ndarray":
                self.numpy_scalar(leaf.name)
            elif isinstance(leaf, Call) and leaf.name not in PLACEHOLDERS and not leaf.name.startswith("numpy."):
                self.allowed(leaf.name)

    def numpy_scalar(self, name: str) -> type:
        """The numpy scalar type `numpy.NAME` names (numpy.float32, ...)."""
        import numpy as np

        scalar = getattr(np, name[len("numpy."):], None)
        if not (isinstance(scalar, type) and issubclass(scalar, np.generic)):
            raise Invalid(f"{name!r} is not a numpy scalar type", self.line.find(name) + 1)
        return scalar

    def check_tensors(self, args: list, kwargs: dict, max_bytes: Optional[int]) -> None:
        """The tensors' descriptions, before any is made: a known dtype and
        sizes of at least 0 (else invalid); -1, the size the tracer writes for
        a symbolic one, skips the config, as do tensors that need more than
        max_bytes in all."""
        specs = [(path, leaf) for path, leaf in _arguments(args, kwargs) if isinstance(leaf, TensorSpec)]
        for path, spec in specs:
            self.dtype(spec)
            bad = [d for d in spec.shape if d < -1]
            if bad:
                raise Invalid(f"{path}: Tensor({list(spec.shape)}, ...) has the size {bad[0]}: a size is at least 0, "
                              "or -1 for a symbolic one", self.line.find(str(bad[0])) + 1 or 1)
        if any(-1 in spec.shape for _, spec in specs):
            raise Skip("a tensor with a symbolic size")
        needed = sum(_storage_numel(spec.shape, spec.stride) * self.dtype(spec).itemsize for _, spec in specs)
        if max_bytes is not None and needed > max_bytes:
            raise Skip(f"its tensor arguments need {needed} bytes ({_human(needed)}), more than the limit of "
                       f"{max_bytes} bytes ({_human(max_bytes)}; --max-bytes)")

    def dtype(self, spec: TensorSpec) -> Any:
        torch = self.r.torch
        dtype = getattr(torch, spec.dtype, None)
        if not isinstance(dtype, torch.dtype):
            raise Invalid(f"unknown dtype {spec.dtype!r}", self.line.find(spec.dtype) + 1 or 1)
        return dtype

    def build(self, v: Any, path: str) -> Any:
        """The value `v` describes; an exception that building raises comes
        out as a BuildError naming the argument (Invalid and Skip as they are)."""
        try:
            return self._build(v, path)
        except (Invalid, Skip, BuildError):
            raise
        except Exception as e:  # noqa: BLE001 - reported as the config's failure
            raise BuildError(path, e) from e

    def _build(self, v: Any, path: str) -> Any:
        if isinstance(v, TensorSpec):
            return self.tensor(v, path)
        if isinstance(v, list):
            return [self.build(x, f"{path}[{i}]") for i, x in enumerate(v)]
        if isinstance(v, tuple):
            return tuple(self.build(x, f"{path}[{i}]") for i, x in enumerate(v))
        if isinstance(v, dict):
            return {self.build(k, f"{path}.keys[{i}]"): self.build(x, f"{path}[{k!r}]")
                    for i, (k, x) in enumerate(v.items())}
        if isinstance(v, slice):
            return slice(self.build(v.start, path), self.build(v.stop, path), self.build(v.step, path))
        if isinstance(v, Symbol):
            return self.symbol(v.name)
        if isinstance(v, Call):
            return self.call(v, path)
        return v

    def symbol(self, name: str) -> Any:
        if name in BUILTIN_TYPES:
            return BUILTIN_TYPES[name]
        torch = self.r.torch
        obj = self.r.walk(name, self.line)
        if not isinstance(obj, (torch.dtype, torch.layout, torch.memory_format, torch.qscheme)):
            if not (isinstance(obj, type) and self.r._inside(obj)):
                raise Invalid(f"the name {name!r} is not a torch constant", self.line.find(name) + 1)
        return obj

    def tensor(self, spec: TensorSpec, path: str) -> Any:
        torch = self.r.torch
        if spec.layout not in (None, "torch.strided"):
            raise Skip(f"a {spec.layout} tensor argument")
        dtype = self.dtype(spec)
        shape = list(spec.shape)
        stride = list(spec.stride) if spec.stride is not None else _contiguous_strides(shape)
        numel = _storage_numel(shape, stride)
        rng = self.ranges.get(path)
        if dtype.is_floating_point or dtype.is_complex:
            base = torch.randn(numel, dtype=dtype, generator=self.gen)
        elif dtype == torch.bool:
            lo, hi = rng if rng else (0, 1)
            base = torch.randint(lo, hi + 1, (numel,), generator=self.gen).bool()
        elif rng:
            base = torch.randint(rng[0], rng[1] + 1, (numel,), generator=self.gen, dtype=torch.int64).to(dtype)
        else:
            base = torch.zeros(numel, dtype=dtype)  # valid as an index wherever the size is not 0
        t = base.as_strided(shape, stride).to(self.device)
        if self.device != "cpu" and spec.stride is not None:
            t = torch.empty_strided(shape, stride, dtype=dtype, device=self.device).copy_(t)
        if (spec.requires_grad or self.requires_grad) and (dtype.is_floating_point or dtype.is_complex):
            t.requires_grad_(True)
        return t

    def call(self, c: Call, path: str) -> Any:
        torch = self.r.torch
        name = c.name
        if name in ("Opaque", "Module"):
            raise Skip(f"argument {name}({', '.join(map(repr, c.args))}) cannot be rebuilt")
        if name == "Callable":
            return self.resolve(_callable_name(c))
        if name in ("torch.SymInt", "torch.SymFloat", "torch.SymBool"):
            raise Skip("a symbolic argument")
        args = [self.build(a, f"{path}.args[{i}]") for i, a in enumerate(c.args)]
        kwargs = {k: self.build(v, f"{path}.{k}") for k, v in c.kwargs.items()}
        if name == "numpy.ndarray":
            import numpy as np

            return np.zeros(args[0], dtype=np.dtype(args[1]))
        if name.startswith("numpy."):
            return self.numpy_scalar(name)(*args)
        target = self.resolve(name)
        if self.r.constructible(target):
            value = target(*args, **kwargs)
            return value.to(self.device) if isinstance(value, torch.nn.Module) else value
        raise Skip(f"argument {name}(...) is not one this replay rebuilds")


# Calls that stand for a value replay cannot rebuild (it skips the config).
PLACEHOLDERS = ("Opaque", "Module", "torch.SymInt", "torch.SymFloat", "torch.SymBool")


def _leaves(v: Any, path: str) -> Iterator[Tuple[str, Any]]:
    """The tensors, symbols and calls inside a parsed value (calls' own
    arguments too), with their paths as Builder.build names them."""
    if isinstance(v, (TensorSpec, Symbol)):
        yield path, v
    elif isinstance(v, (list, tuple)):
        for i, x in enumerate(v):
            yield from _leaves(x, f"{path}[{i}]")
    elif isinstance(v, dict):
        for i, (k, x) in enumerate(v.items()):
            yield from _leaves(k, f"{path}.keys[{i}]")
            yield from _leaves(x, f"{path}[{k!r}]")
    elif isinstance(v, slice):
        for x in (v.start, v.stop, v.step):
            yield from _leaves(x, path)
    elif isinstance(v, Call):
        yield path, v
        for i, x in enumerate(v.args):
            yield from _leaves(x, f"{path}.args[{i}]")
        for k, x in v.kwargs.items():
            yield from _leaves(x, f"{path}.{k}")


def _arguments(args: list, kwargs: dict) -> Iterator[Tuple[str, Any]]:
    """_leaves of a line's arguments."""
    for i, a in enumerate(args):
        yield from _leaves(a, f"args[{i}]")
    for k, v in kwargs.items():
        yield from _leaves(v, f"kwargs.{k}")


def _callable_name(c: Call) -> str:
    if len(c.args) != 1 or c.kwargs or not isinstance(c.args[0], str):
        raise Invalid("Callable(...) takes one name, as a string", 1)
    return c.args[0]


def _storage_numel(shape: Sequence[int], stride: Optional[Sequence[int]]) -> int:
    """The elements a tensor of this shape and stride spans (its storage)."""
    if not all(shape):
        return 0
    stride = stride if stride is not None else _contiguous_strides(shape)
    return 1 + sum((d - 1) * abs(s) for d, s in zip(shape, stride))


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024:
            break
        n /= 1024
    else:
        unit = "PiB"
    return f"{n:.0f} B" if unit == "B" else f"{n:.1f} {unit}"


def available_bytes(device: str) -> int:
    """Free memory for the tensors replay makes on `device`: the CPU's
    MemAvailable (/proc/meminfo, else the free pages sysconf counts), and for
    a CUDA device the least of that and what torch.cuda.mem_get_info leaves
    free (tensors are made on the CPU, then moved)."""
    import torch

    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            free = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError, IndexError):
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    if torch.device(device).type == "cuda":
        free = min(free, torch.cuda.mem_get_info(torch.device(device))[0])
    return free


def _contiguous_strides(shape: List[int]) -> List[int]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return list(reversed(strides))


# APIs whose first tensor must require grad to be called at all.
NEEDS_GRAD = {"torch.Tensor.backward", "torch.autograd.backward", "torch.autograd.grad"}


def parse(config: Config) -> Tuple[str, list, dict]:
    """(api, args, kwargs) of a config line; raises Invalid."""
    if config.error:
        raise Invalid(config.error, config.column)
    try:
        return parse_call(config.text, path=config.file, lineno=config.line)
    except ConfigSyntaxError as e:
        raise Invalid(e.message, e.column) from None


def build(config: Config, api: str, args: list, kwargs: dict, device: str, ranges: Dict[str, Dict[str, List[int]]],
          seed: int, resolver: Resolver, allow_unsafe: bool = False,
          max_bytes: Optional[int] = None) -> Tuple[Callable, list, dict]:
    """The callable `api` names and the arguments, built; raises Invalid, Skip
    or BuildError. Every name of the line passes the policy (unless
    allow_unsafe) and every tensor's description is checked before anything
    is built. The tensors may need max_bytes in all (None: half of
    available_bytes(device) now)."""
    import torch

    b = Builder(resolver, device, ranges.get(config.text, {}), torch.Generator().manual_seed(seed), config.text,
                safe=not allow_unsafe)
    func = b.resolve(api)
    if api.endswith(".__get__") or api.endswith(".__set__"):
        raise Skip("a property accessor")
    if isinstance(func, type) and not resolver.constructible(func):
        raise Skip(f"{api} is a class this replay does not construct")
    b.check_names(args, kwargs)
    b.check_tensors(args, kwargs, max_bytes if max_bytes is not None else available_bytes(device) // 2)
    b.requires_grad = api in NEEDS_GRAD
    built_args = [b.build(a, f"args[{i}]") for i, a in enumerate(args)]
    built_kwargs = {k: b.build(v, f"kwargs.{k}") for k, v in kwargs.items()}
    return func, built_args, built_kwargs


def prepare(config: Config, device: str, ranges: Dict[str, Dict[str, List[int]]], seed: int,
            resolver: Optional[Resolver] = None, *, allow_unsafe: bool = False,
            max_bytes: Optional[int] = None) -> Tuple[str, Callable, list, dict]:
    """(api, callable, args, kwargs) of a config; raises Invalid, Skip or BuildError."""
    api, args, kwargs = parse(config)
    return (api, *build(config, api, args, kwargs, device, ranges, seed, resolver or Resolver(), allow_unsafe,
                        max_bytes))


@contextlib.contextmanager
def grad_mode_kept() -> Iterator[None]:
    """A call that sets grad mode (torch._C._set_grad_enabled) sets it for
    itself only: the mode before it comes back."""
    import torch

    enabled = torch.is_grad_enabled()
    try:
        yield
    finally:
        torch._C._set_grad_enabled(enabled)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:500] if text else ""


def replay_one(config: Config, device: str = "cpu", ranges: Optional[dict] = None, seed: int = 0,
               resolver: Optional[Resolver] = None, *, allow_unsafe: bool = False,
               max_bytes: Optional[int] = None) -> Result:
    result = Result(config.file, config.line, config.text)
    start = time.perf_counter()
    try:
        result.api, args, kwargs = parse(config)
        func, args, kwargs = build(config, result.api, args, kwargs, device, ranges or {}, seed,
                                   resolver or Resolver(), allow_unsafe, max_bytes)
        with grad_mode_kept():
            func(*args, **kwargs)
        result.status = "ok"
    except Invalid as e:
        result.status, result.error, result.message, result.column = "invalid", "Invalid", str(e), e.column
    except Skip as e:
        result.status, result.message = "skipped", str(e)
    except BuildError as e:
        result.status, result.error, result.message = "failed", type(e.cause).__name__, str(e)
    except Exception as e:  # noqa: BLE001 - the API's own failure, reported
        result.status, result.error, result.message = "failed", type(e).__name__, _first_line(e)
    result.seconds = time.perf_counter() - start
    return result


# -- running many -------------------------------------------------------------

def _worker(conn: Any, device: str, ranges: dict, seed: int, allow_unsafe: bool, max_bytes: Optional[int]) -> None:
    """Replays the configs sent on `conn`, one at a time, until None."""
    resolver = Resolver()
    crash_on = os.environ.get("API_TRACER_REPLAY_CRASH_ON")  # fault injection, for the tests
    while True:
        config = conn.recv()
        if config is None:
            return
        if crash_on and crash_on in config.text:
            os.kill(os.getpid(), 11)
        conn.send(replay_one(config, device, ranges, seed, resolver, allow_unsafe=allow_unsafe, max_bytes=max_bytes))


def run_isolated(configs: List[Config], jobs: int, device: str, ranges: dict, seed: int,
                 on_result: Callable[[Result], None], *, allow_unsafe: bool = False,
                 max_bytes: Optional[int] = None) -> List[Result]:
    """Each config in a worker process (`jobs` of them): a worker that dies
    (a crashing kernel) fails the config it held, and is replaced."""
    import multiprocessing as mp
    from multiprocessing.connection import wait

    ctx = mp.get_context("spawn")
    pending = list(range(len(configs)))[::-1]
    out: Dict[int, Result] = {}
    workers: Dict[Any, Tuple[Any, Optional[int]]] = {}  # conn -> (process, index it holds)

    def start() -> None:
        parent, child = ctx.Pipe()
        p = ctx.Process(target=_worker, args=(child, device, ranges, seed, allow_unsafe, max_bytes),
                        daemon=True)
        p.start()
        child.close()
        workers[parent] = (p, None)
        feed(parent)

    def feed(conn: Any) -> None:
        p, _ = workers[conn]
        if pending:
            index = pending.pop()
            conn.send(configs[index])
            workers[conn] = (p, index)
        else:
            conn.send(None)
            workers[conn] = (p, None)

    def finish(index: int, result: Result) -> None:
        out[index] = result
        on_result(result)

    for _ in range(min(max(1, jobs), len(configs))):
        start()
    while len(out) < len(configs):
        busy = {conn: p for conn, (p, index) in workers.items() if index is not None}
        ready = wait(list(busy) + [p.sentinel for p in busy.values()])
        for conn, p in busy.items():
            index = workers[conn][1]
            if conn in ready:
                try:
                    result = conn.recv()
                except (EOFError, OSError):
                    result = None
                if result is not None:
                    finish(index, result)
                    feed(conn)
                    continue
            if p.sentinel in ready or conn in ready:
                p.join()
                c = configs[index]
                finish(index, Result(c.file, c.line, c.text, api=api_of(c.text), status="failed",
                                     error="WorkerCrashed",
                                     message=f"the worker process died (exit code {p.exitcode})"))
                del workers[conn]
                conn.close()
                if pending:
                    start()
    for p, _ in workers.values():
        p.join(timeout=5)
    return [out[i] for i in range(len(configs))]


def run_in_process(configs: List[Config], device: str, ranges: dict, seed: int,
                   on_result: Callable[[Result], None], *, allow_unsafe: bool = False,
                   max_bytes: Optional[int] = None, report_fd: Optional[int] = None) -> List[Result]:
    """Each config in this process, in turn. A fatal signal (a crashing
    kernel) kills the process, but first says which config died and how far
    the replay got, and appends that config's line to the report on
    `report_fd` (CrashNote)."""
    resolver = Resolver()
    results = []
    with CrashNote(report_fd) as note:
        for c in configs:
            note.running(c, len(results))
            r = replay_one(c, device, ranges, seed, resolver, allow_unsafe=allow_unsafe, max_bytes=max_bytes)
            note.running(None, len(results))
            results.append(r)
            on_result(r)
    return results


class CrashNote:
    """While configs run in process: what a fatal signal writes before the
    process dies by it (csrc/python/crash_note.cc), formatted here for each
    config, since the signal handler may only call write()."""

    def __init__(self, report_fd: Optional[int]) -> None:
        self.report_fd = -1 if report_fd is None else report_fd
        self.newline = "\n" if sys.stderr.isatty() else ""  # ends a progress bar

    def __enter__(self) -> "CrashNote":
        _C.replay_crash_note_install(self.report_fd)
        return self

    def __exit__(self, *exc: Any) -> None:
        _C.replay_crash_note_uninstall()

    def running(self, config: Optional[Config], done: int) -> None:
        """`config` runs now (None: none does), after `done` others."""
        if config is None:
            _C.replay_crash_note_set({})
            return
        held = (f"the report holds the {done} configs before it" if self.report_fd >= 0
                else f"{done} configs ran before it")
        notes = {}
        for sig in _C.replay_crash_signals:
            died = f"the process died (signal {sig}, {signal.Signals(sig).name})"
            message = (f"{self.newline}api-tracer replay: {died} while replaying {config.file}:{config.line}: "
                       f"{config.text}; {held}; rerun with --isolate to go on past a crash\n")
            line = Result(config.file, config.line, config.text, api=api_of(config.text), status="failed",
                          error="Crashed", message=died)
            notes[sig] = (message, json.dumps(asdict(line)) + "\n")
        _C.replay_crash_note_set(notes)


class Progress:
    """A progress line on a terminal (stderr), nothing elsewhere."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.counts = total, 0, {"ok": 0, "failed": 0, "skipped": 0, "invalid": 0}
        self.tty = sys.stderr.isatty()

    def __call__(self, r: Result) -> None:
        self.done += 1
        self.counts[r.status] += 1
        if self.tty:
            width = 30
            filled = int(width * self.done / max(1, self.total))
            counts = " ".join(f"{k} {v}" for k, v in self.counts.items())
            sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {counts}")
            sys.stderr.flush()

    def finish(self) -> None:
        if self.tty:
            sys.stderr.write("\n")


def summary(results: List[Result], allow_unsafe: bool = False) -> str:
    counts = {s: sum(r.status == s for r in results) for s in ("ok", "failed", "skipped", "invalid")}
    lines = [f"{len(results)} configs: " + ", ".join(f"{v} {k}" for k, v in counts.items())]
    if allow_unsafe:
        lines.append("  --allow-unsafe: the replay policy was off; any torch callable a line names was called")
    for r in results:
        if r.status in ("failed", "invalid"):
            where = f"{r.file}:{r.line}" + (f":{r.column}" if r.status == "invalid" else "")
            lines.append(f"  {r.status.upper()} {where}: {r.error}: {r.message}")
    skipped = [r for r in results if r.status == "skipped"]
    if skipped:
        reasons: Dict[str, int] = {}
        for r in skipped:
            reasons[r.message] = reasons.get(r.message, 0) + 1
        lines.append("  skipped: " + "; ".join(f"{n} x {why}" for why, n in sorted(reasons.items(), key=lambda x: -x[1])))
    return "\n".join(lines) + "\n"


class JsonlReport:
    """The -o report: one JSON object a line, each written and flushed as its
    result comes (so a crash loses none of the lines before it)."""

    def __init__(self, path: str) -> None:
        self.file = open(path, "w", encoding="utf-8")

    def __call__(self, r: Result) -> None:
        self.file.write(json.dumps(asdict(r)) + "\n")
        self.file.flush()

    def __enter__(self) -> "JsonlReport":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.file.close()


def write_junit(results: List[Result], path: str) -> None:
    from xml.etree import ElementTree as ET

    suite = ET.Element("testsuite", name="api-tracer replay", tests=str(len(results)),
                       failures=str(sum(r.status == "failed" for r in results)),
                       errors=str(sum(r.status == "invalid" for r in results)),
                       skipped=str(sum(r.status == "skipped" for r in results)),
                       time=f"{sum(r.seconds for r in results):.3f}")
    for r in results:
        case = ET.SubElement(suite, "testcase", classname=r.api or "invalid", name=r.config,
                             file=r.file, line=str(r.line), time=f"{r.seconds:.6f}")
        if r.status == "failed":
            ET.SubElement(case, "failure", type=r.error, message=r.message)
        elif r.status == "invalid":
            ET.SubElement(case, "error", type="Invalid", message=f"{r.file}:{r.line}:{r.column}: {r.message}")
        elif r.status == "skipped":
            ET.SubElement(case, "skipped", message=r.message)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def replay_command(args: Any) -> int:
    from .errors import UsageError

    if not os.path.isfile(args.file):
        raise UsageError(f"replay: {args.file}: no such file")
    if args.jobs < 1:
        raise UsageError("replay: --jobs must be at least 1")
    try:
        available_bytes(args.device)
    except Exception as e:  # noqa: BLE001 - a device torch does not know, or cannot reach
        raise UsageError(f"replay: --device {args.device}: {_first_line(e)}") from None
    if args.value_ranges and not os.path.isfile(args.value_ranges):
        raise UsageError(f"replay: {args.value_ranges}: no such file")
    try:
        configs = read_configs(args.file)
    except OSError as e:
        raise UsageError(f"replay: {args.file}: {e.strerror}") from None
    ranges_path = args.value_ranges or ranges_beside(args.file)
    try:
        ranges = read_value_ranges(ranges_path)
    except Exception as e:  # noqa: BLE001 - any way the file is not a value-ranges file
        raise UsageError(f"replay: {ranges_path}: not a value-ranges file ({type(e).__name__}: {e})") from None
    try:
        report = JsonlReport(args.report) if args.report else None
    except OSError as e:
        raise UsageError(f"replay: -o {args.report}: {e.strerror}") from None
    progress = Progress(len(configs))

    def on_result(r: Result) -> None:
        progress(r)
        if report:
            report(r)

    with report or contextlib.nullcontext():
        if args.isolate or args.jobs > 1:
            results = run_isolated(configs, args.jobs, args.device, ranges, args.seed, on_result,
                                   allow_unsafe=args.allow_unsafe, max_bytes=args.max_bytes)
        else:
            results = run_in_process(configs, args.device, ranges, args.seed, on_result,
                                     allow_unsafe=args.allow_unsafe, max_bytes=args.max_bytes,
                                     report_fd=report.file.fileno() if report else None)
    progress.finish()
    print(summary(results, args.allow_unsafe), end="")
    if args.junit:
        write_junit(results, args.junit)
    return 1 if any(r.status in ("failed", "invalid") for r in results) else 0


def roundtrip(configs: List[Config], level: int, device: str = "cpu", seed: int = 0,
              allow_unsafe: bool = False) -> List[Tuple[Config, str]]:
    """Replays each config while tracing `level`, recording only its API; for
    each, what went wrong ("" when the traced line is the config itself)."""
    import tempfile

    from .tracer import APITracer

    resolver = Resolver()
    problems = []
    for config in configs:
        try:
            api, func, args, kwargs = prepare(config, device, {}, seed, resolver, allow_unsafe=allow_unsafe)
        except Exception as e:  # noqa: BLE001 - Invalid, Skip, BuildError, or the parser's own failure
            problems.append((config, f"not replayed: {type(e).__name__}: {e}"))
            continue
        with tempfile.TemporaryDirectory() as out:
            tracer = APITracer(output_path=out, levels=level, merge_output=True, include_apis=[api], api_list=[api]
                               if level == 0 else None)
            with grad_mode_kept(), tracer:
                try:
                    # resolved again now: level 0 has put its wrapper there
                    resolver.resolve(api, config.text)(*args, **kwargs)
                except Exception as e:  # noqa: BLE001
                    problems.append((config, f"the replay failed: {type(e).__name__}: {e}"))
                    continue
            with open(os.path.join(out, "api_trace.txt"), encoding="utf-8") as f:
                traced = f.read().splitlines()
        if config.text not in traced:
            problems.append((config, f"traced as {traced[0] if traced else 'nothing'}"))
        else:
            problems.append((config, ""))
    return problems
