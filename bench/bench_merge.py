"""Merging a corpus of many file sets: time and peak memory, the streaming
merge against the merge of sets without sources.

    python bench/bench_merge.py [--sets 1000] [--configs 10000] [--universe 200000] [--dir DIR]

It generates SETS file sets (summary files only, as `stream_trace=False`
leaves them), each of CONFIGS distinct config lines drawn from a universe of
UNIVERSE lines (so that they overlap as the configs of many models do), each
labelled, with its api_config_sources.yaml. Then, each in a fresh process,
side by side:

  streaming   api-tracer merge of the sets as they are: every set's
              api_config_sources.yaml and api_configs.yaml read side by
              side, a line at a time (formats/sources.py)
  in memory   the same sets with their api_config_sources.yaml set aside:
              the path every merge took before sources (each set's configs
              read and parsed whole, the distinct ones kept in a set), which
              is still the path of sets traced without a label

and prints each one's wall time and peak RSS, and their ratios. The merged
api_configs.yaml of both must be the same bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time

APIS = [
    "torch.ops.aten.add.Tensor",
    "torch.ops.aten.mul.Tensor",
    "torch.ops.aten.mm.default",
    "torch.ops.aten.convolution.default",
    "torch.ops.aten.sum.dim_IntList",
    "torch.ops.aten.view.default",
    "torch.ops.aten.relu.default",
    "torch.ops.aten.native_layer_norm.default",
    "torch.ops.aten._softmax.default",
    "torch.ops.aten.addmm.default",
]
DTYPES = ["float32", "float16", "bfloat16", "int64"]


def universe(n: int, rng: random.Random) -> list:
    lines = set()
    while len(lines) < n:
        api = rng.choice(APIS)
        dtype = rng.choice(DTYPES)
        shape = [rng.choice([1, 2, 3, 4, 8, 16, 32, 64, 128, 256, 512, 768, 1024]) for _ in range(rng.randint(1, 4))]
        t = f'Tensor({shape}, "{dtype}")'
        lines.add(f"{api}({t}, {t}, {rng.randint(0, 3)})")
    return sorted(lines)


def write_set(directory: str, label: str, lines: list, rng: random.Random) -> None:
    os.makedirs(directory)
    calls = [rng.randint(1, 50) for _ in lines]
    per_api: dict = {}
    for line, n in zip(lines, calls):
        api = line[: line.index("(")]
        per_api[api] = per_api.get(api, 0) + n
    total = sum(calls)
    with open(os.path.join(directory, "api_configs.yaml"), "w") as f:
        f.write("".join(line + "\n" for line in lines))
    quoted = json.dumps(label)
    with open(os.path.join(directory, "api_config_sources.yaml"), "w") as f:
        f.write(f'labels:\n- {{"label": {quoted}, "calls": {total}}}\nconfigs:\n')
        f.write(
            "".join(
                f'- {{"config": {json.dumps(line)}, "calls": {n}, "sources": 1, "from": {{{quoted}: {n}}}}}\n'
                for line, n in zip(lines, calls)
            )
        )
    with open(os.path.join(directory, "api_apis.txt"), "w") as f:
        f.write("".join(api + "\n" for api in sorted(per_api)))
    ordered = sorted(per_api.items(), key=lambda kv: -kv[1])
    with open(os.path.join(directory, "api_statistics.yaml"), "w") as f:
        f.write(f"Total APIs: {len(per_api)}\nTotal API calls: {total}\n\n")
        f.write("".join(f"{api}: {n} ({100.0 * n / total:.2f}%)\n" for api, n in ordered))


def generate(args: argparse.Namespace, corpus: str, bare: str) -> None:
    rng = random.Random(0)
    lines = universe(args.universe, rng)
    for i in range(args.sets):
        write_set(os.path.join(corpus, f"set{i:05d}"), f"model{i}", sorted(rng.sample(lines, args.configs)), rng)
    shutil.copytree(corpus, bare, ignore=shutil.ignore_patterns("api_config_sources.yaml"))


def merge(corpus: str, out: str) -> tuple:
    """Wall seconds and peak RSS (bytes) of `api-tracer merge CORPUS -o OUT` in a fresh process."""
    code = (
        "import resource, sys; from api_tracer.cli import main; code = main(['merge', sys.argv[1], '-o', "
        "sys.argv[2]]); print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); "
        "sys.exit(code)"
    )
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, corpus, out], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"merge failed:\n{done.stderr}")
    return seconds, int(done.stderr.strip().splitlines()[-1]) * 1024


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sets", type=int, default=1000)
    p.add_argument("--configs", type=int, default=10000)
    p.add_argument("--universe", type=int, default=200000)
    p.add_argument("--dir", default="/tmp/api-tracer-bench-merge")
    p.add_argument("--generate-only", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    corpus, bare = os.path.join(args.dir, "corpus"), os.path.join(args.dir, "bare")
    if args.generate_only:
        generate(args, corpus, bare)
        return
    shutil.rmtree(args.dir, ignore_errors=True)
    start = time.perf_counter()
    # generated by a child: a merge process forked from this one would start
    # from this one's resident set (its peak RSS is inherited across fork)
    subprocess.run([sys.executable, __file__, "--generate-only", *sys.argv[1:]], check=True)
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(corpus) for f in fs)
    print(
        f"{args.sets} sets x {args.configs} configs ({args.sets * args.configs} lines, {size / 2**30:.2f} GiB) "
        f"from {args.universe} distinct lines, made in {time.perf_counter() - start:.0f} s"
    )
    results = {}
    for name, source in (("streaming", corpus), ("in memory", bare)):
        out = os.path.join(args.dir, f"out-{name.replace(' ', '-')}")
        results[name] = merge(source, out)
        seconds, rss = results[name]
        print(f"  {name:<10} {seconds:8.1f} s  peak RSS {rss / 2**20:8.0f} MiB")
    same = all(
        open(os.path.join(args.dir, f"out-{n}", "api_configs.yaml"), "rb").read()
        == open(os.path.join(args.dir, "out-in-memory", "api_configs.yaml"), "rb").read()
        for n in ["streaming"]
    )
    (ts, ms), (tm, mm) = results["streaming"], results["in memory"]
    print(f"  streaming / in memory: time {ts / tm:.2f}, peak RSS {ms / mm:.2f}; merged configs the same: {same}")
    shutil.rmtree(args.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
