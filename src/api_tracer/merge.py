"""api-tracer merge DIR... -o OUT: one file set from many runs or ranks.

Sets are found under the directories (recursively) and merged per level
suffix: counts add, configs and APIs deduplicate, statistics, stacks (up to
3 distinct per API) and value profiles merge, and the traces are joined in
the order the sets were found. The summary files are written by the same
C++ writers as the tracer's.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Iterator, List, Tuple

import yaml

from . import _C
from .errors import UsageError
from .filesets import (FileSet, api_of, find_sets, group_by_suffix, read_lines, read_statistics, read_value_profiles,
                       trace_limit_note)


def _merge_group(sets: List[FileSet], out: str, suffix: str) -> Tuple[int, int]:
    counts: Dict[str, int] = {}
    order: Dict[str, int] = {}  # first-seen position
    configs = set()
    traced = all(s.has("api_trace.txt") and s.has("api_trace.yaml") for s in sets)
    if traced:
        # The traces one after the other; where trace_limit cut some, one
        # note at the end adds up the calls they did not write.
        notes = [note for note in map(trace_limit_note, sets) if note]
        merged = FileSet(out, suffix)
        with open(merged.path("api_trace.txt"), "w", encoding="utf-8") as txt, \
                open(merged.path("api_trace.yaml"), "w", encoding="utf-8") as yml:
            for s in sets:
                for line in read_lines(s.path("api_trace.txt")):
                    if not line.startswith("#"):
                        order.setdefault(api_of(line), len(order))
                        txt.write(line + "\n")
                with open(s.path("api_trace.yaml"), encoding="utf-8") as f:
                    yml.writelines(line for line in f if not line.startswith("#"))
            if notes:
                note = _C.trace_limit_note(max(limit for limit, _ in notes), sum(n for _, n in notes))
                txt.write(note)
                yml.write(note)
    for s in sets:
        for api, n in read_statistics(s):
            counts[api] = counts.get(api, 0) + n
            order.setdefault(api, len(order))
        configs.update(read_lines(s.path("api_configs.yaml")))
    api_counts = sorted(counts.items(), key=lambda kv: order[kv[0]])

    stacks = None
    if any(s.has("api_stacks.yaml") for s in sets):
        merged: Dict[str, List[List[str]]] = {}
        for data in _load_each(sets, "api_stacks.yaml", {}):
            for api, entry in data.items():
                have = merged.setdefault(api, [])
                for stack in entry.get("3stacks", []):
                    if stack not in have and len(have) < _C.MAX_STACKS:
                        have.append(stack)
        stacks = sorted(merged.items())

    profiles = None
    if any(s.has("api_value_ranges.yaml") for s in sets):
        # every set's profiles, as they are: the writer merges each line's
        profiles = [(line, list(paths.items())) for s in sets if s.has("api_value_ranges.yaml")
                    for line, paths in read_value_profiles(s.path("api_value_ranges.yaml")).items()]
    _C.write_summary(out, suffix, api_counts, sorted(configs), stacks, profiles)
    return len(api_counts), sum(counts.values())


def _load_each(sets: List[FileSet], name: str, empty: Any) -> Iterator[Any]:
    """The YAML document of each set's file `name`, for the sets that have one."""
    for s in sets:
        if s.has(name):
            with open(s.path(name), encoding="utf-8") as f:
                yield yaml.safe_load(f) or empty


def merge_sets(dirs: List[str], out: str) -> str:
    for d in dirs:
        if not os.path.isdir(d):
            raise UsageError(f"merge: {d} is not a directory")
    sets = find_sets(dirs, exclude=out)
    if not sets:
        raise UsageError(f"merge: no file set (api_statistics*.yaml) under {', '.join(dirs)}")
    return merge_found(sets, out)


def merge_found(sets: List[FileSet], out: str) -> str:
    """Merges these sets into `out` (per level suffix); what it made, said."""
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        raise UsageError(f"merge: cannot create {out}: {e}") from None
    report = []
    for suffix, group in group_by_suffix(sets).items():
        try:
            apis, calls = _merge_group(group, out, suffix)
        except (OSError, ValueError, yaml.YAMLError) as e:
            raise UsageError(f"merge: {e}") from None
        what = f"level {group[0].level}" if group[0].level is not None else "merged levels"
        report.append(f"{what}: {len(group)} sets -> {apis} APIs, {calls} calls")
    return f"merged into {out}:\n  " + "\n  ".join(report)
