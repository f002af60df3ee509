"""api-tracer fuzz steered by behaviour against --blind drawing, side by side.

    python bench/bench_steer.py [--time SECONDS] [--repeats N] [--out DIR] [--part planted|real|both]

For each --seed 0 .. N-1 (default 3), two campaigns run at once, one
worker each (the machine's two cores), --blind and steered, on the same
seed lines for the same --time (default 240 s):

- planted: tests/usercode/fuzz_planted.py's 9 operators, fuzz_staged.py's
  3 (each defect three conditions deep), and torch's add and mm;
- real: --sample lines (default 48, spread evenly) of the configs of
  FRESH_WORKLOADS (tests/support/workloads.py: GPT-2, Mixtral, Mamba,
  Whisper; levels 2 and 3, with value ranges); no fuzz campaign ran on
  Mamba's or Whisper's before: few enough lines that a campaign gets past
  the seeds' edge cases to drawn ones, where the two modes differ.

For each campaign: the distinct behaviour signatures it reached
(campaign.json), its findings, the planted operators it found a defect
of (of 12), and its findings in torch's own operators whose reproducer
(repro/NAME.py), run in a fresh python where api_tracer does not import,
fails the way the finding says: those are its real torch defects,
counted once an (API, kind). Defects per CPU-hour divide planted and
torch defects by the campaign's CPU time (its process group: the
campaign, its workers and their fork server, read from /proc). Writes DIR/steer.json (default steer_bench).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import TEST_PATHS

MODES = {"blind": ("--blind",), "steered": ()}
PLANTED_NAMESPACES = ("fuzzdefects", "fuzzstaged")


def planted_defects() -> dict:
    """name -> (namespace, kind, oracle) of each planted operator's defect."""
    import fuzz_planted
    import fuzz_staged

    return {
        **{n: (fuzz_planted.LIB, *k) for n, k in fuzz_planted.KINDS.items()},
        **{n: (fuzz_staged.LIB, *k) for n, k in fuzz_staged.KINDS.items()},
    }


def env_with(paths):
    return {**os.environ, "PYTHONPATH": os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")])}


def planted_seeds(out: str) -> str:
    import fuzz_planted
    import fuzz_staged

    path = os.path.join(out, "planted.yaml")
    with open(path, "w", encoding="utf-8") as f:
        lines = [*fuzz_planted.SEEDS.values(), *fuzz_staged.SEEDS.values(), *fuzz_planted.TORCH_SEEDS]
        f.write("".join(line + "\n" for line in lines))
    return path


def real_seeds(out: str) -> str:
    from api_tracer import APITracer
    from api_tracer.corpus.merge import merge_sets
    from support.workloads import FRESH_WORKLOADS

    seeds = os.path.join(out, "fresh", "seeds", "api_configs.yaml")
    if os.path.exists(seeds):
        return seeds
    sets = os.path.join(out, "fresh", "traces")
    for name, make in FRESH_WORKLOADS.items():
        for level in (2, 3):
            step = make()
            step()  # (lazy initialization is not what a step computes)
            path = os.path.join(sets, f"{name}-{level}")
            with APITracer(output_path=path, levels=level, merge_output=True, value_ranges=True):
                step()
    merge_sets([sets], os.path.join(out, "fresh", "seeds"))
    return seeds


def sampled(path: str, n: int) -> str:
    """`n` of the file's lines, spread evenly over it (all where n is 0 or
    more than it holds), with the value ranges beside them."""
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    if not n or n >= len(lines):
        return path
    directory = os.path.join(os.path.dirname(os.path.dirname(path)), f"sample-{n}")
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "api_configs.yaml"), "w", encoding="utf-8") as f:
        f.writelines(lines[i * len(lines) // n] for i in range(n))
    shutil.copy(os.path.join(os.path.dirname(path), "api_value_ranges.yaml"), directory)
    return os.path.join(directory, "api_configs.yaml")


def campaign_pair(seeds: str, out: str, seed: int, seconds: float, flags) -> dict:
    """Blind and steered at once, each on one worker: mode -> (campaign
    dir, CPU seconds of its process group). Twice a second, the user and
    system time of each process of the group, with that of its children it
    waited for (a dead worker's, through its fork server), from /proc; the
    greatest sum seen, which misses the last half second at most."""
    running = {}
    for mode, extra in MODES.items():
        directory = os.path.join(out, f"{mode}-{seed}")
        shutil.rmtree(directory, ignore_errors=True)
        command = [sys.executable, "-m", "api_tracer", "fuzz", seeds, "-o", directory, "--time", str(seconds)]
        command += ["--jobs", "1", "--seed", str(seed), *flags, *extra]
        log = open(os.path.join(out, f"{mode}-{seed}.log"), "w")
        p = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env_with(TEST_PATHS), start_new_session=True
        )
        running[mode] = (p, directory, log)
    most = {p.pid: 0 for p, _, _ in running.values()}  # group -> the greatest CPU ticks seen
    while any(p.poll() is None for p, _, _ in running.values()):
        now = dict.fromkeys(most, 0)
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            group = int(fields[2])  # (after the name: state, ppid, pgrp, ...; utime 11 ... cstime 14)
            if group in now:
                now[group] += sum(int(x) for x in fields[11:15])
        most = {g: max(most[g], now[g]) for g in most}
        time.sleep(0.5)
    per_second = os.sysconf("SC_CLK_TCK")
    done = {}
    for mode, (p, directory, log) in running.items():
        log.close()
        done[mode] = (directory, most[p.pid] / per_second)
    return done


def plain_torch_env(tmp: str) -> dict:
    blocker = os.path.join(tmp, "blocked", "api_tracer")
    os.makedirs(blocker, exist_ok=True)
    with open(os.path.join(blocker, "__init__.py"), "w") as f:
        f.write('raise ImportError("api_tracer is not importable here")\n')
    return env_with([os.path.dirname(blocker), *TEST_PATHS])


def reproduces(directory: str, finding: dict, env: dict) -> bool:
    """Whether the finding's reproducer fails in plain torch the way it says."""
    if not finding.get("reproducer"):
        return False
    path = os.path.join(directory, finding["reproducer"])
    p = subprocess.Popen(
        [sys.executable, path], env=env, cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        out, err = p.communicate(timeout=20 if finding["kind"] == "hang" else 300)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        return finding["kind"] == "hang"
    if finding["kind"] == "crash":
        return p.returncode < 0
    if finding["kind"] == "error":
        return p.returncode == 1 and finding["message"].splitlines()[0] in err
    # (a mismatch's script prints where it differs "on the float64 side" or "on the repeated side", and exits 1)
    return finding["kind"] == "mismatch" and p.returncode == 1 and "on the " in out


def measure(directory: str, cpu: float, env: dict) -> dict:
    planted_kinds = planted_defects()
    with open(os.path.join(directory, "campaign.json")) as f:
        state = json.load(f)
    with open(os.path.join(directory, "findings.jsonl")) as f:
        findings = [json.loads(line) for line in f if line.strip()]
    planted = {
        name
        for name, (namespace, kind, oracle) in planted_kinds.items()
        if any(
            f["api"] == f"torch.ops.{namespace}.{name}.default" and f["kind"] == kind and oracle in (None, f["oracle"])
            for f in findings
        )
    }
    torch_findings = [f for f in findings if not any(f"torch.ops.{n}." in f["api"] for n in PLANTED_NAMESPACES)]
    real = [f for f in torch_findings if reproduces(directory, f, env)]
    defects = {(f["api"], f["kind"]) for f in real}
    return {
        "cases": state["cases_run"],
        "behaviours": state["behaviours"],
        "findings": len(findings),
        "planted": sorted(planted),
        "torch_findings": len(torch_findings),
        "torch_reproduced": len(real),
        "torch_defects": sorted(f"{a} {k}" for a, k in defects),
        "cpu_seconds": round(cpu, 1),
        "defects_per_cpu_hour": round((len(planted) + len(defects)) / (cpu / 3600), 1) if cpu else 0.0,
    }


def part(name: str, seeds: str, out: str, args, flags) -> dict:
    results = {mode: [] for mode in MODES}
    env = plain_torch_env(tempfile.mkdtemp())
    for seed in range(args.repeats):
        for mode, (directory, cpu) in campaign_pair(seeds, out, seed, args.time, flags).items():
            results[mode].append(measure(directory, cpu, env))
    lines = sum(1 for _ in open(seeds))
    print(f"\n{name}: {lines} seed lines, {args.time:g} s a campaign, one worker each, side by side")
    print(f"  {'mode':9} {'seed':>4} {'cases':>6} {'behaviours':>10} {'planted':>7} {'torch (real)':>12} {'/CPU-h':>7}")
    for mode, rows in results.items():
        for seed, r in enumerate(rows):
            torch_ = f"{r['torch_findings']} ({len(r['torch_defects'])})"
            print(
                f"  {mode:9} {seed:>4} {r['cases']:>6} {r['behaviours']:>10} {len(r['planted']):>7} {torch_:>12} "
                f"{r['defects_per_cpu_hour']:>7}"
            )
    for mode, rows in results.items():
        b = statistics.median(r["behaviours"] for r in rows)
        d = statistics.median(r["defects_per_cpu_hour"] for r in rows)
        print(f"  {mode}: behaviours median {b:g}, defects per CPU-hour median {d:g}")
    pairs = zip(results["steered"], results["blind"])
    ratio = [f["behaviours"] / b["behaviours"] for f, b in pairs if b["behaviours"]]
    print(f"  steered / blind, behaviours, seed by seed: {', '.join(f'{x:.2f}' for x in ratio)}")
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time", type=float, default=240.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default="steer_bench")
    parser.add_argument("--part", choices=("planted", "real", "both"), default="both")
    parser.add_argument(
        "--sample", type=int, default=48, help="real seed lines fuzzed, spread evenly over the file (0: all)"
    )
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    report = {}
    if args.part in ("planted", "both"):
        out = os.path.join(args.out, "planted")
        os.makedirs(out, exist_ok=True)
        flags = ("--timeout", "1.5", "--import", "fuzz_planted", "--import", "fuzz_staged")
        report["planted"] = part("planted", planted_seeds(args.out), out, args, flags)
    if args.part in ("real", "both"):
        out = os.path.join(args.out, "real")
        os.makedirs(out, exist_ok=True)
        report["real"] = part("real (fresh models)", sampled(real_seeds(args.out), args.sample), out, args, ())
    with open(os.path.join(args.out, "steer.json"), "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
