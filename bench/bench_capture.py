"""What capture costs outside the per-call path: the first start() of a
process, and the snapshots of the summary files.

    python bench/bench_capture.py [--quick]

1. Cold start: the first APITracer.start() of a fresh process (torch and
   api_tracer imported, nothing traced yet), wall time, for each level; the
   best of several processes. Beside it, what importing torch._dynamo costs
   in such a process: every first start() of levels 0-2 paid it before the
   compiler's stance was set only where dynamo is loaded.
2. Snapshots: level 1 over a loop of calls, with the summary files written
   only at start and stop (snapshot_interval=0), at the default interval,
   and every 10 ms (3000 times as often as the default); two loops, one
   with 8 distinct configs and one with 4,000 (each snapshot then formats
   and writes 4,000 lines). The variants run interleaved, round after
   round, in each of three fresh processes; wall time (the snapshot thread
   runs beside the traced one), best round per variant, as ratios to
   snapshot_interval=0.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import best_per_variant, best_side_by_side, command_line

from api_tracer import APITracer

torch.set_num_threads(1)
LEVELS = ("0", "1", "2", "3", "0,1,2,3")
SNAPSHOTS = {"at stop only": 0.0, "default (30 s)": 30.0, "every 10 ms": 0.01}


def few_configs(n: int) -> None:
    a = torch.ones(4)
    for i in range(n):
        torch.add(a, i % 4)
        torch.mul(a, 2)


def many_configs(n: int) -> None:
    for i in range(n):
        torch.ones(i % 4000 + 1)


LOOPS = {"8 configs": (few_configs, 20000), "4,000 configs": (many_configs, 40000)}


def cold_start(levels: str) -> float:
    """Seconds of the first start() of this process (or of importing dynamo)."""
    with tempfile.TemporaryDirectory() as tmp:
        if levels == "import torch._dynamo":
            t0 = time.perf_counter()
            import torch._dynamo  # noqa: F401 - imported before the clock starts

            return time.perf_counter() - t0
        tracer = APITracer(output_path=tmp, levels=[int(x) for x in levels.split(",")], merge_output=True)
        t0 = time.perf_counter()
        tracer.start()
        seconds = time.perf_counter() - t0
        tracer.stop()
        return seconds


def snapshots_side_by_side(loop: str, rounds: int) -> str:
    work, n = LOOPS[loop]
    best = {name: float("inf") for name in SNAPSHOTS}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(rounds):
            for name, interval in SNAPSHOTS.items():
                with APITracer(output_path=tmp, levels=1, merge_output=True, snapshot_interval=interval):
                    work(n // 10)  # every config is met before the timed part
                    t0 = time.perf_counter()
                    work(n)
                    best[name] = min(best[name], time.perf_counter() - t0)
    return json.dumps(best)


def measure_here(kind, *args):
    return cold_start(*args) if kind == "start" else snapshots_side_by_side(*args)


def main():
    args = command_line(__doc__, measure_here)
    repeats, rounds = (2, 2) if args.quick else (5, 5)
    print(f"\n== cold first start() of a process, wall time, best of {repeats} processes")
    best = best_per_variant(__file__, {v: ["start", v] for v in (*LEVELS, "import torch._dynamo")}, repeats)
    for variant, seconds in best.items():
        name = variant if variant.startswith("import") else f"levels {variant}"
        print(f"  {name:<22} {seconds * 1e3:8.1f} ms")
    for loop in LOOPS:
        print(f"\n== level 1, {loop}: wall time, best of 3 processes x {rounds} interleaved rounds")
        best = best_side_by_side(__file__, ["snapshots", loop, rounds], 3)
        base = best["at stop only"]
        for name, seconds in best.items():
            print(f"  snapshots {name:<16} {seconds * 1e3:9.1f} ms   {seconds / base:6.3f}x")


if __name__ == "__main__":
    main()
