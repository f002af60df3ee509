"""Models built where the program says: on the meta device and moved with
to_empty, under a CPU device context, with torch.set_default_dtype; then
initialized and run."""

import torch
import torch.nn as nn
from common import report_state

torch.manual_seed(11)
with torch.device("meta"):
    big = nn.Sequential(nn.Linear(1000, 1000), nn.ReLU(), nn.Linear(1000, 10))
    print("meta", {p.device.type for p in big.parameters()}, torch.empty(3).device)
big = big.to_empty(device="cpu")
for m in big.modules():
    if isinstance(m, nn.Linear):
        m.reset_parameters()
with torch.device("cpu"):
    x = torch.randn(4, 1000)
    print("cpu context", x.device, repr(big(x).sum().item()))
old = torch.get_default_dtype()
torch.set_default_dtype(torch.float64)
small = nn.Linear(3, 2)
print("float64", small.weight.dtype, repr(small(torch.ones(1, 3)).sum().item()))
torch.set_default_dtype(old)
with torch.device("meta"):
    print("meta again", nn.Linear(5, 5).weight.device, torch.zeros(2).device)
report_state()
