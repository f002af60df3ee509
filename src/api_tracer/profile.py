"""Profile: a layer-by-layer profile of an nn.Module, in the spirit of
torchprof (same interface), with correct totals.

    from api_tracer import Profile
    with Profile(model, profile_memory=True) as prof:
        model(x).sum().backward()
    print(prof)                            # one row per module path
    print(prof.display(show_events=True))  # each module's aten ops beneath it
    data = prof.raw()                      # the numbers, for programs

Times come from the C++ core (core/profiler.h): module boundaries from a
C++ callable put as each module's `forward` for the block (and taken away
again, also when the block raises), autograd node runs and (unless
ops=False) operators from an at::RecordFunction observer, memory from c10's
allocator reports. A module's backward is the runs of the autograd nodes
its forward created (matched by sequence number), so forward and backward
are separate columns.
Self = the time minus the frames (module calls, node runs) directly inside;
the self times of all rows plus "unattributed" add up to the profiled
block's time.
"""

from __future__ import annotations

import contextlib
import csv
import json
import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple

from . import _C
from .trace.eager import run_compiled_code_eagerly
from .trace.module_tree import ModuleTree, PathLike
from .util.text_table import format_table
from .util.units import fmt_bytes, fmt_time


@dataclass
class OpRow:
    """An aten operator run inside a module (its self and inclusive time)."""

    name: str
    direction: str  # "forward" or "backward"
    calls: int
    self_cpu_ns: int
    cpu_total_ns: int


@dataclass
class Row:
    """One module path."""

    path: Tuple[str, ...]
    depth: int
    calls: int = 0
    self_cpu_ns: int = 0
    cpu_total_ns: int = 0
    bwd_runs: int = 0  # autograd node runs attributed to the module
    self_cpu_bwd_ns: int = 0
    cpu_total_bwd_ns: int = 0
    self_cuda_ns: Optional[int] = None  # device time, with use_cuda
    cuda_total_ns: Optional[int] = None
    self_cuda_bwd_ns: Optional[int] = None
    cuda_total_bwd_ns: Optional[int] = None
    self_mem: Optional[int] = None  # CPU bytes, net (allocated minus freed)
    mem: Optional[int] = None
    self_mem_bwd: Optional[int] = None
    mem_bwd: Optional[int] = None
    self_cuda_mem: Optional[int] = None
    cuda_mem: Optional[int] = None
    shared_with: List[str] = field(default_factory=list)  # other paths of the same module
    alias_of: Optional[str] = None  # this path names a module profiled under another path
    ops: List[OpRow] = field(default_factory=list)

    @property
    def name(self) -> str:
        return ".".join(self.path)


_running = threading.Lock()


def _uncompiled(model: Any) -> Any:
    """The module torch.compile wrapped, for a compiled one: its layers are
    the ones profiled, under its own class's name."""
    inner = getattr(model, "_orig_mod", None)
    return inner if type(model).__name__ == "OptimizedModule" and inner is not None else model


def _op_rows(ops: List[Any], direction: str) -> List[OpRow]:
    """OpRows from the core's OpStats."""
    return [
        OpRow(name=o.name, direction=direction, calls=o.calls, self_cpu_ns=o.self_ns, cpu_total_ns=o.total_ns)
        for o in ops
    ]


class Profile:
    """Profiles `model` layer by layer while the block runs.

    enabled: False makes the block run unprofiled.
    use_cuda: also measure CUDA time per module, forward and backward: CUDA
        events around each forward call and each autograd node run, read
        without blocking as the device passes them, and once at the end (no
        synchronization per layer). Ignored without a CUDA device.
    profile_memory: CPU and CUDA memory per module (net bytes).
    paths: profile only these subtrees: paths such as "features.3" or
        ("AlexNet", "features", "3").
    timeline_limit: how many spans (module calls, node runs, operators) each
        thread keeps for export_chrome_trace; later ones are counted, not
        kept (the table's sums are always whole). None: no limit.
    ops: record each module's aten operators (display(show_events=True),
        the ops in raw() and in the trace). False times the modules only:
        no callback runs per operator, which is most of what profiling a
        model of many small operators costs; the module times, backward
        attribution and memory are the same.

    A torch.compile'd model is profiled as the module it wraps, and
    compiled code runs eagerly inside the block (the compiler's stance
    "force_eager", restored at exit): a compiled graph has no layers. The
    stance is process-wide: compiled code on other threads runs eagerly too.
    """

    def __init__(
        self,
        model: Any,
        enabled: bool = True,
        use_cuda: bool = False,
        profile_memory: bool = False,
        paths: Optional[Iterable[PathLike]] = None,
        timeline_limit: Optional[int] = 1_000_000,
        ops: bool = True,
    ) -> None:
        import torch

        if not isinstance(model, torch.nn.Module):
            raise ValueError(f"model must be a torch.nn.Module, not {type(model).__name__}")
        model = _uncompiled(model)
        for name, value in (
            ("enabled", enabled),
            ("use_cuda", use_cuda),
            ("profile_memory", profile_memory),
            ("ops", ops),
        ):
            if not isinstance(value, bool):
                raise ValueError(f"{name} must be True or False, not {value!r}")
        if timeline_limit is not None and (
            isinstance(timeline_limit, bool) or not isinstance(timeline_limit, int) or timeline_limit < 0
        ):
            raise ValueError(f"timeline_limit must be a non-negative int or None, not {timeline_limit!r}")
        self.timeline_limit = timeline_limit
        self.model = model
        self.enabled = enabled
        self.use_cuda = use_cuda and torch.cuda.is_available()
        self.profile_memory = profile_memory
        self.ops = ops
        self.root = type(model).__name__
        self._paths = None if paths is None else list(paths)
        self._active = False
        self._data: Optional[dict] = None
        self.rows: List[Row] = []

    # -- lifecycle ---------------------------------------------------------

    def __enter__(self) -> "Profile":
        if not self.enabled:
            return self
        if self._active:
            raise RuntimeError("this Profile is already running: it cannot be entered twice at once")
        if not _running.acquire(blocking=False):
            raise RuntimeError("another Profile is running in this process")
        try:
            self._tree = ModuleTree(self.model, self._paths)
            self.scope_paths = self._tree.paths
            self._c = _C.Profiler(self._tree.parents, max_spans=self.timeline_limit, cuda=self.use_cuda)
            self._eager = run_compiled_code_eagerly(when_loaded=False, quietly=contextlib.nullcontext)
            self._wrap_forwards()
            self._c.start(self.profile_memory, self.ops)
        except BaseException:
            try:
                self._teardown()
            except Exception:  # noqa: BLE001 - the error that stopped the start is the one to see
                pass
            raise
        self._active = True
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if not self._active:
            return
        self._active = False
        self._teardown()
        self._data = self._c.snapshot()
        self.rows = self._build_rows()

    def _wrap_forwards(self) -> None:
        """Each profiled module's forward, for the block, is a C++ callable
        that runs it inside the module's scope: no module hook is added, so
        PyTorch keeps its fast path for calling modules (hooks make every
        module call build lists and tuples). Undone by _unwrap_forwards."""
        self._wrapped: List[Tuple[Any, bool, Any, Any]] = []
        for module_id, scopes in self._tree.scopes_of.items():
            module = self._tree.modules[module_id]
            had_own = "forward" in vars(module)
            old = vars(module).get("forward")
            wrapper = _C.scoped_forward(module.forward, scopes, self._c)
            module.forward = wrapper
            self._wrapped.append((module, had_own, old, wrapper))  # once in place: only then is there one to undo

    def _unwrap_forwards(self) -> None:
        """Puts every module's forward back, the ones after a failure too;
        raises the first failure. A forward the program put in place of the
        profile's inside the block is the program's: it stays."""
        first = None
        while getattr(self, "_wrapped", None):
            module, had_own, old, wrapper = self._wrapped.pop()
            try:
                if vars(module).get("forward") is not wrapper:
                    continue
                if had_own:
                    module.forward = old
                else:
                    del module.forward
            except Exception as e:  # noqa: BLE001 - every forward is put back; the first error is raised after
                first = first or e
        if first is not None:
            raise first

    def _teardown(self) -> None:
        """Undoes what __enter__ did, every step even when one fails (the
        first failure is raised once all have run): the model's forwards,
        the compiler's stance, the observer, the process-wide lock."""
        errors = []
        for step in (self._unwrap_forwards, self._restore_stance, self._stop_observer, self._release):
            try:
                step()
            except Exception as e:  # noqa: BLE001 - every step of the stop runs; the errors are raised after
                errors.append(e)
        if errors:
            raise errors[0]

    def _restore_stance(self) -> None:
        undo, self._eager = getattr(self, "_eager", None), None
        if undo is not None:
            undo()

    def _stop_observer(self) -> None:
        c = getattr(self, "_c", None)
        if c is not None:
            c.stop()

    def _release(self) -> None:
        tree = getattr(self, "_tree", None)
        if tree is not None:
            tree.modules = {}  # hold no module once done
        if _running.locked():
            _running.release()

    # -- results -----------------------------------------------------------

    def _build_rows(self) -> List[Row]:
        data = self._data
        fwd, bwd = data.forward, data.backward
        n = len(self.scope_paths)
        children: Dict[int, List[int]] = {i: [] for i in range(-1, n)}
        for i, p in enumerate(self._tree.parents):
            children[p].append(i)
        names = dict(enumerate(self._tree.names()))
        shared = {
            i: [names[j] for j in scopes if j != i]
            for scopes in self._tree.scopes_of.values()
            if len(scopes) > 1
            for i in scopes
        }
        rows = []
        for i, path in enumerate(self.scope_paths):
            f, b = fwd[i], bwd[i]
            row = Row(
                path=path,
                depth=len(path) - 1,
                calls=f.calls,
                self_cpu_ns=f.self_ns,
                cpu_total_ns=f.total_ns,
                bwd_runs=b.calls,
                self_cpu_bwd_ns=b.self_ns,
                cpu_total_bwd_ns=b.total_ns,
                shared_with=shared.get(i, []),
            )
            if row.shared_with and not (f.calls or b.calls):
                row.alias_of = next((s for s in row.shared_with), None)
            if self.profile_memory:
                row.self_mem, row.mem = f.mem_self, f.mem_total
                row.self_mem_bwd, row.mem_bwd = b.mem_self, b.mem_total
                row.self_cuda_mem = f.cuda_mem_self + b.cuda_mem_self
                row.cuda_mem = f.cuda_mem_total + b.cuda_mem_total
            if self.use_cuda:
                row.self_cuda_ns, row.cuda_total_ns = f.device_self_ns, f.device_total_ns
                row.self_cuda_bwd_ns, row.cuda_total_bwd_ns = b.device_self_ns, b.device_total_ns
            row.ops = _op_rows(f.ops, "forward") + _op_rows(b.ops, "backward")
            rows.append(row)
        # A module never called itself (a ModuleList, whose children its
        # parent calls one by one) has as its forward total what its
        # children's add up to, as its backward and memory totals do; its
        # self is 0. (Tree order: children come after their parent.)
        for i in reversed(range(n)):
            row = rows[i]
            if row.calls == 0 and children[i]:
                row.cpu_total_ns = sum(rows[c].cpu_total_ns for c in children[i])
                if self.use_cuda:
                    row.cuda_total_ns = sum(rows[c].cuda_total_ns or 0 for c in children[i])
        self._children = children
        return rows

    def _require_data(self) -> None:
        if self._data is None:
            raise RuntimeError("no profile yet: run the model inside `with Profile(model) as prof:` first")

    @property
    def unattributed_ns(self) -> int:
        """Block time outside every module's forward and attributed backward."""
        self._require_data()
        return self._data.unattributed_ns

    @property
    def unattributed_cuda_bwd_ns(self) -> Optional[int]:
        """CUDA time of the node runs no module created (with use_cuda)."""
        self._require_data()
        return self._data.backward[len(self.scope_paths)].device_self_ns if self.use_cuda else None

    @property
    def total_ns(self) -> int:
        """The profiled block's time."""
        self._require_data()
        return self._data.block_ns

    def raw(self) -> Dict[str, Any]:
        """The profile as plain data: rows (one per module path, tree order),
        unattributed time and operators, the block's total, and how many
        timeline spans were over timeline_limit."""
        self._require_data()
        n = len(self.scope_paths)
        unattributed_ops = _op_rows(self._data.forward[n].ops, "forward") + _op_rows(
            self._data.backward[n].ops, "backward"
        )
        return {
            "root": self.root,
            "total_ns": self.total_ns,
            "unattributed_ns": self.unattributed_ns,
            "unattributed_ops": [asdict(o) for o in unattributed_ops],
            "unattributed_cuda_bwd_ns": self.unattributed_cuda_bwd_ns,
            "timeline_dropped": self._c.dropped_spans,
            "cuda_frames_untimed": self._data.device_untimed if self.use_cuda else None,
            "rows": [dict(asdict(r), name=r.name) for r in self.rows],
        }

    def __str__(self) -> str:
        return self.display()

    def display(self, show_events: bool = False, depth: Optional[int] = None, sort_by: Optional[str] = None) -> str:
        """The tree table. show_events: each module's operators beneath it;
        depth: hide rows deeper than this (the root is 0); sort_by: order
        siblings by a column, descending (one of SORT_COLUMN's keys)."""
        if sort_by is not None and sort_by not in SORT_COLUMN:
            raise ValueError(f"sort_by must be one of {list(SORT_COLUMN)}, not {sort_by!r}")
        if show_events and not self.ops:
            raise ValueError("show_events: this profile recorded no operators (Profile(ops=False))")
        if self._data is None:
            return "<unprofiled>" if not self.enabled else "<no profile yet>"
        return render(self, show_events=show_events, depth=depth, sort_by=sort_by)

    # -- exports -------------------------------------------------------------

    def export_json(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.raw(), f, indent=1)

    def export_html(self, path: str) -> None:
        """The profile as one self-contained HTML page: the module tree as
        an icicle (CPU time forward and backward, memory, CUDA time) and a
        sortable table; `api-tracer report` draws the same from
        export_json's file."""
        from .report import write_report

        write_report(path, profiles=[(self.root, self.raw())])

    def export_csv(self, path: str) -> None:
        self._require_data()
        columns = [
            "name",
            "depth",
            "calls",
            "self_cpu_ns",
            "cpu_total_ns",
            "bwd_runs",
            "self_cpu_bwd_ns",
            "cpu_total_bwd_ns",
            "self_cuda_ns",
            "cuda_total_ns",
            "self_cuda_bwd_ns",
            "cuda_total_bwd_ns",
            "self_mem",
            "mem",
            "self_mem_bwd",
            "mem_bwd",
            "self_cuda_mem",
            "cuda_mem",
        ]
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(columns)
            for r in self.rows:
                w.writerow([r.name if c == "name" else getattr(r, c) for c in columns])
            unattributed = {
                "name": "unattributed",
                "depth": 0,
                "calls": 0,
                "self_cpu_ns": self.unattributed_ns,
                "self_cuda_bwd_ns": self.unattributed_cuda_bwd_ns,
            }
            w.writerow(["" if unattributed.get(c) is None else unattributed[c] for c in columns])

    def export_chrome_trace(self, path: str) -> None:
        """A Chrome trace (opens in Perfetto and chrome://tracing): module
        forward spans, backward node runs under their module, operators.
        Spans over timeline_limit are not in it: its metadata says how many."""
        self._require_data()
        spans = self._c.spans()
        t0 = min((s[3] for s in spans), default=0)
        events = []
        scope_kind, node_kind, op_kind = (int(k) for k in (_C.SpanKind.scope, _C.SpanKind.node, _C.SpanKind.op))
        cats = {scope_kind: "module", node_kind: "backward", op_kind: "operator"}
        for kind, scope, name, begin, end, thread in spans:
            module = ".".join(self.scope_paths[scope]) if 0 <= scope < len(self.scope_paths) else "unattributed"
            label = module if kind == scope_kind else f"{module} [{name}]" if kind == node_kind else name
            events.append(
                {
                    "name": label,
                    "cat": cats[kind],
                    "ph": "X",
                    "ts": (begin - t0) / 1e3,
                    "dur": (end - begin) / 1e3,
                    "pid": 0,
                    "tid": thread,
                    "args": {"module": module},
                }
            )
        with open(path, "w", encoding="utf-8") as f:
            json.dump(
                {
                    "traceEvents": events,
                    "displayTimeUnit": "ms",
                    "otherData": {"api_tracer_spans_dropped": self._c.dropped_spans},
                },
                f,
            )


# -- the text table: one row per module path, tree-drawn ------------------------

SORT_COLUMN = {
    "self_cpu": "self_cpu_ns",
    "cpu_total": "cpu_total_ns",
    "self_cpu_bwd": "self_cpu_bwd_ns",
    "cpu_total_bwd": "cpu_total_bwd_ns",
    "self_cuda": "self_cuda_ns",
    "cuda_total": "cuda_total_ns",
    "self_cuda_bwd": "self_cuda_bwd_ns",
    "cuda_total_bwd": "cuda_total_bwd_ns",
    "self_mem": "self_mem",
    "mem": "mem",
    "calls": "calls",
}


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
        out = [
            fmt_time(r.self_cpu_ns),
            fmt_time(r.cpu_total_ns),
            fmt_time(r.self_cpu_bwd_ns),
            fmt_time(r.cpu_total_bwd_ns),
        ]
        if cuda:
            out += [
                fmt_time(r.self_cuda_ns),
                fmt_time(r.cuda_total_ns),
                fmt_time(r.self_cuda_bwd_ns),
                fmt_time(r.cuda_total_bwd_ns),
            ]
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
