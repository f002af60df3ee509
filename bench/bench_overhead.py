"""Per-call overhead of each level, as ratios measured side by side.

    python bench/bench_overhead.py [--quick]

Two workloads on the CPU: an op-bound loop of tiny tensors (the worst case:
all overhead, no compute) and a small CNN forward and backward. For each
level (0 setattr, 1 function mode, 2 dispatch mode) it times

  untraced       the workload alone
  floor          PyTorch's hook point with a handler that only calls through
                 (for level 0: Python wrappers over the same API list)
  python logger  the same hook point with the original pure-Python tracer's
                 per-call work (bench/python_logger.py)
  api_tracer     APITracer at that level, writing its files

Each measurement runs in a fresh process (thousands of setattrs on
torch.Tensor would otherwise slow whatever runs after them), takes the
thread's CPU time (steadier than wall time on a shared machine) and keeps
the fastest of its rounds; the whole set is repeated, interleaved, and each
variant keeps its best. It prints the overhead per call (time minus
untraced, over the calls the level sees) and the two target ratios:
api_tracer's overhead over the Python logger's (target <= 0.2) and
api_tracer's time over the floor's (target <= 1.5). It also times start()
and stop() of level 0 over the default API list.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import WORKLOADS, best_per_variant, best_time, command_line
from python_logger import handlers

from api_tracer import APITracer

torch.set_num_threads(1)
# The CPU time of this thread: what the tracer costs the program, and far
# steadier than wall time on a machine shared with other work. Each variant
# takes its fastest round: noise only ever adds time.


def count_calls(level, work):
    """The calls one iteration makes at `level` (beyond the workload's setup)."""
    counts = []
    for n in (1, 2):
        with tempfile.TemporaryDirectory() as d:
            with APITracer(output_path=d, levels=level, merge_output=True):
                work(n)
            with open(os.path.join(d, "api_statistics.yaml")) as f:
                counts.append(int(f.read().split("Total API calls: ")[1].split()[0]))
    return counts[1] - counts[0]


def make_variant(name, level, tmp):
    floor, logger = handlers(level)
    ours = lambda: APITracer(output_path=tmp, levels=level, merge_output=True)  # noqa: E731 - a one-line factory, named
    return {"untraced": Nothing, "floor": floor, "python logger": logger, "api_tracer": ours}[name]()


class Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


VARIANTS = ("untraced", "floor", "python logger", "api_tracer")


def measure_here(workload, n, level, variant, rounds):
    """The best of `rounds` timings of one variant, in this process."""
    with tempfile.TemporaryDirectory() as tmp:
        return best_time(WORKLOADS[workload], n, rounds, make_variant(variant, level, tmp))


def measure(workload, n, level, rounds, repeats):
    return best_per_variant(__file__, {v: [workload, n, level, v, rounds] for v in VARIANTS}, repeats)


def report(title, workload, n, rounds, repeats):
    print(f"\n== {title} ({n} iterations; thread CPU time, best of {repeats}x{rounds} rounds)")
    print(
        f"{'level':>5} {'calls/it':>8} {'untraced':>10} {'floor':>10} {'py logger':>10} {'api_tracer':>10}"
        f" {'overhead us/call (floor, logger, ours)':>40} {'ours/logger':>11} {'ours/floor':>10}"
    )
    for level in (0, 1, 2):
        calls = count_calls(level, WORKLOADS[workload])
        t = measure(workload, n, level, rounds, repeats)
        per_call = {k: (t[k] - t["untraced"]) / (n * calls) * 1e6 for k in t}
        ratio_logger = per_call["api_tracer"] / per_call["python logger"]
        ratio_floor = t["api_tracer"] / t["floor"]
        floor_share = per_call["floor"] / per_call["python logger"]
        print(
            f"{level:>5} {calls:>8} {t['untraced'] * 1e3:>8.1f}ms {t['floor'] * 1e3:>8.1f}ms "
            f"{t['python logger'] * 1e3:>8.1f}ms {t['api_tracer'] * 1e3:>8.1f}ms "
            f"{per_call['floor']:>12.2f} {per_call['python logger']:>12.2f} {per_call['api_tracer']:>12.2f}"
            f" {ratio_logger:>11.3f} {ratio_floor:>10.3f}   "
            f"logger target {'met' if ratio_logger <= 0.2 else 'MISSED'}, floor target "
            f"{'met' if ratio_floor <= 1.5 else 'MISSED'} (a do-nothing handler alone: "
            f"{floor_share:.3f} of the logger's)"
        )


def start_stop(rounds):
    starts, stops = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(rounds):
            tracer = APITracer(output_path=tmp, levels=0)
            t0 = time.perf_counter()
            tracer.start()
            t1 = time.perf_counter()
            tracer.stop()
            t2 = time.perf_counter()
            starts.append(t1 - t0)
            stops.append(t2 - t1)
    n = len(APITracer(levels=0).dialect.api_list())
    print(f"\n== level 0 over the default API list ({n} APIs), median of {rounds}")
    print(f"start(): {statistics.median(starts) * 1e3:.1f} ms   stop(): {statistics.median(stops) * 1e3:.1f} ms")


def main():
    args = command_line(__doc__, measure_here)  # --one: [workload, n, level, variant, rounds]
    scale = 0.2 if args.quick else 1.0
    rounds, repeats = (3, 1) if args.quick else (5, 3)
    report("op-bound loop of tiny tensors", "tiny", int(5000 * scale), rounds, repeats)
    report("small CNN forward + backward (batch 4, 32x32)", "cnn", max(4, int(60 * scale)), rounds, repeats)
    start_stop(7)


if __name__ == "__main__":
    main()
