"""The text table of a Profile: one row per module path, tree-drawn."""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional

from .text_table import format_table

if TYPE_CHECKING:
    from .profile import Profile, Row

SORT_COLUMN = {"self_cpu": "self_cpu_ns", "cpu_total": "cpu_total_ns", "self_cpu_bwd": "self_cpu_bwd_ns",
               "cpu_total_bwd": "cpu_total_bwd_ns", "self_cuda": "self_cuda_ns", "cuda_total": "cuda_total_ns",
               "self_cuda_bwd": "self_cuda_bwd_ns", "cuda_total_bwd": "cuda_total_bwd_ns",
               "self_mem": "self_mem", "mem": "mem", "calls": "calls"}


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
    if b is None:
        return ""
    for unit, size in (("Gb", 1 << 30), ("Mb", 1 << 20), ("Kb", 1 << 10)):
        if abs(b) >= size:
            return f"{b / size:.2f} {unit}"
    return f"{b} b"


def render(prof: "Profile", show_events: bool, depth: Optional[int], sort_by: Optional[str]) -> str:
    rows = prof.rows
    headers = ["Module", "Self CPU total", "CPU total", "Self CPU bwd", "CPU total bwd"]
    cuda = prof.use_cuda
    mem = prof.profile_memory
    if cuda:
        headers += ["Self CUDA total", "CUDA total", "Self CUDA bwd", "CUDA total bwd"]
    if mem:
        headers += ["Self CPU Mem", "CPU Mem", "Self CPU Mem bwd", "CPU Mem bwd"]
    if mem and cuda:
        headers += ["Self CUDA Mem", "CUDA Mem"]
    headers += ["Number of Calls", "Backward runs"]

    def cells(r: "Row") -> List[str]:
        if r.alias_of:
            return [""] * (len(headers) - 1)
        out = [fmt_time(r.self_cpu_ns), fmt_time(r.cpu_total_ns), fmt_time(r.self_cpu_bwd_ns),
               fmt_time(r.cpu_total_bwd_ns)]
        if cuda:
            out += [fmt_time(r.self_cuda_ns), fmt_time(r.cuda_total_ns), fmt_time(r.self_cuda_bwd_ns),
                    fmt_time(r.cuda_total_bwd_ns)]
        if mem:
            out += [fmt_bytes(r.self_mem), fmt_bytes(r.mem), fmt_bytes(r.self_mem_bwd), fmt_bytes(r.mem_bwd)]
        if mem and cuda:
            out += [fmt_bytes(r.self_cuda_mem), fmt_bytes(r.cuda_mem)]
        return out + [str(r.calls), str(r.bwd_runs)]

    lines: List[List[str]] = []

    def label(r: "Row") -> str:
        name = r.path[-1]
        if r.alias_of:
            return f"{name} (same module as {r.alias_of})"
        if r.shared_with:
            return f"{name} (also {', '.join(r.shared_with)})"
        return name

    def walk(i: int, prefix: str, last: bool, top: bool) -> None:
        r = rows[i]
        if depth is not None and r.depth > depth:
            return
        branch = "" if top else ("└── " if last else "├── ")
        lines.append([prefix + branch + label(r)] + cells(r))
        inner = prefix + ("" if top else ("    " if last else "│   "))
        kids = prof._children.get(i, [])
        if sort_by:
            col = SORT_COLUMN[sort_by]
            kids = sorted(kids, key=lambda k: -(getattr(rows[k], col) or 0))
        visible = [k for k in kids if depth is None or rows[k].depth <= depth]
        if show_events and not r.alias_of:
            for op in r.ops:
                tag = "fwd" if op.direction == "forward" else "bwd"
                bar = "│ " if visible else "  "
                filler = [""] * (len(headers) - 1)
                col = 0 if op.direction == "forward" else 2
                filler[col], filler[col + 1] = fmt_time(op.self_cpu_ns), fmt_time(op.cpu_total_ns)
                filler[-2 if op.direction == "forward" else -1] = str(op.calls)
                lines.append([f"{inner}{bar}· {tag} {op.name}"] + filler)
        for n, k in enumerate(visible):
            walk(k, inner, n == len(visible) - 1, False)

    for i in prof._children[-1]:
        walk(i, "", True, True)
    blank = [""] * (len(headers) - 1)
    unattributed = list(blank)
    unattributed[0] = fmt_time(prof.unattributed_ns)
    if cuda:  # node runs no module created (AccumulateGrad, the loss's own)
        unattributed[headers.index("Self CUDA bwd") - 1] = fmt_time(prof.unattributed_cuda_bwd_ns)
    lines.append(["(unattributed)"] + unattributed)
    total = list(blank)
    total[1] = fmt_time(prof.total_ns)
    lines.append(["(profiled block)"] + total)

    return format_table(headers, lines, sep=" | ", rule_sep="-|-")
