"""How right replay's judge is, both ways, and what it costs: --check float64
with the error model (replay/judge/error_model.py) against the judge it replaced,
torch.testing's rtol/atol of the less precise dtype, on the sets of
tests/support/judge_sets.py (torch's own kernels, which are right, and the
operators of tests/usercode/planted_defects.py, which are not), side by side in one
run.

    python bench/bench_judge.py [--splits tuning,held_out,validation,fresh,final,sizes,sizes_final] [--pairs]
                                [--cost N [--cost-set judge|elementwise]] [--workloads]
                                [--elementwise tuning,held_out]

Per split and judge: the false alarms among torch's kernels and the defects
caught. With --pairs, also every fixed (rtol, atol) pair of a grid, to see
whether any pair separates the two sets. With --cost N, the time per config
of plain replay, of --check float64 with rtol/atol, and with the error
model, over the tuning set's correct lines, best of N rounds, as ratios to
plain replay; with --cost-set elementwise, over the elementwise sets'
tuning lines (tests/support/elementwise_sets.py), where the error model
also judges each line on the region draws, and also without them. With
--elementwise, those sets judged both ways, with a plain-torch reproducer
of each torch defect found. With --workloads, the configs of the real models
(tests/support/workloads.py's FIDELITY_WORKLOADS and HELD_OUT) at levels 2 and 3,
judged with --backward by both judges, and every config the error model
does not call ok, with why.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from typing import Dict, List, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: F401  (puts the tests' `support` and user code on the path)

from api_tracer.replay import Config, ReplayOptions, run_in_process
from api_tracer.replay.judge import error_model
from support.judge_sets import CORRECT, DEFECTS, KNOWN_MISSES, TORCH_DEFECTS

IMPORTS = ("planted_defects",)


def judge(
    lines: List[Tuple[str, bool]],
    check: Optional[str] = "float64",
    model: bool = True,
    rtol: Optional[float] = None,
    atol: Optional[float] = None,
) -> List[Tuple[str, object]]:
    """(line, Result) per line. model=False: the judge before the error
    model (torch.testing's tolerance of the dtype, or rtol/atol given)."""
    bounds = error_model.bounds
    if not model:
        error_model.bounds = lambda *a, **k: {}  # no leaf bounded: every one within rtol/atol
    try:
        out = []
        for backward in (False, True):
            group = [line for line, b in lines if b == backward]
            configs = [Config("judge", i + 1, line) for i, line in enumerate(group)]
            options = ReplayOptions(
                check=check, backward=backward and bool(check), imports=IMPORTS, rtol=rtol, atol=atol
            )
            out += [(c.text, r) for c, r in zip(configs, run_in_process(configs, options, lambda r: None))]
        return out
    finally:
        error_model.bounds = bounds


def tally(split: str, **how: object) -> Dict[str, object]:
    """False alarms (torch's kernels not judged ok, but those the sets mark
    as torch's own defects, TORCH_DEFECTS) and defects caught."""
    lines = CORRECT[split]
    in_order = [key for key in lines if not key[1]] + [key for key in lines if key[1]]  # (as judge runs them)
    correct = list(zip(in_order, [r for _, r in judge(lines, **how)]))
    defects = judge(DEFECTS[split], **how)
    return {
        "false": [line for (line, b), r in correct if r.status != "ok" and (line, b) not in TORCH_DEFECTS],
        "torch": [line for (line, b), r in correct if r.status != "ok" and (line, b) in TORCH_DEFECTS],
        "correct": len(correct),
        "caught": sum(r.status == "mismatch" for _, r in defects),
        "defects": len(defects),
        "missed": [line for line, r in defects if r.status != "mismatch"],
    }


def elementwise(splits: List[str]) -> None:
    """The elementwise sets (tests/support/elementwise_sets.py), both ways,
    per split: torch's kernels judged ok, those the sets mark as torch's own
    defects, and the planted defects caught; every line that is none of
    what the sets expect, and a plain-torch reproducer of each torch defect
    found."""
    from support import elementwise_sets as sets

    print(f"\n{'elementwise':12} {'torch ok':>10} {'torch defects':>14} {'planted caught':>15}")
    for split in splits:
        known = sets.torch_defects()
        lines = sets.correct(split)
        in_order = [key for key in lines if not key[1]] + [key for key in lines if key[1]]  # (as judge runs them)
        correct = list(zip(in_order, [r for _, r in judge(lines)]))
        defects = judge(sets.defects(split))
        found = [(line, r) for line, r in correct if r.status != "ok"]
        caught = [line for line, r in defects if r.status == "mismatch"]
        print(
            f"{split:12} {len(correct) - len(found):>4} / {len(correct):<5} {len(found):>6} {'':7}"
            f"{len(caught):>4} / {len(defects):<5}",
            flush=True,
        )
        for (line, backward), r in found:
            said = known.get((line, backward), "NEW: not in the sets' list").split(" (measured")[0][:60]
            print(f"    torch defect{' (backward)' if backward else ''}: {line}\n        {said}...: {r.message[:400]}")
            print("        reproducer: " + sets.reproducer(line, r.message).replace("\n", "\n                    "))
        for line, r in defects:
            if r.status != "mismatch":
                print(f"    missed{' (known)' if line in sets.KNOWN_MISSES else ''}: {line}: {r.message[:200]}")


def workloads() -> None:
    import tempfile
    from collections import Counter

    from api_tracer import APITracer
    from api_tracer.formats.configs import ranges_beside, read_config_file
    from api_tracer.formats.summaries import read_value_ranges
    from support.workloads import FIDELITY_WORKLOADS, HELD_OUT

    statuses = ("ok", "mismatch", "vacuous", "failed", "skipped", "invalid")
    print(
        f"\n{'model':16} {'level':>5} {'configs':>7}   --check float64 --backward: "
        f"{'/'.join(statuses)}, rtol/atol -> error model"
    )
    totals = {judge_name: Counter() for judge_name in ("rtol/atol", "error model")}
    notes = []
    for name, make in {**FIDELITY_WORKLOADS, **HELD_OUT}.items():
        for level in (2, 3):
            step = make()
            step()
            with tempfile.TemporaryDirectory() as out:
                with APITracer(output_path=out, levels=level, merge_output=True, value_ranges=True):
                    step()
                path = os.path.join(out, "api_configs.yaml")
                configs, ranges = read_config_file(path), read_value_ranges(ranges_beside(path))
            row = []
            for judge_name, model in (("rtol/atol", False), ("error model", True)):
                bounds = error_model.bounds
                if not model:
                    error_model.bounds = lambda *a, **k: {}
                try:
                    results = run_in_process(
                        configs, ReplayOptions(ranges=ranges, check="float64", backward=True), lambda r: None
                    )
                finally:
                    error_model.bounds = bounds
                counts = Counter(str(r.status) for r in results)
                totals[judge_name].update(counts)
                row.append("/".join(str(counts[s]) for s in statuses))
                if model:
                    notes += [
                        f"  {name} {level}: {r.status}: {r.message[:200]}\n      {r.config[:160]}"
                        for r in results
                        if r.status != "ok"
                    ]
            print(f"{name:16} {level:>5} {len(configs):>7}   {row[0]:>18} -> {row[1]}", flush=True)
    print(
        f"{'all':16} {'2/3':>5} {'':>7}   "
        + " -> ".join("/".join(str(totals[j][s]) for s in statuses) for j in ("rtol/atol", "error model"))
    )
    print("\n".join(notes))


def cost(rounds: int, which: str) -> None:
    """Time per config of plain replay and of each judge, interleaved round by
    round (the machine's load falls on all alike), best of `rounds`, as ratios
    to plain replay. which: "judge" (the judge sets' tuning lines, correct
    ones) or "elementwise" (the elementwise sets' tuning lines, where the
    error model also judges the region draws; "first draw only" is it
    without them)."""
    from api_tracer.replay.judge import check

    if which == "elementwise":
        from support import elementwise_sets

        lines = elementwise_sets.correct("tuning")
    else:
        lines = CORRECT["tuning"]
    kinds: Dict[str, Dict[str, object]] = {
        "plain replay": {"check": None},
        "--check float64, rtol/atol": {"model": False},
        "--check float64, error model": {},
    }
    if which == "elementwise" and hasattr(check, "REGIONS"):
        kinds["  of it, first draw only"] = {"regions": False}
    best = {k: float("inf") for k in kinds}
    for _ in range(rounds):
        for kind, how in kinds.items():
            how = dict(how)
            regions = getattr(check, "REGIONS", None)
            if not how.pop("regions", True):
                check.REGIONS = {}
            try:
                start = time.perf_counter()
                judge(lines, **how)
                best[kind] = min(best[kind], time.perf_counter() - start)
            finally:
                if regions is not None:
                    check.REGIONS = regions
    base = best["plain replay"]
    print(f"\ncost over {len(lines)} {which} configs (best of {rounds}):")
    for kind, seconds in best.items():
        print(f"  {kind:30} {seconds / len(lines) * 1e3:8.1f} ms a config  {seconds / base:6.2f}x plain replay")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--splits", default=",".join(CORRECT), help="the sets' splits to judge (comma-separated; '' for none)"
    )
    parser.add_argument("--pairs", action="store_true", help="also a grid of fixed rtol/atol pairs")
    parser.add_argument("--cost", type=int, default=0, metavar="N", help="time per config, best of N rounds")
    parser.add_argument(
        "--cost-set",
        choices=("judge", "elementwise"),
        default="judge",
        help="--cost over the judge sets' tuning lines or the elementwise sets' (with the region draws)",
    )
    parser.add_argument("--workloads", action="store_true", help="also the real models' configs, levels 2 and 3")
    parser.add_argument(
        "--elementwise",
        default="",
        help="also the elementwise sets' splits (comma-separated: tuning,held_out), with reproducers",
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    print(f"{'split':10} {'judge':28} {'false alarms':>14} {'defects caught':>15}")
    for split in filter(None, args.splits.split(",")):
        judges = [("error model", {}), ("rtol/atol of the dtype", {"model": False})]
        if args.pairs:
            judges += [(f"rtol=atol={t:g}", {"model": False, "rtol": t, "atol": t}) for t in (1e-5, 1e-4, 1e-3, 1e-2)]
        for name, how in judges:
            t = tally(split, **how)
            print(
                f"{split:10} {name:28} {len(t['false']):>6} / {t['correct']:<6} {t['caught']:>6} / {t['defects']:<6}",
                flush=True,
            )
            if name == "error model":
                for line in t["missed"]:
                    print(f"    missed{' (known)' if line in KNOWN_MISSES else ''}: {line}")
                for line in t["false"]:
                    print(f"    false alarm: {line}")
                for line in t["torch"]:
                    print(f"    torch defect (known, TORCH_DEFECTS): {line}")
    if args.cost:
        cost(args.cost, args.cost_set)
    if args.elementwise:
        elementwise(args.elementwise.split(","))
    if args.workloads:
        workloads()


if __name__ == "__main__":
    main()
