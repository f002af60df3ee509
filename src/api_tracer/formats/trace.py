"""A set's trace, api_trace.txt and api_trace.yaml, read back side by side
(docs/format.md). The one damage a healthy run leaves, a trace whose last
record a kill cut (the two files then end at different records, or inside
one), is repaired: the records both files hold whole are read, and the
rest said."""

from __future__ import annotations

import os
import re
from typing import Any, BinaryIO, Iterator, List, NamedTuple, Optional, Tuple

import yaml

from .. import _C
from ..errors import InputError, warn
from .configs import api_of, parse_config
from .fileset import FileSet
from .io import chunks, open_regular, shown
from .statistics import api_name
from .summaries import YAML_LOADER


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


class _Line(NamedTuple):
    lineno: int
    text: Optional[str]  # None: cut (the file ends inside it)


def _txt_lines(path: str, f: BinaryIO) -> Iterator[_Line]:
    """api_trace.txt's config lines (blank and comment lines left out)."""
    for lineno, text, rest in chunks(path, f):
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
_LEVEL_VALUE = re.compile(r"\d{1,9}", re.ASCII)


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
        api: Optional[str] = api_name(path, first[len(_HEADER) :], lineno)
        level = None
        if rest.startswith(_LEVEL) and end != "cut":
            value = rest[len(_LEVEL) : rest.find("\n")]
            if not _LEVEL_VALUE.fullmatch(value) or int(value) > _C.Level.max:
                raise InputError(
                    path, f"level: {shown(value[:40])} is not a level (0 to {int(_C.Level.max)})", lineno + 1
                )
            level = int(value)
        return _Record(lineno, api, level, text, end)

    rest = b""
    for lineno, text, rest in chunks(path, f):  # noqa: B007 - `rest` is read after the loop
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
    from ..values import Call, Symbol, TensorSpec

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
        return _typed(node, "slice", "start", "stop", "step") and all(
            _same_shape(getattr(value, f), node[f]) for f in ("start", "stop", "step")
        )
    if value is Ellipsis:
        return _typed(node, "ellipsis")
    if isinstance(value, dict):
        if not _typed(node, "dict", "items"):
            return False
        items = node["items"]
        if all(isinstance(k, str) for k in value):
            return (
                isinstance(items, dict)
                and set(items) == set(value)
                and all(_same_shape(v, items[k]) for k, v in value.items())
            )
        return (
            isinstance(items, list)
            and len(items) == len(value)
            and all(_same_shape([k, v], pair) for (k, v), pair in zip(value.items(), items))
        )
    if isinstance(value, TensorSpec):
        if not _typed(node, "torch.Tensor", "shape", "dtype", "device"):
            return False
        wanted = [
            ("stride", value.stride is not None),
            ("layout", value.layout is not None),
            ("nnz", value.nnz is not None),
            ("qscheme", value.qscheme is not None),
            ("scale", value.scale is not None),
            ("zero_point", value.zero_point is not None),
            ("axis", value.axis is not None),
        ]
        return (
            _same_shape(list(value.shape), node["shape"])
            and None not in (node["dtype"], node["device"])
            and all(f in node and node[f] is not None for f, there in wanted if there)
            and (value.stride is None or _same_shape(list(value.stride), node["stride"]))
        )
    if isinstance(value, Symbol):
        return _typed(node, "symbol", "name") and node["name"] is not None
    if isinstance(value, Call):
        if not _typed(node, "object", "name") or node["name"] is None:
            return False
        if value.args and not ("args" in node and _same_shape(list(value.args), node["args"])):
            return False
        if value.kwargs and not (
            isinstance(node.get("kwargs"), dict)
            and set(node["kwargs"]) == set(value.kwargs)
            and all(_same_shape(v, node["kwargs"][k]) for k, v in value.kwargs.items())
        ):
            return False
        return True
    return True  # a value of no kind above: not checked


def _record_is_whole(line: str, record: str, txt_path: str, lineno: int) -> bool:
    """Whether the record (the last of api_trace.yaml) holds all of its
    line's arguments."""
    args, kwargs = parse_config(line, txt_path, lineno)
    try:
        loaded = yaml.load(record, Loader=YAML_LOADER)
    except Exception:  # noqa: BLE001 - not YAML, or a tag its constructors refuse: not a record the tracer wrote
        return False
    if not (isinstance(loaded, list) and len(loaded) == 1 and isinstance(loaded[0], dict)):
        return False
    node = loaded[0]
    return (
        isinstance(node.get("args"), list)
        and _same_shape(list(args), node["args"])
        and isinstance(node.get("kwargs"), dict)
        and set(node["kwargs"]) == set(kwargs)
        and all(_same_shape(v, node["kwargs"][k]) for k, v in kwargs.items())
    )


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
                raise InputError(
                    yaml_path,
                    f"a record of {shown(y.api)}, but line {t.lineno} of {txt_path} is a call "
                    f"of {shown(api_of(t.text))}: the two trace files do not agree",
                    y.lineno,
                )

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
            whole = (
                t0.text is not None
                and y0.end != "cut"
                and (y0.end == "next" or _record_is_whole(t0.text, y0.text, txt_path, t0.lineno))
            )
            if whole:
                kept += 1
                yield keep(t0, y0)
            else:
                n_txt, n_yaml = n_txt + 1, n_yaml + 1
    if n_txt or n_yaml:

        def counted(n: int, noun: str) -> str:
            return f"{n} {noun}{'' if n == 1 else 's'}"

        message = (
            f"{txt_path}:{ends[0]} and {yaml_path}:{ends[1]}: {counted(n_txt, 'line')} and "
            f"{counted(n_yaml, 'record')} from there on are {dropped}: the trace's two files end at "
            "different records, or inside one (a killed run, or a copy of a running one); the "
            f"{counted(kept, 'record')} both hold whole are read"
        )
        warn(message)
        if said is not None:
            said.append(message)
