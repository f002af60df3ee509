"""api-tracer diff A B: what changed between two traces (a torch upgrade, a
model change, a refactor): per level, the APIs and the config lines that
are new in B, gone from A, or called a different number of times.

A and B are trace directories; each holds one set per level suffix (merge
several into one first). APIs and their calls come from the statistics;
configs from api_config_sources.yaml where both sets have one (calls per
config known), else from api_configs.yaml (new and gone only), each read
as stats, merge and report read them (formats/configs.py: set_configs).
The config files are sorted, so they are compared as two streams side by
side: memory does not grow with the configs, whatever their number. The
text lists the first --limit of each kind; --json writes every one as it
is found, a JSON object a line ({"set", "what", "kind", "name", "a", "b"}: the calls in A
and in B, null where absent or not known), then a line per section with
its counts ({"kind": "summary", "in_a", "in_b", "new", "gone", "changed",
"counted", "sections": how many summary lines there are, so that a file cut
among them is told}); `api-tracer report` shows such a file as a pane.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, TextIO, Tuple

from ..errors import UsageError
from ..formats.configs import set_configs
from ..formats.fileset import FileSet, find_sets, group_by_suffix
from ..formats.io import shown
from ..formats.sources import sources_path
from ..formats.statistics import Statistics, statistics_of

KINDS = ("new", "gone", "changed")  # what a difference is
SUMMARY = "summary"  # the kind of --json's last lines: a section's counts
SECTIONS = ("level", "apis", "configs")  # what a section is of: a level only one side has, or a level's APIs, configs
FAIL_ON = ("new", "gone", "any")  # --fail-on: which differences make the exit status 1


def config_stream(s: FileSet, stats: Statistics, counted: bool) -> Iterator[Tuple[str, Optional[int]]]:
    """The set's configs in order, with their calls when `counted` (else
    None), read a line at a time as every command reads them (set_configs)."""
    configs = set_configs(s, stats)
    return configs if counted else ((line, None) for line, _ in configs)


Item = Tuple[str, Optional[int]]  # (name, its calls; None: not known)


def joined(a: Iterator[Item], b: Iterator[Item]) -> Iterator[Tuple[str, Optional[Item], Optional[Item]]]:
    """Two sorted streams side by side: (name, A's item or None where A
    has none, B's likewise)."""
    x, y = next(a, None), next(b, None)
    while x is not None or y is not None:
        if y is None or (x is not None and x[0] < y[0]):
            yield x[0], x, None  # type: ignore[index]
            x = next(a, None)
        elif x is None or y[0] < x[0]:
            yield y[0], None, y
            y = next(b, None)
        else:
            yield x[0], x, y
            x, y = next(a, None), next(b, None)


@dataclass
class Tally:
    """One section's differences: how many of each kind, the first few."""

    limit: int
    counted: bool = True  # the calls of each name are known on both sides
    total_a: int = 0
    total_b: int = 0
    counts: Dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    first: Dict[str, List[Tuple[str, Optional[int], Optional[int]]]] = field(
        default_factory=lambda: {k: [] for k in KINDS}
    )

    def add(self, kind: str, name: str, a: Optional[int], b: Optional[int]) -> None:
        self.counts[kind] += 1
        if len(self.first[kind]) < self.limit:
            self.first[kind].append((name, a, b))


def classify(a: Optional[Item], b: Optional[Item]) -> Optional[str]:
    """new, gone, changed (calls, where both are known) or None."""
    if a is None:
        return "new"
    if b is None:
        return "gone"
    return "changed" if a[1] is not None and b[1] is not None and a[1] != b[1] else None


class Sink:
    """Where differences go: a Tally per section, and with --json each one
    written out as it is found (one JSON object a line)."""

    def __init__(self, limit: int, out: Optional[TextIO]) -> None:
        self.limit, self.out = limit, out
        self.tallies: List[Tuple[str, str, Tally]] = []  # (set, "level" | "apis" | "configs", tally)

    def section(self, where: str, what: str) -> Tally:
        tally = Tally(self.limit)
        self.tallies.append((where, what, tally))
        return tally

    def add(self, tally: Tally, where: str, what: str, name: str, a: Optional[Item], b: Optional[Item]) -> None:
        """One name as A and B have it (None: not there)."""
        tally.total_a += a is not None
        tally.total_b += b is not None
        kind = classify(a, b)
        if kind is None:
            return
        calls_a, calls_b = a and a[1], b and b[1]
        tally.add(kind, name, calls_a, calls_b)
        if self.out is not None:
            record = {"set": where, "what": what, "kind": kind, "name": name, "a": calls_a, "b": calls_b}
            self.out.write(json.dumps(record, ensure_ascii=False) + "\n")


def _one_set(top: str, sets: List[FileSet], suffix: str) -> FileSet:
    if len(sets) > 1:
        raise UsageError(
            f"diff: {top} holds {len(sets)} sets of {suffix[1:] or 'merged levels'} "
            f"({sets[0].directory}, {sets[1].directory}, ...): merge them into one first"
        )
    return sets[0]


def diff_sets(a: FileSet, b: FileSet, where: str, sink: Sink) -> None:
    stats_a, stats_b = statistics_of(a), statistics_of(b)
    apis = sink.section(where, "apis")
    for api, x, y in joined(iter(sorted(stats_a.counts)), iter(sorted(stats_b.counts))):
        sink.add(apis, where, "apis", api, x, y)
    counted = sources_path(a) is not None and sources_path(b) is not None
    configs = sink.section(where, "configs")
    configs.counted = counted
    for config, x, y in joined(config_stream(a, stats_a, counted), config_stream(b, stats_b, counted)):
        sink.add(configs, where, "configs", config, x, y)


def diff(a_dir: str, b_dir: str, sink: Sink) -> None:
    for d in (a_dir, b_dir):
        if not os.path.isdir(d):
            raise UsageError(f"diff: {d} is not a directory")
    groups_a, groups_b = group_by_suffix(find_sets([a_dir])), group_by_suffix(find_sets([b_dir]))
    for top, groups in ((a_dir, groups_a), (b_dir, groups_b)):
        if not groups:
            raise UsageError(f"diff: no file set (api_statistics*.yaml) under {top}")
    for suffix in sorted(set(groups_a) | set(groups_b)):
        where = suffix[1:].replace("_", " ") if suffix else "merged levels"
        if suffix not in groups_a or suffix not in groups_b:  # a level new in B, or gone from it
            side = (where, None)
            sink.add(
                sink.section(where, "level"),
                where,
                "level",
                where,
                side if suffix in groups_a else None,
                side if suffix in groups_b else None,
            )
            continue
        diff_sets(_one_set(a_dir, groups_a[suffix], suffix), _one_set(b_dir, groups_b[suffix], suffix), where, sink)


def changed(sink: Sink, fail_on: str) -> bool:
    """Whether the differences are of the kind --fail-on names."""
    kinds = KINDS if fail_on == "any" else (fail_on,)
    return any(t.counts[k] for _, _, t in sink.tallies for k in kinds)


def text(a_dir: str, b_dir: str, sink: Sink) -> str:
    out = [f"diff {a_dir} -> {b_dir}\n"]
    for where, what, t in sink.tallies:
        if what == "level":
            out.append(f"== {where}: only in {'B' if t.counts['new'] else 'A'}\n")
            continue
        said = ", ".join(f"{t.counts[k]} {k}" for k in KINDS)
        unknown = "" if t.counted else " (calls not known: a set traced without a label)"
        out.append(f"== {where}: {what}: {said} (A has {t.total_a}, B {t.total_b}){unknown}\n")
        for kind in KINDS:
            for name, a, b in t.first[kind]:
                calls = {"new": (b,), "gone": (a,), "changed": (a, b)}[kind]
                said = "" if None in calls else f"  ({' -> '.join(map(str, calls))} calls)"
                out.append(f"  {kind:<7} {shown(name)}{said}\n")
            more = t.counts[kind] - len(t.first[kind])
            if more:
                out.append(f"  ... and {more} more {kind} (--limit, or --json for all)\n")
    return "".join(out)
