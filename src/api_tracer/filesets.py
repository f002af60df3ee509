"""Reading the file sets the tracer writes (docs/format.md): finding them
under directories, and reading their files back, checked.

Every reader here reads regular files only (a FIFO, a device, a directory
or a dangling link in the place of a file is refused before anything waits
on it), and refuses a file that is not as the tracer writes it with an
`InputError` naming the file and, where there is one, the line: a file cut
short, bytes that are not UTF-8, a line or a YAML node of the wrong kind,
counts that do not add up, a config line that does not parse. The one
damage a healthy run leaves, a trace whose last record a kill cut (the two
trace files then end at different records, or inside one), is repaired by
`read_trace`: it reads the records both files hold whole, and says so.
"""
from __future__ import annotations

import fcntl
import math
import os
import re
import stat
from dataclasses import dataclass
from typing import Any, BinaryIO, Callable, Dict, Iterator, List, NamedTuple, Optional, Tuple

import yaml

from . import _C
from .errors import InputError, warn


class OutputFile(NamedTuple):
    stem: str
    ext: str
    option: Optional[str]  # the option that asks for the file; None: always written
    summary: bool  # a summary file (a snapshot), else a trace

    def name(self, suffix: str = "") -> str:
        return f"{self.stem}{suffix}{self.ext}"


# The files of a set by name ("api_trace.txt"), from the C++ recorder's table.
OUTPUT_FILES: Dict[str, OutputFile] = {f.name(): f for f in map(OutputFile._make, _C.output_files())}
_STATS = OUTPUT_FILES["api_statistics.yaml"]
STATISTICS = re.compile(rf"^{re.escape(_STATS.stem)}(_level_\d+)?{re.escape(_STATS.ext)}$")

COUNT_MAX = 2 ** 64 - 1  # the largest count the writers hold (uint64)
_INT64 = (-2 ** 63, 2 ** 63 - 1)  # value profiles' bounds

# -- regular files only -------------------------------------------------------------------

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def _kind(mode: int) -> str:
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def _not_regular(path: str, mode: int) -> InputError:
    return InputError(path, f"{_kind(mode)}, not a regular file: only regular files are read")


def is_regular(path: str) -> bool:
    """True for a regular file (or a link to one), False where there is
    nothing; an InputError for anything else there (a FIFO, a directory, a
    device, a link to nothing), which is named like a file but cannot be
    read as one."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.lexists(path):
            raise InputError(path, "a symbolic link to nothing") from None
        return False
    except OSError as e:
        raise InputError(path, e.strerror or str(e)) from None
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(path, st.st_mode)
    return True


def open_regular(path: str) -> BinaryIO:
    """`path` opened for reading in binary, if it is a regular file. It is
    opened without blocking and checked once open, so that a FIFO put there
    between a check and the open does not block either."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise InputError(path, "a symbolic link to nothing" if os.path.lexists(path) else "no such file") from None
    except OSError as e:
        raise InputError(path, e.strerror or str(e)) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(path, mode)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def _decode(data: bytes, path: str, first_line: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = first_line + data.count(b"\n", 0, e.start)
        raise InputError(path, f"not UTF-8: byte 0x{data[e.start]:02x} ({e.reason})", line) from None


def _read(path: str, f: BinaryIO) -> bytes:
    try:
        return f.read()
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None


def read_text(path: str) -> str:
    """A whole file as text, if it is a regular file and UTF-8."""
    with open_regular(path) as f:
        return _decode(_read(path, f), path, 1)


def read_summary_text(path: str, empty: str) -> str:
    """A summary file's text. The tracer writes each whole, by renaming
    (docs/format.md), so one that is empty or does not end with a newline
    was cut after it was written. `empty`: what the writer writes for no
    data, as the error says."""
    text = read_text(path)
    if not text:
        raise InputError(path, f"empty: the tracer writes at least {empty!r} here; the file was cut")
    if not text.endswith("\n"):
        raise InputError(path, "ends inside a line: the file was cut", text.count("\n") + 1)
    return text


# -- finding sets ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FileSet:
    directory: str
    suffix: str  # "" (merged) or "_level_N"

    def path(self, name: str) -> str:
        """The set's file `name` (a name of OUTPUT_FILES, "api_trace.txt")."""
        return os.path.join(self.directory, OUTPUT_FILES[name].name(self.suffix))

    def has(self, name: str) -> bool:
        """Whether the set has its file `name`: a regular file. Anything
        else of that name is an InputError (see is_regular)."""
        return is_regular(self.path(name))

    @property
    def level(self) -> Optional[int]:
        return int(self.suffix[len("_level_"):]) if self.suffix else None


def _walk_error(e: OSError) -> None:
    raise InputError(e.filename or "?", f"cannot list: {e.strerror or e}")


def find_sets(dirs: List[str], exclude: Optional[str] = None) -> List[FileSet]:
    """Every file set under `dirs` (recursively, sorted), but under `exclude`;
    a link to a directory is followed, and a directory reached twice is read
    once, said. A directory that cannot be listed, or a directory named as
    a statistics file, is an InputError: its sets would be left out without
    a word."""
    sets = []
    skip = os.path.abspath(exclude) if exclude else None
    seen: Dict[str, str] = {}  # real path -> the path it was read by
    for top in dirs:
        seen.setdefault(os.path.realpath(top), top)
        for root, subdirs, files in os.walk(top, onerror=_walk_error, followlinks=True):
            subdirs.sort()
            for name in list(subdirs):  # a link to a directory is followed, once: no loop, no set twice
                real = os.path.realpath(os.path.join(root, name))
                if real in seen:
                    warn(f"{os.path.join(root, name)}: the directory {seen[real]} again (a link): read once")
                    subdirs.remove(name)
                else:
                    seen[real] = os.path.join(root, name)
            if skip and (os.path.abspath(root) + os.sep).startswith(skip + os.sep):
                continue
            for name in subdirs:
                if STATISTICS.match(name):
                    raise InputError(os.path.join(root, name), "a directory, not a regular file: only regular "
                                     "files are read")
            found = []
            for name in sorted(files):
                m = STATISTICS.match(name)
                if m:
                    found.append(m.group(1) or "")
            sets += [FileSet(root, suffix) for suffix in found]
            _say_orphans(root, files, set(found))
    return sets


# Any file of a set, by its level suffix (group 1).
_SET_FILE = re.compile("^(?:" + "|".join(rf"{re.escape(f.stem)}(_level_\d+)?{re.escape(f.ext)}"
                                         for f in OUTPUT_FILES.values() if f is not _STATS) + ")$")


def _say_orphans(root: str, files: List[str], suffixes: set) -> None:
    """A warning for each set of files in `root` without its statistics file
    (which is what makes a set): it is not read."""
    orphans: Dict[str, List[str]] = {}
    for name in sorted(files):
        m = _SET_FILE.match(name)
        if m:
            suffix = next((g for g in m.groups() if g), "")
            if suffix not in suffixes:
                orphans.setdefault(suffix, []).append(name)
    for suffix, names in orphans.items():
        more = f" and {len(names) - 1} more" if len(names) > 1 else ""
        warn(f"{os.path.join(root, _STATS.name(suffix))}: missing beside {names[0]}{more}: without it the files "
             "are not a file set, and are not read")


def group_by_suffix(sets: List[FileSet]) -> Dict[str, List[FileSet]]:
    groups: Dict[str, List[FileSet]] = {}
    for s in sets:
        groups.setdefault(s.suffix, []).append(s)
    return groups


# -- statistics -----------------------------------------------------------------------------

_TOTAL_APIS = re.compile(r"Total APIs: (\d+)")
_TOTAL_CALLS = re.compile(r"Total API calls: (\d+)")
_API_COUNT = re.compile(r"(.+): (\d+) \((\d+\.\d\d|-?nan)%\)")


class Statistics(NamedTuple):
    path: str
    counts: List[Tuple[str, int]]  # (api, count) in the file's order
    lines: Dict[str, int]  # api -> its line
    total: int


def _count(path: str, digits: str, line: int, what: str = "count") -> int:
    if len(digits) > 20 or int(digits) > COUNT_MAX:
        raise InputError(path, f"a {what} of {digits[:24]}{'...' if len(digits) > 24 else ''}: above 2^64 - 1, "
                         "more than a tracer counts", line)
    return int(digits)


def shown(text: str) -> str:
    """`text` for a message: as it is when printable, else as its repr."""
    return text if text.isprintable() else repr(text)


def checked_api(path: str, name: str, line: int) -> str:
    """`name` if it reads as an API name: printable (an InputError naming
    path:line else: a byte-order mark, a carriage return, a terminal's
    escape sequence, a NUL, which would be copied, or printed)."""
    if not name or not name.isprintable():
        raise InputError(path, f"{shown(name)}: not an API name (not printable)", line)
    return name


def _api_name(path: str, key: str, line: int) -> str:
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
        api = _api_name(path, m.group(1), i)
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


# -- config lines ---------------------------------------------------------------------------


def api_of(line: str) -> str:
    """The API name a config line starts with."""
    return line[:line.index("(")] if "(" in line else line


def parse_config(line: str, path: str, lineno: int) -> Tuple[List[Any], Dict[str, Any]]:
    """(args, kwargs) of a config line, or an InputError naming path:line:
    column. The API is set aside first, so that any name (a dialect's own)
    reads; the line is parsed by the project's parser, never evaluated."""
    from .config import ConfigSyntaxError, parse_call

    control = next((i for i, c in enumerate(line) if c < " " or c == "\x7f"), None)
    if control is not None:  # the tracer escapes every one (docs/format.md)
        raise InputError(path, f"the control character {line[control]!r} in a config line: the tracer writes "
                         "none (a carriage return: the file's line endings were changed)", lineno, control + 1)
    api = api_of(line)
    if api == line:
        raise InputError(path, "not a config line: no '(' after its API", lineno)
    checked_api(path, api, lineno)
    try:
        _, args, kwargs = parse_call("f" + line[len(api):])
    except ConfigSyntaxError as e:
        raise InputError(path, e.message, lineno, e.column + len(api) - 1) from None
    return args, kwargs


def read_configs(s: FileSet, stats: Optional[Statistics] = None) -> List[str]:
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
            warn(f"{path}: no config line of {missing[0]}{more}, which {stats.path}:{stats.lines[missing[0]]} "
                 "counts: the file is cut, or older than the statistics (a full disk)")
    return configs


def read_lines(path: str) -> Iterator[str]:
    """The non-empty lines of a text file (regular, UTF-8)."""
    for line in read_text(path).split("\n"):
        if line:
            yield line


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


def sorted_lines(path: str, noun: str, check: Optional[Callable[[str, str, int], Any]] = None) -> Iterator[str]:
    """The lines of a file the tracer writes sorted, each once (api_apis.txt,
    api_configs.yaml), read a chunk at a time, each checked: UTF-8, `check`
    (path, line, its number), after the one before it in byte-wise order,
    the file ending with a newline. An InputError naming path:line at the
    first that is not."""
    previous = None
    with open_regular(path) as f:
        for lineno, text, rest in _chunks(path, f):
            if text is None:
                if rest:
                    raise InputError(path, "ends inside a line: the file was cut", lineno)
                return
            for i, line in enumerate(text.split("\n")[:-1]):
                if check is not None:
                    check(path, line, lineno + i)
                if previous is not None and line <= previous:
                    what = "again" if line == previous else f"after {shown(previous[:80])}"
                    raise InputError(path, f"{shown(line[:80])} {what}: the tracer writes the {noun} sorted, each "
                                     "once", lineno + i)
                previous = line
                yield line


# -- YAML summaries (stacks, value profiles) -------------------------------------------------

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Yaml:
    """A YAML document read as nodes, so that what is wrong is said with its
    line; anchors and aliases (which the tracer never writes) are refused,
    so no walk repeats or loops."""

    def __init__(self, path: str, empty: str) -> None:
        self.path = path
        text = read_summary_text(path, empty)
        try:
            self.root = yaml.compose(text, Loader=_LOADER)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            line = mark.line + 1 if mark else None
            if isinstance(e, yaml.reader.ReaderError):  # a character YAML does not allow: where it is
                line = text.count("\n", 0, e.position) + 1
                problem = f"the character {e.character!r} ({e.reason})"
            else:
                problem = getattr(e, "problem", None) or str(e).splitlines()[0]
            raise InputError(path, f"not YAML: {problem}", line) from None
        if self.root is None:
            raise InputError(path, f"holds no YAML value: the tracer writes at least {empty!r} here")
        self.seen: set = set()
        self.constructor = yaml.constructor.SafeConstructor()

    def fail(self, node: yaml.Node, message: str) -> InputError:
        return InputError(self.path, message, node.start_mark.line + 1)

    def _visit(self, node: yaml.Node) -> None:
        if id(node) in self.seen:
            raise self.fail(node, "a YAML alias: not a file the tracer wrote")
        self.seen.add(id(node))

    def mapping(self, node: yaml.Node, what: str) -> List[Tuple[str, yaml.Node]]:
        """(key, value node) of a mapping whose keys are strings, each once."""
        self._visit(node)
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, f"expected {what}, a mapping")
        out, keys = [], set()
        for knode, vnode in node.value:
            key = self.string(knode, f"a key of {what}")
            if key in keys:
                raise self.fail(knode, f"{shown(key)} twice in {what}")
            keys.add(key)
            out.append((key, vnode))
        return out

    def sequence(self, node: yaml.Node, what: str) -> List[yaml.Node]:
        self._visit(node)
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, f"expected {what}, a list")
        return list(node.value)

    def scalar(self, node: yaml.Node, what: str) -> Any:
        self._visit(node)
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, f"expected {what}, a scalar")
        try:
            return self.constructor.construct_object(node)
        except Exception as e:  # noqa: BLE001 - a tag or a value YAML's constructors refuse, each its own way
            raise self.fail(node, f"{what}: {shown(str(getattr(e, 'problem', None) or e))[:100]}") from None

    def string(self, node: yaml.Node, what: str) -> str:
        value = self.scalar(node, what)
        if not isinstance(value, str):
            raise self.fail(node, f"expected {what}, a string, not {value!r}")
        return value

    def integer(self, node: yaml.Node, what: str) -> int:
        value = self.scalar(node, what)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(node, f"expected {what}, an integer, not {value!r}")
        if not _INT64[0] <= value <= _INT64[1]:
            raise self.fail(node, f"{what}: {value} is out of the range of a 64-bit integer")
        return value

    def real(self, node: yaml.Node, what: str) -> float:
        """A float as the writer writes one (Python's repr: 0.5, 1e-05,
        inf, nan), read from the node's text."""
        self._visit(node)
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, f"expected {what}, a number")
        try:
            return float(node.value)
        except ValueError:
            raise self.fail(node, f"expected {what}, a number, not {shown(node.value)[:40]}") from None

    def integers(self, node: yaml.Node, what: str, n: Optional[int] = None) -> List[int]:
        items = self.sequence(node, what)
        if n is not None and len(items) != n:
            raise self.fail(node, f"expected {what}, a list of {n} integers, not of {len(items)}")
        return [self.integer(item, f"an integer of {what}") for item in items]


def read_stacks(s: FileSet) -> Optional[Dict[str, List[List[str]]]]:
    """api_stacks.yaml, checked: per API (a mapping) its `3stacks`, a list
    of stacks, each a list of frames (strings). None without the file."""
    if not s.has("api_stacks.yaml"):
        return None
    doc = _Yaml(s.path("api_stacks.yaml"), "{}\n")
    out: Dict[str, List[List[str]]] = {}
    for api, entry in doc.mapping(doc.root, "APIs and their stacks"):
        fields = dict(doc.mapping(entry, f"the entry of {api}"))
        if set(fields) != {"3stacks"}:
            raise doc.fail(entry, f"the entry of {api}: expected its '3stacks' alone, not {sorted(fields)}")
        out[api] = [[doc.string(frame, f"a frame of a stack of {api}") for frame in
                     doc.sequence(stack, f"a stack of {api} (its frames)")]
                    for stack in doc.sequence(fields["3stacks"], f"the stacks of {api}")]
    return out


_PROFILE_FIELDS = {"config", "ranges", "values", "sentinels", "sorted", "sums", "floats", "nonfinite"}
_NONFINITE = {"nan": "nan", "inf": "posinf", "-inf": "neginf"}  # as written -> the ValueProfile field


def read_value_profiles(path: str) -> Dict[str, Dict[str, Any]]:
    """api_value_ranges.yaml as the tracer wrote it (docs/format.md), checked:
    per config line, per argument path, its _C.ValueProfile (of an integer
    argument: `ranges` and the rest; of a floating one: `floats`,
    `nonfinite`). A file of ranges only (older) gives profiles of a range,
    many values, no order."""
    doc = _Yaml(path, "[]\n")
    out: Dict[str, Dict[str, Any]] = {}
    for node in doc.sequence(doc.root, "the list of config entries"):
        entry = dict(doc.mapping(node, "a config entry"))
        unknown = set(entry) - _PROFILE_FIELDS
        if unknown or "config" not in entry or not {"ranges", "floats", "nonfinite"} & set(entry):
            raise doc.fail(node, "a config entry has 'config', 'ranges' "
                           "(with 'values', 'sentinels', 'sorted', 'sums') "
                           f"or 'floats' and 'nonfinite'; not {sorted(entry)}")
        line = doc.string(entry["config"], "the config line")
        parse_config(line, path, entry["config"].start_mark.line + 1)
        ranges = {arg: (doc.integers(n, f"the range of {arg}", 2), n)
                  for arg, n in (doc.mapping(entry["ranges"], "the ranges") if "ranges" in entry else [])}
        for arg, ((lo, hi), n) in ranges.items():
            if lo > hi:
                raise doc.fail(n, f"the range of {arg}: {lo} above {hi}")

        def of_ranges(what: str) -> List[Tuple[str, yaml.Node]]:
            if what not in entry:
                return []
            items = doc.mapping(entry[what], f"the {what}")
            for arg, n in items:
                if arg not in ranges:
                    raise doc.fail(n, f"{what} of {arg}, which has no range")
            return items

        values = {arg: doc.integers(n, f"the values of {arg}") for arg, n in of_ranges("values")}
        sentinels = {}
        for arg, n in of_ranges("sentinels"):
            fields = dict(doc.mapping(n, f"the sentinels of {arg}"))
            if set(fields) != {"values", "rest"}:
                raise doc.fail(n, f"the sentinels of {arg}: expected 'values' and 'rest', not {sorted(fields)}")
            sentinels[arg] = (doc.integers(fields["values"], f"the sentinels of {arg}"),
                              doc.integers(fields["rest"], f"the rest of {arg}", 2))
        in_order = ([doc.string(n, "an argument path") for n in doc.sequence(entry["sorted"], "the sorted")]
                    if "sorted" in entry else [])
        sums = {arg: doc.integer(n, f"the sum of {arg}") for arg, n in of_ranges("sums")}
        for arg, (lo, hi) in ((a, r) for a, (r, _) in ranges.items()):
            outside = [v for v in values.get(arg, []) + sentinels.get(arg, ([], []))[0] if not lo <= v <= hi]
            if outside:
                raise doc.fail(ranges[arg][1], f"{arg}: the value {outside[0]} is outside its range [{lo}, {hi}]")
        paths = out.setdefault(line, {})
        for arg, ((lo, hi), _) in ranges.items():
            p = _C.ValueProfile()
            p.valid, p.min, p.max, p.sorted = True, lo, hi, arg in in_order
            p.same_sum, p.sum = arg in sums, sums.get(arg, 0)
            if arg in values:
                p.distinct = values[arg]
                p.negatives = [v for v in p.distinct if v < 0]
                p.nonneg_min = min((v for v in p.distinct if v >= 0), default=p.nonneg_min)
            else:
                p.many = True
                if arg in sentinels:
                    p.negatives = sentinels[arg][0]
                    p.nonneg_min = sentinels[arg][1][0]
                else:  # the negatives and where the rest starts were not kept
                    p.many_negatives = p.min < 0
                    p.nonneg_min = p.min if p.min >= 0 else p.nonneg_min
            _add(paths, arg, p)
        for arg, p in _float_profiles(doc, entry, ranges).items():
            _add(paths, arg, p)
    return out


def _add(paths: Dict[str, Any], arg: str, p: Any) -> None:
    """p as the profile of `arg`, merged into one already there (a line
    listed twice: merged sets)."""
    if arg in paths:
        paths[arg].merge(p)
    else:
        paths[arg] = p


def _float_profiles(doc: "_Yaml", entry: Dict[str, yaml.Node], ranges: Dict[str, Any]) -> Dict[str, Any]:
    """The floating arguments' profiles of an entry: `floats` (the finite
    values' [min, max]) and `nonfinite` (the others held: nan, inf, -inf)."""
    out: Dict[str, Any] = {}

    def profile(arg: str, n: yaml.Node) -> Any:
        if arg in ranges:
            raise doc.fail(n, f"{arg} has a range of integers and a profile of floats")
        if arg not in out:
            out[arg] = _C.ValueProfile()
            out[arg].valid = out[arg].floating = True
        return out[arg]

    for arg, n in (doc.mapping(entry["floats"], "the floats") if "floats" in entry else []):
        bounds = doc.sequence(n, f"the range of {arg}")
        lo, hi = (doc.real(b, f"the range of {arg}") for b in bounds) if len(bounds) == 2 else (None, None)
        if lo is None or not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
            raise doc.fail(n, f"the range of {arg}: expected [min, max] of finite numbers, min at most max")
        p = profile(arg, n)
        p.finite, p.fmin, p.fmax = True, lo, hi
    for arg, n in (doc.mapping(entry["nonfinite"], "the non-finite values") if "nonfinite" in entry else []):
        p = profile(arg, n)
        for item in doc.sequence(n, f"the non-finite values of {arg}"):
            doc.scalar(item, f"a non-finite value of {arg}")
            field = _NONFINITE.get(item.value)
            if field is None or getattr(p, field):
                raise doc.fail(item, f"a non-finite value of {arg}: nan, inf or -inf, each once, not "
                               f"{shown(item.value)[:40]}")
            setattr(p, field, True)
    return out


# -- traces ---------------------------------------------------------------------------------


def trace_limit_note(s: FileSet) -> Optional[Tuple[int, int]]:
    """(limit, calls not written) when trace_limit cut the set's trace: its
    last line says so (docs/format.md)."""
    if not s.has("api_trace.txt"):
        return None
    path = s.path("api_trace.txt")
    with open_regular(path) as f:
        try:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 256))
            last = f.read().rstrip(b"\n").rpartition(b"\n")[2]
        except OSError as e:
            raise InputError(path, f"cannot read: {e.strerror or e}") from None
    return _C.parse_trace_limit_note(last.decode("utf-8", "replace"))


def has_trace(s: FileSet) -> bool:
    """Whether the set has its trace, api_trace.txt and api_trace.yaml. One
    without the other is not read, and said (a warning)."""
    txt, yml = s.has("api_trace.txt"), s.has("api_trace.yaml")
    if txt != yml:
        there, missing = ("api_trace.txt", "api_trace.yaml") if txt else ("api_trace.yaml", "api_trace.txt")
        warn(f"{s.path(there)}: no {os.path.basename(s.path(missing))} beside it: the set's trace is not read")
    return txt and yml


_CHUNK = 1 << 20


def _chunks(path: str, f: BinaryIO) -> Iterator[Tuple[int, Optional[str], bytes]]:
    """(number of its first line, text) of each run of whole lines, then
    (number of the line, None, bytes of the last line where the file does
    not end with a newline)."""
    lineno, buf = 1, bytearray()
    while True:
        try:
            block = f.read(_CHUNK)
        except OSError as e:
            raise InputError(path, f"cannot read: {e.strerror or e}") from None
        if not block:
            break
        start = len(buf)
        buf += block
        end = buf.rfind(b"\n", start) + 1
        if end:
            cr = buf.find(b"\r", 0, end)
            if cr >= 0:  # the tracer escapes every one (docs/format.md)
                raise InputError(path, "a carriage return: the tracer writes none (the file's line endings were "
                                 "changed)", lineno + buf.count(b"\n", 0, cr))
            text = _decode(bytes(buf[:end]), path, lineno)
            del buf[:end]
            yield lineno, text, b""
            lineno += text.count("\n")
    yield lineno, None, bytes(buf)


class _Line(NamedTuple):
    lineno: int
    text: Optional[str]  # None: cut (the file ends inside it)


def _txt_lines(path: str, f: BinaryIO) -> Iterator[_Line]:
    """api_trace.txt's config lines (blank and comment lines left out)."""
    for lineno, text, rest in _chunks(path, f):
        if text is None:
            if rest and not rest.startswith(b"#"):
                yield _Line(lineno, None)
            return
        for i, line in enumerate(text.split("\n")[:-1]):
            if line and line[0] != "#":
                yield _Line(lineno + i, line)


class _Record(NamedTuple):
    lineno: int
    api: Optional[str]  # None: its first line is cut
    level: Optional[int]
    text: str
    end: str  # "next": another record follows; "eof": the file ends after it; "cut": inside it


# The lines of api_trace.yaml a scan stops at: a record's first line, a
# comment (the trace_limit note), and anything else that is not a record's
# (indented) line or blank.
_MARK = re.compile(r"^(?:(- api: )|(#)|(?!  |\n))[^\n]*\n", re.M)
_HEADER = "- api: "
_LEVEL = "  level: "  # how a merged set's api_trace.yaml says a record's level (docs/format.md)
_LEVEL_VALUE = re.compile(r"\d{1,9}")


def _before_first(path: str, text: str, seg: int, lineno: int) -> InputError:
    start = seg + len(text[seg:]) - len(text[seg:].lstrip())
    return InputError(path, "a record's line before the first record", lineno + text.count("\n", 0, start))


def _yaml_records(path: str, f: BinaryIO) -> Iterator[_Record]:
    """The records of api_trace.yaml, by their lines (the record's fields are
    not parsed: see read_trace)."""
    pending: Optional[List[Any]] = None  # [first line, its text's parts]

    def close(end: str) -> _Record:
        lineno, parts = pending
        text = "".join(parts)
        first, _, rest = text.partition("\n")
        api: Optional[str] = _api_name(path, first[len(_HEADER):], lineno)
        level = None
        if rest.startswith(_LEVEL) and end != "cut":
            value = rest[len(_LEVEL):rest.find("\n")]
            if not _LEVEL_VALUE.fullmatch(value) or int(value) > _C.Level.max:
                raise InputError(path, f"level: {shown(value[:40])} is not a level (0 to {int(_C.Level.max)})",
                                 lineno + 1)
            level = int(value)
        return _Record(lineno, api, level, text, end)

    for lineno, text, rest in _chunks(path, f):
        if text is None:
            break
        line, pos, seg = lineno, 0, 0  # the number of the line at `pos`; where pending's part starts
        for m in _MARK.finditer(text):
            line += text.count("\n", pos, m.start())
            pos = m.start()
            if m.group(1):
                if pending is not None:
                    pending[1].append(text[seg:pos])
                    yield close("next")
                elif text[seg:pos].strip():
                    raise _before_first(path, text, seg, lineno)
                pending, seg = [line, []], pos
            elif m.group(2):
                if pending is not None:
                    pending[1].append(text[seg:pos])
                seg = m.end()
            else:
                raise InputError(path, f"not a line of a trace record: {m.group(0)[:60]!r}", line)
        if pending is not None:
            pending[1].append(text[seg:])
        elif text[seg:].strip():
            raise _before_first(path, text, seg, lineno)
    # the last line, where the file does not end with a newline: a cut one
    if not rest:
        if pending is not None:
            yield close("eof")
        return
    if rest.startswith(b"-") and (rest.startswith(_HEADER.encode()) or _HEADER.encode().startswith(rest)):
        if pending is not None:
            yield close("next")
        yield _Record(lineno, None, None, "", "cut")
    elif pending is not None and (rest.startswith(b"  ") or rest == b" "):
        yield close("cut")
    elif rest.startswith(b"#"):
        if pending is not None:
            yield close("eof")
    else:
        raise InputError(path, f"not a line of a trace record: {rest[:60].decode('utf-8', 'replace')!r}", lineno)


class TraceRecord(NamedTuple):
    line: str  # its line of api_trace.txt
    record: str  # its record of api_trace.yaml, as written (its lines, each with its newline)
    level: Optional[int]  # its `level` field (a merged set of several levels), else None


def _typed(node: Any, name: str, *fields: str) -> bool:
    return isinstance(node, dict) and node.get("type") == name and all(f in node for f in fields)


def _same_shape(value: Any, node: Any) -> bool:
    """Whether `node` (a YAML value of a record, as loaded) has the shape
    of `value` (as parsed from the record's config line, api_tracer.values):
    the same lists and fields. A record cut at a line boundary loses whole
    lines, which leaves a list short, a field missing or a field null."""
    from .values import Call, Symbol, TensorSpec

    if value is None:
        return node is None
    if isinstance(value, (bool, int, float, str)):
        return node is not None and not isinstance(node, (list, dict))
    if isinstance(value, list):
        return isinstance(node, list) and len(node) == len(value) and all(map(_same_shape, value, node))
    if isinstance(value, tuple):
        return _typed(node, "tuple", "items") and _same_shape(list(value), node["items"])
    if isinstance(value, complex):
        return _typed(node, "complex", "real", "imag") and None not in (node["real"], node["imag"])
    if isinstance(value, slice):
        return (_typed(node, "slice", "start", "stop", "step")
                and all(_same_shape(getattr(value, f), node[f]) for f in ("start", "stop", "step")))
    if value is Ellipsis:
        return _typed(node, "ellipsis")
    if isinstance(value, dict):
        if not _typed(node, "dict", "items"):
            return False
        items = node["items"]
        if all(isinstance(k, str) for k in value):
            return (isinstance(items, dict) and set(items) == set(value)
                    and all(_same_shape(v, items[k]) for k, v in value.items()))
        return (isinstance(items, list) and len(items) == len(value)
                and all(_same_shape([k, v], pair) for (k, v), pair in zip(value.items(), items)))
    if isinstance(value, TensorSpec):
        if not _typed(node, "torch.Tensor", "shape", "dtype", "device"):
            return False
        wanted = [("stride", value.stride is not None), ("layout", value.layout is not None),
                  ("nnz", value.nnz is not None), ("qscheme", value.qscheme is not None),
                  ("scale", value.scale is not None), ("zero_point", value.zero_point is not None),
                  ("axis", value.axis is not None)]
        return (_same_shape(list(value.shape), node["shape"]) and None not in (node["dtype"], node["device"])
                and all(f in node and node[f] is not None for f, there in wanted if there)
                and (value.stride is None or _same_shape(list(value.stride), node["stride"])))
    if isinstance(value, Symbol):
        return _typed(node, "symbol", "name") and node["name"] is not None
    if isinstance(value, Call):
        if not _typed(node, "object", "name") or node["name"] is None:
            return False
        if value.args and not ("args" in node and _same_shape(list(value.args), node["args"])):
            return False
        if value.kwargs and not (isinstance(node.get("kwargs"), dict) and set(node["kwargs"]) == set(value.kwargs)
                                 and all(_same_shape(v, node["kwargs"][k]) for k, v in value.kwargs.items())):
            return False
        return True
    return True  # a value of no kind above: not checked


def _record_is_whole(line: str, record: str, txt_path: str, lineno: int) -> bool:
    """Whether the record (the last of api_trace.yaml) holds all of its
    line's arguments."""
    args, kwargs = parse_config(line, txt_path, lineno)
    try:
        loaded = yaml.load(record, Loader=_LOADER)
    except Exception:  # noqa: BLE001 - not YAML, or a tag its constructors refuse: not a record the tracer wrote
        return False
    if not (isinstance(loaded, list) and len(loaded) == 1 and isinstance(loaded[0], dict)):
        return False
    node = loaded[0]
    return (isinstance(node.get("args"), list) and _same_shape(list(args), node["args"])
            and isinstance(node.get("kwargs"), dict) and set(node["kwargs"]) == set(kwargs)
            and all(_same_shape(v, node["kwargs"][k]) for k, v in kwargs.items()))


def _rest(first: Any, items: Iterator[Any]) -> int:
    """How many items there are from `first` (None: none) on."""
    return (0 if first is None else 1) + sum(1 for _ in items)


def read_trace(s: FileSet, dropped: str, said: Optional[List[str]] = None) -> Iterator[TraceRecord]:
    """The records of the set's trace, each a line of api_trace.txt with its
    record of api_trace.yaml, in order.

    The two files are read side by side: record i of api_trace.yaml must
    begin `- api: NAME`, NAME the API of line i; every line of the YAML must
    be a record's (indented) or a comment; both must be UTF-8: else an
    InputError names the file and line. A kill leaves the two files ending
    at different records, or inside one (the last record may be cut:
    docs/format.md), as does a copy of a running program's set: the records
    are read up to the last one both files hold whole (the last record of
    api_trace.yaml is checked against its line, parsed), and the records
    after it are left out, with a warning naming both files and lines and
    saying `dropped` (what is done with them: "left out of the merge"),
    also appended to `said` where given. Past the API names, the records'
    fields are taken as written, not parsed (but for the last)."""
    txt_path, yaml_path = s.path("api_trace.txt"), s.path("api_trace.yaml")
    with open_regular(txt_path) as ft, open_regular(yaml_path) as fy:
        lines, records = _txt_lines(txt_path, ft), _yaml_records(yaml_path, fy)

        def agree(t: _Line, y: _Record) -> None:
            if t.text is not None and y.api is not None and y.api != api_of(t.text):
                raise InputError(yaml_path, f"a record of {shown(y.api)}, but line {t.lineno} of {txt_path} is a call "
                                 f"of {shown(api_of(t.text))}: the two trace files do not agree", y.lineno)

        prev: Optional[Tuple[_Line, _Record]] = None
        kept = 0
        ends = [1, 1]  # the line after what is kept, of each file

        def keep(t: _Line, y: _Record) -> TraceRecord:
            ends[:] = [t.lineno + 1, y.lineno + y.text.count("\n")]
            return TraceRecord(t.text, y.text, y.level)

        while True:
            t, y = next(lines, None), next(records, None)
            if t is None or y is None:
                break
            if prev is not None:
                agree(*prev)
                kept += 1
                yield keep(*prev)
            prev = (t, y)
        # What is past the records both files hold: counted (and scanned, so
        # that junk there is refused as anywhere else).
        n_txt, n_yaml = _rest(t, lines), _rest(y, records)
        if prev is not None:
            t0, y0 = prev
            agree(t0, y0)
            whole = (t0.text is not None and y0.end != "cut"
                     and (y0.end == "next" or _record_is_whole(t0.text, y0.text, txt_path, t0.lineno)))
            if whole:
                kept += 1
                yield keep(t0, y0)
            else:
                n_txt, n_yaml = n_txt + 1, n_yaml + 1
    if n_txt or n_yaml:
        def counted(n: int, noun: str) -> str:
            return f"{n} {noun}{'' if n == 1 else 's'}"

        message = (f"{txt_path}:{ends[0]} and {yaml_path}:{ends[1]}: {counted(n_txt, 'line')} and "
                   f"{counted(n_yaml, 'record')} from there on are {dropped}: the trace's two files end at "
                   "different records, or inside one (a killed run, or a copy of a running one); the "
                   f"{counted(kept, 'record')} both hold whole are read")
        warn(message)
        if said is not None:
            said.append(message)
