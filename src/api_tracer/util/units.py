"""Times and byte counts as people read them: the profile's text table,
the HTML report and replay's messages write them alike."""

from __future__ import annotations

from typing import Optional


def fmt_time(ns: Optional[int]) -> str:
    if ns is None:
        return ""
    us = ns / 1e3
    if abs(us) >= 1e6:
        return f"{us / 1e6:.3f}s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def fmt_bytes(b: Optional[float], digits: int = 2) -> str:
    """Bytes in binary units, with `digits` decimals past B: 512 B, 1.50 KiB,
    17.00 MiB, 2.25 GiB (the profile's two decimals; replay's messages one)."""
    if b is None:
        return ""
    for unit, size in (("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(b) >= size:
            return f"{b / size:.{digits}f} {unit}"
    return f"{b:.0f} B"
