"""The dtypes Paddle has, asked of Paddle itself (not of the package's
table of them, which the tests hold to this)."""

from __future__ import annotations

from typing import List


def paddle_dtypes() -> List[str]:
    """The dtypes paddle exports under their own names (paddle.float32 is
    `paddle.float32`; paddle.float is an alias) and makes tensors of."""
    import paddle

    names = []
    for name in dir(paddle):
        dtype = getattr(paddle, name)
        if not isinstance(dtype, paddle.dtype) or str(dtype) != f"paddle.{name}":
            continue
        try:
            paddle.zeros([1], dtype=dtype)
        except (ValueError, TypeError, RuntimeError):  # uint32, uint64: no tensors of them
            continue
        names.append(name)
    return sorted(names)
