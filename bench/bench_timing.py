"""What `api-tracer bench` measures, and how well, side by side in one run:

1. the harness's own cost per timed call: for a few configs, the per-call
   time bench reports (timing/measure.py, in this process) against a bare
   loop of the same call on the same inputs, timed by the same clock,
   interleaved and repeated: their ratio;
2. the comparison's rates on a few hundred configs: real models' operator
   configs (GPT-2's and a ViT's training steps and the tests' CNN, traced at
   level 2, random weights) and a user's operator (tests/usercode/bench_ops.py,
   loaded with --import) on 24 shapes; runs of one environment (A) and runs
   with that operator made 20% slower on 6 of its shapes (P), interleaved
   A P A P A ...: the configs flagged between two A runs (false alarms) and
   between an A and a P run (the planted six found, others flagged).

    python bench/bench_timing.py [--configs 250] [--pairs 2] [--factor 1.2] [--rounds 5] [--max-time 0.25]
                                 [--no-overhead] [--keep DIR]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

import common  # (the tests' support and user-code modules on sys.path)

CLI = [sys.executable, "-m", "api_tracer", "bench"]
USER_CODE = common.TEST_PATHS[1]
PLANTED_SIZES = (
    8,
    12,
    16,
    24,
    32,
    40,
    48,
    56,
    64,
    80,
    96,
    112,
    128,
    160,
    192,
    224,
    256,
    320,
    384,
    448,
    512,
    640,
    768,
    1024,
)
SLOWER = (16, 48, 96, 192, 384, 768)  # the shapes made slower in P runs
WORK = 'torch.ops.benchops.work(Tensor([{}, 256], "float32"))'


def corpus(path: Path, limit: int) -> int:
    """Real models' level-2 configs (at most `limit`) and the planted operator's, written to `path`."""
    from support.workloads import traced_configs

    lines: List[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("gpt2", "vit", "cnn"):
            lines += [c.text for c in traced_configs(Path(tmp), name, 2)]
    real = list(dict.fromkeys(lines))[:limit]
    path.write_text("\n".join(real + [WORK.format(n) for n in PLANTED_SIZES]) + "\n")
    return len(real)


def timed_run(configs: Path, out: Path, planted: bool, args: argparse.Namespace) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([USER_CODE, os.environ.get("PYTHONPATH", "")])}
    if planted:
        env.update(BENCHOPS_SLOWER=",".join(map(str, SLOWER)), BENCHOPS_FACTOR=str(args.factor))
    start = time.monotonic()
    done = subprocess.run(
        [*CLI, str(configs), "--import", "bench_ops", "-o", str(out), "--json"]
        + ["--rounds", str(args.rounds), "--max-time", str(args.max_time)],
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode not in (0, 1):
        raise SystemExit(f"bench failed: {done.stderr}")
    return time.monotonic() - start


def verdicts(base: Path, new: Path) -> Dict[str, str]:
    done = subprocess.run([*CLI, "--compare", str(base), str(new), "--json"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"compare failed: {done.stderr}")
    return {c["config"]: c["verdict"] for c in map(json.loads, done.stdout.splitlines()) if "verdict" in c}


def rates(args: argparse.Namespace, folder: Path) -> None:
    configs = folder / "configs.txt"
    real = corpus(configs, args.configs)
    total = real + len(PLANTED_SIZES)
    print(f"corpus: {real} real configs and {len(PLANTED_SIZES)} of the planted operator")
    runs: Dict[str, List[Path]] = {"A": [], "P": []}
    order = ["A", "P"] * args.pairs + ["A"]
    for i, kind in enumerate(order):
        out = folder / f"{kind}{len(runs[kind])}.jsonl"
        seconds = timed_run(configs, out, kind == "P", args)
        runs[kind].append(out)
        print(f"  run {i + 1}/{len(order)} ({kind}): {seconds:.0f} s")
    planted = {WORK.format(n) for n in SLOWER}
    print(f"\nsame environment (A against A), {total} configs each:")
    false_alarms = []
    for a, b in itertools.combinations(runs["A"], 2):
        flagged = {c: v for c, v in verdicts(a, b).items() if v in ("slower", "faster")}
        false_alarms.append(len(flagged))
        print(f"  {a.stem} -> {b.stem}: {len(flagged)} flagged {sorted(flagged.items())[:5]}")
    print(f"\nplanted: {len(SLOWER)} shapes {args.factor}x slower (A against P):")
    found, extra = [], []
    for a, p in zip(runs["A"], runs["P"]):
        v = verdicts(a, p)
        hit = sum(v.get(c) == "slower" for c in planted)
        others = {c: x for c, x in v.items() if c not in planted and x in ("slower", "faster")}
        found.append(hit)
        extra.append(len(others))
        print(f"  {a.stem} -> {p.stem}: {hit} of {len(planted)} planted flagged slower; {len(others)} others flagged")
    pairs = len(false_alarms)
    print(
        f"\nfalse alarms: {sum(false_alarms)} in {pairs} comparisons of {total} configs "
        f"({sum(false_alarms) / (pairs * total) * 100:.2f}% of configs)"
    )
    print(
        f"planted found: {sum(found)} of {len(planted) * len(found)}; "
        f"others flagged beside them: {sum(extra)} in {len(extra)} comparisons"
    )


def overhead(repeats: int) -> None:
    """The harness's per-call time against a bare loop's, on the same inputs and clock."""
    import torch

    from api_tracer.formats.configs import Config
    from api_tracer.replay.builder import build, parse
    from api_tracer.replay.framework import replay_framework
    from api_tracer.replay.options import Job, ReplayOptions
    from api_tracer.timing.measure import BenchOptions, measure

    lines = {
        "add, 4 elements": 'torch.add(Tensor([4], "float32"), Tensor([4], "float32"))',
        "relu, 64K": 'torch.nn.functional.relu(Tensor([256, 256], "float32"))',
        "matmul 128": 'torch.matmul(Tensor([128, 128], "float32"), Tensor([128, 128], "float32"))',
    }
    torch.set_num_threads(1)
    bench, options, framework = BenchOptions(rounds=1), ReplayOptions(), replay_framework("torch")
    print(f"the harness's cost a call (median of {repeats}, interleaved; CPU time of this process):")
    for name, line in lines.items():
        config = Config("-", 1, line)
        func, a, k = build(Job(config, *parse(config), options, framework))  # (the same inputs)
        harness, bare = [], []
        for _ in range(repeats):
            t = measure(config, "", 0, options, bench)
            harness.append(statistics.median(t.times))
            n = max(t.number * len(t.times), 1000)
            start = time.process_time()
            for _ in range(n):
                func(*a, **k)
            bare.append((time.process_time() - start) / n)
        h, b = statistics.median(harness), statistics.median(bare)
        print(f"  {name:16} harness {h * 1e6:8.3f} us   bare loop {b * 1e6:8.3f} us   ratio {h / b:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", type=int, default=250, help="real configs at most (default 250)")
    parser.add_argument("--pairs", type=int, default=2, help="A P pairs (default 2: A P A P A)")
    parser.add_argument("--factor", type=float, default=1.2, help="the planted slowdown (default 1.2)")
    parser.add_argument("--rounds", type=int, default=5, help="bench's --rounds (default 5)")
    parser.add_argument(
        "--max-time", type=float, default=0.25, help="bench's --max-time: seconds of a round at most (default 0.25)"
    )
    parser.add_argument("--repeats", type=int, default=7, help="repeats of the overhead measure (default 7)")
    parser.add_argument("--keep", help="a folder to keep the runs' results in")
    parser.add_argument("--no-overhead", action="store_true", help="the rates alone, not the harness's overhead")
    args = parser.parse_args()
    if not args.no_overhead:
        overhead(args.repeats)
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        rates(args, Path(args.keep))
    else:
        with tempfile.TemporaryDirectory() as folder:
            rates(args, Path(folder))


if __name__ == "__main__":
    main()
