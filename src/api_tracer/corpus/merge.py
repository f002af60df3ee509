"""api-tracer merge DIR... -o OUT: one file set from many runs or ranks.

Sets are found under the directories (recursively) and merged per level
suffix: counts add, configs and APIs deduplicate, statistics, stacks (up to
3 distinct per API) and value profiles merge, and the traces are joined in
the order the sets were found. The summary files are written by the same
C++ writers as the tracer's. Where every set has api_config_sources.yaml
(traced with a label), the configs and their sources are merged by the C++
core as a stream (sources.py): a k-way merge of the sets' sorted files,
whose memory grows with the number of sets, not of configs.

Every input file is checked as it is read (formats/): a file that is not
as the tracer writes it stops the merge with `PATH[:LINE]: what is wrong`,
before anything of OUT is written; a trace a kill cut is merged up to its
last whole record, with a warning. The merged traces are written beside
their place and renamed into it once everything is read, so a merge that
refuses its input leaves OUT as it was.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from .. import _C
from ..config import api_of
from ..errors import InputError, UsageError, warn
from ..formats.configs import read_set_configs
from ..formats.fileset import COUNT_MAX, FileSet, find_sets, group_by_suffix
from ..formats.io import shown, temporary_of, unmakeable_directory
from ..formats.sources import SOURCES, lacking_sources, merge_sources, say_lacking
from ..formats.statistics import Statistics, statistics_of
from ..formats.summaries import read_stacks, read_value_profiles
from ..formats.trace import has_trace, read_trace, trace_limit_note


@dataclass
class _Group:
    """What one level suffix's sets hold, read and checked."""

    suffix: str
    sets: List[FileSet]
    counts: Dict[str, int] = field(default_factory=dict)
    order: Dict[str, int] = field(default_factory=dict)  # first-seen position
    configs: set = field(default_factory=set)
    stacks: Optional[List[Tuple[str, List[List[str]]]]] = None
    profiles: Optional[List[Tuple[str, List[Tuple[str, Any]]]]] = None
    traced: bool = False
    # Every set has api_config_sources.yaml: the configs and their sources
    # are merged as a stream (sources.py) from these statistics, not read.
    sourced: Optional[List[Tuple[FileSet, Statistics]]] = None


def _read_group(suffix: str, sets: List[FileSet]) -> _Group:
    g = _Group(suffix, sets)
    total = 0
    if not lacking_sources(sets):
        g.sourced = []
    else:
        say_lacking(sets, suffix)
    for s in sets:
        stats = statistics_of(s)
        for api, n in stats.counts:
            g.counts[api] = g.counts.get(api, 0) + n
            if g.counts[api] > COUNT_MAX:
                raise InputError(
                    stats.path,
                    f"{shown(api)}: the sets' counts add up past 2^64 - 1, more than the writers hold",
                    stats.lines[api],
                )
        total += stats.total
        if total > COUNT_MAX:
            raise InputError(stats.path, "the sets' calls add up past 2^64 - 1, more than the writers hold", 2)
        if g.sourced is not None:
            g.sourced.append((s, stats))
        else:
            g.configs.update(read_set_configs(s, stats))
    merged_stacks: Optional[Dict[str, List[List[str]]]] = None
    for s in sets:
        stacks = read_stacks(s)
        if stacks is None:
            continue
        merged_stacks = {} if merged_stacks is None else merged_stacks
        for api, entry in stacks.items():
            have = merged_stacks.setdefault(api, [])
            for stack in entry:
                if stack not in have and len(have) < _C.MAX_STACKS:
                    have.append(stack)
    if merged_stacks is not None:
        g.stacks = sorted(merged_stacks.items())
    for s in sets:
        if s.has("api_value_ranges.yaml"):
            # every set's profiles, as they are: the writer merges each line's
            profiles = read_value_profiles(s.path("api_value_ranges.yaml"))
            g.profiles = (g.profiles or []) + [(line, list(paths.items())) for line, paths in profiles.items()]
    traced = [has_trace(s) for s in sets]
    g.traced = all(traced)
    if any(traced) and not g.traced:
        lacking = sets[traced.index(False)]
        warn(
            f"{lacking.directory}: no trace of its set is read (api_trace{suffix}.txt and .yaml; "
            f"stream_trace=False), so the merged set has no api_trace{suffix}.* either"
        )
    return g


def _write_trace(g: _Group, out: str, staged: List[Tuple[str, str]]) -> None:
    """The group's traces, one after the other, into temporary files beside
    the merged set's (added to `staged`, renamed once all is written)."""
    merged = FileSet(out, g.suffix)
    paths = [merged.path("api_trace.txt"), merged.path("api_trace.yaml")]
    notes = [note for note in map(trace_limit_note, g.sets) if note]
    files = []
    current = paths[0]  # the file being written, for the error
    try:
        for path in paths:
            current = path
            staged.append((temporary_of(path), path))
            files.append(open(temporary_of(path), "w", encoding="utf-8"))
        txt, yml = files
        for s in g.sets:
            for record in read_trace(s, "left out of the merge"):
                g.order.setdefault(api_of(record.line), len(g.order))
                current = paths[0]
                txt.write(record.line + "\n")
                current = paths[1]
                yml.write(record.record)
        if notes:
            # Where trace_limit cut some, one note at the end adds up the
            # calls they did not write.
            note = _C.trace_limit_note(max(limit for limit, _ in notes), sum(n for _, n in notes))
            txt.write(note)
            yml.write(note)
        for path, f in zip(paths, files):
            current = path
            f.close()
    except OSError as e:
        raise InputError(current, f"cannot write: {e.strerror or e}") from None
    finally:
        for f in files:
            try:
                f.close()
            except OSError:
                pass


def _write_sources(g: _Group, out: str, staged: List[Tuple[str, str]]) -> int:
    """The group's configs and sources, merged as a stream into temporary
    files beside the merged set's (added to `staged`); the number of configs."""
    assert g.sourced is not None
    merged = FileSet(out, g.suffix)
    paths = [merged.path("api_configs.yaml"), merged.path(SOURCES)]
    # not the writers' own temporary name: write_summary writes (an empty)
    # api_configs.yaml through it before this one is put in place
    temporary = [temporary_of(path) + ".merged" for path in paths]
    staged.extend(zip(temporary, paths))
    try:
        return merge_sources(g.sourced, temporary[0], temporary[1])
    except OSError as e:  # "writing PATH failed: why", from the C++ writers
        raise InputError(out, f"cannot write the merged set: {e}") from None


def check_output_directory(out: str) -> None:
    """That `out` is a directory that can be written, or can be made: what
    can be known before the work (formats/io.py: unmakeable_directory)."""
    why = unmakeable_directory(out)
    if why == "not a directory":
        raise InputError(out, "not a directory: the merged set is written into a directory")
    if why:
        raise InputError(out, why)


def merge_sets(dirs: List[str], out: str) -> str:
    for d in dirs:
        if not os.path.isdir(d):
            raise UsageError(f"merge: {d} is not a directory")
        if os.path.realpath(d) == os.path.realpath(out):  # (by any name: a link, DIR/new/..)
            raise UsageError(f"merge: -o {out} is {d}, which merge reads: the merged set would replace its input")
    check_output_directory(out)
    sets = find_sets(dirs, exclude=out)
    if not sets:
        raise UsageError(f"merge: no file set (api_statistics*.yaml) under {', '.join(dirs)}")
    return merge_found(sets, out)


def merge_found(sets: List[FileSet], out: str) -> str:
    """Merges these sets into `out` (per level suffix); what it made, said.
    Every summary file is read and checked first, then the traces are read
    and written beside their place, then the summaries are written and the
    traces put in place: bad input leaves `out` as it was."""
    check_output_directory(out)
    groups = [_read_group(suffix, group) for suffix, group in group_by_suffix(sets).items()]
    made = not os.path.isdir(out)
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        raise InputError(out, f"cannot make this directory: {e.strerror or e}") from None
    staged: List[Tuple[str, str]] = []
    done = False
    try:
        for g in groups:
            if g.sourced is not None:
                _write_sources(g, out, staged)
            if g.traced:
                _write_trace(g, out, staged)
        report = []
        for g in groups:
            for api in g.counts:  # the traces' first-seen order, then the statistics'
                g.order.setdefault(api, len(g.order))
            api_counts = sorted(g.counts.items(), key=lambda kv: g.order[kv[0]])
            try:
                _C.write_summary(out, g.suffix, api_counts, sorted(g.configs), g.stacks, g.profiles)
            except OSError as e:  # "writing PATH failed: why", from the C++ writers
                raise InputError(out, f"cannot write the merged set: {e}") from None
            what = f"level {g.sets[0].level}" if g.sets[0].level is not None else "merged levels"
            report.append(f"{what}: {len(g.sets)} sets -> {len(api_counts)} APIs, {sum(g.counts.values())} calls")
        for temporary, path in staged:
            try:
                os.replace(temporary, path)
            except OSError as e:
                raise InputError(path, f"cannot write: {e.strerror or e}") from None
        done = True
    finally:
        for temporary, _ in [] if done else staged:
            try:
                os.unlink(temporary)
            except OSError:
                pass
        if made and not done:
            try:
                os.rmdir(out)  # only if nothing else is in it
            except OSError:
                pass
    return f"merged into {out}:\n  " + "\n  ".join(report)
