"""A training step and a function under torch.compile (dynamo with its
eager backend: compiled or run eagerly, the numbers are the same)."""

import torch
import torch.nn as nn
from common import report_state

torch.manual_seed(2)
model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Dropout(0.1), nn.Linear(32, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)


@torch.compile(backend="eager")
def step(x, y):
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    return loss


for i in range(5):
    x, y = torch.randn(8, 16), torch.randn(8, 1)
    optimizer.zero_grad()
    print(i, repr(step(x, y).item()))
    optimizer.step()
scale = torch.compile(lambda t: (t * 2).softmax(-1), backend="eager")
print(repr(scale(torch.arange(6.0)).sum().item()))
report_state()
