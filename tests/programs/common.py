"""What every program here shares: Python's and numpy's generators seeded
on import (torch's each program seeds), and what each prints last: digests
of the state a traced run must leave as the untraced one does (every random
generator: the tracer draws from none)."""

import hashlib
import random

import numpy as np
import torch

random.seed(0)
np.random.seed(0)


def digest(data: bytes) -> str:
    return hashlib.sha1(data).hexdigest()[:16]


def report_state() -> None:
    print("torch rng", digest(torch.random.get_rng_state().numpy().tobytes()))
    print("python rng", digest(repr(random.getstate()).encode()))
    print("numpy rng", digest(repr(np.random.get_state()).encode()))
