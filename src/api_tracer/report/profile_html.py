"""The report's pane of a layer profile (Profile.raw(), or the JSON of
Profile.export_json): the module tree as an icicle per measure (CPU time
forward and backward together, each alone, CUDA time, memory), and the
rows as a sortable, filterable table with self and total of each."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from ..util.units import fmt_bytes, fmt_time
from .charts import Node, icicle, legend_icicle
from .page import Cell, Column, esc, number, sortable_table, switch, tag

Row = Dict[str, Any]


def _sum(*values: Optional[int]) -> Optional[int]:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


@dataclass(frozen=True)
class Measure:
    """What an icicle's widths are: a row's total and self."""

    label: str
    total: Callable[[Row], Optional[int]]
    self_: Callable[[Row], Optional[int]]


MEASURES = [
    Measure(
        "CPU time, forward + backward",
        lambda r: _sum(r["cpu_total_ns"], r["cpu_total_bwd_ns"]),
        lambda r: _sum(r["self_cpu_ns"], r["self_cpu_bwd_ns"]),
    ),
    Measure("CPU time, forward", lambda r: r["cpu_total_ns"], lambda r: r["self_cpu_ns"]),
    Measure("CPU time, backward", lambda r: r["cpu_total_bwd_ns"], lambda r: r["self_cpu_bwd_ns"]),
    Measure(
        "CUDA time, forward + backward",
        lambda r: _sum(r.get("cuda_total_ns"), r.get("cuda_total_bwd_ns")),
        lambda r: _sum(r.get("self_cuda_ns"), r.get("self_cuda_bwd_ns")),
    ),
    Measure("CPU memory, forward", lambda r: r.get("mem"), lambda r: r.get("self_mem")),
    Measure("CPU memory, backward", lambda r: r.get("mem_bwd"), lambda r: r.get("self_mem_bwd")),
    Measure("CUDA memory", lambda r: r.get("cuda_mem"), lambda r: r.get("self_cuda_mem")),
]

# The table's columns past the module's name: (title, the row's field, how it reads).
COLUMNS = [
    ("calls", "calls", str),
    ("self CPU", "self_cpu_ns", fmt_time),
    ("CPU total", "cpu_total_ns", fmt_time),
    ("bwd runs", "bwd_runs", str),
    ("self CPU bwd", "self_cpu_bwd_ns", fmt_time),
    ("CPU total bwd", "cpu_total_bwd_ns", fmt_time),
    ("self CUDA", "self_cuda_ns", fmt_time),
    ("CUDA total", "cuda_total_ns", fmt_time),
    ("self CUDA bwd", "self_cuda_bwd_ns", fmt_time),
    ("CUDA total bwd", "cuda_total_bwd_ns", fmt_time),
    ("self mem", "self_mem", fmt_bytes),
    ("mem", "mem", fmt_bytes),
    ("self mem bwd", "self_mem_bwd", fmt_bytes),
    ("mem bwd", "mem_bwd", fmt_bytes),
    ("self CUDA mem", "self_cuda_mem", fmt_bytes),
    ("CUDA mem", "cuda_mem", fmt_bytes),
]

TOP_OPS = 3  # operators named in a cell's tooltip


def is_profile(data: object) -> bool:
    """Whether `data` (a loaded JSON) is what Profile.export_json writes."""
    return isinstance(data, dict) and isinstance(data.get("rows"), list) and "total_ns" in data


def _measured(rows: List[Row], measure: Measure) -> bool:
    return any(measure.total(r) for r in rows)


def tooltip(row: Row) -> str:
    """A row's numbers, one a line."""
    lines = [row["name"]]
    if row.get("alias_of"):
        return f"{row['name']}: the same module as {row['alias_of']}, counted there"
    lines.append(
        f"forward: {row['calls']} calls, self {fmt_time(row['self_cpu_ns'])}, total {fmt_time(row['cpu_total_ns'])}"
    )
    lines.append(
        f"backward: {row['bwd_runs']} node runs, self {fmt_time(row['self_cpu_bwd_ns'])}, "
        f"total {fmt_time(row['cpu_total_bwd_ns'])}"
    )
    if row.get("cuda_total_ns") is not None:
        lines.append(
            f"CUDA: forward self {fmt_time(row['self_cuda_ns'])}, total {fmt_time(row['cuda_total_ns'])}; "
            f"backward self {fmt_time(row['self_cuda_bwd_ns'])}, total {fmt_time(row['cuda_total_bwd_ns'])}"
        )
    if row.get("mem") is not None:
        lines.append(
            f"memory: forward self {fmt_bytes(row['self_mem'])}, total {fmt_bytes(row['mem'])}; "
            f"backward self {fmt_bytes(row['self_mem_bwd'])}, total {fmt_bytes(row['mem_bwd'])}"
        )
    if row.get("shared_with"):
        lines.append(f"also called as {', '.join(row['shared_with'])}")
    ops = sorted(row.get("ops", []), key=lambda o: -o["self_cpu_ns"])[:TOP_OPS]
    if ops:
        lines.append(
            "top operators by self time: "
            + "; ".join(f"{o['name']} ({o['direction']}) {fmt_time(o['self_cpu_ns'])}" for o in ops)
        )
    return "\n".join(lines)


def tree_nodes(rows: List[Row], measure: Measure) -> List[Node]:
    """The rows (in tree order) as icicle nodes for `measure`: a row's parent
    is the row of its path less the last name."""
    index = {tuple(r["path"]): i for i, r in enumerate(rows)}
    nodes = []
    for r in rows:
        total, own = measure.total(r) or 0, measure.self_(r) or 0
        shade = own / total if total > 0 else 0.0
        nodes.append(
            Node(
                label=r["path"][-1],
                parent=index.get(tuple(r["path"][:-1]), -1),
                value=total,
                shade=shade,
                tooltip=tooltip(r),
            )
        )
    return nodes


def rows_table(rows: List[Row], pane: str) -> str:
    """The modules in tree order, each by its path, with the columns the
    profile measured."""
    shown = [c for c in COLUMNS if any(r.get(c[1]) is not None for r in rows)]
    columns = [Column("module")] + [Column(title, numeric=True) for title, _, _ in shown]
    table_rows = []
    for r in rows:
        parent = "".join(f"{p}." for p in r["path"][:-1])
        name = tag("span", esc(parent), cls="dim") + esc(r["path"][-1])
        cells: List[Cell] = [Cell(name, r["name"])]
        for _, key, fmt in shown:
            value = r.get(key)
            cells.append(Cell("", -1) if value is None or r.get("alias_of") else number(value, fmt(value)))
        table_rows.append(cells)
    return sortable_table(f"{pane}-rows", columns, table_rows, noun="modules")


def profile_pane(data: Dict[str, Any], pane: str) -> str:
    """A profile's markup; `pane` is its element id, the prefix of its ids."""
    rows = data["rows"]
    facts = [
        f"{data.get('root', '')}: {len(rows)} module paths",
        f"profiled block {fmt_time(data['total_ns'])}",
        f"unattributed {fmt_time(data.get('unattributed_ns'))} (outside every module, and backward nodes "
        "no module made)",
    ]
    if data.get("timeline_dropped"):
        facts.append(f"{data['timeline_dropped']} timeline spans over timeline_limit (the sums are whole)")
    measures = [m for m in MEASURES if _measured(rows, m)]
    charts = [
        (f"{pane}-m{i}", m.label, legend_icicle(m.label) + icicle(tree_nodes(rows, m))) for i, m in enumerate(measures)
    ]
    return (
        tag("h2", esc(f"Layer profile: {data.get('root', '')}"))
        + tag("p", esc("; ".join(facts)), cls="sub")
        + tag("h3", "Module tree")
        + switch(f"{pane}-measures", charts, cls="metrics")
        + tag("h3", "Modules")
        + rows_table(rows, pane)
    )
