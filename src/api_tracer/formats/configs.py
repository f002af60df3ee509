"""Files of config lines, read back: a set's api_configs.yaml, checked
line by line, and against its api_config_sources.yaml where it has one
(`set_configs`, the one reader of it for every command), and any file a
user hands replay, fuzz or export (`read_config_file`: a set's
api_configs.yaml or api_trace.txt, a file of lines of their own, or
another tool's format a framework reads), each line a `Config`; and one
config line parsed, its errors located."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

from ..config import api_of, parse_arguments
from ..errors import ConfigSyntaxError, InputError, warn
from .fileset import FileSet, set_file_beside
from .io import decode_leniently, open_regular, read_all, sorted_lines
from .sources import SOURCES, SourcesFile
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


def set_configs(s: FileSet, stats: Optional[Statistics] = None) -> Iterator[Tuple[str, Optional[int]]]:
    """The set's config lines with their calls (None where the set has no
    api_config_sources.yaml), a line at a time: the one reader of a set's
    configs for every command (stats, merge, diff, report), so that each
    gives a damaged file one verdict. The lines are checked as
    set_config_lines checks them, and against api_config_sources.yaml
    (with_calls). With the set's statistics, once the last is read: an API
    they count that has no config line is said (a warning): the file is
    cut, or of another snapshot than they."""
    have = set()
    for config, calls in with_calls(s, set_config_lines(s)):
        have.add(api_of(config))
        yield config, calls
    missing = [api for api, _ in stats.counts if api not in have] if stats is not None else []
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        warn(
            f"{s.path('api_configs.yaml')}: no config line of {missing[0]}{more}, which {stats.path}:"
            f"{stats.lines[missing[0]]} counts: the file is cut, or older than the statistics (a full disk)"
        )


def set_config_lines(s: FileSet) -> Iterator[str]:
    """The lines of the set's api_configs.yaml, a chunk of the file read at
    a time, each checked as the tracer writes them: UTF-8, after the one
    before it in byte-wise order (each once), parsing (parse_config); an
    InputError naming path:line at the first that is not, or where the
    file ends inside a line."""
    path = s.path("api_configs.yaml")
    if not s.has("api_configs.yaml"):
        raise InputError(path, "no such file: a file set has one beside its api_statistics file")
    return sorted_lines(path, "config lines", _check_config)


def _check_config(path: str, line: str, lineno: int) -> None:
    parse_config(line, path, lineno)


_TOGETHER = "the two are written together and hold the same lines"  # (as merge says it: core/sources_merge.cc)


def with_calls(s: FileSet, configs: Iterator[str]) -> Iterator[Tuple[str, Optional[int]]]:
    """The set's config lines `configs` with their calls: from its
    api_config_sources.yaml where it has one (read by the C++ reader, each
    entry checked), each entry held against the line it is written with
    (the two files hold the same lines, as merge checks them too), else
    None. An InputError naming api_configs.yaml:line where they differ."""
    lines = enumerate(configs, 1)
    if not s.has(SOURCES):
        yield from ((line, None) for _, line in lines)
        return
    sources, path = s.path(SOURCES), s.path("api_configs.yaml")
    f = SourcesFile(sources)
    try:
        for lineno, e in f.entries():
            line = next(lines, None)
            if line is None:
                raise InputError(path, f"ends before the config of {sources}:{lineno}: {_TOGETHER}")
            if line[1] != e.config:
                raise InputError(path, f"differs from {sources}:{lineno} (the configs there): {_TOGETHER}", line[0])
            yield e.config, e.calls
        extra = next(lines, None)
        if extra is not None:
            raise InputError(path, f"a config past the last of {sources}: {_TOGETHER}", extra[0])
    finally:
        f.close()


def read_set_configs(s: FileSet, stats: Optional[Statistics] = None) -> List[str]:
    """The set's config lines, all of them, checked as set_configs checks
    them (against the set's api_config_sources.yaml too, where it has one)."""
    return [line for line, _ in set_configs(s, stats)]


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
    for c in _lines(path, enumerate(data.splitlines(), 1)):  # the line ends text mode knows: \n, \r, \r\n
        if c.text not in seen:
            seen.add(c.text)
            configs.append(c)
    return configs


def _lines(path: str, numbered: Iterable[Tuple[int, bytes]]) -> Iterator[Config]:
    """The Config of each numbered line that is not blank or a comment."""
    for lineno, raw in numbered:
        text, error, column = decode_leniently(raw)
        text = text.strip()
        if text and not text.startswith("#"):
            yield Config(path, lineno, text, error, column)


SNIFFED = 1 << 20  # what a streamed file is read by, until a line that is no comment tells its format


def stream_config_file(path: str) -> Iterator[Config]:
    """What read_config_file reads, a line at a time and each line as often
    as the file has it (a keyed replay, replay/keyed.py, drops repeats by
    key, in bounded memory): for a corpus too large to hold. A file in
    another tool's format is read whole, as read_config_file reads it."""
    with open_regular(path) as f:
        try:
            head = f.read(SNIFFED)
            while not _has_a_line(head):  # (what tells a format is its first line that is no comment)
                more = f.read(SNIFFED)
                if not more:
                    break
                head += more
            if foreign_reader(head) is not None:
                yield from config_lines(path, head + f.read())
                return
            f.seek(0)
            yield from _lines(path, enumerate(_split(f), 1))
        except OSError as e:
            raise InputError(path, f"cannot read: {e.strerror or e}") from None


def _has_a_line(head: bytes) -> bool:
    """Whether `head` holds a whole line that is neither blank nor a comment."""
    return any(line.strip() and not line.strip().startswith(b"#") for line in head.splitlines()[:-1])


def _split(f: Any) -> Iterator[bytes]:
    """A binary file's lines, split where config_lines splits them (\n, \r, \r\n)."""
    for raw in f:  # (split at \n: a \r\n stays whole)
        yield from raw.splitlines() or [b""]


def foreign_reader(data: bytes) -> Any:
    """The reader of another tool's format (formats/foreign.py: `Reader`)
    that knows a file by this content, if any."""
    from ..frameworks import readers

    return next((r for r in readers() if r.sniff(data)), None)


def ranges_beside(config_file: str) -> Optional[str]:
    """The value-ranges file of the set `config_file` belongs to, if any."""
    return set_file_beside(config_file, "api_value_ranges.yaml")
