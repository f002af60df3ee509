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

The C++ writer (csrc/core/writers.cc, WriteConfigSources) writes a traced
set's file; `SourcesWriter` here writes a merged one, byte for byte in the
same form (a test holds the two together).
"""
from __future__ import annotations

import heapq
import itertools
import json
import os
import resource
from typing import Any, BinaryIO, Dict, Iterator, List, NamedTuple, Optional, Tuple

from . import _C
from .errors import InputError, warn
from .filesets import COUNT_MAX, OUTPUT_FILES, FileSet, Statistics, api_of, open_regular, parse_config, shown

SOURCES = "api_config_sources.yaml"
assert SOURCES in OUTPUT_FILES, "the C++ recorder's file table names it"
MAX_LISTED = _C.MAX_STACKS  # sources listed per config


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


# -- writing ----------------------------------------------------------------------------------


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def labels_text(labels: Dict[str, int]) -> str:
    """The file's head: `labels:` and a record per label, sorted."""
    return "labels:\n" + "".join(f'- {{"label": {_json(label)}, "calls": {calls}}}\n'
                                 for label, calls in sorted(labels.items()))


def entry_text(e: Entry) -> str:
    """The record line of a config, as the C++ writer writes it."""
    at_most = ', "at_most": true' if e.at_most else ""
    listed = ", ".join(f"{_json(label)}: {n}" for label, n in e.top)
    return (f'- {{"config": {_json(e.config)}, "calls": {e.calls}, "sources": {e.sources}{at_most}, '
            f'"from": {{{listed}}}}}\n')


# -- reading ----------------------------------------------------------------------------------


def _unique_keys(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    d = dict(pairs)
    if len(d) != len(pairs):
        raise ValueError("a key given twice")
    return d


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a count")


def _count(path: str, value: Any, what: str, line: int, least: int = 0) -> int:
    if type(value) is not int or not least <= value <= COUNT_MAX:  # noqa: E721 - not a bool
        raise InputError(path, f"{what} must be a whole number from {least} to 2^64 - 1, not {shown(repr(value))}",
                         line)
    return value


class SourcesFile:
    """A set's api_config_sources.yaml, open: its labels read and checked,
    its configs read by entries() as a stream, each checked as it comes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._f: BinaryIO = open_regular(path)
        self._lines = enumerate(self._f, start=1)
        self.labels: Dict[str, int] = {}
        self._configs_head = 0
        try:
            self._read_labels()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self._f.close()

    def _next(self) -> Optional[Tuple[int, str]]:
        """The next line (its number, its text without the newline); None at the end."""
        try:
            lineno, raw = next(self._lines)
        except StopIteration:
            return None
        except OSError as e:
            raise InputError(self.path, f"cannot read: {e.strerror or e}") from None
        if not raw.endswith(b"\n"):
            raise InputError(self.path, "ends inside a line: the file was cut", lineno)
        if raw.endswith(b"\r\n"):
            raise InputError(self.path, "a carriage return: the tracer writes none (the file's line endings were "
                             "changed)", lineno)
        try:
            text = raw[:-1].decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError(self.path, f"not UTF-8: byte 0x{raw[e.start]:02x} ({e.reason})", lineno) from None
        return lineno, text

    def _record(self, lineno: int, text: str, keys: Tuple[str, ...], optional: Tuple[str, ...] = ()) -> Dict[str, Any]:
        if not (text.startswith("- {") and text.endswith("}")):
            raise InputError(self.path, f"expected a record '- {{...}}', not {shown(text[:60])}", lineno)
        try:
            record = json.loads(text[2:], object_pairs_hook=_unique_keys, parse_constant=_no_constant)
        except json.JSONDecodeError as e:
            raise InputError(self.path, f"not a record as the tracer writes it: {e.msg}", lineno, e.colno + 2) from None
        except (ValueError, RecursionError) as e:
            raise InputError(self.path, f"not a record as the tracer writes it: {e}", lineno) from None
        if not (set(keys) <= set(record) <= set(keys + optional)):
            raise InputError(self.path, f"a record has the fields {', '.join(keys)}"
                             f"{' (and ' + ', '.join(optional) + ')' if optional else ''}, not "
                             f"{', '.join(map(str, record))}", lineno)
        return record

    def _read_labels(self) -> None:
        first = self._next()
        if first is None:
            raise InputError(self.path, "empty: the tracer writes at least 'labels:' and a label here; the file "
                             "was cut")
        if first[1] != "labels:":
            raise InputError(self.path, f"expected 'labels:', not {shown(first[1][:60])}", first[0])
        while True:
            got = self._next()
            if got is None:
                raise InputError(self.path, "no 'configs:' after the labels: the file was cut")
            lineno, text = got
            if text in ("configs:", "configs: []"):
                self._configs_head = lineno
                self._no_configs = text == "configs: []"
                break
            record = self._record(lineno, text, ("label", "calls"))
            label = record["label"]
            if not isinstance(label, str) or not label or not label.isprintable():
                raise InputError(self.path, f"a label is printable text, not {shown(repr(label))}", lineno)
            if label in self.labels:
                raise InputError(self.path, f"the label {label!r} is listed twice", lineno)
            self.labels[label] = _count(self.path, record["calls"], "calls", lineno)
        if not self.labels:
            raise InputError(self.path, "no label: a set with this file has at least one source", 1)

    def entries(self) -> Iterator[Tuple[int, Entry]]:
        """Each config's entry with its line, checked: sorted, its sources
        among the labels and ranked, its counts adding up; at the end, the
        configs' calls add up to the labels'."""
        previous, previous_line, total = "", 0, 0
        listed: Dict[str, int] = dict.fromkeys(self.labels, 0)
        while True:
            got = self._next()
            if got is None:
                break
            lineno, text = got
            if self._no_configs:
                raise InputError(self.path, "a line after 'configs: []'", lineno)
            e = self._entry(lineno, text)
            if e.config <= previous:
                how = "twice" if e.config == previous else "out of order"
                raise InputError(self.path, f"the config is {how} (after line {previous_line}): the tracer writes "
                                 "them byte-wise sorted, once each", lineno)
            for label, n in e.top:
                listed[label] += n
            previous, previous_line = e.config, lineno
            total += e.calls
            yield lineno, e
        for label, n in listed.items():
            if n > self.labels[label]:
                raise InputError(self.path, f"the configs list {n} calls from {label!r}, more than its "
                                 f"{self.labels[label]} calls", self._configs_head)
        if total != sum(self.labels.values()):
            raise InputError(self.path, f"the configs' calls add up to {total}, the labels' to "
                             f"{sum(self.labels.values())}", self._configs_head)

    def _entry(self, lineno: int, text: str) -> Entry:
        r = self._record(lineno, text, ("config", "calls", "sources", "from"), ("at_most",))
        config = r["config"]
        if not isinstance(config, str) or not config:
            raise InputError(self.path, f"a config is a config line, not {shown(repr(config))[:60]}", lineno)
        calls = _count(self.path, r["calls"], "calls", lineno, least=1)
        sources = _count(self.path, r["sources"], "sources", lineno, least=1)
        at_most = r.get("at_most", False)
        if at_most is not True and "at_most" in r:
            raise InputError(self.path, "at_most is written only as true", lineno)
        top = r["from"]
        if not isinstance(top, dict) or not 1 <= len(top) <= min(sources, MAX_LISTED):
            raise InputError(self.path, f"from lists 1 to {min(sources, MAX_LISTED)} sources (of its {sources}) "
                             "with their calls", lineno)
        for label, n in top.items():
            if label not in self.labels:
                raise InputError(self.path, f"from names {shown(label)!r}, which is not among the labels", lineno)
            _count(self.path, n, f"the calls from {label!r}", lineno, least=1)
        entry = Entry(config, calls, sources, tuple(top.items()), at_most)
        if entry.top != ranked(top):
            raise InputError(self.path, "from lists its sources by calls, most first, ties by label", lineno)
        unlisted, made = sources - len(top), sum(top.values())
        if made > calls or (not at_most and (made + unlisted > calls if unlisted else made != calls)):
            raise InputError(self.path, f"calls: {calls}, but its {sources} sources made "
                             f"{sum(top.values())}{' and more' if unlisted else ''}", lineno)
        return entry


def sources_path(s: FileSet) -> Optional[str]:
    """The set's api_config_sources.yaml, if it has one."""
    return s.path(SOURCES) if s.has(SOURCES) else None


def config_calls(config_file: str) -> Optional[Dict[str, int]]:
    """Per config line, its calls, for the set that `config_file` (its
    api_configs.yaml, api_trace.txt, ...) belongs to: from the set's
    api_config_sources.yaml; None where the set has none."""
    directory, name = os.path.split(config_file)
    stem = os.path.splitext(name)[0]
    s = FileSet(directory, stem[stem.index("_level_"):] if "_level_" in stem else "")
    path = sources_path(s)
    if path is None:
        return None
    f = SourcesFile(path)
    try:
        return {e.config: e.calls for _, e in f.entries()}
    finally:
        f.close()


# -- merging ----------------------------------------------------------------------------------


def _combine(entries: List[Entry], disjoint: bool) -> Entry:
    """One config's entries from several sets, as one: calls added, the
    sources listed added per label and ranked, their number counted."""
    if len(entries) == 1:
        return entries[0]
    counts: Dict[str, int] = {}
    for e in entries:
        for label, n in e.top:
            counts[label] = counts.get(label, 0) + n
    complete = all(e.sources == len(e.top) and not e.at_most for e in entries)
    if complete:  # every source of every set is listed: count them
        sources, at_most = len(counts), False
    else:  # sets of different sources add up; sets sharing one may count it twice
        sources, at_most = sum(e.sources for e in entries), not disjoint or any(e.at_most for e in entries)
    top = ranked(counts)[:MAX_LISTED]
    return Entry(entries[0].config, sum(e.calls for e in entries), sources, top, at_most)


class _Input:
    """One set's stream for the merge: its configs from api_config_sources.yaml,
    the set's api_configs.yaml read beside them (the two hold the same lines),
    and its statistics held against their calls."""

    def __init__(self, s: FileSet, stats: Statistics) -> None:
        self.set, self.stats = s, stats
        self.file = SourcesFile(s.path(SOURCES))

    def stream(self, index: int) -> Iterator[Tuple[str, int, int, Entry]]:
        configs_path = self.set.path("api_configs.yaml")
        calls: Dict[str, int] = {}
        with open_regular(configs_path) as configs:
            lines = enumerate(configs, start=1)
            for lineno, e in self.file.entries():
                n, raw = next(lines, (0, b""))
                if raw.rstrip(b"\n") != e.config.encode("utf-8"):
                    raise InputError(configs_path, f"differs from {self.file.path}:{lineno} (the configs there): "
                                     "the two are written together and hold the same lines", n or None)
                api = api_of(e.config)
                calls[api] = calls.get(api, 0) + e.calls
                yield e.config, index, lineno, e
            n, raw = next(lines, (0, b""))
            if n:
                raise InputError(configs_path, f"a config past the last of {self.file.path}: the two are written "
                                 "together and hold the same lines", n)
        self.file.close()
        counted = dict(self.stats.counts)
        for api, n in calls.items():
            if counted.get(api) != n:
                where = f" ({self.stats.path}:{self.stats.lines[api]})" if api in counted else ""
                raise InputError(self.file.path, f"{shown(api)}: its configs' calls add up to {n}, but "
                                 f"{self.stats.path} counts {counted.get(api, 0)}{where}: the files are not of one "
                                 "set")
        missing = [api for api in counted if api not in calls]
        if missing:
            raise InputError(self.file.path, f"no config of {shown(missing[0])}, which {self.stats.path}:"
                             f"{self.stats.lines[missing[0]]} counts: the files are not of one set")


def merge_sources(sets: List[Tuple[FileSet, Statistics]], configs_out: BinaryIO, sources_out: BinaryIO) -> int:
    """Merges the sets' config lines and sources, a config at a time (a
    k-way merge of their sorted files: memory grows with the number of sets,
    not of configs), into the merged set's api_configs.yaml and
    api_config_sources.yaml; the number of distinct configs. Each distinct
    line is parsed once (filesets.parse_config)."""
    _allow_open_files(2 * len(sets) + 64)
    inputs: List[_Input] = []
    try:
        for s, stats in sets:
            inputs.append(_Input(s, stats))
        labels: Dict[str, int] = {}
        for i in inputs:
            for label, n in i.file.labels.items():
                labels[label] = labels.get(label, 0) + n
        disjoint = len(labels) == sum(len(i.file.labels) for i in inputs)
        sources_out.write(labels_text(labels).encode("utf-8"))
        merged = heapq.merge(*(i.stream(k) for k, i in enumerate(inputs)))
        distinct = 0
        for config, group in itertools.groupby(merged, key=lambda item: item[0]):
            items = list(group)
            _, index, lineno, _ = items[0]
            parse_config(config, inputs[index].file.path, lineno)
            if distinct == 0:
                sources_out.write(b"configs:\n")
            distinct += 1
            configs_out.write(config.encode("utf-8") + b"\n")
            sources_out.write(entry_text(_combine([e for *_, e in items], disjoint)).encode("utf-8"))
        if distinct == 0:
            sources_out.write(b"configs: []\n")
        return distinct
    finally:
        for i in inputs:
            i.file.close()


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
        warn(f"{lacking[0].directory}: no {OUTPUT_FILES[SOURCES].name(suffix)} (traced without a label)"
             f"{f', nor in {len(lacking) - 1} more sets' if len(lacking) > 1 else ''}: the merged set has none, "
             "so where its configs came from is not kept")
