"""What a keyed replay (replay/keyed.py) costs and how it scales, side by
side in one run:

1. throughput: configs a second of `replay --isolate --jobs 1` and `--jobs
   2`, and of `--ray` on a Ray cluster of this machine of 1 and of 2 CPUs
   (ray start --head; `--jobs 1` a batch),
   each measured as (K - 1) / (t(K configs) - t(1 config)), so that the
   start of torch, the pool and Ray is left out;
2. Ray's cost a batch: the same K configs with `--batch 1` against
   `--batch 32`, the extra time over the extra tasks;
3. the driver's cost a result: `api-tracer collect` of a report of 200,000
   results (each read back, checked, counted and written again: more
   than the driver does with a result);
4. the driver's memory on a corpus of 10 million lines: `--shard 0/S` of
   1 and of 10 million lines (S so that about 1000 configs of each are
   replayed), in process, the peak resident size of each; and a KeySet of
   10 million keys, what it adds to a process.

    python bench/bench_distributed.py [--configs 400] [--lines 10000000]
"""

from __future__ import annotations

import argparse
import contextlib
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

CLI = [sys.executable, "-m", "api_tracer", "replay"]


def corpus(path: Path, n: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    lines = set()
    while len(lines) < n:
        a, b = rng.randint(1, 64), rng.randint(1, 64)
        api = rng.choice(["torch.add", "torch.mul", "torch.maximum"])
        lines.add(
            rng.choice(
                [
                    f'{api}(Tensor([{a}, {b}], "float32"), Tensor([{a}, {b}], "float32"))',
                    f'torch.mm(Tensor([{a}, {b}], "float32"), Tensor([{b}, {a}], "float32"))',
                    f'torch.nn.functional.softmax(Tensor([{a}, {b}], "float32"), dim=-1)',
                ]
            )
        )
    path.write_text("\n".join(sorted(lines)) + "\n")
    return path


def timed(args: list) -> float:
    start = time.perf_counter()
    done = subprocess.run([*CLI, *args], capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(args)}: {done.stderr}")
    return time.perf_counter() - start


def peak_rss(args: list) -> float:
    """The peak resident MiB of one `replay ARGS` process (in process: one process)."""
    code = (
        "import resource, subprocess, sys; subprocess.run(sys.argv[1:], capture_output=True); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", code, *CLI, *args], capture_output=True, text=True, check=True)
    return int(out.stdout) / 1024


@contextlib.contextmanager
def ray_cluster(cpus: int) -> Iterator[None]:
    """A Ray cluster of one node of `cpus` CPUs on this machine (ray start
    --head), which `--ray auto` joins; stopped after."""
    ray = str(Path(sys.executable).parent / "ray")
    flags = [f"--num-cpus={cpus}", "--include-dashboard=false", "--disable-usage-stats"]
    subprocess.run([ray, "start", "--head", *flags], capture_output=True, check=True)
    try:
        yield
    finally:
        subprocess.run([ray, "stop", "--force"], capture_output=True)


def throughput(k: int, tmp: Path) -> None:
    big, one = corpus(tmp / "k.txt", k), corpus(tmp / "one.txt", 1)
    ways = [
        ("--isolate --jobs 1", 0, ["--isolate", "--jobs", "1"]),
        ("--isolate --jobs 2", 0, ["--isolate", "--jobs", "2"]),
        ("--ray, 1 CPU, batch 32", 1, ["--ray", "auto", "--batch", "32"]),
        ("--ray, 2 CPUs, batch 32", 2, ["--ray", "auto", "--batch", "32"]),
        ("--ray, 2 CPUs, batch 1", 2, ["--ray", "auto", "--batch", "1"]),
    ]
    rates = {}
    print(f"{'way':26} {'t(1) s':>8} {'t(K) s':>8} {'configs/s':>10}")
    for name, cpus, flags in ways:
        with ray_cluster(cpus) if cpus else contextlib.nullcontext():
            t1, tk = timed([str(one), *flags]), timed([str(big), *flags])
        rates[name] = (k - 1) / max(tk - t1, 1e-9)
        print(f"{name:26} {t1:8.2f} {tk:8.2f} {rates[name]:10.1f}")
    tasks_32, tasks_1 = -(-k // 32), k
    per_task = (k / rates["--ray, 2 CPUs, batch 1"] - k / rates["--ray, 2 CPUs, batch 32"]) / (tasks_1 - tasks_32)
    print(f"Ray's cost a batch (task): {per_task * 1000:.1f} ms (2 CPUs: tasks run 2 at a time)")


def per_result(tmp: Path, n: int = 200_000) -> None:
    import json

    from api_tracer.replay.keyed import RunIdentity, Shard, write_identity
    from api_tracer.replay.options import ReplayOptions
    from api_tracer.replay.results import Result, Status

    report = tmp / "results.jsonl"
    with open(report, "w") as f:
        for i in range(n):
            line = f'torch.add(Tensor([{i % 13 + 1}, 3], "float32"), {i})'
            r = Result("c.txt", i + 1, line, "torch.add", Status.OK, seconds=0.001, key=f"{i:016x}")
            f.write(r.to_json() + "\n")
    write_identity(str(report), RunIdentity.of(ReplayOptions(), None, Shard()))
    start = time.perf_counter()
    done = subprocess.run([*CLI[:-1], "collect", str(report), "-o", str(tmp / "all.jsonl")], capture_output=True)
    seconds = time.perf_counter() - start
    assert done.returncode == 0, done.stderr
    each = seconds / n * 1e6
    print(f"collect of {n} results: {seconds:.1f} s, {each:.0f} us a result (with the start of the process)")
    json.loads((tmp / "all.jsonl").read_text().splitlines()[0])


def memory(lines: int, tmp: Path) -> None:
    for n in (lines // 10, lines):
        path = tmp / f"lines{n}.txt"
        with open(path, "w") as f:
            for i in range(n):
                f.write(f'torch.add(Tensor([{i % 13 + 1}, {i % 11 + 1}], "float32"), {i})\n')  # (small, distinct)
        shards = max(1, n // 1000)
        start = time.perf_counter()
        rss = peak_rss([str(path), "--dialect", "torch", "--shard", f"0/{shards}", "-o", str(tmp / "m.jsonl")])
        replayed = sum(1 for _ in open(tmp / "m.jsonl"))
        print(
            f"{n:>10} lines, --shard 0/{shards}: {replayed} replayed, peak {rss:.0f} MiB, "
            f"{time.perf_counter() - start:.0f} s"
        )
        path.unlink()
    from api_tracer.replay.keyed import KeySet

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    keys, rng = KeySet(), random.Random(0)
    for _ in range(lines):
        keys.add(rng.getrandbits(64))
    keys.fold()
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    per_key = grown * 2**20 / len(keys)
    print(f"a KeySet of {len(keys)} keys: the process's peak grew {grown:.0f} MiB ({per_key:.1f} B a key)")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configs", type=int, default=400)
    p.add_argument("--lines", type=int, default=10_000_000)
    p.add_argument("--part", choices=["all", "throughput", "result", "memory"], default="all")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as d:
        if args.part in ("all", "throughput"):
            throughput(args.configs, Path(d))
        if args.part in ("all", "result"):
            per_result(Path(d))
        if args.part in ("all", "memory"):
            memory(args.lines, Path(d))


if __name__ == "__main__":
    main()
