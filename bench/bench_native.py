"""Level 3 (the native observer) against PyTorch's own ways of seeing every
operator, as ratios measured side by side.

    python bench/bench_native.py [--quick] [--calls N]

Workloads on the CPU: an op-bound loop of tiny tensors (the worst case) and
a small CNN forward and backward. Variants, each timed in a fresh process
(wall time of the whole traced block, start and stop included, best of its
rounds; the set repeated and interleaved, each keeping its best):

  untraced                 the workload alone
  profiler                 torch.profiler.profile(record_shapes=True)
  execution trace          torch.profiler.ExecutionTraceObserver
  level 2                  APITracer(levels=2): the Python dispatch mode
  level 3, no op kept      the observer installed, recording nothing: what
                           at::RecordFunction with inputs costs by itself
  level 3                  APITracer(levels=3)

Targets: level 3 at most 1.3x untraced on the tiny loop and 1.05x on the
CNN, and below both PyTorch mechanisms. Then the memory check: resident
memory growth over N recorded calls (default ten million) with the full
trace streaming to disk, target under 64 MiB.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import WORKLOADS, best_per_variant, command_line, print_against_untraced

VARIANTS = ("untraced", "profiler", "execution trace", "level 2", "level 3, no op kept", "level 3")


class Traced:
    """One variant as a context manager around the workload."""

    def __init__(self, variant, tmp):
        self.variant, self.tmp = variant, tmp

    def __enter__(self):
        v = self.variant
        if v == "profiler":
            self.ctx = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True)
            self.ctx.__enter__()
        elif v == "execution trace":
            self.ctx = torch.profiler.ExecutionTraceObserver()
            self.ctx.register_callback(os.path.join(self.tmp, "et.json"))
            self.ctx.start()
        elif v.startswith("level"):
            from api_tracer import APITracer

            level = int(v.split(",")[0][-1])
            keep = {"include_apis": ["-"]} if "no op" in v else {}
            self.ctx = APITracer(output_path=self.tmp, levels=level, merge_output=True, **keep)
            self.ctx.start()

    def __exit__(self, *exc):
        v = self.variant
        if v == "profiler":
            self.ctx.__exit__(None, None, None)
            self.ctx.events()  # what a user of it does next: the events, post-processed
        elif v == "execution trace":
            self.ctx.stop()
            self.ctx.unregister_callback()
        elif v.startswith("level"):
            self.ctx.stop()


def measure_here(workload, n, variant, rounds):
    torch.set_num_threads(1)
    work = WORKLOADS[workload]
    work(max(1, n // 10))  # warm up untraced
    best = float("inf")
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            with Traced(variant, tmp):
                work(n)
            best = min(best, time.perf_counter() - t0)
    return best


def report(title, workload, n, rounds, repeats, target):
    best = best_per_variant(__file__, {v: [workload, n, v, rounds] for v in VARIANTS}, repeats)
    base = best["untraced"]
    print(f"\n== {title} ({n} iterations; wall time incl. start and stop, best of {repeats}x{rounds})")
    print_against_untraced(best)
    ratio = best["level 3"] / base
    below = best["level 3"] < min(best["profiler"], best["execution trace"])
    print(
        f"  level 3: {ratio:.3f}x untraced (target {target}x: {'met' if ratio <= target else 'MISSED'}); "
        f"below both PyTorch mechanisms: {'yes' if below else 'NO'}; "
        f"RecordFunction with inputs alone: {best['level 3, no op kept'] / base:.3f}x"
    )


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory_check(calls):
    from api_tracer import APITracer

    torch.set_num_threads(1)
    x = torch.ones(1)
    with tempfile.TemporaryDirectory() as tmp:
        with APITracer(output_path=tmp, levels=3, merge_output=True) as tracer:
            for _ in range(1000):  # warm up: caches, buffers
                torch.neg(x)
            before = rss_bytes()
            t0 = time.perf_counter()
            for _ in range(calls):
                torch.neg(x)
            elapsed = time.perf_counter() - t0
            after = rss_bytes()
        trace = os.path.getsize(os.path.join(tmp, "api_trace.yaml")) + os.path.getsize(
            os.path.join(tmp, "api_trace.txt")
        )
        with open(tracer.files()["api_statistics.yaml"]) as f:
            recorded = int(f.read().split("Total API calls: ")[1].split()[0])
    growth = (after - before) / 2**20
    print(
        f"\n== memory: {recorded:,} recorded calls in {elapsed:.1f} s, "
        f"{trace / 2**30:.2f} GiB of trace streamed to disk"
    )
    print(
        f"  resident memory growth while recording: {growth:.1f} MiB "
        f"(target < 64 MiB: {'met' if growth < 64 else 'MISSED'})"
    )


def main():
    args = command_line(
        __doc__,
        measure_here,
        lambda parser: parser.add_argument(
            "--calls", type=int, default=10_000_000, help="recorded calls for the memory check"
        ),
    )
    rounds, repeats = (2, 1) if args.quick else (5, 3)
    report("op-bound loop of tiny tensors", "tiny", 2000 if args.quick else 10000, rounds, repeats, 1.3)
    report("small CNN forward + backward (batch 4, 32x32)", "cnn", 10 if args.quick else 60, rounds, repeats, 1.05)
    memory_check(args.calls // 20 if args.quick else args.calls)


if __name__ == "__main__":
    main()
