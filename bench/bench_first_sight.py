"""What a call costs when its config is new, against a repeated one and
against the plain-Python logger of the same fields.

    python bench/bench_first_sight.py [--quick]

A test suite or an operator corpus is mostly first sights: each config is
met once or a few times. The workload is `torch.add(x, x)` over 4,000
tensors of distinct sizes, so that under a fresh tracer every call makes a
new config. Per level, in each of a few fresh processes, round after round,
side by side:

  untraced       the loop alone
  floor          the loop under a handler at the level's hook point that
                 only calls through: what any tracer built on that hook
                 point pays per call (level 3's, a RecordFunction callback,
                 has none in Python: not measured)
  python logger  the loop under bench/python_logger.py at the level's hook
                 point (level 3 has none in Python: the dispatch mode's),
                 which formats and records every call the same way
  first sight    the loop under a fresh APITracer: every call a new config
  repeat         the loop again under the same tracer: every config seen
  all threads    a first sight's loop and the tracer's stop(), in the CPU
                 time of every thread of the process: the trace writer's
                 thread formats new configs beside the traced one, and
                 stop() writes what is left and the summary files (over
                 the untraced loop's CPU time of every thread)

Thread CPU time, each variant's fastest round. It prints the overhead per
call (time minus untraced, over the 4,000 calls) and the two target ratios:
first sight over the logger's (target <= 0.1) and first sight over repeat
(target <= 3). Where the floor alone costs more than a tenth of the
logger's (the Python modes of levels 1 and 2), the first target is out of
any tracer's reach at that hook point, and the row says so.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import best_side_by_side, command_line
from python_logger import handlers

from api_tracer import APITracer

torch.set_num_threads(1)
CLOCK = time.thread_time
VARIANTS = ("untraced", "floor", "python logger", "first sight", "repeat", "untraced, all threads", "all threads")
LEVELS = (0, 1, 2, 3)


def loop(tensors) -> float:
    t0 = CLOCK()
    for x in tensors:
        torch.add(x, x)
    return CLOCK() - t0


def handler(level: int, variant: str):
    """The floor's or the logger's handler at the level's hook point."""
    floor, logger = handlers(level)
    return floor() if variant == "floor" else logger()


def measure_here(level: int, n: int, rounds: int) -> str:
    """Every variant's best of `rounds` timings, interleaved round after
    round in this process (so that they share its memory layout and the
    machine's moment), as a JSON object."""
    tensors = [torch.ones(i + 1) for i in range(n)]
    loop(tensors)  # torch's own first calls: its allocator's sizes, its caches
    best = dict.fromkeys(VARIANTS if level < 3 else [v for v in VARIANTS if v != "floor"], float("inf"))
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            best["untraced"] = min(best["untraced"], loop(tensors))
            t0 = time.process_time()
            loop(tensors)
            best["untraced, all threads"] = min(best["untraced, all threads"], time.process_time() - t0)
            for variant in ("floor", "python logger") if level < 3 else ("python logger",):
                with handler(level, variant):
                    best[variant] = min(best[variant], loop(tensors))
            out = os.path.join(tmp, str(r))
            with APITracer(output_path=out, levels=level, merge_output=True):
                best["first sight"] = min(best["first sight"], loop(tensors))
                best["repeat"] = min(best["repeat"], loop(tensors))
            with open(os.path.join(out, "api_configs.yaml")) as f:
                configs = sum(1 for line in f if line.startswith("torch"))
            if configs < n:
                raise SystemExit(f"level {level}: {configs} configs, not the {n} a first sight needs")
            tracer = APITracer(output_path=out + "-all", levels=level, merge_output=True)
            tracer.start()
            t0 = time.process_time()
            for x in tensors:
                torch.add(x, x)
            tracer.stop()
            best["all threads"] = min(best["all threads"], time.process_time() - t0)
    return json.dumps(best)


def main() -> None:
    args = command_line(__doc__, measure_here)  # --one: [level, n, rounds]
    n, rounds, repeats = (1000, 3, 2) if args.quick else (4000, 5, 3)
    print(f"\n== torch.add over {n} tensors of distinct sizes (thread CPU time, best of {repeats}x{rounds} rounds)")
    print(
        f"{'level':>5} {'untraced':>10}   {'overhead us/call: floor, logger, first sight, repeat':>53}"
        f" {'first/logger':>12} {'first/repeat':>12}"
    )
    for level in LEVELS:
        t = best_side_by_side(__file__, [level, n, rounds], repeats)
        per_call = {k: (t[k] - t["untraced"]) / n * 1e6 for k in t}
        to_logger = per_call["first sight"] / per_call["python logger"]
        to_repeat = per_call["first sight"] / per_call["repeat"]
        floor_share = per_call["floor"] / per_call["python logger"] if "floor" in per_call else 0.0
        floor = f"{per_call['floor']:>8.2f}" if "floor" in per_call else f"{'-':>8}"
        all_threads = (t["all threads"] - t["untraced, all threads"]) / n * 1e6
        print(
            f"{level:>5} {t['untraced'] * 1e3:>8.1f}ms   {floor} {per_call['python logger']:>14.2f}"
            f" {per_call['first sight']:>14.2f} {per_call['repeat']:>14.2f} {to_logger:>12.3f} {to_repeat:>12.2f}"
            f"   logger target {'met' if to_logger <= 0.1 else 'MISSED'}"
            f"{' (the floor alone: %.3f of the logger)' % floor_share if floor_share > 0.1 else ''},"
            f" repeat target {'met' if to_repeat <= 3 else 'MISSED'};"
            f" all threads, to stop(): {all_threads:.2f}"
        )


if __name__ == "__main__":
    main()
