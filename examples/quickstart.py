"""The main job on a bundled example: trace one training step of a small
CNN at levels 1 (torch functions) and 2 (aten operators, forward and
backward), then show where the files went and what they say.

    python examples/quickstart.py [OUTPUT_DIR]
"""

import os
import sys

import torch
import torch.nn as nn

from api_tracer import APITracer


class SmallCNN(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(32, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).flatten(1))


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else "trace_output"
    torch.manual_seed(0)
    model = SmallCNN()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    images, labels = torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))

    tracer = APITracer(dialect="torch", output_path=out, levels=[1, 2], merge_output=False)
    with tracer:
        loss = nn.functional.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    print(f"Traced one training step of SmallCNN (loss {loss.item():.4f}). Files:")
    for path in tracer.files().values():
        print(f"  {path}  ({os.path.getsize(path)} bytes)")
    for level in tracer.levels:
        stats = os.path.join(out, f"api_statistics_level_{level}.yaml")
        with open(stats) as f:
            lines = f.read().splitlines()
        print(f"\nLevel {level} statistics ({stats}), top 10:")
        for line in lines[:3] + lines[3:13]:
            print(f"  {line}")


if __name__ == "__main__":
    main()
