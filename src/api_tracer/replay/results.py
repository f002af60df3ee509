"""What came of a config line (formats/configs.py: `Config`, the line as
read): `Result`, its outcome as the reports write it, and its `Status`;
the exceptions that decide an outcome on the way (`Invalid`, `Refused`,
`Skip`, `Unmapped`, `BuildError`, `SideError`)."""

from __future__ import annotations

import enum
import json
import math
from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional

from ..formats.json_fields import COUNT, MEASURE, SECONDS, STRING, STRING_VALUES, Kind, json_object, optional


class Status(str, enum.Enum):
    """What came of a config. A Status is its value as a str too: the
    reports write "ok", and it equals "ok"."""

    OK = "ok"  # the call returned (and, with --check, its results matched)
    MISMATCH = "mismatch"  # with --check: its results differ from the reference's beyond the tolerance
    VACUOUS = "vacuous"  # with --check: every value compared is NaN or infinite on both sides: nothing tested
    FAILED = "failed"  # it raised (or its worker died, or it killed the process)
    SKIPPED = "skipped"  # it cannot be rebuilt
    UNMAPPED = "unmapped"  # with --check FRAMEWORK: no mapping makes its call in that framework
    REFUSED = "refused"  # the replay policy does not call a name it holds (files, processes, ...): the policy working
    INVALID = "invalid"  # not a replayable config

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


STATUSES = [s.value for s in Status]


@dataclass
class Result:
    file: str
    line: int
    config: str
    api: str  # the line's API as soon as the line parses, else ""
    status: Status
    error: str = ""  # the exception's type (failed, invalid)
    message: str = ""  # the exception's message, the skip reason, the syntax error
    column: int = 0
    seconds: float = 0.0
    # With --check (check.py), once both sides ran: what was compared against,
    # "values" or "shapes" (a random call: shapes, dtypes and devices only),
    # and the errors of the output or gradient furthest beyond (or nearest
    # to) its tolerance, with that tolerance.
    check: str = ""
    compared: str = ""
    worst: str = ""
    max_abs_error: Optional[float] = None
    max_rel_error: Optional[float] = None
    rtol: Optional[float] = None
    atol: Optional[float] = None
    # how it was judged: "error model" (float64, replay/judge/error_model.py),
    # "exact" (the very values of the float64 reference: judge/check.py EXACT) or
    # "rtol/atol", and by how much the worst element exceeds (> 1) or stays
    # within (< 1) what that allows
    measure: str = ""
    excess: Optional[float] = None
    # --check repeat: each output tensor's hash (check.output_hashes)
    hashes: Optional[Dict[str, str]] = None
    # with ReplayOptions.behaviour, what the call did (behaviour.py); a report leaves it out where ""
    behaviour: str = ""
    # a keyed run's (replay/keyed.py): the config's key, 16 hex digits of a hash of the line and the
    # options that judge it, which shards, resumes and collections go by; a report leaves it out where ""
    key: str = ""

    def to_json(self) -> str:
        """The result as a report's line: a JSON object, with an infinite
        error written as the string "inf" (JSON has no infinity)."""
        fields = {
            k: "inf" if isinstance(v, float) and math.isinf(v) else v
            for k, v in asdict(self).items()
            if k not in OMITTED_EMPTY or v
        }
        return json.dumps(fields)


OMITTED_EMPTY = ("behaviour", "key")  # the fields a report's line leaves out where they are ""

# A report's line, read back (the report's pane, replay --resume, api-tracer collect): the fields every
# line has, and what each other field holds where a line has it.
REPORT_FIELDS = ("config", "api", "status")
REPORT_KINDS: Dict[str, Kind] = {
    "file": STRING,
    "line": COUNT,
    "error": STRING,
    "message": STRING,
    "column": COUNT,
    "seconds": SECONDS,
    "check": STRING,
    "compared": STRING,
    "worst": STRING,
    "measure": STRING,
    **{k: optional(MEASURE) for k in ("max_abs_error", "max_rel_error", "rtol", "atol", "excess")},
    "hashes": optional(STRING_VALUES),
    "behaviour": STRING,
    "key": STRING,
}
REPORT_LINE = "a line of a replay report"


def report_line(path: str, lineno: int, raw: bytes) -> Dict[str, Any]:
    """A report's line read back, checked (REPORT_FIELDS, REPORT_KINDS, a
    Status): an InputError naming path:line where it is not one."""
    return json_object(path, lineno, raw, REPORT_LINE, REPORT_FIELDS, "status", STATUSES, REPORT_KINDS)


def result_of(line: Dict[str, Any]) -> Result:
    """The Result a report's line (report_line) writes."""
    known = {k: line[k] for k in Result.__dataclass_fields__ if k in line}
    for k in ("max_abs_error", "max_rel_error", "rtol", "atol", "excess"):
        if known.get(k) == "inf":
            known[k] = math.inf
    return Result(
        **{**known, "status": Status(line["status"]), "file": line.get("file", ""), "line": line.get("line", 0)}
    )


class Invalid(Exception):
    """A line that is not a replayable config: bad syntax or a name outside torch."""

    def __init__(self, message: str, column: int) -> None:
        super().__init__(message)
        self.column = column


class Refused(Exception):
    """A line the replay policy refuses to call, for what a name it holds
    does (reads files, starts processes, is not reviewed...): not a defect
    of the line; the reason names the family (--allow-unsafe lifts it)."""

    def __init__(self, message: str, column: int) -> None:
        super().__init__(message)
        self.column = column


class Skip(Exception):
    """A config that cannot be rebuilt (an Opaque argument, say)."""


# How a failure of the other framework's call (--check FRAMEWORK) is said.
ON_THE_OTHER_SIDE = "on the {framework} side"


class Unmapped(Exception):
    """A config whose call has no counterpart in the framework --check
    names (frameworks/torch_paddle.py), and why."""


class NotWritable(Exception):
    """A call no reproducer script can make from literals (fuzz/repro.py):
    which argument, and why."""


class BuildError(Exception):
    """An argument whose building raised: the exception, and which argument."""

    def __init__(self, path: str, cause: Exception) -> None:
        super().__init__(f"building {path}: {first_line(cause)}")
        self.cause = cause


class SideError(Exception):
    """What the reference side of a check raised, building or calling, and
    which side: "on the float64 side: building args[1]: ...". `cause` is
    the exception underneath."""

    def __init__(self, what: str, error: Exception) -> None:
        built = isinstance(error, BuildError)
        super().__init__(f"{what}: {error if built else first_line(error)}")
        self.cause: Exception = error.cause if built else error  # type: ignore[union-attr]


def building_failed(message: str) -> bool:
    """Whether a failed result's message says an argument could not be
    built ("building ARG: ...", on a side of a check too): the line's
    inputs, not the API's doing."""
    return message.startswith("building ") or " side: building " in message


def first_line(e: BaseException) -> str:
    """An exception's message as a report gives it: its first line, at most
    500 characters."""
    text = str(e).strip()
    return text.splitlines()[0][:500] if text else ""
