"""A benchmark run's file (`api-tracer bench -o RESULTS.jsonl`), JSON lines
written as they come, so that a run killed loses only the round it was in:
a first line, the run's `Header` (its settings and the environment it
timed in), then one `Timing` per round of each config; read back checked
(each line at its file and line) and gathered per config into a
`Summary`: the median of its rounds and their spread."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional

from ..errors import InputError
from ..formats.io import appended_lines, open_regular
from ..formats.json_fields import (
    COUNT,
    STRING,
    Kind,
    check_fields,
    finite,
    json_object,
    optional,
    parse_json,
)
from ..replay.results import STATUSES, Status
from .stats import median

HEADER = "bench"  # the field only a results file's first line has: its format's version
VERSION = 1
TIMES = Kind(
    "a list of positive numbers of seconds",
    lambda v: isinstance(v, list) and bool(v) and all(finite(0).test(x) and x > 0 for x in v),
)


@dataclass(frozen=True)
class Header:
    """What a run timed with (`settings`: the flags that decide a time,
    which --resume must match) and where (`environment`: torch's version,
    the device, the CPU, the host: what a comparison says it compares)."""

    settings: Dict[str, Any]
    environment: Dict[str, Any]

    def to_json(self) -> str:
        return json.dumps({HEADER: VERSION, "settings": self.settings, "environment": self.environment})

    def differences(self, other: "Header") -> List[str]:
        """What differs between the settings of two runs, said as flags."""
        return [
            f"{name} {other.settings.get(name)!r} there, {value!r} here"
            for name, value in self.settings.items()
            if other.settings.get(name) != value
        ]


@dataclass
class Timing:
    """One round of one config: what came of it (a Status; a failure's
    error and message), and where it ran, the seconds of each block of
    calls divided by the calls of a block (`number`); the FLOPs torch's
    counter counts in one call (None: it counts none) and the bytes of its
    tensor inputs and outputs; with --backward the same of its backward;
    the lines of the configs file that are this config."""

    key: str
    file: str
    line: int
    config: str
    api: str
    round: int
    status: Status
    error: str = ""
    message: str = ""
    times: Optional[List[float]] = None
    number: int = 0
    flops: Optional[int] = None
    bytes: Optional[int] = None
    backward_times: Optional[List[float]] = None
    backward_number: int = 0
    backward_flops: Optional[int] = None
    lines: int = 0  # the lines of the configs file that are this config (a trace's: its calls)

    def to_json(self) -> str:
        return json.dumps({k: v for k, v in asdict(self).items() if v is not None and v != ""})


TIMING_LINE = "a timing of a benchmark run"
TIMING_KINDS: Dict[str, Kind] = {
    "file": STRING,
    "line": COUNT,
    "round": COUNT,
    "error": STRING,
    "message": STRING,
    "times": TIMES,
    "number": COUNT,
    "flops": optional(COUNT),
    "bytes": optional(COUNT),
    "backward_times": TIMES,
    "backward_number": COUNT,
    "backward_flops": optional(COUNT),
    "lines": COUNT,
}


def timing_of(path: str, lineno: int, raw: bytes) -> Timing:
    """A results file's line past the first, checked: an InputError
    naming path:line where it is not a timing."""
    fields = json_object(path, lineno, raw, TIMING_LINE, ("key", "config", "api", "status"), "status", STATUSES)
    check_fields(fields, TIMING_KINDS, path, TIMING_LINE, lineno, required=("round",))
    if fields["status"] == Status.OK and "times" not in fields:
        raise InputError(path, f'not {TIMING_LINE}: an ok timing without "times"', lineno)
    known = {k: fields[k] for k in Timing.__dataclass_fields__ if k in fields}
    return Timing(
        **{**known, "status": Status(fields["status"]), "file": fields.get("file", ""), "line": fields.get("line", 0)}
    )


def read_header(path: str) -> Header:
    """The first line of a results file: an InputError naming the file
    where it is not a benchmark run's."""
    with open_regular(path) as f:
        first = f.readline()
    return header_of(path, first)


def header_of(path: str, raw: bytes) -> Header:
    noun = "a benchmark run's results (api-tracer bench -o): its first line is their header"
    if not raw.strip():
        raise InputError(path, f"not {noun}: the file is empty", 1)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(path, f"not {noun}: not UTF-8", 1) from None
    value = parse_json(text, path, noun, 1)
    check_fields(value, {HEADER: COUNT}, path, noun, 1, required=(HEADER, "settings", "environment"))
    if value[HEADER] != VERSION:
        raise InputError(path, f"results of format {value[HEADER]}; this api-tracer reads format {VERSION}", 1)
    if not isinstance(value["settings"], dict) or not isinstance(value["environment"], dict):
        raise InputError(path, f"not {noun}: its settings and environment must be objects", 1)
    return Header(value["settings"], value["environment"])


def is_results_header(first_line: bytes) -> bool:
    """Whether a file whose first line is `first_line` is a benchmark run's results."""
    try:
        value = json.loads(first_line)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and HEADER in value


def looks_like_results(path: str) -> bool:
    """Whether `path` is meant as a results file, not a file of configs:
    its first line is a JSON object (read strictly after, a damaged header
    is said as one)."""
    try:
        with open_regular(path) as f:
            return f.readline().lstrip().startswith(b"{")
    except (InputError, OSError):
        return False


def read_timings(path: str, on_timing: Callable[[Timing], None], repair: bool = False) -> Header:
    """The header of a results file; each timing after it handed to
    `on_timing`, checked: an InputError naming path:line at a line that is
    not one, a round past the run's rounds, or a round of a config a line
    before held. A last line cut short (the run was killed as it wrote it)
    is an InputError, or with `repair` (--resume) cut off the file."""
    header = read_header(path)
    rounds = header.settings.get("rounds")
    seen = set()
    for lineno, raw in appended_lines(path, repair, skip=1):
        t = timing_of(path, lineno, raw)
        if isinstance(rounds, int) and t.round >= rounds:
            raise InputError(path, f"round {t.round} of a run of {rounds} rounds", lineno)
        if (t.key, t.round) in seen:
            raise InputError(path, f"round {t.round} of {t.key} twice: two runs' results mixed", lineno)
        seen.add((t.key, t.round))
        on_timing(t)
    return header


@dataclass
class Summary:
    """One config of a run, its rounds gathered: the status of its first
    (a config that fails is not timed again), the median per-call seconds
    of each round that timed it, and their median; FLOPs and bytes of one
    call; the calls a program made of it (`calls`: its weight, where
    known); the same of its backward."""

    key: str
    file: str
    line: int
    config: str
    api: str
    status: Status
    error: str = ""
    message: str = ""
    rounds: List[float] = field(default_factory=list)
    flops: Optional[int] = None
    bytes: Optional[int] = None
    backward_rounds: List[float] = field(default_factory=list)
    backward_flops: Optional[int] = None
    calls: Optional[int] = None
    lines: int = 0  # the lines of the configs file that are it

    @property
    def seconds(self) -> float:
        """The config's time: the median of its rounds' medians (NaN: none timed it)."""
        return median(self.rounds) if self.rounds else math.nan

    @property
    def backward_seconds(self) -> float:
        return median(self.backward_rounds) if self.backward_rounds else math.nan

    @property
    def spread(self) -> float:
        """How far apart its rounds are, relative to its time: (slowest -
        fastest) / median (NaN: fewer than two)."""
        if len(self.rounds) < 2:
            return math.nan
        return (max(self.rounds) - min(self.rounds)) / self.seconds

    def rate(self, amount: Optional[int]) -> Optional[float]:
        """`amount` (FLOPs, bytes) per second of its time."""
        return amount / self.seconds if amount and self.rounds and self.seconds > 0 else None


def gather(timings: Iterator[Timing]) -> Dict[str, Summary]:
    """The runs' timings per config (by key), in the order first seen."""
    out: Dict[str, Summary] = {}
    for t in timings:
        s = out.get(t.key)
        if s is None:
            s = out[t.key] = Summary(t.key, t.file, t.line, t.config, t.api, t.status, t.error, t.message)
        s.lines = max(s.lines, t.lines)
        if t.status != Status.OK:
            if s.status == Status.OK:  # (a later round crashed, say: the config fails)
                s.status, s.error, s.message = t.status, t.error, t.message
            continue
        s.rounds.append(median(t.times or []))
        s.flops, s.bytes = t.flops, t.bytes
        if t.backward_times:
            s.backward_rounds.append(median(t.backward_times))
            s.backward_flops = t.backward_flops
    return out


def read_summaries(path: str) -> "Run":
    """A results file, read whole and gathered."""
    timings: List[Timing] = []
    header = read_timings(path, timings.append)
    return Run(path, header, gather(iter(timings)))


@dataclass
class Run:
    path: str
    header: Header
    configs: Dict[str, Summary]
