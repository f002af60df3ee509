"""A DataLoader with worker processes (forked) and a seeded generator,
over a Dataset that draws random augmentation in each worker."""

import torch
from common import report_state
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(5)


class Noisy(Dataset):
    def __len__(self):
        return 24

    def __getitem__(self, i):
        return torch.full((3,), float(i)) + torch.randn(3) * 0.01, i


def seed_worker(worker_id):
    torch.manual_seed(torch.initial_seed() % 2**32 + worker_id)


loader = DataLoader(
    Noisy(),
    batch_size=4,
    shuffle=True,
    num_workers=2,
    worker_init_fn=seed_worker,
    generator=torch.Generator().manual_seed(1),
)
for x, i in loader:
    print(i.tolist(), repr(x.sum().item()))
report_state()
