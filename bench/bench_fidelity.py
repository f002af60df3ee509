"""How faithfully configs come back: on small real models with random
weights, the share of each level's configs that replay and that trace back
to themselves.

    python bench/bench_fidelity.py [--models gpt2,rnn] [--held-out] [--levels 0,1] [--why]

The models are tests/workloads.py's FIDELITY_WORKLOADS (a one-layer GPT-2
and Llama and a ViT from transformers, an LSTM/GRU tagger whose loss ignores
the padding target -100, embedding bags), each one training step. With
--held-out, the models of HELD_OUT below instead, which no test uses: they
check that what the tests made pass was the class of a problem and not its
case. Per model and level, a step is traced (after one untraced, so that
lazy set-up is not in it) with value profiles (value_ranges), and each
distinct config is

- replayed (replay.run_in_process; integer tensors drawn from the recorded
  ranges, as `api-tracer replay` does): ok, skipped or failed. A failure
  that replays ok with integer tensors of zeros is counted apart, as "index
  values": what failed is the values drawn from the range (a target of -100
  drawn as -46), not the config;
- replayed while traced (replay.roundtrip): the very same line comes back,
  or not;
- replayed with `--check float64` (check.py): pass, mismatch, failed or
  skipped, as `api-tracer replay --check float64` counts them.

Prints one row per model and level, then the shares for levels 0/1 and 2/3
over all models; with --why, every config that did not come back and why.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from collections import Counter
from typing import Dict, List

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from workloads import FIDELITY_WORKLOADS, training_step

from api_tracer import APITracer
from api_tracer.formats.configs import ranges_beside, read_config_file
from api_tracer.formats.summaries import read_value_ranges
from api_tracer.replay import Config, ReplayOptions, replay_one, roundtrip, run_in_process

# -- held out: transformers models and a torch.nn model that no test uses -----


def t5_training_step():
    """A one-layer T5 encoder-decoder (relative position buckets, labels
    padded with -100, decoder inputs shifted from them), an AdamW step."""
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(0)
    config = T5Config(
        vocab_size=64,
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=1,
        num_decoder_layers=1,
        num_heads=4,
        relative_attention_num_buckets=8,
        dropout_rate=0.0,
        decoder_start_token_id=0,
        pad_token_id=0,
    )
    model = T5ForConditionalGeneration(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids, labels = torch.randint(1, 64, (2, 7)), torch.randint(1, 64, (2, 5))
    labels[1, -2:] = -100
    return training_step(
        model, optimizer, lambda: model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels).loss
    )


def qwen2_training_step():
    """A one-layer Qwen2 causal LM (grouped-query attention with biased
    projections, eager attention with a padding mask), an SGD step."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=48,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=1,
        max_position_embeddings=32,
    )
    config._attn_implementation = "eager"
    model = Qwen2ForCausalLM(config)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    ids = torch.randint(0, 64, (2, 9))
    mask = torch.ones_like(ids)
    mask[0, :3] = 0  # left padding
    labels = ids.masked_fill(mask == 0, -100)
    return training_step(model, optimizer, lambda: model(input_ids=ids, attention_mask=mask, labels=labels).loss)


def swin_training_step():
    """A two-stage Swin classifier (shifted windows: roll, window
    partitions, relative position bias, patch merging), an AdamW step."""
    from transformers import SwinConfig, SwinForImageClassification

    torch.manual_seed(0)
    config = SwinConfig(
        image_size=32,
        patch_size=4,
        num_channels=3,
        embed_dim=16,
        depths=[2, 1],
        num_heads=[2, 4],
        window_size=4,
        mlp_ratio=2.0,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        drop_path_rate=0.0,
        num_labels=4,
    )
    model = SwinForImageClassification(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    pixels, labels = torch.randn(2, 3, 32, 32), torch.tensor([3, 0])
    return training_step(model, optimizer, lambda: model(pixel_values=pixels, labels=labels).loss)


def nn_transformer_training_step():
    """torch.nn.Transformer (one encoder and one decoder layer, norm first,
    GELU) with a causal mask and key padding masks, a label-smoothed loss
    that ignores padding, RMSprop."""
    from torch import nn

    torch.manual_seed(0)
    with warnings.catch_warnings():  # norm_first: no nested-tensor fast path, which it says
        warnings.simplefilter("ignore", UserWarning)
        model = nn.Transformer(
            d_model=16,
            nhead=2,
            num_encoder_layers=1,
            num_decoder_layers=1,
            dim_feedforward=32,
            dropout=0.0,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )
    head = nn.Linear(16, 11)
    params = list(model.parameters()) + list(head.parameters())
    optimizer = torch.optim.RMSprop(params, lr=1e-3)
    loss_fn = nn.CrossEntropyLoss(ignore_index=-100, label_smoothing=0.1)
    src, tgt = torch.randn(2, 6, 16), torch.randn(2, 5, 16)
    src_pad = torch.zeros(2, 6, dtype=torch.bool)
    src_pad[1, -2:] = True
    causal = nn.Transformer.generate_square_subsequent_mask(5)
    labels = torch.randint(0, 11, (2, 5))
    labels[1, -1] = -100

    def loss():
        out = model(src, tgt, tgt_mask=causal, src_key_padding_mask=src_pad, memory_key_padding_mask=src_pad)
        return loss_fn(head(out).flatten(0, 1), labels.flatten())

    return training_step(model, optimizer, loss)


HELD_OUT = {
    "t5": t5_training_step,
    "qwen2": qwen2_training_step,
    "swin": swin_training_step,
    "nn_transformer": nn_transformer_training_step,
}


def measure(name: str, level: int) -> Dict:
    """One model traced at one level: its configs' replay, round trip and
    check against float64."""
    step = {**FIDELITY_WORKLOADS, **HELD_OUT}[name]()
    step()
    with tempfile.TemporaryDirectory() as out:
        with APITracer(output_path=out, levels=level, merge_output=True, value_ranges=True):
            step()
        path = os.path.join(out, "api_configs.yaml")
        configs = read_config_file(path)
        ranges = read_value_ranges(ranges_beside(path))
    results = run_in_process(configs, ReplayOptions(ranges=ranges), lambda r: None)
    statuses = Counter(str(r.status) for r in results)
    failed = [r for r in results if r.status == "failed"]
    index_values = [r for r in failed if replay_one(Config(r.file, r.line, r.config)).status == "ok"]
    not_back = [(c.text, why) for c, why in roundtrip(configs, level) if why]
    checked = run_in_process(configs, ReplayOptions(ranges=ranges, check="float64"), lambda r: None)
    check_counts = Counter(str(r.status) for r in checked)
    return {
        "configs": len(configs),
        "ok": statuses["ok"],
        "skipped": statuses["skipped"],
        "failed": statuses["failed"] + statuses["invalid"],
        "index_values": len(index_values),
        "back": len(configs) - len(not_back),
        **{f"check_{s}": check_counts[s] for s in ("ok", "mismatch", "vacuous", "failed", "skipped", "invalid")},
        "problems": [
            (r.config, f"{r.status}: {r.error} {r.message}".replace("  ", " "))
            for r in results
            if r.status != "ok" and r not in index_values
        ]
        + [(r.config, f"index values: {r.error} {r.message}") for r in index_values]
        + [(text, f"round trip: {why}") for text, why in not_back]
        + [
            (r.config, f"--check float64 {r.status}: {r.error} {r.message}".replace("  ", " "))
            for r in checked
            if r.status in ("mismatch", "vacuous", "failed", "skipped")
        ],
    }


def share(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:5.1f}%" if whole else "    -"


def checks(m: Dict) -> str:
    """The --check float64 counts (invalid ones with the failed)."""
    return (
        f"{m['check_ok']}/{m['check_mismatch']}/{m['check_vacuous']}/{m['check_failed'] + m['check_invalid']}/"
        f"{m['check_skipped']}"
    )


def main(argv: List[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", help="comma-separated (default: FIDELITY_WORKLOADS, or HELD_OUT)")
    parser.add_argument("--held-out", action="store_true", help="the models of HELD_OUT, which no test uses")
    parser.add_argument("--levels", default="0,1,2,3", help="comma-separated")
    parser.add_argument("--why", action="store_true", help="list every config that did not come back")
    args = parser.parse_args(argv)
    import transformers

    transformers.logging.set_verbosity_error()  # the tiny configs' warnings
    models = args.models.split(",") if args.models else list(HELD_OUT if args.held_out else FIDELITY_WORKLOADS)
    levels = [int(x) for x in args.levels.split(",")]
    header = (
        f"{'model':14} {'level':>5} {'configs':>7} {'replay ok':>9} {'skipped':>7} {'failed':>6} "
        f"{'(index values)':>14} {'same line':>9}   float64 check: pass/mismatch/vacuous/failed/skipped"
    )
    print(header)
    totals: Dict[str, Counter] = {"0/1": Counter(), "2/3": Counter()}
    problems = []
    start = time.perf_counter()
    for name in models:
        for level in levels:
            m = measure(name, level)
            totals["0/1" if level <= 1 else "2/3"].update({k: v for k, v in m.items() if k != "problems"})
            problems += [(name, level, text, why) for text, why in m["problems"]]
            print(
                f"{name:14} {level:5} {m['configs']:7} {share(m['ok'], m['configs']):>9} {m['skipped']:7} "
                f"{m['failed']:6} {m['index_values']:14} {share(m['back'], m['configs']):>9}   {checks(m)}",
                flush=True,
            )
    for group, t in totals.items():
        if t["configs"]:
            print(
                f"{'all models':14} {group:>5} {t['configs']:7} {share(t['ok'], t['configs']):>9} "
                f"{t['skipped']:7} {t['failed']:6} {t['index_values']:14} "
                f"{share(t['back'], t['configs']):>9}   {checks(t)}"
            )
    print(
        f"({time.perf_counter() - start:.0f} s; 'failed' counts the invalid configs, which the replay policy "
        "refuses, and the index-value failures too)"
    )
    if args.why:
        for name, level, text, why in problems:
            print(f"\n{name} level {level}: {text}\n    {why}")


if __name__ == "__main__":
    main(sys.argv[1:])
