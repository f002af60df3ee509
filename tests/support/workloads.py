"""Real workloads, built with random weights: for the conformance tests and
the benchmarks. Each returns a zero-argument callable that runs one step
(its model as the attribute `model`); the models are built when the
workload is made, outside any tracing."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path
from typing import Any

import torch
import torch.nn as nn


def mlp_training_step():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, y = torch.randn(16, 32), torch.randint(0, 10, (16,))

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()

    step.model = model
    return step


def _example(name: str) -> Any:
    """The module examples/NAME.py, loaded (the examples are no package)."""
    path = Path(__file__).resolve().parents[2] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"examples.{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SmallCNN = _example("quickstart").SmallCNN  # the README's example model


def cnn_forward_backward(device="cpu"):
    torch.manual_seed(0)
    model = SmallCNN().to(device)
    x = torch.randn(4, 3, 32, 32, device=device)

    def step():
        model.zero_grad(set_to_none=True)
        model(x).sum().backward()

    step.model = model
    return step


def transformer_block(hidden: int = 64, seq: int = 16, batch: int = 2):
    """One BERT encoder layer from transformers, from a small config (4
    heads, the feed-forward twice the hidden size)."""
    from transformers import BertConfig
    from transformers.models.bert.modeling_bert import BertLayer

    torch.manual_seed(0)
    config = BertConfig(
        hidden_size=hidden,
        num_hidden_layers=1,
        num_attention_heads=4,
        intermediate_size=2 * hidden,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    config._attn_implementation = "eager"
    layer = BertLayer(config)
    x = torch.randn(batch, seq, hidden, requires_grad=True)

    def step():
        layer.zero_grad(set_to_none=True)
        out = layer(x)
        out = out[0] if isinstance(out, tuple) else out
        out.pow(2).mean().backward()

    step.model = layer
    return step


WORKLOADS = {"mlp": mlp_training_step, "cnn": cnn_forward_backward, "transformer": transformer_block}

# The traced configs of these workloads whose float32 results legitimately
# differ from a reference (float64, another device) beyond torch.testing's
# float32 tolerance (atol 1e-5, rtol 1.3e-6, meant for elementwise results):
# long sums, whose rounding error grows with their length (~1e-4 on sums of
# magnitude ~60). API -> the outputs that differ: the cnn's
# convolution_backward sums over batch and image for the weight and bias
# gradients (4096 and 1024 products an element; one config per
# convolution), native_batch_norm_backward sums 4096 values a channel for the
# bias gradient. Against float64 with torch 2.13 on the CPU: these 3 configs
# at levels 2 and 3 of the cnn, and nothing else at levels 1 to 3.
LONG_SUMS = {
    "torch.ops.aten.convolution_backward.default": ("output[1]", "output[2]"),
    "torch.ops.aten.native_batch_norm_backward.default": ("output[2]",),
}

# -- models the fidelity benchmark measures (bench/bench_fidelity.py) ---------


def training_step(model, optimizer, loss):
    """`step()`: the gradients zeroed, `loss()` backward, an optimizer
    step; `step.model` is the model."""

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss().backward()
        optimizer.step()

    step.model = model
    return step


def _causal_lm_step(model, vocab: int, batch: int = 2, seq: int = 8):
    """A language model's training step: labels with padding (-100, which
    the loss ignores), loss backward, an AdamW step."""
    torch.manual_seed(0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, vocab, (batch, seq))
    labels = ids.clone()
    labels[:, -2:] = -100
    return training_step(model, optimizer, lambda: model(input_ids=ids, labels=labels).loss)


def gpt2_training_step():
    """A one-layer GPT-2 from transformers (hidden 32, 2 heads, 64 tokens)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=64,
        n_positions=16,
        n_embd=32,
        n_layer=1,
        n_head=2,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=0,
        eos_token_id=0,
    )
    return _causal_lm_step(GPT2LMHeadModel(config), config.vocab_size)


# The sizes of the one-layer decoders below (Llama's, Mixtral's): small enough to train a step in seconds.
TINY_DECODER = dict(
    vocab_size=64,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=1,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=16,
)


def llama_training_step():
    """A one-layer Llama from transformers (hidden 32, 4 heads sharing 2
    key/value heads, attention by F.scaled_dot_product_attention)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(**TINY_DECODER)
    config._attn_implementation = "sdpa"
    return _causal_lm_step(LlamaForCausalLM(config), config.vocab_size)


def mixtral_training_step():
    """A one-layer Mixtral-style mixture of experts (4 experts, 2 per token,
    run as torch.nn.functional.grouped_mm: aten._grouped_mm at levels 2 and 3)."""
    from transformers import MixtralConfig, MixtralForCausalLM

    torch.manual_seed(0)
    config = MixtralConfig(**TINY_DECODER, num_local_experts=4, num_experts_per_tok=2)
    config._attn_implementation = "sdpa"
    return _causal_lm_step(MixtralForCausalLM(config), config.vocab_size)


def mamba_training_step():
    """A one-layer Mamba state-space language model from transformers
    (hidden 32, state 8; the selective scan in plain torch, as on a CPU)."""
    from transformers import MambaConfig, MambaForCausalLM

    torch.manual_seed(0)
    config = MambaConfig(vocab_size=64, hidden_size=32, state_size=8, num_hidden_layers=1, expand=2, conv_kernel=4)
    return _causal_lm_step(MambaForCausalLM(config), config.vocab_size)


def whisper_training_step():
    """A one-layer Whisper speech-to-text model from transformers (8 mel
    bins, 32 frames: two strided convolutions, an encoder and a decoder)."""
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    torch.manual_seed(0)
    config = WhisperConfig(
        vocab_size=64,
        num_mel_bins=8,
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_source_positions=16,
        max_target_positions=16,
        decoder_start_token_id=1,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    model = WhisperForConditionalGeneration(config)
    features = torch.randn(2, config.num_mel_bins, 2 * config.max_source_positions)
    labels = torch.randint(3, config.vocab_size, (2, 6))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    return training_step(model, optimizer, lambda: model(input_features=features, labels=labels).loss)


# The models of issue 39's campaign as a new user would run it (bench/bench_steer.py fuzzes their
# configs): a decoder and a mixture of experts (GPT-2 and Mixtral, which the fidelity tests trace too),
# a state-space model and a speech model (Mamba and Whisper, which nothing else here runs).
FRESH_WORKLOADS = {
    "gpt2": gpt2_training_step,
    "mixtral": mixtral_training_step,
    "mamba": mamba_training_step,
    "whisper": whisper_training_step,
}


def vit_training_step():
    """A one-layer ViT classifier from transformers (16x16 images, 8x8
    patches, hidden 32), cross-entropy, an SGD step."""
    from transformers import ViTConfig, ViTForImageClassification

    torch.manual_seed(0)
    config = ViTConfig(
        image_size=16,
        patch_size=8,
        num_channels=3,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=5,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    model = ViTForImageClassification(config)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    pixels, labels = torch.randn(2, 3, 16, 16), torch.tensor([1, 4])
    return training_step(model, optimizer, lambda: model(pixel_values=pixels, labels=labels).loss)


class RecurrentTagger(nn.Module):
    """Embedding, a two-layer LSTM, a GRU, a linear head: a tag per token."""

    def __init__(self, vocab: int = 50, tags: int = 7) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, 16, padding_idx=0)
        self.lstm = nn.LSTM(16, 24, num_layers=2, batch_first=True, dropout=0.0)
        self.gru = nn.GRU(24, 12, batch_first=True, bidirectional=True)
        self.head = nn.Linear(24, tags)

    def forward(self, ids):
        h, _ = self.lstm(self.embed(ids))
        h, _ = self.gru(h)
        return self.head(h)


def rnn_training_step():
    """RecurrentTagger: padded targets (-100) for CrossEntropyLoss's
    ignore_index, gradient clipping, an Adam step."""
    torch.manual_seed(0)
    model = RecurrentTagger()
    loss_fn = nn.CrossEntropyLoss(ignore_index=-100)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    ids = torch.randint(1, 50, (3, 6))
    targets = torch.randint(0, 7, (3, 6))
    targets[:, -2:] = -100

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(ids).flatten(0, 1), targets.flatten())
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    step.model = model
    return step


class BagClassifier(nn.Module):
    """Two bags of embeddings (a weighted sum, a max) and a linear head."""

    def __init__(self, vocab: int = 40) -> None:
        super().__init__()
        self.weighted = nn.EmbeddingBag(vocab, 8, mode="sum")
        self.maxed = nn.EmbeddingBag(vocab, 8, mode="max")
        self.head = nn.Linear(16, 3)

    def forward(self, ids, offsets, weights):
        return self.head(
            torch.cat([self.weighted(ids, offsets, per_sample_weights=weights), self.maxed(ids, offsets)], dim=1)
        )


def embedding_bag_training_step():
    """BagClassifier on four bags of ids, cross-entropy, an SGD step."""
    torch.manual_seed(0)
    model = BagClassifier()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    ids, offsets = torch.randint(0, 40, (10,)), torch.tensor([0, 3, 5, 8])
    weights, labels = torch.rand(10), torch.tensor([0, 2, 1, 2])
    return training_step(model, optimizer, lambda: nn.functional.cross_entropy(model(ids, offsets, weights), labels))


FIDELITY_WORKLOADS = {
    "gpt2": gpt2_training_step,
    "llama": llama_training_step,
    "vit": vit_training_step,
    "rnn": rnn_training_step,
    "embedding_bag": embedding_bag_training_step,
}


# -- held out: transformers models and a torch.nn model that no test uses,
# which bench/bench_fidelity.py --held-out measures: they check that what the
# tests made pass was the class of a problem and not its case.


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


def traced_configs(tmp_path: Any, name: str, level: int) -> list:
    """The config lines of workload `name` (of WORKLOADS or
    FIDELITY_WORKLOADS) traced at `level` after a warm-up step, each a Config."""
    from api_tracer import APITracer
    from api_tracer.formats.configs import read_config_file

    step = {**WORKLOADS, **FIDELITY_WORKLOADS}[name]()
    step()
    out = tmp_path / f"{name}-{level}"
    with APITracer(output_path=str(out), levels=level, merge_output=True):
        step()
    return read_config_file(str(out / "api_configs.yaml"))
