"""What the benchmarks share: the op-bound and CNN workloads, and running
each measurement in a fresh process, interleaved and repeated."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Dict, List

import torch
import torch.nn as nn

TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests")
# the tests' shared package `support` (its workloads and judge sets) and
# the user-code modules that `--import NAME` imports by name
TEST_PATHS = [TESTS, os.path.join(TESTS, "usercode")]
sys.path[:0] = TEST_PATHS


def tiny_ops(n: int) -> None:
    """The worst case: four operators on 4-element tensors per iteration."""
    a = torch.ones(4)
    b = torch.ones(4)
    for _ in range(n):
        c = torch.add(a, b, alpha=2)
        c = c.mul(b)
        c = torch.relu(c)
        c.sum()


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 8 * 8, 10)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.c1(x)), 2)
        x = torch.nn.functional.max_pool2d(torch.relu(self.c2(x)), 2)
        return self.fc(x.flatten(1))


_CNN: List = []


def cnn(n: int) -> None:
    """A small CNN's forward and backward, batch 4, 32x32."""
    if not _CNN:
        torch.manual_seed(0)
        _CNN.append((SmallCNN(), torch.randn(4, 3, 32, 32)))
    model, x = _CNN[0]
    for _ in range(n):
        model.zero_grad(set_to_none=True)
        model(x).sum().backward()


WORKLOADS = {"tiny": tiny_ops, "cnn": cnn}


def best_time(work, n: int, rounds: int, variant) -> float:
    """The best thread CPU time of `rounds` runs of work(n) inside the
    context manager `variant` (a tracer, a logger, nothing), after a warm-up
    run of a tenth of n under it."""
    import time

    with variant:
        work(max(1, n // 10))
        best = float("inf")
        for _ in range(rounds):
            t0 = time.thread_time()
            work(n)
            best = min(best, time.thread_time() - t0)
    return best


def _in_fresh_process(script: str, payload: list) -> str:
    """The last line `python script --one PAYLOAD` printed."""
    out = subprocess.run(
        [sys.executable, script, "--one", json.dumps(payload)], capture_output=True, text=True, check=True
    )
    return out.stdout.strip().splitlines()[-1]


def best_per_variant(script: str, payloads: Dict[str, list], repeats: int) -> Dict[str, float]:
    """Runs `python script --one PAYLOAD` for each variant's payload, `repeats`
    times interleaved, each in a fresh process; the smallest number each
    variant printed."""
    best: Dict[str, float] = {}
    for _ in range(repeats):
        for variant, payload in payloads.items():
            best[variant] = min(best.get(variant, float("inf")), float(_in_fresh_process(script, payload)))
    return best


def best_side_by_side(script: str, payload: list, repeats: int) -> Dict[str, float]:
    """Runs `python script --one PAYLOAD` `repeats` times, each in a fresh
    process that measures several variants interleaved and prints a JSON
    object of its best seconds per variant; the smallest per variant."""
    best: Dict[str, float] = {}
    for _ in range(repeats):
        for variant, seconds in json.loads(_in_fresh_process(script, payload)).items():
            best[variant] = min(best.get(variant, float("inf")), seconds)
    return best


def print_against_untraced(best: Dict[str, float]) -> None:
    """One row per variant: its time and its ratio to the "untraced" one."""
    base = best["untraced"]
    for variant, seconds in best.items():
        print(f"  {variant:<24} {seconds * 1e3:9.1f} ms   {seconds / base:6.3f}x untraced")


def command_line(doc: str, measure_here, extra=None) -> argparse.Namespace:
    """The options every benchmark takes: --quick, and the hidden --one
    PAYLOAD with which best_per_variant and best_side_by_side ask a fresh process for one
    measurement (printed here; the process then exits). `extra` adds options."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer iterations and rounds")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    if extra:
        extra(parser)
    args = parser.parse_args()
    if args.one:
        print(measure_here(*json.loads(args.one)))
        sys.exit(0)
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, 1 intra-op thread")
    return args
