"""One round of one config timed, in a worker process (timing/run.py hands
it over): its arguments built once, as replay builds them (the policy, the
byte limit, the seed; with --backward by the framework's
ReplayFramework.timed_backward), one call
made to see that it works and what it returns, one more under torch's FLOP
counter, then the call alone under the clock of torch.utils.benchmark's
Timer: its warm-up sizes a block of calls (the timer's own cost below
1e-4 of a block), and blocks run until the spread of their times (IQR over
median) is below a threshold, or a time is spent (adaptive_autorange), on a
fixed number of threads, by the process's CPU time (CLOCKS), or the wall
clock's, the device synchronised around each block where it is an
accelerator. With --backward the backward of one call is timed
the same way."""

from __future__ import annotations

import os
import platform
import socket
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, Optional

from ..config import api_of
from ..formats.configs import Config
from ..replay.builder import build, parse
from ..replay.framework import line_framework, replay_framework
from ..replay.judge.check import writes
from ..replay.memory import storage_numel
from ..replay.options import Job, ReplayOptions
from ..replay.results import Skip, Status
from ..replay.run import failure_of
from ..replay.side import TimedCall, tensor_leaves, within_memory
from .results import Timing


@dataclass(frozen=True)
class BenchOptions:
    """How each config is timed (the flags of api-tracer bench)."""

    rounds: int = 5  # times each config is timed, its rounds spread over the run (timing/run.py)
    threads: int = 1  # torch's intra-op threads while timing
    min_time: float = 0.05  # seconds of calls a round runs at least
    max_time: float = 1.0  # ... and at most, however much its blocks' times spread
    threshold: float = 0.05  # the IQR / median of a round's block times at which it stops
    backward: bool = False  # time the backward of each call too
    clock: str = "cpu"  # CLOCKS: what a time is (on a CUDA device, always the wall's)

    def settings(self, options: ReplayOptions, ranges: str) -> Dict[str, Any]:
        """What decides a run's times, as its header keeps them (--resume
        must match): these, and the replay's options that build the inputs."""
        replayed = {
            "device": options.device,
            "seed": options.seed,
            "max_bytes": options.max_bytes,
            "allow_unsafe": options.allow_unsafe,
            "imports": list(options.imports),
            "libraries": list(options.libraries),
            "dialect": options.dialect,
            "value_ranges": ranges,
        }
        return {**asdict(self), "clock": clock_of(self, options.device), **replayed}


# What a timing's seconds are: the CPU time of the timing process, all its
# threads (what the calls computed, not the time the machine's other work
# took it off its core: on a shared machine, the steadier), or the wall
# clock's (a kernel's latency, its threads' waits and the machine's load
# included; a device's calls are timed by it, synchronised).
CLOCKS = ("cpu", "wall")


def clock_of(bench: "BenchOptions", device: str) -> str:
    """The clock a run on `device` times by: the wall's on an accelerator."""
    return "wall" if device.split(":")[0] != "cpu" else bench.clock


def environment(device: str) -> Dict[str, Any]:
    """Where a run times: what a comparison of two runs says it compares."""
    import torch

    env = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "host": socket.gethostname(),
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "device": device,
    }
    if torch.device(device).type == "cuda":
        env["device_name"] = torch.cuda.get_device_name(torch.device(device))
    return env


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        return platform.processor()


def measure(config: Config, key: str, round_: int, options: ReplayOptions, bench: BenchOptions) -> Timing:
    """Round `round_` of `config`, timed in this process: a Timing, ok
    with its times, or what kept it from being timed (as replay says it)."""
    timing = Timing(key, config.file, config.line, config.text, api_of(config.text) or "", round_, Status.OK)
    api = ""
    try:
        api, args, kwargs = parse(config)
        timing.api = api
        framework = replay_framework(line_framework(api, options))
        job = Job(config, api, args, kwargs, options, framework)
        with (
            within_memory(options, framework.memory_device(options.device)),
            framework.grad_mode_kept(),
            framework.seeded(options.seed, options.device),
        ):
            _timed(job, bench, timing)
    except Exception as e:  # noqa: BLE001 - whatever the build or the call raises is the config's outcome
        timing.status, timing.error, timing.message, _ = failure_of(e, config, api, options)
        timing.times, timing.number, timing.flops, timing.bytes = None, 0, None, None
        timing.backward_times, timing.backward_number, timing.backward_flops = None, 0, None
    return timing


def _timed(job: Job, bench: BenchOptions, timing: Timing) -> None:
    call = TimedCall(*build(job))
    restore = restorer(job.api, call)
    output = call.func(*call.args, **call.kwargs)  # (it works, and what it returns is counted)
    timing.bytes = tensor_bytes([call.args, call.kwargs, output]) or None
    del output
    restore()
    timing.flops = counted_flops(call.func, call.args, call.kwargs)
    restore()
    m = _measured(call.func, call.args, call.kwargs, bench, job.options.device, restore)
    timing.times, timing.number = list(m.times), m.number_per_run
    if bench.backward:  # (its own inputs and graph, made once the forward's timing is done)
        try:
            backward = job.framework.timed_backward(job).backward
        except Skip as e:  # (no backward to time: the forward's times stand, and the message says why)
            timing.message = f"{e} (its forward timed alone)"
            return
        timing.backward_flops = counted_flops(*backward)
        m = _measured(*backward, bench, job.options.device, lambda: None)
        timing.backward_times, timing.backward_number = list(m.times), m.number_per_run


def restorer(api: str, call: TimedCall) -> Callable[[], None]:
    """What puts back a call's tensor arguments, where the call writes into
    them (judge.check.writes: an in-place API, __iadd__ and its kind, a
    schema's mutable argument, out= or inplace=True): each on its storage,
    with its shape, strides and offset (unsqueeze_, resize_, set_ change
    those), and its values. Run before each block of calls, outside the
    clock, so that a block starts from the arguments built, not from what
    thousands of calls before it left (inf, denormals, a shape grown);
    nothing for another call."""
    import torch

    if not writes(call.func, api, call.kwargs):
        return lambda: None
    saved = [
        (t, t.untyped_storage(), t.storage_offset(), t.size(), t.stride(), t.detach().clone())
        for _, t in tensor_leaves([call.args, call.kwargs], "")
    ]

    def restore() -> None:
        with torch.no_grad():
            for t, storage, offset, size, stride, value in saved:
                t.set_(storage, offset, size, stride)
                t.copy_(value)

    return restore


def _measured(func: Any, args: Any, kwargs: dict, bench: BenchOptions, device: str, restore: Callable[[], None]) -> Any:
    from torch.utils.benchmark import Timer
    from torch.utils.benchmark.utils.timer import timer as synchronised

    timer = Timer(
        "func(*args, **kwargs)",
        setup="restore()",  # (before each block, outside the clock)
        globals={"func": func, "args": args, "kwargs": kwargs, "restore": restore},
        num_threads=bench.threads,
        timer=time.process_time if clock_of(bench, device) == "cpu" else synchronised,
    )
    return timer.adaptive_autorange(bench.threshold, min_run_time=bench.min_time, max_run_time=bench.max_time)


def tensor_bytes(value: Any) -> int:
    """The bytes of the torch tensors in `value`: each storage once, as far
    as the tensors on it span it (a view, an output that is an input, a
    stride-0 expansion counted as the memory it is: what a kernel reads or
    writes at least)."""
    spans: Dict[Any, int] = {}
    for _, t in tensor_leaves(value, ""):
        if t.layout != strided_layout() or t.device.type == "meta":
            continue
        key = (t.device, t.untyped_storage().data_ptr()) if t.untyped_storage().nbytes() else id(t)
        end = (t.storage_offset() + storage_numel(t.shape, t.stride())) * t.element_size()
        spans[key] = max(spans.get(key, 0), end - t.storage_offset() * t.element_size())
    return sum(spans.values())


def strided_layout() -> Any:
    import torch

    return torch.strided


def counted_flops(func: Any, args: Any, kwargs: dict) -> Optional[int]:
    """The FLOPs torch's FlopCounterMode counts in one call (None: none,
    an operator it has no formula for, or a call that raises under it)."""
    from torch.utils.flop_counter import FlopCounterMode

    try:
        with FlopCounterMode(display=False) as counter:
            func(*args, **kwargs)
    except Exception:  # noqa: BLE001 - the count only: the call was made without it first
        return None
    return counter.get_total_flops() or None
