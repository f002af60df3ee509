"""Files of config lines, read back: a set's api_configs.yaml, checked
line by line (`read_set_configs`), and any file a user hands replay, fuzz
or export (`read_config_file`: a set's api_configs.yaml or api_trace.txt, a
file of lines of their own, or another tool's format a framework reads),
each line a `Config`; and one config line parsed, its errors located."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ..config import api_of, parse_arguments
from ..errors import ConfigSyntaxError, InputError, warn
from .fileset import FileSet
from .io import decode_leniently, open_regular, read_all, read_text
from .statistics import Statistics, checked_api


@dataclass
class Config:
    """A line of a file of config lines, as read: the file, its line, its
    text; why it cannot be read (not UTF-8) and where, when it cannot."""

    file: str
    line: int
    text: str
    error: str = ""
    column: int = 0


def parse_config(line: str, path: str, lineno: int) -> Tuple[List[Any], Dict[str, Any]]:
    """(args, kwargs) of a config line, or an InputError naming path:line:
    column: a control character (the tracer escapes every one), an API
    name that is not printable, arguments that do not parse (the project's
    parser; nothing is evaluated)."""
    control = next((i for i, c in enumerate(line) if c < " " or c == "\x7f"), None)
    if control is not None:  # the tracer escapes every one (docs/format.md)
        raise InputError(
            path,
            f"the control character {line[control]!r} in a config line: the tracer writes "
            "none (a carriage return: the file's line endings were changed)",
            lineno,
            control + 1,
        )
    api = api_of(line)
    if api == line:
        raise InputError(path, "not a config line: no '(' after its API", lineno)
    checked_api(path, api, lineno)
    try:
        _, args, kwargs = parse_arguments(line)
    except ConfigSyntaxError as e:
        raise InputError(path, e.message, lineno, e.column) from None
    return args, kwargs


def read_set_configs(s: FileSet, stats: Optional[Statistics] = None) -> List[str]:
    """The set's config lines (api_configs.yaml), each checked to parse.
    With the set's statistics: an API they count that has no config line is
    said (a warning): the file is cut, or of another snapshot than they."""
    path = s.path("api_configs.yaml")
    if not s.has("api_configs.yaml"):
        raise InputError(path, "no such file: a file set has one beside its api_statistics file")
    text = read_text(path)
    if text and not text.endswith("\n"):
        raise InputError(path, "ends inside a line: the file was cut", text.count("\n") + 1)
    configs = []
    for lineno, line in enumerate(text.split("\n")[:-1], start=1):
        if not line or line.startswith("#"):
            continue
        parse_config(line, path, lineno)
        configs.append(line)
    if stats is not None:
        have = {api_of(line) for line in configs}
        missing = [api for api, _ in stats.counts if api not in have]
        if missing:
            more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
            warn(
                f"{path}: no config line of {missing[0]}{more}, which {stats.path}:{stats.lines[missing[0]]} "
                "counts: the file is cut, or older than the statistics (a full disk)"
            )
    return configs


def read_config_file(path: str) -> List[Config]:
    """The distinct config lines of any file replay, fuzz and export read
    (a regular file): config_lines of its content."""
    with open_regular(path) as f:
        return config_lines(path, read_all(path, f))


def config_lines(path: str, data: bytes) -> List[Config]:
    """The distinct config lines of a file's content, each with the line it
    was first on; blank lines and `#` comments left out. A line that is
    not UTF-8 is kept (its bad bytes escaped), with the error and the
    column of its first bad byte, so that it is reported, not lost. A file
    in another tool's format that a framework reads (`Framework.reads`,
    told by content: PyTorch's operator inputs) gives the config line of
    each of its lines; one that breaks that format is an InputError."""
    reader = foreign_reader(data)
    if reader is not None:
        return [Config(path, e.line, e.config) for e in reader.read(path, data)]
    seen = set()
    configs = []
    for lineno, raw in enumerate(data.splitlines(), 1):  # the line ends text mode knows: \n, \r, \r\n
        text, error, column = decode_leniently(raw)
        text = text.strip()
        if not text or text.startswith("#") or text in seen:
            continue
        seen.add(text)
        configs.append(Config(path, lineno, text, error, column))
    return configs


def foreign_reader(data: bytes) -> Any:
    """The reader of another tool's format (formats/foreign.py: `Reader`)
    that knows a file by this content, if any."""
    from ..frameworks import readers

    return next((r for r in readers() if r.sniff(data)), None)


def set_file_beside(config_file: str, name: str) -> Optional[str]:
    """The file `name` (a name of the set's table: "api_value_ranges.yaml")
    of the set `config_file` belongs to, if it is there: in its directory,
    with its _level_N suffix (none: the merged set's)."""
    directory, base = os.path.split(config_file)
    stem = os.path.splitext(base)[0]
    fileset = FileSet(directory, stem[stem.index("_level_") :] if "_level_" in stem else "")
    return fileset.path(name) if fileset.has(name) else None


def ranges_beside(config_file: str) -> Optional[str]:
    """The value-ranges file of the set `config_file` belongs to, if any."""
    return set_file_beside(config_file, "api_value_ranges.yaml")
