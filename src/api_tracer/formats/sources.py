"""Where each config came from: a set's api_config_sources.yaml, read as a
stream, and merged from many sets.

The file (docs/format.md, "Where configs came from") is YAML laid out a
record a line, each record a JSON object, so that it is read (and merged) a
line at a time, whatever its size:

    labels:
    - {"label": "resnet18", "calls": 10432}
    configs:
    - {"config": "torch.add(...)", "calls": 12, "sources": 1, "from": {"resnet18": 12}}

`labels` are the set's sources (APITracer(label=...)) with their calls;
`configs` are its config lines, byte-wise sorted as api_configs.yaml is,
each with its calls, its number of sources, and its first sources by calls
(most first, ties by label; at most MAX_LISTED: as many as api_stacks.yaml
keeps stacks). `sources` beyond those listed are counted, not named. Where
a merge cannot know how many distinct sources a config has (its inputs
shared a source that neither listed), the record says `"at_most": true`
and `sources` is an upper bound.

The file is read, written and merged by the C++ core (csrc/core/sources.h);
this module is its Python face.
"""

from __future__ import annotations

import heapq
import resource
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple

from .. import _C
from ..errors import InputError, warn
from .fileset import COUNT_MAX, OUTPUT_FILES, FileSet, set_file_beside
from .io import shown
from .statistics import Statistics

SOURCES = "api_config_sources.yaml"
assert SOURCES in OUTPUT_FILES, "the C++ recorder's file table names it"
MAX_LISTED = _C.MAX_STACKS  # sources listed per config (core/sources.h's kMaxListed)


class Entry(NamedTuple):
    """One config of api_config_sources.yaml."""

    config: str
    calls: int
    sources: int  # how many sources made it (an upper bound where at_most)
    top: Tuple[Tuple[str, int], ...]  # the first sources by calls, with their calls
    at_most: bool = False  # sources is an upper bound (merged sets shared a source neither listed)


def ranked(counts: Dict[str, int]) -> Tuple[Tuple[str, int], ...]:
    """Sources by calls, most first, ties by label: the order `from` lists them."""
    return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


# -- reading ----------------------------------------------------------------------------------


class SourcesFile:
    """A set's api_config_sources.yaml, open: its labels read and checked,
    its configs read by entries() as a stream, each checked as it comes by
    the C++ reader (csrc/core/sources.h): sorted, its sources among the
    labels and ranked, its counts adding up; at the end, the configs' calls
    add up to the labels'. Bad input is an InputError naming path:line."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._reader = _C.SourcesReader(path)  # (bad input: an InputError, naming path:line)
        self.labels: Dict[str, int] = dict(self._reader.labels)

    def entries(self) -> Iterator[Tuple[int, Entry]]:
        """Each config's entry with its line."""
        for lineno, config, calls, sources, top, at_most in self._reader:
            yield lineno, Entry(config, calls, sources, top, at_most)

    def close(self) -> None:
        self._reader = None


def sources_path(s: FileSet) -> Optional[str]:
    """The set's api_config_sources.yaml, if it has one."""
    return s.path(SOURCES) if s.has(SOURCES) else None


def calls_of(path: str) -> Dict[str, int]:
    """Per config line of an api_config_sources.yaml, its calls."""
    f = SourcesFile(path)
    try:
        return {e.config: e.calls for _, e in f.entries()}
    finally:
        f.close()


def config_calls(config_file: str) -> Optional[Dict[str, int]]:
    """Per config line, its calls, for the set that `config_file` (its
    api_configs.yaml, api_trace.txt, ...) belongs to: from the set's
    api_config_sources.yaml; None where the set has none."""
    path = set_file_beside(config_file, SOURCES)
    return None if path is None else calls_of(path)


class Provenance(NamedTuple):
    """What a set's api_config_sources.yaml says, in sum (stats, report)."""

    labels: List[Tuple[str, int]]  # the sources by calls, most first
    configs: int
    only_one: int  # configs that one source made
    histogram: List[Tuple[str, int]]  # configs per number of sources: ("1", n), ("2-3", n), ...
    widest: List[Entry]  # the configs of the most sources, most first (at most `top`)


BUCKETS = ((1, 1), (2, 3), (4, 9), (10, 99), (100, COUNT_MAX))  # numbers of sources a histogram bar counts


def provenance(path: str, top: int = 10) -> Provenance:
    """The sum of a set's api_config_sources.yaml, read as a stream."""
    f = SourcesFile(path)
    histogram = [0] * len(BUCKETS)
    widest: List[Tuple[int, int, Entry]] = []  # a heap of the `top` configs of the most sources
    configs = 0
    try:
        for lineno, e in f.entries():
            configs += 1
            histogram[next(i for i, (lo, hi) in enumerate(BUCKETS) if lo <= e.sources <= hi)] += 1
            item = (e.sources, -lineno, e)
            if len(widest) < top:
                heapq.heappush(widest, item)
            elif item[:2] > widest[0][:2]:
                heapq.heapreplace(widest, item)
    finally:
        f.close()
    names = [str(lo) if lo == hi else f"{lo}-{hi}" if hi < COUNT_MAX else f"{lo}+" for lo, hi in BUCKETS]
    return Provenance(
        list(ranked(f.labels)),
        configs,
        histogram[0],
        list(zip(names, histogram)),
        [e for *_, e in sorted(widest, key=lambda item: item[:2], reverse=True)],
    )


# -- merging ----------------------------------------------------------------------------------


def merge_sources(sets: List[Tuple[FileSet, Statistics]], configs_out: str, sources_out: str) -> int:
    """Merges the sets' config lines and sources, a config at a time, into
    the files `configs_out` (api_configs.yaml) and `sources_out`
    (api_config_sources.yaml); the number of distinct configs. The C++ merge
    (csrc/core/sources.h) reads every set's two files side by side (a k-way
    merge of sorted files: memory grows with the number of sets, not of
    configs) and checks each distinct line once; each set's calls per API
    are then held against its statistics."""
    _allow_open_files(2 * len(sets) + 64)
    distinct, api_calls = _C.merge_sources(
        [(s.path(SOURCES), s.path("api_configs.yaml")) for s, _ in sets], configs_out, sources_out
    )
    for (s, stats), calls in zip(sets, api_calls):
        _check_statistics(s.path(SOURCES), stats, dict(calls))
    return distinct


def _check_statistics(path: str, stats: Statistics, calls: Dict[str, int]) -> None:
    """That a set's configs' calls per API are its statistics' counts."""
    counted = dict(stats.counts)
    for api, n in sorted(calls.items()):
        if counted.get(api) != n:
            where = f" ({stats.path}:{stats.lines[api]})" if api in counted else ""
            raise InputError(
                path,
                f"{shown(api)}: its configs' calls add up to {n}, but {stats.path} counts "
                f"{counted.get(api, 0)}{where}: the files are not of one set",
            )
    missing = [api for api in counted if api not in calls]
    if missing:
        raise InputError(
            path,
            f"no config of {shown(missing[0])}, which {stats.path}:{stats.lines[missing[0]]} "
            "counts: the files are not of one set",
        )


def _allow_open_files(n: int) -> None:
    """Lets this process hold `n` files open at once, where its hard limit
    allows: a merge reads every set's two files side by side."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n if hard == resource.RLIM_INFINITY else min(n, hard), hard))


def lacking_sources(sets: List[FileSet]) -> List[FileSet]:
    """The sets without api_config_sources.yaml (traced without a label)."""
    return [s for s in sets if sources_path(s) is None]


def say_lacking(sets: List[FileSet], suffix: str) -> None:
    lacking = lacking_sources(sets)
    if lacking and len(lacking) < len(sets):
        warn(
            f"{lacking[0].directory}: no {OUTPUT_FILES[SOURCES].name(suffix)} (traced without a label)"
            f"{f', nor in {len(lacking) - 1} more sets' if len(lacking) > 1 else ''}: the merged set has none, "
            "so where its configs came from is not kept"
        )
