"""A fuzz campaign long enough to plateau: its distinct findings counted
every five minutes, and each finding's reproducer run in plain torch.

    python bench/bench_campaign.py [--time SECONDS] [--jobs 2] [--seed 0] [--out DIR]
                                   [--opinfo-dtype float32] [--skip-seeds]

The seeds, made once into DIR/seeds (kept between runs):

- real models no campaign fuzzed before, with random weights, one training
  step each traced at levels 2 and 3 with value ranges (after a warm-up
  step): ConvNeXt (depthwise 7x7 convolutions, channels-last layer norms),
  Wav2Vec2 (a convolutional feature encoder, group norm, a weight-normed
  positional convolution, CTC loss) and BART (an encoder-decoder, label
  smoothing off, padded labels);
- torch's operator database: every OpInfo of op_db with an --opinfo-dtype
  variant on the CPU, its first sample input called as the OpInfo calls it
  (bench_surface.py's corpus), traced at level 2 with value ranges.

Then one campaign, `api-tracer fuzz DIR/seeds/api_configs.yaml --time T
--jobs J --seed S -o DIR/campaign`, steered (the default), with the default
oracles. Afterwards it prints:

- the distinct findings (one a signature) first seen by the end of each
  five minutes, from each finding's `first_seen` against the campaign's
  start: the campaign plateaued where the last third of its intervals added
  none;
- its classes (DIR/campaign/classes.md);
- each finding with whether its reproducer, run in a fresh python where
  api_tracer does not import, fails the way the finding says.

Writes DIR/campaign.json (the counts, the findings and what their reproducers did).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: F401 - the tests' support package on sys.path
from bench_steer import plain_torch_env, reproduces

INTERVAL = 300.0


# -- the seeds -------------------------------------------------------------------


def convnext_step():
    import torch
    from transformers import ConvNextConfig, ConvNextForImageClassification

    from support.workloads import training_step

    torch.manual_seed(0)
    config = ConvNextConfig(num_channels=3, hidden_sizes=[8, 16], depths=[1, 1], num_stages=2, num_labels=5)
    model = ConvNextForImageClassification(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    pixels, labels = torch.randn(2, 3, 32, 32), torch.randint(0, 5, (2,))
    return training_step(model, optimizer, lambda: model(pixel_values=pixels, labels=labels).loss)


def wav2vec2_step():
    import torch
    from transformers import Wav2Vec2Config, Wav2Vec2ForCTC

    from support.workloads import training_step

    torch.manual_seed(0)
    config = Wav2Vec2Config(
        hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64,
        conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4, vocab_size=12, mask_time_prob=0.0, ctc_loss_reduction="mean",
    )  # fmt: skip
    model = Wav2Vec2ForCTC(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    audio = torch.randn(2, 400)
    labels = torch.randint(1, 12, (2, 5))
    labels[1, -2:] = -100
    return training_step(model, optimizer, lambda: model(input_values=audio, labels=labels).loss)


def bart_step():
    import torch
    from transformers import BartConfig, BartForConditionalGeneration

    from support.workloads import training_step

    torch.manual_seed(0)
    config = BartConfig(
        vocab_size=64, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=32,
    )  # fmt: skip
    model = BartForConditionalGeneration(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(3, 64, (2, 10))
    labels = torch.randint(3, 64, (2, 6))
    labels[:, -1] = -100
    return training_step(model, optimizer, lambda: model(input_ids=ids, labels=labels).loss)


MODELS = {"convnext": convnext_step, "wav2vec2": wav2vec2_step, "bart": bart_step}


def opinfo_traces(out: str, dtype_name: str) -> None:
    """op_db's first sample of each OpInfo with the dtype, traced at level 2."""
    import bench_surface

    from api_tracer import APITracer

    dtype = bench_surface.DTYPES[dtype_name]
    chosen, counts = bench_surface.select(bench_surface.opinfos(None), dtype, 1, limit=10.0)
    made = [(op, bench_surface.samples(op, dtype, 1)[0]) for op, _ in chosen]
    with APITracer(output_path=out, levels=2, merge_output=True, value_ranges=True):
        for op, sample in made:
            try:
                bench_surface.call(op, sample)
            except Exception:  # noqa: BLE001 - raised only while traced: its config is still recorded
                pass
    print(f"  opinfo {dtype_name}: {len(made)} samples of {counts['ops']} OpInfos", flush=True)


def make_seeds(out: str, dtype_name: str) -> str:
    from api_tracer import APITracer
    from api_tracer.corpus.merge import merge_sets

    seeds = os.path.join(out, "seeds", "api_configs.yaml")
    if os.path.exists(seeds):
        return seeds
    traces = os.path.join(out, "traces")
    shutil.rmtree(traces, ignore_errors=True)
    for name, make in MODELS.items():
        for level in (2, 3):
            step = make()
            step()  # (lazy initialization is not what a step computes)
            with APITracer(
                output_path=os.path.join(traces, f"{name}-{level}"), levels=level, merge_output=True, value_ranges=True
            ):
                step()
            print(f"  {name} level {level} traced", flush=True)
    opinfo_traces(os.path.join(traces, f"opinfo-{dtype_name}"), dtype_name)
    merge_sets([traces], os.path.join(out, "seeds"))
    return seeds


# -- the campaign and what it found ------------------------------------------------


def when(sighting: dict) -> float:
    return datetime.datetime.fromisoformat(sighting["when"].replace("Z", "+00:00")).timestamp()


def per_interval(findings: list, start: float, seconds: float) -> list:
    """Distinct findings first seen by the end of each INTERVAL."""
    ends = [start + INTERVAL * (i + 1) for i in range(int(seconds // INTERVAL))]
    return [sum(1 for f in findings if when(f["first_seen"]) <= end) for end in ends]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time", type=float, default=3600.0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="campaign_bench")
    parser.add_argument("--opinfo-dtype", default="float32")
    parser.add_argument("--seeds-only", action="store_true", help="make the seeds and stop")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    seeds = make_seeds(args.out, args.opinfo_dtype)
    with open(seeds, encoding="utf-8") as f:
        lines = sum(1 for _ in f)
    print(f"seeds: {lines} lines in {seeds}", flush=True)
    if args.seeds_only:
        return
    directory = os.path.join(args.out, "campaign")
    shutil.rmtree(directory, ignore_errors=True)
    command = [sys.executable, "-m", "api_tracer", "fuzz", seeds, "-o", directory, "--time", str(args.time)]
    command += ["--jobs", str(args.jobs), "--seed", str(args.seed)]
    start = time.time()
    with open(os.path.join(args.out, "campaign.log"), "w") as log:
        subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False)
    with open(os.path.join(directory, "campaign.json")) as f:
        state = json.load(f)
    with open(os.path.join(directory, "findings.jsonl")) as f:
        findings = [json.loads(line) for line in f if line.strip()]
    counts = per_interval(findings, start, args.time)
    env = plain_torch_env(tempfile.mkdtemp())
    for finding in findings:
        finding["plain_torch"] = reproduces(directory, finding, env)
    print(f"\n{lines} seed lines, {args.time:g} s, {args.jobs} workers, seed {args.seed}: {state['cases_run']} cases, "
          f"{state['behaviours']} behaviours, {len(findings)} findings")  # fmt: skip
    print("distinct findings by the end of each 5 minutes: " + ", ".join(map(str, counts)))
    tail = counts[-max(1, len(counts) // 3) :]
    print("plateaued (the last third of the intervals added none):", "yes" if len(set(tail)) == 1 else "no")
    with open(os.path.join(directory, "classes.md"), encoding="utf-8") as f:
        summary = f.read().split("\n## ")[0]  # (the classes, a line each, before each one's text)
    print(summary.replace("# Findings by root cause", "classes:").strip())
    for f in sorted(findings, key=lambda f: when(f["first_seen"])):
        minute = (when(f["first_seen"]) - start) / 60
        shown = "fails in plain torch" if f["plain_torch"] else "DOES NOT fail in plain torch"
        print(f"  {minute:5.1f} min  {f['kind']:8} {f['oracle']:8} {f['api']}  ({shown})")
    with open(os.path.join(args.out, "campaign.json"), "w") as f:
        json.dump({"seeds": lines, "seconds": args.time, "cases": state["cases_run"], "per_5_minutes": counts,
                   "findings": findings}, f, indent=1)  # fmt: skip


if __name__ == "__main__":
    main()
