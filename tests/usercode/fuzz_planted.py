"""Operators with planted defects, for measuring api-tracer fuzz
(tests/fuzz/test_fuzz.py). Importing this module registers them in the
namespace `fuzzdefects` (fuzz --import fuzz_planted).

Each is right on its seed config (SEEDS) and wrong only under one kind of
mutation, the way real kernels go wrong: a read of the first element of
an empty tensor, a kernel that assumes contiguous memory, a float16 path
that loses the sign, a broadcasting fast path that reads one row, a
maximum that drops NaN, an assertion past a size, a loop that never ends
on a negative count, an allocation the OOM killer kills, and a division
by a Python int that raises ZeroDivisionError on an empty row. KINDS says which kind of finding each must give.
The fuzzer must find every one, and nothing in torch's add and mm seeded
beside them."""

import ctypes
import os
import signal
import time

import torch

LIB = "fuzzdefects"
# Which release of these operators runs (fuzz --recheck's test): in "2", first_scaled checks its
# input (fixed: a clean error) and bounded_cumsum asserts in Python instead of aborting (changed: an
# unclean error, not a crash); the rest are as they were.
RELEASE = os.environ.get("FUZZ_PLANTED_RELEASE", "1")


@torch.library.custom_op(f"{LIB}::first_scaled", mutates_args=())
def first_scaled(x: torch.Tensor) -> torch.Tensor:
    """x scaled by its first element: reads element 0 without checking
    that there is one (a segfault on a 0-size input)."""
    if x.numel() == 0:
        if RELEASE == "2":
            raise RuntimeError("first_scaled: x must have an element")
        ctypes.string_at(0)  # reads address 0: SIGSEGV
    return x * x.reshape(-1)[0]


@torch.library.custom_op(f"{LIB}::row_sums", mutates_args=())
def row_sums(x: torch.Tensor) -> torch.Tensor:
    """Sums over the last dimension, reading the storage as if x were
    contiguous (wrong values on a transposed, strided or offset input)."""
    as_if_contiguous = x.as_strided(x.shape, torch.empty(x.shape).stride(), 0)  # (bounds checked)
    return as_if_contiguous.sum(-1)


@torch.library.custom_op(f"{LIB}::soft_abs", mutates_args=())
def soft_abs(x: torch.Tensor) -> torch.Tensor:
    """|x| + 1; its float16 path loses the sign of negative inputs'
    result (wrong in float16 only)."""
    if x.dtype == torch.float16:
        return x + 1
    return x.abs() + 1


@torch.library.custom_op(f"{LIB}::scale_rows", mutates_args=())
def scale_rows(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """x * w, broadcast; a fast path for a size-1 dimension of x reads
    only x's first row (wrong with a size-1 dim), right in float64."""
    if x.dtype != torch.float64 and x.dim() >= 2 and 1 in x.shape[:-1] and x.numel():
        return (x.reshape(-1, x.shape[-1])[:1] * w).expand(torch.broadcast_shapes(x.shape, w.shape)).clone()
    return x * w


@torch.library.custom_op(f"{LIB}::row_max", mutates_args=())
def row_max(x: torch.Tensor) -> torch.Tensor:
    """The maximum of each row; its float32 path skips NaN instead of
    propagating it (a NaN dropped), right in float64."""
    if x.dtype == torch.float32:
        return torch.where(x.isnan(), -torch.inf, x).amax(-1)
    return x.amax(-1)


@torch.library.custom_op(f"{LIB}::bounded_cumsum", mutates_args=())
def bounded_cumsum(x: torch.Tensor) -> torch.Tensor:
    """A cumulative sum whose kernel asserts a fixed buffer of 4096
    elements (an abort past a size)."""
    if x.numel() > 4096:
        assert RELEASE != "2", "bounded_cumsum: at most 4096 elements"
        os.abort()
    return x.cumsum(-1)


@torch.library.custom_op(f"{LIB}::outer_table", mutates_args=())
def outer_table(x: torch.Tensor) -> torch.Tensor:
    """The table of x's pairwise products, whose kernel's allocation past
    40,000 entries is killed as the kernel's OOM killer kills (SIGKILL)."""
    if x.numel() ** 2 > 40_000:
        os.kill(os.getpid(), signal.SIGKILL)
    return x[:, None] * x[None, :]


@torch.library.custom_op(f"{LIB}::row_means", mutates_args=())
def row_means(x: torch.Tensor) -> torch.Tensor:
    """The mean of each row, dividing by the row's length as a Python int
    (a ZeroDivisionError, not a clean error, on rows of no element)."""
    return x.sum(-1) * (1 / x.shape[-1])


@torch.library.custom_op(f"{LIB}::repeat_rows", mutates_args=())
def repeat_rows(x: torch.Tensor, times: int) -> torch.Tensor:
    """x's rows repeated `times` times, counted down to 0 (a hang on a
    negative count)."""
    parts = []
    while times != 0:
        parts.append(x)
        times -= 1
        if times < 0:
            time.sleep(0.01)
    return torch.cat(parts) if parts else x[:0].clone()


# The seed line of each, and the finding it must give.
SEEDS = {
    "first_scaled": 'torch.ops.fuzzdefects.first_scaled.default(Tensor([4, 8], "float32"))',
    "row_sums": 'torch.ops.fuzzdefects.row_sums.default(Tensor([6, 5], "float32"))',
    "soft_abs": 'torch.ops.fuzzdefects.soft_abs.default(Tensor([3, 7], "float32"))',
    "scale_rows": 'torch.ops.fuzzdefects.scale_rows.default(Tensor([4, 6], "float32"), Tensor([6], "float32"))',
    "row_max": 'torch.ops.fuzzdefects.row_max.default(Tensor([5, 9], "float32"))',
    "bounded_cumsum": 'torch.ops.fuzzdefects.bounded_cumsum.default(Tensor([16, 32], "float32"))',
    "repeat_rows": 'torch.ops.fuzzdefects.repeat_rows.default(Tensor([2, 3], "float32"), 3)',
    "outer_table": 'torch.ops.fuzzdefects.outer_table.default(Tensor([64], "float32"))',
    "row_means": 'torch.ops.fuzzdefects.row_means.default(Tensor([3, 5], "float32"))',
}
KINDS = {
    "first_scaled": ("crash", None),
    "row_sums": ("mismatch", "layout"),
    "soft_abs": ("mismatch", "float64"),
    "scale_rows": ("mismatch", "float64"),
    "row_max": ("mismatch", "float64"),
    "bounded_cumsum": ("crash", None),
    "repeat_rows": ("hang", None),
    "outer_table": ("crash", None),
    "row_means": ("error", None),
}
# The root cause each is of (fuzz/classes.py's CLASSES): a 0-size input
# read, strides ignored, float16 arithmetic, a size-1 fast path (a wrong
# result of no class more precise), NaN dropped, sizes and counts unchecked,
# a Python ZeroDivisionError.
CLASSES = {
    "first_scaled": "zero-size",
    "row_sums": "strided-as-contiguous",
    "soft_abs": "low-precision",
    "scale_rows": "wrong-result",
    "row_max": "nan-inf",
    "bounded_cumsum": "unchecked-argument",
    "repeat_rows": "unchecked-argument",
    "outer_table": "unchecked-argument",
    "row_means": "unclean-exception",
}
# torch's own, seeded beside them: nothing may be found in these.
TORCH_SEEDS = [
    'torch.add(Tensor([4, 8], "float32"), Tensor([4, 8], "float32"), alpha=2)',
    'torch.mm(Tensor([8, 16], "float32"), Tensor([16, 4], "float32"))',
]
# How a campaign over them runs (tests/fuzz/test_fuzz.py's, and
# bench/bench_fuzz.py's): two workers, a case killed past 1.5 s, this
# module imported in each.
CAMPAIGN_FLAGS = ("--jobs", "2", "--timeout", "1.5", "--import", __name__)


def write_seeds(path) -> None:
    """Every seed, the planted operators' and torch's, one line each."""
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in [*SEEDS.values(), *TORCH_SEEDS]))
