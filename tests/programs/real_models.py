"""The project's real-model workloads (tests/support/workloads.py: GPT-2, Llama and
ViT from transformers, an LSTM/GRU tagger, embedding bags, an MLP, a CNN,
a Transformer block), two training steps each: after each, a digest of
every parameter's bits."""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from common import digest, report_state

from support.workloads import FIDELITY_WORKLOADS, WORKLOADS

for name, make in sorted({**WORKLOADS, **FIDELITY_WORKLOADS}.items()):
    torch.manual_seed(0)
    step = make()
    for i in range(2):
        step()
        weights = b"".join(p.detach().numpy().tobytes() for p in step.model.parameters())
        print(name, i, digest(weights))
report_state()
