"""What value_ranges costs: the value profile of integer tensor arguments,
and float_ranges: that of floating ones too.

    python bench/bench_values.py [--quick]

A model step whose operators take integer tensors (an embedding lookup of
token ids, a cross-entropy target with ignore_index -100 among its classes,
EmbeddingBag's indices and offsets) traced at level 3, without and with
value_ranges, and with float_ranges too (every floating tensor of the step
read: activations, weights, gradients), interleaved round after round in each of three fresh
processes; wall time, the best round per variant, as ratios to the
untraced step. Run it with PYTHONPATH pointing at another checkout's src/
to compare with the min/max ranges kept before the profile.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import best_side_by_side, command_line, print_against_untraced

from api_tracer import APITracer

torch.set_num_threads(1)


def make_step(batch: int, seq: int):
    torch.manual_seed(0)
    vocab, dim = 1000, 32
    embedding = torch.nn.Embedding(vocab, dim)
    bag = torch.nn.EmbeddingBag(vocab, dim, mode="mean")
    head = torch.nn.Linear(dim, vocab)
    ids = torch.randint(0, vocab, (batch, seq))
    target = torch.randint(0, vocab, (batch * seq,))
    target[::7] = -100
    offsets = torch.arange(0, batch * seq, seq)

    def step():
        hidden = embedding(ids) + bag(ids.reshape(-1), offsets)[:, None, :]
        loss = torch.nn.functional.cross_entropy(head(hidden).reshape(-1, vocab), target)
        loss.backward()

    return step


def measure_here(batch: int, seq: int, steps: int, rounds: int) -> str:
    step = make_step(batch, seq)
    step()
    variants = {
        "untraced": None,
        "level 3": {},
        "level 3 + value_ranges": {"value_ranges": True},
        "level 3 + value_ranges + float_ranges": {"value_ranges": True, "float_ranges": True},
    }
    best = {variant: float("inf") for variant in variants}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(rounds):
            for variant, options in variants.items():
                tracer = None if options is None else APITracer(output_path=tmp, levels=3, merge_output=True, **options)
                if tracer:
                    tracer.start()
                t0 = time.perf_counter()
                for _ in range(steps):
                    step()
                best[variant] = min(best[variant], time.perf_counter() - t0)
                if tracer:
                    tracer.stop()
    return json.dumps(best)


def main():
    args = command_line(__doc__, measure_here)
    rounds, steps = (3, 5) if args.quick else (8, 20)
    for batch, seq in ((4, 16), (32, 128)):
        print(f"\n== batch {batch}, seq {seq}: {steps} steps, best of 3 processes x {rounds} rounds")
        print_against_untraced(best_side_by_side(__file__, [batch, seq, steps, rounds], 3))


if __name__ == "__main__":
    main()
