"""The layer profiler's cost, as ratios measured side by side.

    python bench/bench_profile.py [--quick]

A small CNN and a small transformer (a BERT layer from transformers, from a
config, random weights), forward and backward on the CPU; then the same
layer at hidden 256, seq 128, batch 8, where operators are not tiny. Wall time of the
whole profiled block including making the table, best of all rounds; each
of three fresh processes measures the variants interleaved, round after
round (torch.profiler in processes of its own):

  untraced        the steps alone
  RecordFunction  a callback registered as Profile's observer is, doing
                  nothing: what at::RecordFunction costs by itself, the
                  floor under any operator-level profile
  Profile         api_tracer.Profile, then str(prof)
  RecordFunction (nodes)
                  the same empty callback for autograd node runs only, as
                  Profile(ops=False) registers it
  Profile(ops=False)
                  api_tracer.Profile timing the modules only (no callback
                  per operator), then str(prof)
  torch.profiler  torch.profiler.profile with a record_function per module
                  (global module hooks), then key_averages().table(): the
                  modern way to the same table

Target: Profile at most 1.10x untraced, and below the torch.profiler way;
both Profile variants are held to it.
"""

from __future__ import annotations

import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import best_side_by_side, command_line, print_against_untraced

VARIANTS = ("untraced", "RecordFunction", "Profile", "RecordFunction (nodes)", "Profile(ops=False)", "torch.profiler")


def workload(name):
    from support.workloads import cnn_forward_backward, transformer_block

    return {
        "cnn": cnn_forward_backward,
        "transformer": transformer_block,
        "transformer-256": lambda: transformer_block(hidden=256, seq=128, batch=8),
    }[name]()


class RecordFunctionPerModule:
    """torch.profiler, with a record_function span per module call."""

    def __init__(self, model):
        names = {id(m): (name or type(model).__name__) for name, m in model.named_modules()}
        self.names, self.open = names, []

    def __enter__(self):
        from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

        def pre(module, args):
            name = self.names.get(id(module))
            if name is not None:
                rf = torch.autograd.profiler.record_function(name)
                rf.__enter__()
                self.open.append(rf)

        def post(module, args, out):
            if id(module) in self.names and self.open:
                self.open.pop().__exit__(None, None, None)

        self.handles = [register_module_forward_pre_hook(pre), register_module_forward_hook(post, always_call=True)]
        self.prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
        self.prof.__enter__()

    def __exit__(self, *exc):
        self.prof.__exit__(None, None, None)
        for h in self.handles:
            h.remove()
        self.table = self.prof.key_averages().table()


def run_variant(variant, step, n):
    """Runs `n` steps as `variant` says (see the module's doc)."""
    if variant == "untraced":
        for _ in range(n):
            step()
    elif variant.startswith("RecordFunction"):
        from api_tracer import _C

        _C._empty_profile_callback(True, ops=variant == "RecordFunction")
        for _ in range(n):
            step()
        _C._empty_profile_callback(False)
    elif variant.startswith("Profile"):
        from api_tracer import Profile

        with Profile(step.model, ops=variant == "Profile") as prof:
            for _ in range(n):
                step()
        str(prof)
    else:
        with RecordFunctionPerModule(step.model):
            for _ in range(n):
                step()


def measure_here(name, n, variants, rounds):
    """In this process: the best wall time of each of `variants` over
    `rounds` rounds, the variants interleaved (their order rotating each
    round), as a JSON object."""
    torch.set_num_threads(1)
    step = workload(name)
    for _ in range(3):
        step()
    best = {v: float("inf") for v in variants}
    for r in range(rounds):
        for i in range(len(variants)):
            variant = variants[(i + r) % len(variants)]
            t0 = time.perf_counter()
            run_variant(variant, step, n)
            best[variant] = min(best[variant], time.perf_counter() - t0)
    return json.dumps(best)


def report(name, title, n, rounds, repeats):
    # The cheap variants side by side in each process; torch.profiler, tens
    # of times slower and leaving its own state behind, in processes of its own.
    best = best_side_by_side(__file__, [name, n, list(VARIANTS[:-1]), rounds], repeats)
    best.update(best_side_by_side(__file__, [name, n, ["torch.profiler"], rounds], repeats))
    base = best["untraced"]
    print(
        f"\n== {title} ({n} steps; wall time incl. making the table, best of {repeats} processes x {rounds} "
        f"rounds, interleaved)"
    )
    print_against_untraced(best)
    for profile, floor in (("Profile", "RecordFunction"), ("Profile(ops=False)", "RecordFunction (nodes)")):
        ratio = best[profile] / base
        print(
            f"  {profile}: {ratio:.3f}x untraced (target 1.10x: {'met' if ratio <= 1.10 else 'MISSED'}; "
            f"{floor} alone {best[floor] / base:.3f}x, {profile} over it {best[profile] / best[floor]:.3f}x); "
            f"below the torch.profiler way: {'yes' if best[profile] < best['torch.profiler'] else 'NO'}"
        )


def main():
    args = command_line(__doc__, measure_here)
    rounds, repeats = (2, 1) if args.quick else (8, 3)
    report("cnn", "small CNN forward + backward (batch 4, 32x32)", 10 if args.quick else 40, rounds, repeats)
    report(
        "transformer", "BERT layer forward + backward (hidden 64, seq 16)", 10 if args.quick else 40, rounds, repeats
    )
    # The same layer at a size where each operator does real work: what the
    # per-operator cost comes to when operators are not tiny.
    report(
        "transformer-256",
        "BERT layer forward + backward (hidden 256, seq 128, batch 8)",
        3 if args.quick else 10,
        rounds,
        repeats,
    )


if __name__ == "__main__":
    main()
