"""What the report shows of a trace directory, as data: one `View` per
level of each file set under it (a set of one level, or each level of a
merged set and all of them together), with its APIs by calls, and per API
its configs (counted from api_trace.txt where there is one), its stacks
(api_stacks.yaml) and the shapes and dtypes of its tensor arguments. The
files are read checked, as merge reads them (formats/): bad input is an
InputError naming the file; a cut trace is counted up to its last whole
record, which the view's notes say."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

from ..config import api_of, parse_arguments
from ..formats.configs import read_set_configs
from ..formats.fileset import FileSet, find_sets
from ..formats.sources import Provenance, calls_of, provenance, sources_path
from ..formats.statistics import statistics_of
from ..formats.summaries import read_stacks
from ..formats.trace import has_trace, read_trace, trace_limit_note
from ..values import Call, TensorSpec

PROVENANCE_TOP = 50  # the configs of the most sources a view lists


@dataclass
class Api:
    name: str
    calls: int
    configs: List[Tuple[str, Optional[int]]] = field(default_factory=list)  # line, calls (None: not counted)
    stacks: List[List[str]] = field(default_factory=list)
    # per argument path ("args[0]", "kwargs.weight"): "[8, 3] float32" -> calls (configs, when not counted)
    tensors: Dict[str, Counter] = field(default_factory=dict)

    @property
    def dtypes(self) -> List[str]:
        """The dtypes of its tensor arguments, the most frequent first."""
        seen: Counter = Counter()
        for shapes in self.tensors.values():
            for shape, n in shapes.items():
                seen[shape.rpartition(" ")[2]] += n
        return [d for d, _ in seen.most_common()]


@dataclass
class View:
    title: str
    apis: List[Api]  # by calls, most first
    counted: bool  # configs counted (from the trace, or the set's api_config_sources.yaml)
    notes: List[str] = field(default_factory=list)
    provenance: Optional[Provenance] = None  # where the configs came from (api_config_sources.yaml)

    @property
    def calls(self) -> int:
        return sum(a.calls for a in self.apis)

    @property
    def configs(self) -> int:
        return sum(len(a.configs) for a in self.apis)


def tensor_args(line: str, api: str) -> Iterator[Tuple[str, TensorSpec]]:
    """(path, tensor) of each tensor a config line passes, at any depth; none
    for a line whose arguments do not parse. The API is set aside first, so
    that any name (a dialect's own) reads."""
    try:
        _, args, kwargs = parse_arguments(line)
    except ValueError:  # not a line the tracer wrote
        return
    stack: List[Tuple[str, Any]] = [(f"kwargs.{k}", v) for k, v in reversed(list(kwargs.items()))]
    stack += [(f"args[{i}]", v) for i, v in reversed(list(enumerate(args)))]
    while stack:
        path, value = stack.pop()
        if isinstance(value, TensorSpec):
            yield path, value
        elif isinstance(value, (list, tuple)):
            stack += [(f"{path}[{i}]", v) for i, v in reversed(list(enumerate(value)))]
        elif isinstance(value, dict):
            stack += [(f"{path}[{k!r}]", v) for k, v in reversed(list(value.items()))]
        elif isinstance(value, Call):
            stack += [(f"{path}.{k}", v) for k, v in reversed(list(value.kwargs.items()))]
            stack += [(f"{path}({i})", v) for i, v in reversed(list(enumerate(value.args)))]


def describe(t: TensorSpec) -> str:
    return f"[{', '.join(map(str, t.shape))}] {t.dtype}"


def build_view(
    title: str,
    api_calls: Iterable[Tuple[str, int]],
    lines: Iterable[str],
    line_calls: Optional[Counter],
    stacks: Dict[str, List[List[str]]],
    notes: List[str],
) -> View:
    """A view from its APIs' calls, its config lines and, when counted, each
    line's calls."""
    apis = {name: Api(name, calls, stacks=stacks.get(name, [])) for name, calls in api_calls}
    for line in lines:
        api = apis.setdefault(api_of(line), Api(api_of(line), 0))
        n = None if line_calls is None else line_calls[line]
        api.configs.append((line, n))
        for path, tensor in tensor_args(line, api.name):
            api.tensors.setdefault(path, Counter())[describe(tensor)] += 1 if n is None else n
    for api in apis.values():
        api.configs.sort(key=lambda c: (-(c[1] or 0), c[0]))
    ordered = sorted(apis.values(), key=lambda a: -a.calls)  # stable: the statistics' order for ties
    return View(title, ordered, counted=line_calls is not None, notes=notes)


def set_views(s: FileSet, name: str) -> List[View]:
    """The views of one file set: itself, and for a merged set of several
    levels each level (split by the levels its api_trace.yaml names)."""

    def title(*words: str) -> str:
        return " ".join(filter(None, (name,) + words)) or "trace"

    stacks = read_stacks(s) or {}
    stats = statistics_of(s)
    configs = read_set_configs(s, stats)
    notes = []
    line_calls: Optional[Counter] = None
    per_level: Dict[int, Counter] = {}
    cut = trace_limit_note(s)
    sourced = sources_path(s)
    if has_trace(s):
        line_calls = Counter()
        for record in read_trace(s, "not counted in the report", said=notes):
            line_calls[record.line] += 1
            if record.level is not None:
                per_level.setdefault(record.level, Counter())[record.line] += 1
        if cut:
            notes.append(
                f"trace_limit ({cut[0]} bytes) cut api_trace{s.suffix}.txt: config counts are of the "
                f"calls written; the {cut[1]} calls after are in the API totals only."
            )
    elif sourced:
        line_calls = Counter(calls_of(sourced))
    else:
        what = (
            f"the trace is not read (one of api_trace{s.suffix}.txt and .yaml is missing)"
            if s.has("api_trace.txt") or s.has("api_trace.yaml")
            else f"no api_trace{s.suffix}.txt (stream_trace=False)"
        )
        notes.append(f"{what}: calls are counted per API, not per config; shapes count configs, not calls.")
    level = f"level {s.level}" if s.level is not None else ""
    views = [build_view(title(level), stats.counts, configs, line_calls, stacks, notes)]
    if sourced:
        views[0].provenance = provenance(sourced, top=PROVENANCE_TOP)
    if s.level is None and line_calls is not None:
        if len(per_level) > 1:
            views[0].title = title("all levels")
            level_notes = (
                [
                    f"Calls per level are read from api_trace.yaml: the {cut[1]} calls trace_limit left "
                    "out are not in them."
                ]
                if cut
                else []
            )
            for n, calls in sorted(per_level.items()):
                api_calls: Counter = Counter()
                for line, k in calls.items():
                    api_calls[api_of(line)] += k
                views.append(
                    build_view(title(f"level {n}"), api_calls.most_common(), sorted(calls), calls, stacks, level_notes)
                )
    return views


def trace_views(directory: str, sets: Optional[List[FileSet]] = None) -> List[View]:
    """The views of every file set under `directory` (`sets`, where they
    were found already), named by the set's folder relative to it."""
    views = []
    for s in find_sets([directory]) if sets is None else sets:
        name = os.path.relpath(s.directory, directory)
        views += set_views(s, "" if name == os.curdir else name)
    return views
