"""api-tracer replay: call the APIs of config lines and report each one.

A line is data: it is parsed by the project's parser (never evaluated), and
every name in it is resolved by walking from `torch` through objects that
are torch's own (its modules, its classes, torch.ops' namespaces); a dunder
is allowed only as a Tensor operator (torch.Tensor.__add__). Anything else
is reported invalid, with file:line:column, and the other lines still run.

Arguments are made from their description: tensors of the recorded shape,
dtype and strides, with random values (integer tensors: zeros, or values
drawn from the recorded range when api_value_ranges.yaml has one; bool
tensors: random), module constructor calls built, devices, dtypes, sizes as
written. Each config is reported "ok", "failed" (the exception), "skipped"
(why it cannot be rebuilt, e.g. an Opaque argument) or "invalid".
"""
from __future__ import annotations

import json
import os
import sys
import time
import types
from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from .config import ConfigSyntaxError, parse_call
from .filesets import api_of
from .values import Call, Symbol, TensorSpec

BUILTIN_TYPES = {"float": float, "int": int, "bool": bool, "complex": complex}


@dataclass
class Config:
    file: str
    line: int
    text: str


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


def read_configs(path: str) -> List[Config]:
    """The distinct config lines of a file, each with the line it was first on."""
    seen = set()
    configs = []
    with open(path, encoding="utf-8") as f:
        for lineno, text in enumerate(f, 1):
            text = text.strip()
            if not text or text.startswith("#") or text in seen:
                continue
            seen.add(text)
            configs.append(Config(path, lineno, text))
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
                 line: str) -> None:
        self.r, self.device, self.ranges, self.gen, self.line = resolver, device, ranges, generator, line
        self.requires_grad = False

    def build(self, v: Any, path: str) -> Any:
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
        dtype = getattr(torch, spec.dtype, None)
        if not isinstance(dtype, torch.dtype):
            raise Invalid(f"unknown dtype {spec.dtype!r}", self.line.find(spec.dtype) + 1)
        shape = list(spec.shape)
        if any(d < 0 for d in shape):
            raise Skip("a tensor with a symbolic size")
        stride = list(spec.stride) if spec.stride is not None else _contiguous_strides(shape)
        numel = 1 + sum((d - 1) * s for d, s in zip(shape, stride)) if all(shape) else 0
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
            return self.r.resolve(c.args[0], self.line)
        if name in ("torch.SymInt", "torch.SymFloat", "torch.SymBool"):
            raise Skip("a symbolic argument")
        args = [self.build(a, f"{path}.args[{i}]") for i, a in enumerate(c.args)]
        kwargs = {k: self.build(v, f"{path}.{k}") for k, v in c.kwargs.items()}
        if name == "numpy.ndarray":
            import numpy as np

            return np.zeros(args[0], dtype=np.dtype(args[1]))
        if name.startswith("numpy."):
            import numpy as np

            scalar = getattr(np, name[len("numpy."):], None)
            if not (isinstance(scalar, type) and issubclass(scalar, np.generic)):
                raise Invalid(f"{name!r} is not a numpy scalar type", self.line.find(name) + 1)
            return scalar(*args)
        target = self.r.resolve(name, self.line)
        if self.r.constructible(target):
            value = target(*args, **kwargs)
            return value.to(self.device) if isinstance(value, torch.nn.Module) else value
        raise Skip(f"argument {name}(...) is not one this replay rebuilds")


def _contiguous_strides(shape: List[int]) -> List[int]:
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return list(reversed(strides))


# APIs whose first tensor must require grad to be called at all.
NEEDS_GRAD = {"torch.Tensor.backward", "torch.autograd.backward", "torch.autograd.grad"}


def prepare(config: Config, device: str, ranges: Dict[str, Dict[str, List[int]]], seed: int,
            resolver: Optional[Resolver] = None) -> Tuple[str, Callable, list, dict]:
    """(api, callable, args, kwargs) of a config; raises Invalid or Skip."""
    import torch

    try:
        api, args, kwargs = parse_call(config.text, path=config.file, lineno=config.line)
    except ConfigSyntaxError as e:
        raise Invalid(e.message, e.column) from None
    resolver = resolver or Resolver()
    func = resolver.resolve(api, config.text)
    if api.endswith(".__get__") or api.endswith(".__set__"):
        raise Skip("a property accessor")
    gen = torch.Generator().manual_seed(seed)
    b = Builder(resolver, device, ranges.get(config.text, {}), gen, config.text)
    b.requires_grad = api in NEEDS_GRAD
    built_args = [b.build(a, f"args[{i}]") for i, a in enumerate(args)]
    built_kwargs = {k: b.build(v, f"kwargs.{k}") for k, v in kwargs.items()}
    if isinstance(func, type) and not resolver.constructible(func):
        raise Skip(f"{api} is a class this replay does not construct")
    return api, func, built_args, built_kwargs


def replay_one(config: Config, device: str = "cpu", ranges: Optional[dict] = None, seed: int = 0,
               resolver: Optional[Resolver] = None) -> Result:
    result = Result(config.file, config.line, config.text)
    start = time.perf_counter()
    try:
        result.api, func, args, kwargs = prepare(config, device, ranges or {}, seed, resolver)
        func(*args, **kwargs)
        result.status = "ok"
    except Invalid as e:
        result.status, result.error, result.message, result.column = "invalid", "Invalid", str(e), e.column
    except Skip as e:
        result.status, result.message = "skipped", str(e)
    except Exception as e:  # noqa: BLE001 - the API's own failure, reported
        result.status, result.error, result.message = "failed", type(e).__name__, str(e).strip().splitlines()[0][:500] if str(e).strip() else ""
    result.seconds = time.perf_counter() - start
    return result


# -- running many -------------------------------------------------------------

def _worker(conn: Any, device: str, ranges: dict, seed: int) -> None:
    """Replays the configs sent on `conn`, one at a time, until None."""
    resolver = Resolver()
    crash_on = os.environ.get("API_TRACER_REPLAY_CRASH_ON")  # fault injection, for the tests
    while True:
        config = conn.recv()
        if config is None:
            return
        if crash_on and crash_on in config.text:
            os.kill(os.getpid(), 11)
        conn.send(replay_one(config, device, ranges, seed, resolver))


def run_isolated(configs: List[Config], jobs: int, device: str, ranges: dict, seed: int,
                 on_result: Callable[[Result], None]) -> List[Result]:
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
        p = ctx.Process(target=_worker, args=(child, device, ranges, seed), daemon=True)
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
                   on_result: Callable[[Result], None]) -> List[Result]:
    resolver = Resolver()
    results = []
    for c in configs:
        r = replay_one(c, device, ranges, seed, resolver)
        results.append(r)
        on_result(r)
    return results


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


def summary(results: List[Result]) -> str:
    counts = {s: sum(r.status == s for r in results) for s in ("ok", "failed", "skipped", "invalid")}
    lines = [f"{len(results)} configs: " + ", ".join(f"{v} {k}" for k, v in counts.items())]
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


def write_jsonl(results: List[Result], path: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for r in results:
            f.write(json.dumps(asdict(r)) + "\n")


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
    configs = read_configs(args.file)
    ranges = read_value_ranges(args.value_ranges or ranges_beside(args.file))
    progress = Progress(len(configs))
    if args.isolate or args.jobs > 1:
        results = run_isolated(configs, args.jobs, args.device, ranges, args.seed, progress)
    else:
        results = run_in_process(configs, args.device, ranges, args.seed, progress)
    progress.finish()
    print(summary(results), end="")
    if args.report:
        write_jsonl(results, args.report)
    if args.junit:
        write_junit(results, args.junit)
    return 1 if any(r.status in ("failed", "invalid") for r in results) else 0


def roundtrip(configs: List[Config], level: int, device: str = "cpu", seed: int = 0) -> List[Tuple[Config, str]]:
    """Replays each config while tracing `level`, recording only its API; for
    each, what went wrong ("" when the traced line is the config itself)."""
    import tempfile

    from .tracer import APITracer

    resolver = Resolver()
    problems = []
    for config in configs:
        try:
            api, func, args, kwargs = prepare(config, device, {}, seed, resolver)
        except (Invalid, Skip) as e:
            problems.append((config, f"not replayed: {e}"))
            continue
        with tempfile.TemporaryDirectory() as out:
            tracer = APITracer(output_path=out, levels=level, merge_output=True, include_apis=[api], api_list=[api]
                               if level == 0 else None)
            with tracer:
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
