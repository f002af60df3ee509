"""What the pytest plugin costs a test suite, as ratios of wall time.

    python bench/bench_plugin.py [--quick]

A generated suite of small tests (a few tensor ops each, an MLP training
step, a CNN forward and backward) run by pytest in a fresh process: without
the plugin (-p no:api_tracer), with it installed but not asked (the cost
every pytest session pays once the package is installed), and tracing at
level 1, at level 3, and at level 1 with a file set per test. The variants
run interleaved, each the best of its repeats; the ratios are to the run
without the plugin.

    python bench/bench_plugin.py --own-suite [--repeats N]

With --own-suite, the project's own tests instead, without the plugin and
tracing at level 1, interleaved. One tracer runs at a time in a process,
and about a quarter of the project's tests start tracers of their own,
which fail under the plugin; so a first run under the plugin finds the
tests that pass under it, and both variants run those.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time

SUITE = textwrap.dedent("""
    import pytest
    import torch

    torch.manual_seed(0)
    MLP = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    CNN = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.LazyLinear(10))

    @pytest.mark.parametrize("n", range({n}))
    def test_ops(n):
        x = torch.randn(n + 1, 8)
        assert torch.allclose(torch.relu(x).sum(), x.clamp(min=0).sum())

    @pytest.mark.parametrize("n", range({n}))
    def test_mlp_step(n):
        loss = torch.nn.functional.cross_entropy(MLP(torch.randn(16, 32)), torch.randint(0, 10, (16,)))
        loss.backward()

    @pytest.mark.parametrize("n", range({n}))
    def test_cnn(n):
        CNN(torch.randn(2, 3, 16, 16)).sum().backward()
""")

VARIANTS = {
    "without the plugin": ["-p", "no:api_tracer"],
    "plugin, not asked": [],
    "--api-trace (level 1)": ["--api-trace={out}"],
    "--api-trace-levels 3": ["--api-trace={out}", "--api-trace-levels", "3"],
    "level 1, --api-trace-per-test": ["--api-trace={out}", "--api-trace-per-test"],
}


def run(suite_dir: str, args: list) -> float:
    out = os.path.join(suite_dir, "out")
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        suite_dir,
        *(a.format(out=out) for a in args),
    ]
    t0 = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, cwd=suite_dir)
    return time.perf_counter() - t0


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pytest_in_root(args: list, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        check=check,
        capture_output=True,
        text=True,
    )


def own_suite(repeats: int) -> None:
    """The project's tests that pass under the plugin, with and without it."""
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        first = pytest_in_root(["-rA", f"--api-trace={out}"], check=False)
        first_seconds = time.perf_counter() - t0
        passed = [
            line.split(" ", 1)[1].split(" - ")[0]
            for line in first.stdout.splitlines()
            if line.startswith("PASSED tests/")
        ]  # not the lines of pytester's inner sessions
        counts = first.stdout.strip().splitlines()[-1]
        print(f"== the project's own suite under --api-trace: {counts} ({first_seconds:.0f} s)")
        for line in first.stdout.splitlines():
            if line.startswith(("FAILED tests/", "ERROR tests/")):
                print("  " + line)
        log = os.path.join(tempfile.gettempdir(), "bench_plugin_own_suite.log")
        with open(log, "w", encoding="utf-8") as f:
            f.write(first.stdout + first.stderr)
        print(f"  (its output: {log})")
        variants = {"without the plugin": ["-p", "no:api_tracer"], "--api-trace (level 1)": [f"--api-trace={out}"]}
        best = {name: float("inf") for name in variants}
        for _ in range(repeats):
            for name, extra in variants.items():
                t0 = time.perf_counter()
                timed = pytest_in_root([*extra, *passed], check=False)
                seconds = time.perf_counter() - t0
                print(f"  {name}: {timed.stdout.strip().splitlines()[-1]} ({seconds:.0f} s)")
                best[name] = min(best[name], seconds)
    base = best["without the plugin"]
    print(f"== the {len(passed)} tests that pass under it, pytest wall time, best of {repeats} interleaved runs")
    for name, seconds in best.items():
        print(f"  {name:<32} {seconds:7.2f} s   {seconds / base:6.3f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--own-suite", action="store_true", help="the project's own tests (see above)")
    parser.add_argument("--repeats", type=int, default=2, help="with --own-suite: runs of each variant")
    args = parser.parse_args()
    if args.own_suite:
        own_suite(args.repeats)
        return
    n, repeats = (5, 2) if args.quick else (30, 3)
    with tempfile.TemporaryDirectory() as suite_dir:
        with open(os.path.join(suite_dir, "test_generated.py"), "w") as f:
            f.write(SUITE.replace("{n}", str(n)))
        best = {name: float("inf") for name in VARIANTS}
        for _ in range(repeats):
            for name, extra in VARIANTS.items():
                best[name] = min(best[name], run(suite_dir, extra))
    base = best["without the plugin"]
    print(f"== a suite of {3 * n} tests, pytest wall time, best of {repeats} interleaved runs")
    for name, seconds in best.items():
        print(f"  {name:<32} {seconds:7.2f} s   {seconds / base:6.3f}x")


if __name__ == "__main__":
    main()
