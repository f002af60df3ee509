"""What a fuzz case came to (`classify`), and the findings of a campaign
(`Findings`): deduplicated by signature, counted, and written to the
campaign's directory as they change, each file replaced whole (written
aside, then renamed), so that a kill at any moment leaves the last
complete state:

- findings.jsonl: one JSON object a finding (`Finding`'s fields);
- findings.yaml: the reproducer lines alone, for api-tracer replay;
- api_value_ranges.yaml: the value profiles those lines' integer tensors
  were drawn from, where they had some (replay reads it beside
  findings.yaml).

What a campaign reads back (findings.jsonl here, campaign.json in
campaign.py; --resume, the report) is read by `read_campaign_file` and
checked against its fields' types and ranges (formats/json_fields.py): a file
that is not as a campaign writes it is an InputError naming it (and the
line), before any case runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any, Dict, Iterator, List, Optional, Tuple

from .. import _C
from ..config import parse_call
from ..errors import InputError
from ..formats.fileset import OUTPUT_FILES
from ..formats.io import decode, open_regular, read_all, replace_atomically
from ..formats.json_fields import BOOLEAN, LINE, STRING, STRINGS, Kind, check_fields, integer, one_of, parse_json
from ..formats.summaries import read_value_ranges
from ..replay.results import Status, building_failed

FINDINGS = "findings.jsonl"
REPRODUCERS = "findings.yaml"
# the set's value-ranges file, which replay reads beside findings.yaml (formats/configs.py: ranges_beside)
RANGES = OUTPUT_FILES["api_value_ranges.yaml"].name()

KINDS = ("crash", "hang", "error", "mismatch")
# What became of a finding since a campaign found it (history.py's recheck): found and not rechecked since;
# failing the same way again; running clean; failing another way; or not run at all (its line not
# replayable there: say, an operator whose --import is missing), which leaves its status as it was.
FOUND, STILL, FIXED, CHANGED, NOT_RUN = "found", "still failing", "fixed", "changed", "not run"
STATUSES = (FOUND, STILL, FIXED, CHANGED)
RECHECKED = (STILL, FIXED, CHANGED, NOT_RUN)
SEEN = ("when", "torch", "device")  # a sighting's fields: a UTC time, torch's version, the device
RUN = "run"  # the oracle of a plain replay: crash, hang and error are found there
CHECKS = ("float64", "layout", "repeat", "compile")  # oracles that are replay --check modes (and device:D)
DEVICE_ORACLE = "device:"  # device:DEVICE, replay's --check device:DEVICE

# A Python exception that is not a clean error of torch's (which raises
# RuntimeError, ValueError, TypeError, IndexError, NotImplementedError with a
# message for the user): the error oracle's finding.
UNCLEAN_TYPES = frozenset(
    {
        "SystemError",
        "AssertionError",
        "ZeroDivisionError",
        "UnboundLocalError",
        "NameError",
        "AttributeError",
        "KeyError",
        "RecursionError",
        "UnicodeDecodeError",
    }
)
UNCLEAN_MESSAGES = re.compile(
    r"INTERNAL ASSERT FAILED|please report a bug to PyTorch|"
    r"returned a result with an (?:error|exception) set",
    re.IGNORECASE,
)


@dataclass
class Finding:
    kind: str  # KINDS
    api: str
    oracle: str  # RUN, or the check mode whose verdict it is (float64, layout, ...)
    line: str  # the minimized reproducer, which replay runs as it is
    seed_line: str
    file: str  # the seed's file:line
    mutation: List[str]  # what changed from the seed, each mutation described
    signature: str
    message: str
    count: int = 1
    case: int = 0  # the first case that found it
    minimized: bool = False
    reproducer: str = ""  # its script of plain torch, in the campaign's directory (repro.py), once written
    no_reproducer: str = ""  # ... or why it has none
    status: str = FOUND  # STATUSES: what its latest recheck said (history.py)
    first_seen: Dict[str, str] = field(default_factory=dict)  # SEEN's fields ({}: written before they were kept)
    last_seen: Dict[str, str] = field(default_factory=dict)  # its latest failure, in a campaign or a recheck
    rechecks: List[Dict[str, str]] = field(default_factory=list)  # SEEN's fields, a status (RECHECKED), a message

    @property
    def check(self) -> Optional[str]:
        """The replay --check that shows it (None: a plain replay)."""
        return None if self.oracle == RUN else self.oracle


def seen_here(device: Optional[str]) -> Dict[str, str]:
    """A sighting now, in this process's torch, on `device` (None: the CPU)."""
    import torch

    when = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {"when": when, "torch": str(torch.__version__), "device": device or "cpu"}


# -- reading a campaign's files back ---------------------------------------------------------------

# The most bytes of a campaign file read back: far more than a campaign writes (its findings are one a
# signature; its state a few numbers and a number a seed line), so that a file that is none of its (a
# sparse terabyte, say) is refused before it is read into memory.
MAX_FILE_BYTES = 1 << 28


def read_campaign_file(path: str) -> str:
    """The text of a campaign's file: a regular file (formats/io.py's
    open_regular: a FIFO or a device is refused before anything waits on
    it), at most MAX_FILE_BYTES, UTF-8; else an InputError naming it."""
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_FILE_BYTES:
            raise InputError(path, f"{size:,} bytes: no campaign writes more than {MAX_FILE_BYTES:,} here")
        return decode(read_all(path, f), path, 1)


def sighting(seen: Dict[str, str]) -> str:
    """A sighting (first_seen, last_seen, a recheck) as a sentence's part:
    when, torch's version and the device; {} as findings from before
    sightings were kept."""
    return f"{seen['when']} (torch {seen['torch']}, {seen['device']})" if seen else "before sightings were kept"


def _sighting(value: Any, more: Tuple[str, ...] = ()) -> bool:
    return (
        isinstance(value, dict)
        and set(value) == {*SEEN, *more}
        and all(isinstance(x, str) and "\n" not in x for k, x in value.items() if k != "message")
        and isinstance(value.get("message", ""), str)
        and value.get("status", STILL) in RECHECKED
    )


def _oracle(value: Any) -> bool:
    if value == RUN or value in CHECKS:
        return True
    return isinstance(value, str) and value.startswith(DEVICE_ORACLE) and value != DEVICE_ORACLE and LINE.test(value)


# findings.jsonl's fields: Finding's, each checked (those with a default may be left out)
FINDING_FIELDS = {
    "kind": one_of(*KINDS),
    "api": LINE,
    "oracle": Kind(f"{RUN}, one of {', '.join(CHECKS)} or {DEVICE_ORACLE}DEVICE", _oracle),
    "line": LINE,
    "seed_line": LINE,
    "file": LINE,
    "mutation": STRINGS,
    "signature": LINE,
    "message": STRING,
    "count": integer(1),
    "case": integer(0),
    "minimized": BOOLEAN,
    "reproducer": STRING,
    "no_reproducer": STRING,
    "status": one_of(*STATUSES),
    "first_seen": Kind(f"{{}} or an object of the strings {', '.join(SEEN)}", lambda v: v == {} or _sighting(v)),
    "last_seen": Kind(f"{{}} or an object of the strings {', '.join(SEEN)}", lambda v: v == {} or _sighting(v)),
    "rechecks": Kind(
        f"a list of objects of the strings {', '.join(SEEN)}, status ({', '.join(RECHECKED)}) and message",
        lambda v: isinstance(v, list) and all(_sighting(r, ("status", "message")) for r in v),
    ),
}
FINDING_REQUIRED = ("kind", "api", "oracle", "line", "seed_line", "file", "mutation", "signature", "message")
FINDING = "a finding"


def parse_findings(path: str, text: str) -> List[Finding]:
    """The findings of a findings.jsonl's text, each line checked: a JSON
    object of FINDING_FIELDS, its line a config line, its signature no
    other line's. An InputError naming path:line at the first that is not;
    blank lines are skipped (an empty file: a campaign that found nothing)."""
    findings: List[Finding] = []
    signatures: Dict[str, int] = {}
    for lineno, raw in enumerate(text.split("\n"), 1):
        if not raw.strip():
            continue
        record = check_fields(
            parse_json(raw, path, FINDING, lineno),
            FINDING_FIELDS,
            path,
            FINDING,
            lineno,
            required=FINDING_REQUIRED,
            closed=True,
        )
        try:
            parse_call(record["line"])
        except ValueError as e:
            raise InputError(path, f"not {FINDING}: its line is not a config line ({e})", lineno) from None
        if record["signature"] in signatures:
            raise InputError(
                path, f"not {FINDING}: the signature of line {signatures[record['signature']]} again", lineno
            )
        signatures[record["signature"]] = lineno
        findings.append(Finding(**record))
    return findings


def read_findings(path: str) -> List[Finding]:
    """The findings of the findings.jsonl at `path` (parse_findings)."""
    return parse_findings(path, read_campaign_file(path))


@dataclass
class Outcome:
    """What one case came to: a finding's kind, signature and message, or
    nothing (kind "")."""

    kind: str = ""
    api: str = ""
    oracle: str = RUN
    signature: str = ""
    message: str = ""


def _normalized(message: str) -> str:
    """A message with its numbers and addresses made alike, for a signature."""
    message = re.sub(r"0x[0-9a-fA-F]+", "ADDR", message)
    return re.sub(r"\d+", "N", message)[:120]


def signal_name(exitcode: Optional[int]) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return signal.Signals(-exitcode).name
        except ValueError:
            return f"signal {-exitcode}"
    return f"exit code {exitcode}"


@dataclass(frozen=True)
class Ran:
    """What a worker says of a case it ran (campaign.run_cases): each
    step's (oracle, status, error, message), in order, what the plain run
    did (replay/behaviour.py; "" where it tells nothing: the case did not
    run as it is), and how long the steps took."""

    runs: List[Tuple[str, str, str, str]]
    behaviour: str = ""
    seconds: float = 0.0  # the steps' time, all together


def by_design(api: str, options: Any) -> bool:
    """Whether `api` raises by design (an assertion), as its framework says."""
    from ..replay.framework import line_framework, replay_framework

    return replay_framework(line_framework(api, options)).raises_by_design(api)


def classify(api: str, event: Any, designed: bool = False) -> Outcome:
    """A case's outcome from its pool event (replay.pool): a worker that
    died is a crash, one killed past the timeout a hang; a finished case's
    runs (oracle, status, error, message) an error (an unclean exception,
    not one of building the arguments, nor of an API that raises by design:
    `designed`, see by_design) or a mismatch."""
    from ..replay import pool

    oracle = lambda note: note or RUN  # noqa: E731 - a one-line mapping, named for what it says
    if isinstance(event, pool.Died):
        sig = signal_name(event.exitcode)
        return Outcome(
            "crash",
            api,
            oracle(event.note),
            f"{api} crash {sig} [{oracle(event.note)}]",
            f"the worker died: {sig}" + (" (killed: out of memory?)" if event.exitcode == -9 else ""),
        )
    if isinstance(event, pool.TimedOut):
        return Outcome(
            "hang",
            api,
            oracle(event.note),
            f"{api} hang [{oracle(event.note)}]",
            f"no result after {event.seconds:g} s (--timeout)" + (f": {event.why}" if event.why else ""),
        )
    for run, status, error, message in event.result.runs:
        if status == Status.MISMATCH.value:
            leaf = message.split(":", 1)[0]
            return Outcome("mismatch", api, run, f"{api} mismatch {run} {_normalized(leaf)}", message)
        unclean = error in UNCLEAN_TYPES or bool(UNCLEAN_MESSAGES.search(message))
        building = building_failed(message)
        if status == Status.FAILED.value and unclean and not building and not designed:
            return Outcome("error", api, run, f"{api} error {error}: {_normalized(message)}", f"{error}: {message}")
    return Outcome()


def _when(seen: Dict[str, str]) -> str:
    return seen.get("when", "")


def combined(a: Finding, b: Finding) -> Finding:
    """One finding of two of one signature (two campaigns', or a
    campaign's and its copy's): counted for both; first seen the
    earlier's, last seen the later's (a sighting of unknown time, from a
    file written before they were kept, is neither); their rechecks
    together, once each, by time; its status its latest event's (the
    later of last seen, found, and each recheck that ran); its line,
    message and mutations the earlier's, unless only the other's were
    minimized."""
    first, other = (a, b) if (_when(a.first_seen) or "~") <= (_when(b.first_seen) or "~") else (b, a)
    if other.minimized and not first.minimized:
        first, other = other, first
    rechecks = {json.dumps(r, sort_keys=True): r for r in [*a.rechecks, *b.rechecks]}
    seen = [s for s in (a.first_seen, b.first_seen) if _when(s)]
    last = [s for s in (a.last_seen, b.last_seen) if _when(s)]
    out = Finding(**{**asdict(first), "count": a.count + b.count})
    out.first_seen = min(seen, key=_when) if seen else first.first_seen
    out.last_seen = max(last, key=_when) if last else first.last_seen
    out.rechecks = sorted(rechecks.values(), key=_when)
    events = [(_when(out.last_seen), 0, FOUND)]
    events += [(_when(r), 1, r["status"]) for r in out.rechecks if r["status"] != NOT_RUN]
    out.status = max(events)[2]
    return out


class Findings:
    """A campaign's findings by signature, kept in `directory`."""

    def __init__(self, directory: str, device: Optional[str] = None) -> None:
        self.directory, self.device = directory, device  # (device: where what is found now is seen)
        self.by_signature: Dict[str, Finding] = {}
        self.profiles: Dict[str, Dict[str, Any]] = {}  # a finding's line -> its value profiles

    def __iter__(self) -> Iterator[Finding]:
        return iter(self.by_signature.values())

    def __len__(self) -> int:
        return len(self.by_signature)

    def load(self) -> None:
        """The findings a campaign in the directory wrote (--resume), each
        checked (read_findings); none where it wrote no findings.jsonl."""
        path = os.path.join(self.directory, FINDINGS)
        if not os.path.lexists(path):
            return
        for finding in read_findings(path):
            self.by_signature[finding.signature] = finding
        self.profiles = read_value_ranges(os.path.join(self.directory, RANGES))

    def add(
        self,
        outcome: Outcome,
        line: str,
        seed_line: str,
        file: str,
        mutation: List[str],
        case: int,
        profiles: Dict[str, Any],
    ) -> Tuple[Finding, bool]:
        """The finding of `outcome`, new (True) or counted once more."""
        known = self.by_signature.get(outcome.signature)
        seen = seen_here(self.device)
        if known:
            known.count += 1
            known.last_seen = seen
            return known, False
        finding = Finding(
            outcome.kind,
            outcome.api,
            outcome.oracle,
            line,
            seed_line,
            file,
            mutation,
            outcome.signature,
            outcome.message,
            case=case,
            first_seen=seen,
            last_seen=seen,
        )
        self.by_signature[outcome.signature] = finding
        if profiles:
            self.profiles[line] = profiles
        return finding, True

    def merge(self, other: "Findings") -> None:
        """Another campaign's findings added (pytest --api-fuzz's workers,
        fuzz --merge): one of a signature both found is one finding
        (`combined`)."""
        for f in other:
            known = self.by_signature.get(f.signature)
            mine = combined(known, f) if known else f
            self.by_signature[f.signature] = mine
            profiles = other.profiles.get(mine.line) or self.profiles.get(mine.line)
            if known and known.line != mine.line:
                self.profiles.pop(known.line, None)
            if profiles:
                self.profiles[mine.line] = profiles

    def shrunk(self, finding: Finding, line: str, mutation: List[str], message: str, profiles: Dict[str, Any]) -> None:
        """A smaller reproducer of `finding`."""
        self.profiles.pop(finding.line, None)
        finding.line, finding.mutation, finding.message = line, mutation, message
        if profiles:
            self.profiles[line] = profiles

    def save(self) -> None:
        """Every file, each replaced whole."""
        findings = sorted(self, key=lambda f: f.case)
        replace_atomically(
            os.path.join(self.directory, FINDINGS),
            "".join(json.dumps(asdict(f), ensure_ascii=False) + "\n" for f in findings),
        )
        replace_atomically(os.path.join(self.directory, REPRODUCERS), "".join(f.line + "\n" for f in findings))
        ranges = [(f.line, sorted(self.profiles[f.line].items())) for f in findings if self.profiles.get(f.line)]
        target = os.path.join(self.directory, RANGES)
        if not ranges:
            if os.path.exists(target):
                os.unlink(target)
            return
        staging = tempfile.mkdtemp(prefix=".ranges.", dir=self.directory)
        try:
            _C.write_summary(staging, "", [], [], None, ranges)
            os.replace(os.path.join(staging, RANGES), target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
