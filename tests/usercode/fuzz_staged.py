"""Operators whose defects lie three steps deep, for measuring fuzz
steering against --blind drawing (bench/bench_steer.py,
tests/fuzz/test_steer.py). Importing this module registers them in the
namespace `fuzzstaged` (fuzz --import fuzz_staged).

Each is right on its seed config (SEEDS) and goes wrong only where three
conditions hold at once, and each condition on its way takes a path of
its own, with aten operators the others do not call, the way a real
kernel dispatches on rank, dtype and layout before the branch with the
defect: a case that meets one or two conditions does something new
inside (a new behaviour signature), which steering can build on, and
blind drawing cannot."""

import ctypes
import os
import time

import torch

LIB = "fuzzstaged"


@torch.library.custom_op(f"{LIB}::folded_scan", mutates_args=())
def folded_scan(x: torch.Tensor) -> torch.Tensor:
    """A running sum over the last dimension. Rank 3 folds the batch
    (flatten); in float64 the folded path scans with cumsum; and there a
    last dimension of size 1 reads past the row (a segfault)."""
    if x.dim() != 3:
        return x.cumsum(-1)
    folded = x.flatten(0, 1)
    if x.dtype != torch.float64:
        return torch.stack([r.cumsum(0) for r in folded.unbind(0)]).reshape(x.shape)
    if x.shape[-1] == 1 and x.numel():
        ctypes.string_at(0)  # reads address 0: SIGSEGV
    return torch.cumsum(folded, -1).reshape(x.shape)


@torch.library.custom_op(f"{LIB}::masked_peak", mutates_args=())
def masked_peak(x: torch.Tensor) -> torch.Tensor:
    """The greatest element of each row. An input holding NaN is cleaned
    first (nan_to_num); a cleaned input of rank 3 or more is reduced in two
    steps (amax, then max); and in bfloat16 that path aborts."""
    if not x.isnan().any():
        return x.amax(-1)
    x = torch.nan_to_num(x)
    if x.dim() < 3:
        return x.amax(-1)
    if x.dtype == torch.bfloat16:
        os.abort()
    return x.amax(-1).max(-1, keepdim=True).values.expand(x.shape[:-1]).clone()


@torch.library.custom_op(f"{LIB}::strided_flip", mutates_args=())
def strided_flip(x: torch.Tensor) -> torch.Tensor:
    """x's rows reversed. A strided input is made contiguous first; a
    strided input in float16 is flipped in float32 (to, then back); and of
    those, one of rank 3 or more is not flipped at all (a wrong result)."""
    if x.is_contiguous():
        return x.flip(-1)
    x = x.contiguous()
    if x.dtype != torch.float16:
        return x.flip(-1)
    wide = x.to(torch.float32)
    if x.dim() >= 3:
        return wide.to(torch.float16)
    return wide.flip(-1).to(torch.float16)


@torch.library.custom_op(f"{LIB}::judged_slowly", mutates_args=())
def judged_slowly(x: torch.Tensor) -> torch.Tensor:
    """x + 1, at once in float32, and after 3 CPU seconds of work in
    float64: what the float64 check makes of a large case, slow, not hung
    (not one of SEEDS: tests/fuzz/test_fuzz.py fuzzes it alone)."""
    if x.dtype == torch.float64:
        end = time.process_time() + 3
        while time.process_time() < end:
            pass
    return x + 1


SEEDS = {
    "folded_scan": 'torch.ops.fuzzstaged.folded_scan.default(Tensor([4, 6], "float32"))',
    "masked_peak": 'torch.ops.fuzzstaged.masked_peak.default(Tensor([5, 7], "float32"))',
    "strided_flip": 'torch.ops.fuzzstaged.strided_flip.default(Tensor([6, 8], "float32"))',
}
KINDS = {
    "folded_scan": ("crash", None),
    "masked_peak": ("crash", None),
    "strided_flip": ("mismatch", "float64"),
}
# A line of each that meets all three conditions: what the defect is.
DEFECTS = {
    "folded_scan": 'torch.ops.fuzzstaged.folded_scan.default(Tensor([2, 4, 1], "float64"))',
    "masked_peak": 'torch.ops.fuzzstaged.masked_peak.default(Filled(Tensor([2, 5, 7], "bfloat16"), nan))',
    "strided_flip": 'torch.ops.fuzzstaged.strided_flip.default(Tensor([2, 6, 8], "float16", stride=[48, 1, 6]))',
}


def write_seeds(path) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in SEEDS.values()))
