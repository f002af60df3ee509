"""Times and byte counts as people read them: the profile's text table and
the HTML report write them alike."""

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


def fmt_bytes(b: Optional[int]) -> str:
    """Bytes in binary units: 512 B, 1.50 KiB, 17.00 MiB, 2.25 GiB."""
    if b is None:
        return ""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(b) >= size:
            return f"{b / size:.2f} {unit}"
    return f"{b} B"
