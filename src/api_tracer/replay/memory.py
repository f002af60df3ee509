"""Tensor arguments in memory: the bytes a tensor's storage spans, as its
shape and strides lay it out, and the memory free on a device to make
them in (replay's --max-bytes)."""
from __future__ import annotations

import os
from typing import List, Optional, Sequence


def storage_numel(shape: Sequence[int], stride: Optional[Sequence[int]]) -> int:
    """The elements a tensor of this shape and stride spans (its storage)."""
    if not all(shape):
        return 0
    stride = stride if stride is not None else contiguous_strides(shape)
    return 1 + sum((d - 1) * abs(s) for d, s in zip(shape, stride))


def human_bytes(n: float) -> str:
    """A byte count as people read it: 512 B, 1.5 KiB, 8.0 GiB."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024:
            break
        n /= 1024
    else:
        unit = "PiB"
    return f"{n:.0f} B" if unit == "B" else f"{n:.1f} {unit}"


def available_bytes(device: str) -> int:
    """Free memory for the tensors replay makes on `device`: the CPU's
    MemAvailable (/proc/meminfo, else the free pages sysconf counts), and for
    a CUDA device the least of that and what torch.cuda.mem_get_info leaves
    free (tensors are made on the CPU, then moved)."""
    import torch

    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            free = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError, IndexError):
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    if torch.device(device).type == "cuda":
        free = min(free, torch.cuda.mem_get_info(torch.device(device))[0])
    return free


def contiguous_strides(shape: List[int]) -> List[int]:
    """The strides of a contiguous tensor of this shape."""
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= max(d, 1)
    return list(reversed(strides))
