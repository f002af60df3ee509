"""The fields of the JSON the tool writes and reads back (a replay
report's and a diff's lines, a fuzz campaign's findings and state): what
each must hold, a `Kind` (how an error says it, and the test of a value),
and one JSON value read and checked against them, so that a damaged or
hand-edited line is refused at its file and line, never met by code that
cannot handle it (a count that is a string, an error that is a list, a
number past what a float holds, NaN)."""

from __future__ import annotations

import json
import math
from typing import Any, Callable, Collection, Dict, Mapping, NamedTuple, Optional

from ..errors import InputError
from .fileset import COUNT_MAX
from .io import shown

INT64 = (1 << 63) - 1


class Kind(NamedTuple):
    said: str  # what the field must be, as an error says it: "a count (an integer from 0 to 2^64 - 1)"
    test: Callable[[Any], bool]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_finite(value: Any) -> bool:
    """A JSON number that a float holds, and not NaN or infinite."""
    if not (_is_int(value) or isinstance(value, float)):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an integer past 1.8e308
        return False


def integer(low: int, high: int = INT64) -> Kind:
    """An integer from `low` to `high` (a JSON true or false is none)."""
    return Kind(f"an integer from {low} to {high}", lambda v: _is_int(v) and low <= v <= high)


def finite(low: float) -> Kind:
    """A finite number, at least `low`."""
    return Kind(f"a finite number, {low:g} or more", lambda v: _is_finite(v) and v >= low)


def optional(kind: Kind) -> Kind:
    """`kind`, or null."""
    return Kind(f"{kind.said}, or null", lambda v: v is None or kind.test(v))


def one_of(*values: str) -> Kind:
    return Kind("one of " + ", ".join(values), lambda v: isinstance(v, str) and v in values)


STRING = Kind("a string", lambda v: isinstance(v, str))
LINE = Kind("a line of text", lambda v: isinstance(v, str) and v != "" and "\n" not in v and "\r" not in v)
STRINGS = Kind("a list of strings", lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v))
STRING_VALUES = Kind(
    "an object of strings", lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values())
)
BOOLEAN = Kind("true or false", lambda v: isinstance(v, bool))
COUNT = Kind("a count (an integer from 0 to 2^64 - 1)", lambda v: _is_int(v) and 0 <= v <= COUNT_MAX)  # (the writers')
SECONDS = finite(0)
# a measured error, a tolerance, an excess: the reports write an infinite one as "inf"
MEASURE = Kind('a finite number or "inf"', lambda v: v == "inf" or _is_finite(v))


def _not_json(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _once(pairs: Any) -> Dict[str, Any]:
    """An object's fields, each named once (Python's json would keep the last)."""
    out: Dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the field {json.dumps(key)} twice")
        out[key] = value
    return out


def parse_json(text: str, path: str, noun: str, line: Optional[int] = None) -> Any:
    """The JSON value `text` (of `path`, at `line`); NaN and Infinity,
    which Python's json reads and JSON has not, and an object naming a
    field twice are refused. An InputError saying it is not `noun` where it
    does not parse."""
    try:
        return json.loads(text, parse_constant=_not_json, object_pairs_hook=_once)
    except RecursionError:
        raise InputError(path, f"not {noun}: its JSON is nested too deep", line) from None
    except ValueError as e:
        raise InputError(path, f"not {noun} (JSON: {e})", line) from None


def _json_kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def _value(value: Any, limit: int = 80) -> str:
    """A JSON value for a message, cut to `limit` characters."""
    text = json.dumps(value, ensure_ascii=False)
    return shown(text if len(text) <= limit else text[: limit - 3] + "...")


def check_fields(
    value: Any,
    kinds: Mapping[str, Kind],
    path: str,
    noun: str,
    line: Optional[int] = None,
    *,
    required: Collection[str] = (),
    closed: bool = False,
) -> Dict[str, Any]:
    """`value` (parsed JSON) checked to be `noun`: an object whose fields
    that `kinds` names each hold what its kind says, the `required` ones
    there, and (`closed`) no other; an InputError naming path (and line)
    and the first that is not. Returns `value`."""
    if not isinstance(value, dict):
        raise InputError(path, f"not {noun}: {_json_kind(value)}, not an object", line)
    if closed:
        unknown = [k for k in value if k not in kinds]
        if unknown:
            raise InputError(path, f"not {noun}: an unknown field {json.dumps(unknown[0])}", line)
    for name in required:
        if name not in value:
            raise InputError(path, f"not {noun}: no {json.dumps(name)}", line)
    for name, kind in kinds.items():
        if name in value and not kind.test(value[name]):
            raise InputError(path, f"not {noun}: {json.dumps(name)} is {_value(value[name])}, not {kind.said}", line)
    return value


def json_object(
    path: str,
    lineno: int,
    raw: bytes,
    what: str,
    fields: Collection[str],
    key: str,
    values: Collection[str],
    kinds: Optional[Mapping[str, Kind]] = None,
) -> Dict[str, Any]:
    """A JSON-lines file's line as the object it must be, `what`: its
    `fields` strings, its `key` one of `values`, each field `kinds` names
    (where it has it) of that kind; InputError naming path:line where not."""
    try:
        line = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise InputError(path, f"not {what} (JSON: {e})", lineno) from None
    if not isinstance(line, dict) or not all(isinstance(line.get(k), str) for k in fields):
        raise InputError(path, f"not {what} (it needs {', '.join(fields)})", lineno)
    if line[key] not in values:
        raise InputError(path, f"unknown {key} {line[key]!r} (one of {', '.join(values)})", lineno)
    check_fields(line, kinds or {}, path, what, lineno)
    return line
