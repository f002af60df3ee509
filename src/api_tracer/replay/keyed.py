"""A replay keyed by config, which is what lets it leave one process and
one machine: each distinct config line has a key, 16 hex digits of a hash
of the line and of the options that judge it (`RunIdentity`), and the run
goes by it.

- `--shard I/N` replays the configs whose key is I modulo N: the same ones
  every time, whatever the order of the lines, so that N copies of one
  command (a Slurm array, a Kubernetes Indexed Job) replay each config once
  between them.
- `--resume` reads the report (-o) back, drops a last line a kill cut short,
  and replays only the configs it does not hold; the run's identity, kept
  beside the report (REPORT.run.json), must be this run's.
- The lines are read one at a time and only their keys are kept, in a
  `KeySet` (about 8 bytes a key), so that the memory of the process that
  drives a run does not grow with the text of a corpus of millions of lines.
- `api-tracer collect` puts the reports of shards (and of runs resumed)
  together by key (cli/collect.py).

A key is 64 bits: among ten million configs, two share one with a chance of
about 3 in a million (n^2 / 2^65)."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from ..errors import InputError, UsageError
from ..flags import shard_pair
from ..formats.configs import Config, stream_config_file
from ..formats.io import appended_lines, open_regular, read_all, replace_atomically
from .options import ReplayOptions
from .results import Result, report_line, result_of

IDENTITY_SUFFIX = ".run.json"  # beside a report: the identity of the run that writes it

# The options that judge a config (ReplayOptions' fields): a key changes with any of them. How long a
# config may take (--timeout) and where it runs (--isolate, --jobs, --ray) are not among them.
JUDGING = (
    "device",
    "seed",
    "allow_unsafe",
    "max_bytes",
    "check",
    "backward",
    "rtol",
    "atol",
    "imports",
    "libraries",
    "dialect",
)


@dataclass(frozen=True)
class Shard:
    """The part of a run one process does: the configs whose key is
    `index` modulo `count`."""

    index: int = 0
    count: int = 1

    def holds(self, key: int) -> bool:
        return key % self.count == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(text: str) -> Shard:
    """`I/N` (0 <= I < N), as --shard takes it; ValueError saying what is wrong."""
    try:
        return Shard(*shard_pair(text))
    except argparse.ArgumentTypeError as e:
        raise ValueError(str(e)) from None


def is_shard(text: Any) -> bool:
    """Whether `text` is a shard as --shard takes it (a file read back holds one)."""
    try:
        parse_shard(text)
    except (ValueError, AttributeError):
        return False
    return True


def _file_digest(path: Optional[str]) -> str:
    """The sha256 of a file's bytes ("" for none), read in blocks."""
    if not path:
        return ""
    digest = hashlib.sha256()
    with open_regular(path) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class RunIdentity:
    """What a run's results are keyed by besides each line: the options
    that judge them (JUDGING), the value ranges drawn from (the file's
    digest), and the shard (which configs the run holds)."""

    options: Dict[str, Any]
    ranges: str  # the value-ranges file's sha256, "" for none
    shard: str  # "I/N"

    @classmethod
    def of(cls, options: ReplayOptions, ranges_path: Optional[str], shard: Shard) -> "RunIdentity":
        judging = {name: getattr(options, name) for name in JUDGING}
        judging = {k: list(v) if isinstance(v, tuple) else v for k, v in judging.items()}
        return cls(judging, _file_digest(ranges_path), str(shard))

    def digest(self) -> bytes:
        """What every key of the run hashes besides its line: the shard
        left out (a config's key is the same in every shard of a run)."""
        judged = json.dumps({"options": self.options, "ranges": self.ranges}, sort_keys=True)
        return hashlib.sha256(judged.encode()).digest()

    def differences(self, other: "RunIdentity") -> List[str]:
        """What differs between two identities, said as flags and files."""
        said = [
            f"{name} {other.options.get(name)!r} there, {value!r} here"
            for name, value in self.options.items()
            if other.options.get(name) != value
        ]
        if other.ranges != self.ranges:
            said.append("other value ranges")
        if other.shard != self.shard:
            said.append(f"--shard {other.shard} there, {self.shard} here")
        return said


def key_of(digest: bytes, text: str) -> int:
    """A config line's key in a run whose identity digests to `digest`."""
    return int.from_bytes(hashlib.sha256(digest + text.encode("utf-8", "surrogateescape")).digest()[:8], "big")


def key_text(key: int) -> str:
    return f"{key:016x}"


class KeySet:
    """A set of 64-bit keys in about 8 bytes a key: the newest in a small
    set, folded now and then into one sorted array (numpy's stable sort,
    a merge of the two sorted runs)."""

    FOLD = 1 << 16

    def __init__(self) -> None:
        import numpy as np

        self.np = np
        self.recent: set = set()
        self.sorted = np.empty(0, np.uint64)

    def __contains__(self, key: int) -> bool:
        if key in self.recent:
            return True
        k = self.np.uint64(key)
        i = int(self.np.searchsorted(self.sorted, k))
        return i < len(self.sorted) and self.sorted[i] == k

    def __len__(self) -> int:
        return len(self.recent) + len(self.sorted)

    def add(self, key: int) -> None:
        self.recent.add(key)
        if len(self.recent) >= self.FOLD:
            self.fold()

    def fold(self) -> None:
        np = self.np
        new = np.fromiter(self.recent, np.uint64, len(self.recent))
        new.sort()
        self.sorted = np.sort(np.concatenate([self.sorted, new]), kind="stable")
        self.recent = set()


@dataclass
class Counts:
    """How the lines a keyed run read were shared out."""

    lines: int = 0  # config lines read
    repeats: int = 0  # lines whose config came before (the run replays it once)
    elsewhere: int = 0  # configs of other shards
    earlier: int = 0  # configs the report held already (--resume)
    given: int = 0  # configs handed to be replayed


def keyed_configs(
    path: str, digest: bytes, shard: Shard, counts: Counts, done: Optional[KeySet] = None
) -> Iterator[Tuple[int, Config]]:
    """(key, config) of each config of the file at `path` this run must
    replay: its shard's, each once, none `done` holds (those its report
    holds already, --resume); a line at a time."""
    seen = KeySet()
    for c in stream_config_file(path):
        counts.lines += 1
        key = config_key(digest, c)
        if not shard.holds(key):
            counts.elsewhere += 1
            continue
        if key in seen:
            counts.repeats += 1
            continue
        seen.add(key)
        if done is not None and key in done:
            continue
        counts.given += 1
        yield key, c


def config_key(digest: bytes, c: Config) -> int:
    """A config's key: of its text, and where the line was not UTF-8 of
    that too (its text escapes the bad bytes, as a line may spell them)."""
    return key_of(digest, c.text + (f"\x00{c.error}" if c.error else ""))


# -- a report read back -------------------------------------------------------------------


def identity_path(report: str) -> str:
    return report + IDENTITY_SUFFIX


def write_identity(report: str, identity: RunIdentity, complete: bool = False) -> None:
    """The run's identity beside its report (REPORT.run.json), replaced
    whole; `complete` once the run has reported every config of its shard
    (written false as it starts, so that a run killed is known as one)."""
    text = json.dumps({**asdict(identity), COMPLETE: complete}, sort_keys=True, indent=1) + "\n"
    replace_atomically(identity_path(report), text.encode())


COMPLETE = "complete"  # REPORT.run.json's: whether the run reported every config of its shard


def read_identity(report: str) -> Tuple[RunIdentity, bool]:
    """The identity kept beside a report, and whether its run was
    complete; an InputError naming the file where it is missing or damaged."""
    path = identity_path(report)
    if not os.path.exists(path):
        raise InputError(path, "no such file: a keyed replay writes it beside its report (-o)")
    with open_regular(path) as f:
        data = read_all(path, f)
    try:
        fields = json.loads(data.decode("utf-8"))
        complete = fields.pop(COMPLETE, None)
        if not isinstance(complete, bool):
            raise TypeError(f"{COMPLETE}: not true or false")
        identity = RunIdentity(**fields)
        if not isinstance(identity.options, dict) or not all(
            isinstance(v, str) for v in (identity.ranges, identity.shard)
        ):
            raise TypeError("a field of the wrong type")
        parse_shard(identity.shard)
    except (UnicodeDecodeError, ValueError, TypeError, RecursionError) as e:
        raise InputError(path, f"not a run's identity ({type(e).__name__}: {e})") from None
    return identity, complete


def read_back(report: str, on_result: Callable[[Result], None], repair: bool = True) -> Iterator[int]:
    """The key of each result a report holds, each handed to `on_result`
    as it is read. A last line cut short (the run was killed as it wrote
    it) is cut off the file, or without `repair` (the file left as it is)
    an InputError. An InputError naming report:line at a line that is not
    a result, or one without a key (not a keyed run's)."""
    for lineno, raw in appended_lines(report, repair):
        yield _keyed_line(report, lineno, raw, on_result)


def check_resumable(report: str, identity: RunIdentity, command: str) -> None:
    """A UsageError where --resume cannot go on with `report`: none there,
    or written by a run that judges otherwise or holds another shard."""
    if not os.path.exists(report):
        raise UsageError(f"{command}: --resume: -o {report}: no such file (a first run has no --resume)")
    if not os.path.isfile(report):
        raise UsageError(f"{command}: --resume: -o {report}: not a regular file (a report to go on with is one)")
    try:
        kept, _ = read_identity(report)
    except InputError as e:
        raise UsageError(f"{command}: --resume: {e}") from None
    differs = identity.differences(kept)
    if differs:
        raise UsageError(
            f"{command}: --resume: {report} was written by another run ({'; '.join(differs)}): "
            "resume it with the same flags, or write a new report"
        )


# -- reports put together -----------------------------------------------------------------


@dataclass
class Collected:
    """What collect_reports put together."""

    identity: RunIdentity
    results: int = 0  # distinct configs written
    repeats: int = 0  # results of a config another report (or line) held already, left out
    shards: List[str] = field(default_factory=list)  # each report's shard, in order
    missing: List[int] = field(default_factory=list)  # the shards of the run no report holds
    incomplete: List[str] = field(default_factory=list)  # the reports of runs killed before their end


def check_collectable(reports: List[str], command: str = "collect") -> Collected:
    """What collect_reports will put together, checked before any output
    is opened: a UsageError where a report's identity (REPORT.run.json) is
    missing or differs from the first's in what judges a config, or the
    reports split the run in different counts of shards; the shards none
    of them holds (`missing`), and the reports of runs killed (`incomplete`)."""
    identities = []
    for report in reports:
        try:
            identities.append(read_identity(report))
        except InputError as e:
            raise UsageError(f"{command}: {e}") from None
    first = identities[0][0]
    for report, (identity, _) in zip(reports[1:], identities[1:]):
        differs = [d for d in identity.differences(first) if not d.startswith("--shard")]
        if differs:
            raise UsageError(f"{command}: {report} is of another run than {reports[0]} ({'; '.join(differs)})")
    shards = [parse_shard(i.shard) for i, _ in identities]
    if len({s.count for s in shards}) > 1:
        said = ", ".join(f"{r}: {s}" for r, s in zip(reports, shards))
        raise UsageError(f"{command}: the reports are of runs split in different counts of shards ({said})")
    out = Collected(first, shards=[str(s) for s in shards])
    out.missing = sorted(set(range(shards[0].count)) - {s.index for s in shards})
    out.incomplete = [r for r, (_, complete) in zip(reports, identities) if not complete]
    return out


def collect_reports(
    reports: List[str], out: Collected, on_result: Callable[[Result], None], command: str = "collect"
) -> None:
    """The results of keyed reports (shards of one run, checked by
    check_collectable into `out`) handed to `on_result`, each config once
    (by key, the first kept), in memory that holds a key a config."""
    seen = KeySet()

    def take(r: Result) -> None:
        key = int(r.key, 16)
        if key in seen:
            out.repeats += 1
            return
        seen.add(key)
        out.results += 1
        on_result(r)

    for report in reports:
        try:
            for _ in read_back(report, take, repair=False):
                pass
        except InputError as e:
            raise UsageError(f"{command}: {e}") from None


def _keyed_line(report: str, lineno: int, raw: bytes, on_result: Callable[[Result], None]) -> int:
    """The key of a report's line, its result handed to `on_result`; an
    InputError naming report:line where it is no result, or has no key."""
    line = report_line(report, lineno, raw)
    key = line.get("key", "")
    if len(key) != 16 or not all(c in "0123456789abcdef" for c in key):
        raise InputError(report, f"a result without a key ({key!r}): not a keyed replay's report", lineno)
    on_result(result_of(line))
    return int(key, 16)
