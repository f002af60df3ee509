"""PaddleAPITest's corpus as its users replay it: a random sample of their
config files read by the parser and replayed, counted by outcome.

    python bench/bench_paddleapitest.py CORPUS [--lines 3000] [--seed 0]
                                        [--groups 5_accuracy,CI_CE_config,7_0_size,9_getset_item]
                                        [--out DIR] [--replay] [--jobs 2]

CORPUS is their `tester/api_config` folder (github.com/PFCCLab/PaddleAPITest;
not in this repository: the corpus is theirs). The sample is the same for
the same seed and files: `--lines` distinct lines, an equal share from each
group (a folder of theirs), drawn uniformly from that group's distinct
lines. It is written to DIR/sample.txt with DIR/sample_origin.tsv (each
sample line's file:line in their corpus).

Printed: per group, the lines sampled and how many parse, and every line
that does not with its origin and reason. With --replay, `api-tracer replay
DIR/sample.txt --dialect paddle --isolate` and its statuses per group, the
reasons of those not ok by their first words (the most frequent first), and
the configs a second.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import re
import subprocess
import sys
import time
from typing import Dict, List, Tuple

from api_tracer.config import parse_call
from api_tracer.errors import ConfigSyntaxError

GROUPS = ("5_accuracy", "CI_CE_config", "7_0_size", "9_getset_item")
Origin = Tuple[str, int]  # (file relative to CORPUS, line)


def distinct_lines(corpus: str, group: str) -> Dict[str, Origin]:
    """Each distinct line of a group's files with its first file:line, in
    the files' sorted order."""
    lines: Dict[str, Origin] = {}
    folder = os.path.join(corpus, group)
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".txt"):
            continue
        with open(os.path.join(folder, name), encoding="utf-8", errors="surrogateescape") as f:
            for number, line in enumerate(f, 1):
                line = line.strip()
                if line and not line.startswith("#"):
                    lines.setdefault(line, (f"{group}/{name}", number))
    return lines


def sample(corpus: str, groups: List[str], total: int, seed: int) -> List[Tuple[str, str, Origin]]:
    """(group, line, origin) of the sample, group by group."""
    rng = random.Random(seed)
    out = []
    for i, group in enumerate(groups):
        share = total // len(groups) + (i < total % len(groups))
        lines = distinct_lines(corpus, group)
        chosen = rng.sample(sorted(lines), min(share, len(lines)))
        out += [(group, line, lines[line]) for line in chosen]
    return out


def reason(message: str) -> str:
    """A result's message as a template: its numbers and quoted texts
    replaced, cut to its first words."""
    text = re.sub(r"\"[^\"]*\"|'[^']*'", "'.'", message.split("\n")[0])
    text = re.sub(r"-?\d+(\.\d+)?(e[+-]?\d+)?", "N", text)
    return text[:110]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", help="their tester/api_config folder")
    parser.add_argument("--lines", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--groups", default=",".join(GROUPS), help="their folders to sample (comma-separated)")
    parser.add_argument("--out", default="paddleapitest_sample")
    parser.add_argument("--replay", action="store_true", help="also replay the sample and count its outcomes")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    groups = args.groups.split(",")
    os.makedirs(args.out, exist_ok=True)
    drawn = sample(args.corpus, groups, args.lines, args.seed)
    path = os.path.join(args.out, "sample.txt")
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.writelines(line + "\n" for _, line, _ in drawn)
    with open(os.path.join(args.out, "sample_origin.tsv"), "w") as f:
        f.writelines(f"{i}\t{file}:{number}\n" for i, (_, _, (file, number)) in enumerate(drawn, 1))

    print(f"{'group':16} {'lines':>6} {'parse':>6} {'rate':>8}")
    parsed: Dict[str, List[int]] = collections.defaultdict(lambda: [0, 0])
    unparsed = []
    for group, line, (file, number) in drawn:
        parsed[group][0] += 1
        try:
            parse_call(line)
            parsed[group][1] += 1
        except ConfigSyntaxError as e:
            unparsed.append(f"  {file}:{number}: {e.message} (column {e.column}): {line[:160]}")
    parsed["all"] = [sum(parsed[g][0] for g in groups), sum(parsed[g][1] for g in groups)]
    for group in [*groups, "all"]:
        n, ok = parsed[group]
        print(f"{group:16} {n:>6} {ok:>6} {100 * ok / max(n, 1):7.2f}%")
    print("\n".join(["lines that do not parse:", *unparsed] if unparsed else ["every line parses"]))
    if not args.replay:
        return

    report = os.path.join(args.out, "report.jsonl")
    start = time.perf_counter()
    command = [sys.executable, "-m", "api_tracer", "replay", path, "--dialect", "paddle", "--isolate"]
    subprocess.run(command + ["--jobs", str(args.jobs), "-o", report], stdout=subprocess.DEVNULL, check=False)
    seconds = time.perf_counter() - start
    group_of = {i: group for i, (group, _, _) in enumerate(drawn, 1)}
    origin = {i: f"{file}:{number}" for i, (_, _, (file, number)) in enumerate(drawn, 1)}
    counts: Dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    reasons: Dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    first: Dict[Tuple[str, str], str] = {}
    with open(report) as f:
        results = [json.loads(line) for line in f]
    for r in results:
        status, line = r["status"], r["line"]
        counts[group_of[line]][status] += 1
        counts["all"][status] += 1
        if status != "ok":
            key = reason(r.get("message") or r.get("error") or "")
            reasons[status][key] += 1
            first.setdefault((status, key), f"{origin[line]}: {r['config'][:150]}")
    statuses = sorted(counts["all"], key=lambda s: -counts["all"][s])
    print(f"\nreplay --dialect paddle --isolate --jobs {args.jobs}: {len(results)} configs in {seconds:.0f} s")
    print(f"{'group':16} " + " ".join(f"{s:>9}" for s in statuses))
    for group in [*groups, "all"]:
        print(f"{group:16} " + " ".join(f"{counts[group][s]:>9}" for s in statuses))
    for status in statuses:
        if status == "ok":
            continue
        print(f"\n{status}, by reason:")
        for key, n in reasons[status].most_common(25):
            print(f"  {n:5} {key}\n        e.g. {first[(status, key)]}")


if __name__ == "__main__":
    main()
