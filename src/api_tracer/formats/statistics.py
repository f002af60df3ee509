"""A set's api_statistics.yaml and api_apis.txt, read back checked: the
calls per API, and the API names (docs/format.md)."""

from __future__ import annotations

import re
from typing import Dict, Iterator, List, NamedTuple, Tuple

import yaml

from ..errors import InputError
from .fileset import COUNT_MAX, FileSet
from .io import read_summary_text, shown, sorted_lines

# -- statistics -----------------------------------------------------------------------------

# (re.ASCII: a count is ASCII digits, as the tracer writes it; Python's \d takes any script's, "１")
_TOTAL_APIS = re.compile(r"Total APIs: (\d+)", re.ASCII)
_TOTAL_CALLS = re.compile(r"Total API calls: (\d+)", re.ASCII)
_API_COUNT = re.compile(r"(.+): (\d+) \((\d+\.\d\d|-?nan)%\)", re.ASCII)


class Statistics(NamedTuple):
    path: str
    counts: List[Tuple[str, int]]  # (api, count) in the file's order
    lines: Dict[str, int]  # api -> its line
    total: int


def _count(path: str, digits: str, line: int, what: str = "count") -> int:
    if len(digits) > 20 or int(digits) > COUNT_MAX:
        raise InputError(
            path,
            f"a {what} of {digits[:24]}{'...' if len(digits) > 24 else ''}: above 2^64 - 1, more than a tracer counts",
            line,
        )
    return int(digits)


def checked_api(path: str, name: str, line: int) -> str:
    """`name` if it reads as an API name: printable (an InputError naming
    path:line else: a byte-order mark, a carriage return, a terminal's
    escape sequence, a NUL, which would be copied, or printed)."""
    if not name or not name.isprintable():
        raise InputError(path, f"{shown(name)}: not an API name (not printable)", line)
    return name


def api_name(path: str, key: str, line: int) -> str:
    if key[:1] not in ('"', "'"):
        return checked_api(path, key, line)
    try:  # quoted by the writer (yaml::AppendString): a YAML scalar
        name = yaml.safe_load(key)
    except Exception:  # noqa: BLE001 - not YAML, or a tag its constructors refuse
        name = None
    if not isinstance(name, str):
        raise InputError(path, f"{shown(key)}: not an API name (a quoted YAML string)", line)
    return checked_api(path, name, line)


def statistics_of(s: FileSet) -> Statistics:
    """The set's api_statistics.yaml, checked line by line: its two totals,
    a blank line, then `api: count (pp.pp%)` a line, each API once, the
    totals those lines add up to."""
    path = s.path("api_statistics.yaml")
    text = read_summary_text(path, "Total APIs: 0\nTotal API calls: 0\n\n")
    lines = text.split("\n")[:-1]
    heads = [(_TOTAL_APIS, "Total APIs: N"), (_TOTAL_CALLS, "Total API calls: M")]
    totals = []
    for i, (pattern, what) in enumerate(heads):
        m = pattern.fullmatch(lines[i]) if i < len(lines) else None
        if not m:
            found = f"{lines[i][:60]!r}" if i < len(lines) else "the end of the file"
            raise InputError(path, f"expected {what!r} (the file's totals), not {found}", i + 1)
        totals.append(_count(path, m.group(1), i + 1, "total"))
    if len(lines) < 3 or lines[2]:
        raise InputError(path, "expected a blank line after the totals", 3)
    counts: List[Tuple[str, int]] = []
    where: Dict[str, int] = {}
    shares = []
    for i, line in enumerate(lines[3:], start=4):
        m = _API_COUNT.fullmatch(line)
        if not m:
            raise InputError(path, f"expected 'api: count (pp.pp%)', not {line[:80]!r}", i)
        api = api_name(path, m.group(1), i)
        if api in where:
            raise InputError(path, f"{shown(api)} is listed twice (first on line {where[api]})", i)
        n = _count(path, m.group(2), i)
        where[api] = i
        counts.append((api, n))
        shares.append(m.group(3))
    if totals[0] != len(counts):
        raise InputError(path, f"'Total APIs: {totals[0]}', but the file lists {len(counts)} APIs", 1)
    total = sum(n for _, n in counts)
    if totals[1] != total:
        raise InputError(path, f"'Total API calls: {totals[1]}', but the APIs' counts add up to {total}", 2)
    for (api, n), share in zip(counts, shares):
        if total and not share.endswith("nan") and abs(float(share) - 100.0 * n / total) > 0.01:
            raise InputError(path, f"{shown(api)}: {share}% is not its share of the {total} calls", where[api])
    return Statistics(path, counts, where, total)


def read_statistics(s: FileSet) -> List[Tuple[str, int]]:
    """(api, count) in the file's order (statistics_of: checked)."""
    return statistics_of(s).counts


# -- API names (api_apis.txt) ----------------------------------------------------------------


def checked_api_name(path: str, name: str, line: int) -> str:
    """`name` if it is an API name a config line can begin with: not empty,
    printable (checked_api), without a '(' (which ends a line's API); an
    InputError naming path:line else."""
    if not name:
        raise InputError(path, "an empty line: not an API name", line)
    checked_api(path, name, line)
    if "(" in name:
        raise InputError(path, f"{shown(name[:80])}: not an API name (a '(' ends the API of a config line)", line)
    return name


def read_api_names(s: FileSet) -> Iterator[str]:
    """The names of the set's api_apis.txt, read a chunk at a time (what is
    held is a chunk, not the file), each checked: UTF-8, an API name
    (checked_api_name), after the one before it in byte-wise order (the
    tracer writes them sorted, each once), the file ending with a newline.
    An InputError naming path:line at the first that is not."""
    path = s.path("api_apis.txt")
    if not s.has("api_apis.txt"):
        raise InputError(path, "no such file: a file set has one beside its api_statistics file")
    return sorted_lines(path, "names", checked_api_name)
