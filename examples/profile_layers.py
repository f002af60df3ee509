"""A layer-by-layer profile of a small BERT (transformers, built from a
config with random weights): one training step, forward and backward, with
memory; the tree table to depth 3, the operators of the module with the
most self time, and the three exports.

    python examples/profile_layers.py [OUTPUT_DIR]
"""

import os
import sys

import torch


def main() -> None:
    from transformers import BertConfig, BertModel

    from api_tracer import Profile

    out = sys.argv[1] if len(sys.argv) > 1 else "profile_output"
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    config = BertConfig(
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=256,
        vocab_size=1000,
        attn_implementation="eager",
    )
    model = BertModel(config)
    ids = torch.randint(0, config.vocab_size, (4, 32))
    model(ids)  # warm up: first calls allocate and dispatch more than later ones

    with Profile(model, profile_memory=True) as prof:
        loss = model(ids).last_hidden_state.pow(2).mean()
        loss.backward()

    print(prof.display(depth=3, sort_by="cpu_total"))
    busiest = max(prof.rows, key=lambda r: r.self_cpu_ns + r.self_cpu_bwd_ns)
    print(
        f"\nbusiest module by self time: {busiest.name}, {busiest.calls} call(s), "
        f"{busiest.self_cpu_ns / 1e3:.1f} us forward and {busiest.self_cpu_bwd_ns / 1e3:.1f} us backward "
        f"of its own; its operators:"
    )
    for op in sorted(busiest.ops, key=lambda o: -o.self_cpu_ns)[:6]:
        print(f"  {op.direction:8s} {op.name:28s} {op.calls:3d} call(s) {op.self_cpu_ns / 1e3:9.1f} us self")
    for name, export in (
        ("profile.json", prof.export_json),
        ("profile.csv", prof.export_csv),
        ("profile.trace.json", prof.export_chrome_trace),
    ):
        export(os.path.join(out, name))
    print(f"\nwrote {out}/profile.json, profile.csv and profile.trace.json (open it in https://ui.perfetto.dev)")


if __name__ == "__main__":
    main()
