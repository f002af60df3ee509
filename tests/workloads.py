"""Real workloads, built with random weights: for the conformance tests and
the benchmarks. Each returns a zero-argument callable that runs one step
(its model as the attribute `model`); the models are built when the
workload is made, outside any tracing."""
from __future__ import annotations

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


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.features(x).flatten(1))


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
    config = BertConfig(hidden_size=hidden, num_hidden_layers=1, num_attention_heads=4, intermediate_size=2 * hidden,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
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
LONG_SUMS = {"torch.ops.aten.convolution_backward.default": ("output[1]", "output[2]"),
             "torch.ops.aten.native_batch_norm_backward.default": ("output[2]",)}
