"""Tensor arguments in memory: the bytes a tensor's storage spans, as its
shape and strides lay it out, and the memory free on a device to make
them in (replay's --max-bytes); and the bound on what a call may
allocate on its way, which no count made before it can know (`bounded`)."""

from __future__ import annotations

import contextlib
import os
from typing import Iterator, List, Optional, Sequence

# What a call may allocate beyond its counted arguments and outputs, on its
# way (temporaries, the Python objects of a list it returns, a kernel's
# working memory): WORKING_FACTOR times the byte limit, plus WORKING_SLACK
# for the interpreter's own allocations.
WORKING_FACTOR = 2
WORKING_SLACK = 64 << 20
# What a checked config (--check) may allocate in all, both sides and the
# judge (the reference's float64 copies, its error model's probes, the
# comparison): CHECK_FACTOR times the byte limit, plus WORKING_SLACK; each
# side's call within it is bounded as above.
CHECK_FACTOR = 8


def storage_numel(shape: Sequence[int], stride: Optional[Sequence[int]]) -> int:
    """The elements a tensor of this shape and stride spans (its storage)."""
    if not all(shape):
        return 0
    stride = stride if stride is not None else contiguous_strides(shape)
    return 1 + sum((d - 1) * abs(s) for d, s in zip(shape, stride))


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


def byte_limit(max_bytes: Optional[int], device: str) -> int:
    """The bytes a config's arguments and outputs may take: max_bytes, or
    (None) half of what `device` has free now."""
    return max_bytes if max_bytes is not None else available_bytes(device) // 2


def _data_bytes() -> Optional[int]:
    """This process's data segment (VmData: its private writable memory),
    which RLIMIT_DATA bounds; None where /proc does not say."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmData:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return None


class OverWorkingMemory(Exception):
    """A call met the bound `bounded` set."""


@contextlib.contextmanager
def bounded(limit: int, factor: int = WORKING_FACTOR) -> Iterator[int]:
    """While inside, this process may allocate at most
    factor * limit + WORKING_SLACK bytes more than it holds now
    (RLIMIT_DATA's soft limit lowered, and put back after; never raised
    above a limit already set: inside another `bounded`, the outer bound
    holds too); yields the bytes it leaves (0 where the platform has none
    to set).
    An allocation past it fails as the allocator fails: see out_of_memory."""
    try:
        import resource
    except ImportError:  # not a POSIX system
        yield 0
        return
    used = _data_bytes()
    if used is None:
        yield 0
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    allowed = factor * limit + WORKING_SLACK
    cap = used + allowed
    for existing in (soft, hard):
        if existing != resource.RLIM_INFINITY:
            cap = min(cap, existing)
    resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))
    try:
        yield min(allowed, max(cap - used, 0))
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def out_of_memory(e: BaseException) -> bool:
    """Whether `e` is an allocation that failed: Python's MemoryError
    (numpy's too), torch's CPU allocator refusing, or C++'s bad_alloc as
    torch passes it on."""
    if isinstance(e, MemoryError):
        return True
    text = str(e)
    return isinstance(e, RuntimeError) and any(
        sign in text for sign in ("can't allocate memory", "Cannot allocate memory", "std::bad_alloc")
    )
