"""api-tracer stats DIR: the top APIs, configs per API, calls per level.

Its summary files are read checked (formats/): bad input is an
InputError naming the file and line. The calls per level of a merged set
are counted by the tracer's C++ reader of the trace's `level:` fields (a
trace holds up to a GiB; it is only opened as a regular file first)."""

from __future__ import annotations

import os
from collections import Counter

from .. import _C
from ..config import api_of
from ..errors import InputError, UsageError
from ..formats.configs import read_set_configs
from ..formats.fileset import find_sets
from ..formats.io import open_regular, shown
from ..formats.sources import Provenance, provenance, sources_path
from ..formats.statistics import statistics_of
from ..formats.trace import has_trace, trace_limit_note
from ..util.text_table import format_table


def _level_table(calls: Counter) -> str:
    return format_table(["level", "calls"], [[str(k), str(v)] for k, v in sorted(calls.items())])


def _provenance_text(p: Provenance) -> str:
    """Where the configs came from: the sources, how many made each config."""
    shown_labels = ", ".join(f"{shown(label)} ({calls} calls)" for label, calls in p.labels[:5])
    more = f" and {len(p.labels) - 5} more" if len(p.labels) > 5 else ""
    lines = [
        f"sources: {len(p.labels)}: {shown_labels}{more}\n",
        "configs by their number of sources: "
        + ", ".join(f"{name}: {n}" for name, n in p.histogram if n)
        + f" ({p.only_one} of {p.configs} "
        "from one source only)\n",
    ]
    if len(p.labels) > 1:
        rows = [[e.config, ("<=" if e.at_most else "") + str(e.sources), str(e.calls)] for e in p.widest]
        lines.append(format_table(["config of the most sources", "sources", "calls"], rows))
    return "".join(lines)


def stats_table(directory: str, top: int = 20) -> str:
    if not os.path.isdir(directory):
        raise UsageError(f"stats: {directory} is not a directory")
    sets = find_sets([directory])
    if not sets:
        raise UsageError(f"stats: no file set (api_statistics*.yaml) under {directory}")
    out = []
    per_level: Counter = Counter()
    for s in sets:
        stats = statistics_of(s)
        counts, total = stats.counts, stats.total
        if s.level is not None:
            per_level[s.level] += total
        configs = Counter(api_of(line) for line in read_set_configs(s, stats))
        rel = os.path.relpath(s.directory, directory)
        name = directory if rel == "." else os.path.join(directory, rel)  # as the user names it
        title = f"{name}{' level ' + str(s.level) if s.level is not None else ''}"
        out.append(f"== {title}: {len(counts)} APIs, {total} calls, {sum(configs.values())} configs\n")
        rows = [
            [api, str(n), f"{100.0 * n / total:.2f}%" if total else "-", str(configs.get(api, 0))]
            for api, n in counts[:top]
        ]
        out.append(format_table(["API", "calls", "share", "configs"], rows))
        sourced = sources_path(s)
        if sourced:
            out.append(_provenance_text(provenance(sourced, top=min(top, 5))))
        note = trace_limit_note(s)
        if note:
            out.append(
                f"trace_limit ({note[0]} bytes) reached: {note[1]} calls are counted here but not in "
                f"api_trace{s.suffix}.*\n"
            )
        if s.level is None and has_trace(s):
            with open_regular(s.path("api_trace.yaml")):  # not a FIFO to wait on
                pass
            counts, bad_line, bad_value = _C.count_trace_levels(s.path("api_trace.yaml"))
            if bad_line:
                raise InputError(
                    s.path("api_trace.yaml"),
                    f"level: {shown(bad_value)} is not a level (0 to {int(_C.Level.max)})",
                    bad_line,
                )
            levels = Counter(counts)
            if levels:
                out.append(_level_table(levels))
        out.append("\n")
    if len(per_level) > 1:
        out.append("== calls per level\n" + _level_table(per_level))
    return "".join(out)
