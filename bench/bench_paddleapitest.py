"""PaddleAPITest's corpus as its users replay it: a random sample of their
config files read by the parser and replayed, counted by outcome.

    python bench/bench_paddleapitest.py CORPUS [--lines 3000] [--seed 0]
                                        [--groups 5_accuracy,CI_CE_config,7_0_size,9_getset_item]
                                        [--out DIR] [--replay] [--check] [--jobs 2]
                                        [--engine REPO [--engine-lines 200] [--engine-path DIR]]

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
the configs a second. With --check, the same with `--check torch --backward
--outcomes`, counted by their outcome names.

With --engine REPO (a checkout of their repository), a subset of the
sample (`--engine-lines`, an equal share of each group, the sample's first
lines of each) is run three ways, each with --jobs workers: by their own
engine (`engine.py --accuracy=True`, on the CPU: paddleapitest_engine.py),
by plain replay and by replay `--check torch --backward`. Printed: the
configs a second of each, their outcome against ours line by line, and
every line where the two differ with what each side said.
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddleapitest_engine

from api_tracer.config import parse_call
from api_tracer.errors import ConfigSyntaxError
from api_tracer.replay.outcomes import FILE_PREFIX, OUTCOMES

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
    parser.add_argument("--check", action="store_true", help="also replay it with --check torch --backward")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--engine", metavar="REPO", help="a checkout of their repository: run their engine too")
    parser.add_argument("--engine-lines", type=int, default=200, help="the lines of the sample --engine runs")
    parser.add_argument("--engine-path", default="", help="PYTHONPATH for their engine (pandas, func_timeout)")
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
    if args.replay or args.check:
        replay_all(args, drawn, groups, path)
    if args.engine:
        side_by_side(args, drawn, groups)


def replay(path: str, out: str, jobs: int, check: bool) -> Tuple[float, List[dict]]:
    """`api-tracer replay` of a file: its wall seconds and its results; with
    `check`, `--check torch --backward`, sorted into out/outcomes."""
    report = os.path.join(out, "check.jsonl" if check else "report.jsonl")
    command = [sys.executable, "-m", "api_tracer", "replay", path, "--dialect", "paddle", "--isolate"]
    command += ["--jobs", str(jobs), "-o", report]
    if check:
        command += ["--check", "torch", "--backward", "--outcomes", os.path.join(out, "outcomes")]
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, check=False)
    seconds = time.perf_counter() - start
    with open(report) as f:
        return seconds, [json.loads(line) for line in f]


def replay_all(args: argparse.Namespace, drawn: List[Tuple[str, str, Origin]], groups: List[str], path: str) -> None:
    group_of = {i: group for i, (group, _, _) in enumerate(drawn, 1)}
    origin = {i: f"{file}:{number}" for i, (_, _, (file, number)) in enumerate(drawn, 1)}
    for check in [False, True] if args.check else [False]:
        seconds, results = replay(path, args.out, args.jobs, check)
        key = "outcome" if check else "status"
        counts: Dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        reasons: Dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        first: Dict[Tuple[str, str], str] = {}
        sorted_into = outcomes_of(args.out) if check else {}
        for r in results:
            status, line = (sorted_into.get(r["config"], "?") if check else r["status"]), r["line"]
            counts[group_of[line]][status] += 1
            counts["all"][status] += 1
            if status not in ("ok", "pass"):
                text = reason(r.get("message") or r.get("error") or "")
                reasons[status][text] += 1
                first.setdefault((status, text), f"{origin[line]}: {r['config'][:150]}")
        statuses = sorted(counts["all"], key=lambda s: -counts["all"][s])
        how = " --check torch --backward" if check else ""
        print(f"\nreplay --dialect paddle --isolate --jobs {args.jobs}{how}:")
        print(f"{len(results)} configs in {seconds:.0f} s, {len(results) / seconds:.1f} configs/s; by {key}:")
        print(f"{'group':16} " + " ".join(f"{s[:12]:>12}" for s in statuses))
        for group in [*groups, "all"]:
            print(f"{group:16} " + " ".join(f"{counts[group][s]:>12}" for s in statuses))
        for status in statuses:
            if status in ("ok", "pass"):
                continue
            print(f"\n{status}, by reason:")
            for text, n in reasons[status].most_common(25):
                print(f"  {n:5} {text}\n        e.g. {first[(status, text)]}")


def outcomes_of(out: str) -> Dict[str, str]:
    """Each line's outcome, from the files `replay --outcomes` wrote."""
    sorted_into: Dict[str, str] = {}
    folder = os.path.join(out, "outcomes")
    for name in OUTCOMES:
        file = os.path.join(folder, f"{FILE_PREFIX}{name}.txt")
        if os.path.exists(file):
            with open(file, encoding="utf-8", errors="surrogateescape") as f:
                sorted_into.update((line.strip(), name) for line in f if line.strip())
    return sorted_into


def side_by_side(args: argparse.Namespace, drawn: List[Tuple[str, str, Origin]], groups: List[str]) -> None:
    share = args.engine_lines // len(groups)
    subset = [line for g in groups for line in [ln for group, ln, _ in drawn if group == g][:share]]
    out = os.path.join(args.out, "engine")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "subset.txt")
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.writelines(line + "\n" for line in subset)
    theirs, their_seconds, logs = paddleapitest_engine.run(args.engine, subset, args.jobs, args.engine_path)
    plain_seconds, _ = replay(path, out, args.jobs, check=False)
    check_seconds, results = replay(path, out, args.jobs, check=True)
    ours = outcomes_of(out)
    said_here = {r["config"]: r.get("message") or r.get("error") or "" for r in results}
    n = len(subset)
    print(f"\n{n} lines ({share} of each group), --jobs {args.jobs} each:")
    print(f"  their engine.py --accuracy=True (CPU) {their_seconds:7.0f} s {n / their_seconds:6.2f} configs/s")
    print(f"  replay                                {plain_seconds:7.0f} s {n / plain_seconds:6.2f} configs/s")
    print(f"  replay --check torch --backward       {check_seconds:7.0f} s {n / check_seconds:6.2f} configs/s")
    pairs = collections.Counter((theirs.get(line, "none"), ours.get(line, "none")) for line in subset)
    print("\ntheirs -> ours: lines")
    for (t, o), count in sorted(pairs.items(), key=lambda kv: -kv[1]):
        print(f"  {t:24} {o:24} {count:5}")
    said_there = paddleapitest_engine.messages(logs)
    print("\nlines whose outcomes differ:")
    for line in subset:
        t, o = theirs.get(line, "none"), ours.get(line, "none")
        if t != o:
            print(f"  theirs {t}, ours {o}: {line[:200]}")
            print(f"    theirs said: {said_there.get(line, '')[:300]}")
            print(f"    ours said:   {said_here.get(line, '')[:300]}")


if __name__ == "__main__":
    main()
