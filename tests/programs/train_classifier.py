"""A classifier trained as the tutorials do: a Dataset and a shuffling
DataLoader, dropout and batch norm, SGD with momentum and a scheduler,
evaluation in eval mode under no_grad, the whole model saved and loaded."""

import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from common import report_state
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(7)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.drop = nn.Dropout(0.25)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return F.log_softmax(self.fc(self.drop(torch.flatten(x, 1))), dim=1)


images, labels = torch.randn(256, 1, 8, 8), torch.randint(0, 10, (256,))
loader = DataLoader(TensorDataset(images, labels), batch_size=32, shuffle=True)
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
for epoch in range(3):
    model.train()
    for batch, (x, y) in enumerate(loader):
        optimizer.zero_grad()
        loss = F.nll_loss(model(x), y)
        loss.backward()
        optimizer.step()
        if batch % 4 == 0:
            print(f"epoch {epoch} batch {batch} loss {loss.item()!r}")
    scheduler.step()
    model.eval()
    with torch.no_grad():
        out = model(images)
        print(
            f"epoch {epoch} eval loss {F.nll_loss(out, labels).item()!r} "
            f"correct {(out.argmax(1) == labels).sum().item()}"
        )
torch.save(model, sys.argv[1] + "/model.pt")
torch.save(model.state_dict(), sys.argv[1] + "/state.pt")
loaded = torch.load(sys.argv[1] + "/model.pt", weights_only=False)
print("loaded agrees", torch.equal(loaded(images), model(images)))
report_state()
