"""How faithfully configs come back: on small real models with random
weights, the share of each level's configs that replay and that trace back
to themselves.

    python bench/bench_fidelity.py [--models gpt2,rnn] [--held-out | --families] [--levels 0,1] [--why]

The models are tests/support/workloads.py's FIDELITY_WORKLOADS (a one-layer GPT-2
and Llama and a ViT from transformers, an LSTM/GRU tagger whose loss ignores
the padding target -100, embedding bags), each one training step. With
--held-out, the models of its HELD_OUT instead (T5, Qwen2, Swin,
torch.nn.Transformer), which no test uses: they
check that what the tests made pass was the class of a problem and not its
case. With --families, tests/support/families.py's FAMILIES, held out too:
a mixture of experts (Qwen2-MoE), a state-space model (Mamba-2), BART,
ConvNeXt, Wav2Vec2 with a CTC loss, and sparse, complex/FFT and quantized
programs. Per model and level, a step is traced (after one untraced, so that
lazy set-up is not in it) with value profiles (value_ranges), and each
distinct config is

- replayed (replay.run_in_process; integer tensors drawn from the recorded
  ranges, as `api-tracer replay` does): ok, skipped, refused (the policy:
  torch.save, say), invalid (a line replay cannot read: none should be,
  of lines the tracer wrote) or failed. A failure
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
from collections import Counter
from typing import Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: F401  (puts the tests' `support` on the path)

from api_tracer import APITracer
from api_tracer.formats.configs import ranges_beside, read_config_file
from api_tracer.formats.summaries import read_value_ranges
from api_tracer.replay import Config, ReplayOptions, replay_one, roundtrip, run_in_process
from support.families import FAMILIES
from support.workloads import FIDELITY_WORKLOADS, HELD_OUT


def measure(name: str, level: int) -> Dict:
    """One model traced at one level: its configs' replay, round trip and
    check against float64."""
    step = {**FIDELITY_WORKLOADS, **HELD_OUT, **FAMILIES}[name]()
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
        "failed": statuses["failed"],
        "refused": statuses["refused"],
        "invalid": statuses["invalid"],
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
    parser.add_argument("--models", help="comma-separated (default: FIDELITY_WORKLOADS, HELD_OUT or FAMILIES)")
    held_out = parser.add_mutually_exclusive_group()
    held_out.add_argument("--held-out", action="store_true", help="the models of HELD_OUT, which no test uses")
    held_out.add_argument("--families", action="store_true", help="the programs of FAMILIES, which no test uses")
    parser.add_argument("--levels", default="0,1,2,3", help="comma-separated")
    parser.add_argument("--why", action="store_true", help="list every config that did not come back")
    args = parser.parse_args(argv)
    import transformers

    transformers.logging.set_verbosity_error()  # the tiny configs' warnings
    default = HELD_OUT if args.held_out else FAMILIES if args.families else FIDELITY_WORKLOADS
    models = args.models.split(",") if args.models else list(default)
    levels = [int(x) for x in args.levels.split(",")]
    header = (
        f"{'model':14} {'level':>5} {'configs':>7} {'replay ok':>9} {'skipped':>7} {'refused':>7} {'invalid':>7} "
        f"{'failed':>6} "
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
                f"{m['refused']:7} {m['invalid']:7} {m['failed']:6} {m['index_values']:14} "
                f"{share(m['back'], m['configs']):>9}   {checks(m)}",
                flush=True,
            )
    for group, t in totals.items():
        if t["configs"]:
            print(
                f"{'all models':14} {group:>5} {t['configs']:7} {share(t['ok'], t['configs']):>9} "
                f"{t['skipped']:7} {t['refused']:7} {t['invalid']:7} {t['failed']:6} {t['index_values']:14} "
                f"{share(t['back'], t['configs']):>9}   {checks(t)}"
            )
    print(
        f"({time.perf_counter() - start:.0f} s; 'failed' counts the index-value failures too; the float64 "
        "check's failed, its invalid configs too)"
    )
    if args.why:
        for name, level, text, why in problems:
            print(f"\n{name} level {level}: {text}\n    {why}")


if __name__ == "__main__":
    main(sys.argv[1:])
