"""A config line and what came of it: `Config`, the line as read;
`Result`, its outcome as the reports write it, and its `Status`; the
exceptions that decide an outcome on the way (`Invalid`, `Skip`,
`BuildError`, `SideError`); reading a file of config lines, and the
value-ranges file beside it."""
from __future__ import annotations

import enum
import json
import math
import os
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional

from ..filesets import FileSet, read_value_profiles
from ..operator_inputs import is_operator_inputs, read_said


@dataclass
class Config:
    file: str
    line: int
    text: str
    error: str = ""  # why the line cannot be read (it is not UTF-8)
    column: int = 0  # where, when error


class Status(str, enum.Enum):
    """What came of a config. A Status is its value as a str too: the
    reports write "ok", and it equals "ok"."""

    OK = "ok"  # the call returned (and, with --check, its results matched)
    MISMATCH = "mismatch"  # with --check: its results differ from the reference's beyond the tolerance
    VACUOUS = "vacuous"  # with --check: every value compared is NaN or infinite on both sides: nothing tested
    FAILED = "failed"  # it raised (or its worker died, or it killed the process)
    SKIPPED = "skipped"  # it cannot be rebuilt
    INVALID = "invalid"  # not a replayable config

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


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
    # how it was judged: "error model" (float64, replay/error_model.py) or
    # "rtol/atol", and by how much the worst element exceeds (> 1) or stays
    # within (< 1) what that allows
    measure: str = ""
    excess: Optional[float] = None
    # --check repeat: each output tensor's hash (check.output_hashes)
    hashes: Optional[Dict[str, str]] = None

    def to_json(self) -> str:
        """The result as a report's line: a JSON object, with an infinite
        error written as the string "inf" (JSON has no infinity)."""
        fields = {k: "inf" if isinstance(v, float) and math.isinf(v) else v for k, v in asdict(self).items()}
        return json.dumps(fields)


class Invalid(Exception):
    """A line that is not a replayable config: bad syntax or a name outside torch."""

    def __init__(self, message: str, column: int) -> None:
        super().__init__(message)
        self.column = column


class Skip(Exception):
    """A config that cannot be rebuilt (an Opaque argument, say)."""


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


def first_line(e: BaseException) -> str:
    """An exception's message as a report gives it: its first line, at most
    500 characters."""
    text = str(e).strip()
    return text.splitlines()[0][:500] if text else ""


def read_configs(path: str) -> List[Config]:
    """The distinct config lines of a file, each with the line it was first
    on. A line that is not UTF-8 is kept (as its text with the bad bytes
    escaped), with the error and the column of its first bad byte.

    A file in PyTorch's operator-inputs format (operator_inputs.py: its
    first line that is neither blank nor a comment starts with
    `Operator: `) gives the config line of each input line, with that
    line's number; a line that breaks the format raises InputError."""
    seen = set()
    configs = []
    with open(path, "rb") as f:
        data = f.read()
    if is_operator_inputs(data):
        return [Config(path, e.line, e.config) for e in read_said(path, data)]
    for lineno, raw in enumerate(data.splitlines(), 1):  # the line ends text mode knows: \n, \r, \r\n
        error, column = "", 0
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            text = raw.decode("utf-8", "backslashreplace")
            error = f"the line is not UTF-8: byte 0x{raw[e.start]:02x} ({e.reason})"
            column = len(raw[:e.start].decode("utf-8")) + 1
        text = text.strip()
        if not text or text.startswith("#") or text in seen:
            continue
        seen.add(text)
        configs.append(Config(path, lineno, text, error, column))
    return configs


def read_value_ranges(path: Optional[str]) -> Dict[str, Dict[str, Any]]:
    """Per config line, per argument path, the value profile replay draws
    integer tensors from (filesets.read_value_profiles); {} without a file."""
    if not path or not os.path.isfile(path):
        return {}
    return read_value_profiles(path)


def ranges_beside(config_file: str) -> Optional[str]:
    """The value-ranges file of the set `config_file` belongs to, if it is
    there: in its directory, with its _level_N suffix (none: the merged
    set's), named as the set's file table (filesets.OUTPUT_FILES, from the
    C++ recorder) names it."""
    directory, name = os.path.split(config_file)
    stem = os.path.splitext(name)[0]
    fileset = FileSet(directory, stem[stem.index("_level_"):] if "_level_" in stem else "")
    return fileset.path("api_value_ranges.yaml") if fileset.has("api_value_ranges.yaml") else None
