"""A small Transformer language model as the word-language-model example
writes one: an embedding, positional encoding, nn.TransformerEncoder with
its default activation (F.relu, bound before any tracing), a causal mask,
Adam with gradient clipping, perplexity under eval/no_grad, torch.save of
the whole model."""

import math
import sys

import torch
import torch.nn as nn
from common import report_state

torch.manual_seed(3)
VOCAB, DIM, SEQ = 50, 32, 12


class PositionalEncoding(nn.Module):
    def __init__(self, dim, dropout=0.1, max_len=64):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        pe = torch.zeros(max_len, dim)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div = torch.exp(torch.arange(0, dim, 2).float() * (-math.log(10000.0) / dim))
        pe[:, 0::2] = torch.sin(position * div)
        pe[:, 1::2] = torch.cos(position * div)
        self.register_buffer("pe", pe.unsqueeze(1))

    def forward(self, x):
        return self.dropout(x + self.pe[: x.size(0)])


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.pos = PositionalEncoding(DIM)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(DIM, 4, 64, dropout=0.1), 2)
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, src, mask):
        return self.head(self.encoder(self.pos(self.embed(src) * math.sqrt(DIM)), mask))


data = torch.randint(0, VOCAB, (400,))
model = LM()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()
mask = nn.Transformer.generate_square_subsequent_mask(SEQ)
for step, i in enumerate(range(0, 300, SEQ)):
    src, target = data[i : i + SEQ].unsqueeze(1), data[i + 1 : i + 1 + SEQ]
    model.train()
    optimizer.zero_grad()
    loss = criterion(model(src, mask).view(-1, VOCAB), target)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    optimizer.step()
    if step % 5 == 0:
        print(f"step {step} loss {loss.item()!r} ppl {math.exp(loss.item())!r}")
model.eval()
with torch.no_grad():
    src, target = data[300 : 300 + SEQ].unsqueeze(1), data[301 : 301 + SEQ]
    print("eval loss", repr(criterion(model(src, mask).view(-1, VOCAB), target).item()))
with open(sys.argv[1] + "/lm.pt", "wb") as f:
    torch.save(model, f)
report_state()
