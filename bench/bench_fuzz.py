"""api-tracer fuzz on real configs and on planted defects.

    python bench/bench_fuzz.py [--time SECONDS] [--jobs N] [--out DIR] [--planted-only]

The real campaign: the real models of tests/support/workloads.py
(FIDELITY_WORKLOADS and HELD_OUT: GPT-2, Llama, ViT, an RNN tagger, an
embedding bag classifier, T5, Qwen2, Swin, nn.Transformer; random weights) traced at
levels 2 and 3 with value ranges, merged, and fuzzed for --time seconds
(default 900) on --jobs workers (default 2) into DIR/real (default
fuzz_bench). Prints the campaign's summary: cases run, rate, findings
with their reproducers, which api-tracer replay DIR/real/findings.yaml
--isolate shows again.

The planted campaign: tests/usercode/fuzz_planted.py's operators and torch's add and
mm, 60 s on 2 workers, as tests/fuzz/test_fuzz.py runs it, for each of --seed 0
to 3: which planted defects were found, and whether anything was found in
torch's own operators (it must not be).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import TEST_PATHS


def trace_workloads(out: str) -> str:
    """The workloads' configs at levels 2 and 3, merged: the seed file."""
    from api_tracer import APITracer
    from api_tracer.corpus.merge import merge_sets
    from support.workloads import FIDELITY_WORKLOADS, HELD_OUT

    sets = os.path.join(out, "traces")
    for name, make in {**FIDELITY_WORKLOADS, **HELD_OUT}.items():
        for level in (2, 3):
            step = make()
            step()  # (its first call: lazy initialization is not what the model computes each step)
            with APITracer(
                output_path=os.path.join(sets, f"{name}-{level}"), levels=level, merge_output=True, value_ranges=True
            ):
                step()
    merge_sets([sets], os.path.join(out, "seeds"))
    return os.path.join(out, "seeds", "api_configs.yaml")


def fuzz(*args: str, env: dict = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "api_tracer", "fuzz", *args], capture_output=True, text=True, env=env)


def planted(out: str) -> None:
    import fuzz_planted

    seeds = os.path.join(out, "planted.yaml")
    fuzz_planted.write_seeds(seeds)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*TEST_PATHS, os.environ.get("PYTHONPATH", "")])}
    print(f"planted campaign: {len(fuzz_planted.SEEDS)} planted operators and torch's add and mm, 60 s, 2 workers")
    for seed in range(4):
        r = fuzz(
            seeds,
            "-o",
            os.path.join(out, f"planted-{seed}"),
            "--time",
            "60",
            *fuzz_planted.CAMPAIGN_FLAGS,
            "--seed",
            str(seed),
            env=env,
        )
        head = r.stdout.splitlines()[0] if r.stdout else r.stderr
        found = {name for name in fuzz_planted.SEEDS if f"fuzzdefects.{name}." in r.stdout}
        torch_found = [
            line
            for line in r.stdout.splitlines()
            if line.startswith("  ") and "fuzzdefects" not in line and not line.startswith("      ")
        ]
        missed = sorted(set(fuzz_planted.SEEDS) - found)
        print(
            f"  --seed {seed}: {len(found)}/{len(fuzz_planted.SEEDS)} found"
            f"{' (missed ' + ', '.join(missed) + ')' if missed else ''}"
            f"; in torch's own: {len(torch_found)}; {head.split(';')[0]}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time", type=float, default=900.0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", default="fuzz_bench")
    parser.add_argument("--planted-only", action="store_true")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    planted(args.out)
    if args.planted_only:
        return
    seeds = trace_workloads(args.out)
    print(
        f"\nreal campaign: {sum(1 for _ in open(seeds))} seed configs (levels 2 and 3 of the real models), "
        f"{args.time:g} s, {args.jobs} workers"
    )
    r = fuzz(seeds, "-o", os.path.join(args.out, "real"), "--time", str(args.time), "--jobs", str(args.jobs))
    print(r.stdout, end="")


if __name__ == "__main__":
    main()
