"""A user's operators for timing (api-tracer bench --import bench_ops;
tests/timing/test_bench.py, bench/bench_timing.py), in the namespace
`benchops`.

`work(x)` makes PASSES elementwise passes over x. Where the environment
sets BENCHOPS_SLOWER to a list of first sizes ("64,256") it makes
BENCHOPS_FACTOR times as many (default 1.2) on an x of those first sizes:
a kernel made slower on some shapes, the planted slowdown a comparison of
two runs must flag on exactly those configs. `crash(x)` dies by SIGSEGV,
and `hang(x)` never returns: a config a run must report and go past."""

import os
import signal
import time

import torch

PASSES = 10
SLOWER = {int(n) for n in os.environ.get("BENCHOPS_SLOWER", "").split(",") if n.strip()}
FACTOR = float(os.environ.get("BENCHOPS_FACTOR", "1.2"))


@torch.library.custom_op("benchops::work", mutates_args=())
def work(x: torch.Tensor) -> torch.Tensor:
    passes = round(PASSES * FACTOR) if x.shape[0] in SLOWER else PASSES
    y = x.clone()
    for _ in range(passes):
        y.mul_(0.999).add_(x)
    return y


@torch.library.custom_op("benchops::crash", mutates_args=())
def crash(x: torch.Tensor) -> torch.Tensor:
    os.kill(os.getpid(), signal.SIGSEGV)
    return x


@torch.library.custom_op("benchops::hang", mutates_args=())
def hang(x: torch.Tensor) -> torch.Tensor:
    while True:
        time.sleep(1)
