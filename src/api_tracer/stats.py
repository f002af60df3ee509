"""api-tracer stats DIR: the top APIs, configs per API, calls per level."""
from __future__ import annotations

import os
from collections import Counter
from typing import List

from .cli import UsageError
from .filesets import api_of, find_sets, read_lines, read_statistics


def _table(headers: List[str], rows: List[List[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return "\n".join([line(headers), line(["-" * w for w in widths])] + [line(r) for r in rows]) + "\n"


def stats_table(directory: str, top: int = 20) -> str:
    if not os.path.isdir(directory):
        raise UsageError(f"stats: {directory} is not a directory")
    sets = find_sets([directory])
    if not sets:
        raise UsageError(f"stats: no file set (api_statistics*.yaml) under {directory}")
    out = []
    for s in sets:
        counts = read_statistics(s)
        total = sum(n for _, n in counts)
        configs = Counter(api_of(line) for line in read_lines(s.path("api_configs", ".yaml")))
        name = os.path.relpath(s.directory, directory)
        title = f"{name}{' level ' + str(s.level) if s.level is not None else ''}"
        out.append(f"== {title}: {len(counts)} APIs, {total} calls, {sum(configs.values())} configs\n")
        rows = [[api, str(n), f"{100.0 * n / total:.2f}%", str(configs.get(api, 0))] for api, n in counts[:top]]
        out.append(_table(["API", "calls", "share", "configs"], rows))
        if s.level is None and s.has("api_trace", ".yaml"):
            levels = Counter()
            with open(s.path("api_trace", ".yaml"), encoding="utf-8") as f:
                for line in f:
                    if line.startswith("  level: "):
                        levels[int(line[len("  level: "):])] += 1
            if levels:
                out.append(_table(["level", "calls"], [[str(k), str(v)] for k, v in sorted(levels.items())]))
        out.append("\n")
    levels = Counter()
    for s in sets:
        if s.level is not None:
            levels[s.level] += sum(n for _, n in read_statistics(s))
    if len(levels) > 1:
        out.append("== calls per level\n" + _table(["level", "calls"], [[str(k), str(v)] for k, v in sorted(levels.items())]))
    return "".join(out)
