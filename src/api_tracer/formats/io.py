"""Reading and writing files, for every stage that does: regular files
only (a FIFO, a device, a directory or a dangling link in the place of a
file is refused before anything waits on it), text that must be UTF-8 (an
error names the file, line and byte), files read a chunk of whole lines at
a time, files replaced whole (written aside, then renamed), and whether a
file can be made before the work that makes it. Every error is an
`InputError` naming the file."""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Optional, TextIO, Tuple, Union

from ..errors import InputError, UsageError

# -- regular files only -------------------------------------------------------------------

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


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


# -- UTF-8 ----------------------------------------------------------------------------------


def not_utf8(data: bytes, e: UnicodeDecodeError) -> str:
    """What an error says of bytes that are not UTF-8: which byte, and why."""
    return f"not UTF-8: byte 0x{data[e.start]:02x} ({e.reason})"


def decode(data: bytes, path: str, first_line: int) -> str:
    """Lines of a file (the first of them `first_line`) as text; an
    InputError naming the line of the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = first_line + data.count(b"\n", 0, e.start)
        raise InputError(path, not_utf8(data, e), line) from None


def decode_line(raw: bytes, path: str, lineno: int) -> str:
    """One line of a file as text; an InputError naming the line and the
    column of its first byte that is not UTF-8."""
    text, error, column = decode_leniently(raw)
    if error:
        raise InputError(path, error, lineno, column)
    return text


def decode_leniently(raw: bytes) -> Tuple[str, str, int]:
    """A line as text, its bytes that are not UTF-8 escaped (\\xff), with
    what is wrong ("" where nothing is) and the column of its first bad byte."""
    try:
        return raw.decode("utf-8"), "", 0
    except UnicodeDecodeError as e:
        column = len(raw[: e.start].decode("utf-8", "replace")) + 1
        return raw.decode("utf-8", "backslashreplace"), f"the line is {not_utf8(raw, e)}", column


# -- reading --------------------------------------------------------------------------------


def read_all(path: str, f: BinaryIO) -> bytes:
    try:
        return f.read()
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None


def read_text(path: str) -> str:
    """A whole file as text, if it is a regular file and UTF-8."""
    with open_regular(path) as f:
        return decode(read_all(path, f), path, 1)


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


def shown(text: str) -> str:
    """`text` for a message: as it is when printable, else as its repr."""
    return text if text.isprintable() else repr(text)


_CHUNK = 1 << 20


def chunks(path: str, f: BinaryIO) -> Iterator[Tuple[int, Optional[str], bytes]]:
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
                raise InputError(
                    path,
                    "a carriage return: the tracer writes none (the file's line endings were changed)",
                    lineno + buf.count(b"\n", 0, cr),
                )
            text = decode(bytes(buf[:end]), path, lineno)
            del buf[:end]
            yield lineno, text, b""
            lineno += text.count("\n")
    yield lineno, None, bytes(buf)


def sorted_lines(path: str, noun: str, check: Optional[Callable[[str, str, int], Any]] = None) -> Iterator[str]:
    """The lines of a file the tracer writes sorted, each once (api_apis.txt,
    api_configs.yaml), read a chunk at a time, each checked: UTF-8, `check`
    (path, line, its number), after the one before it in byte-wise order,
    the file ending with a newline. An InputError naming path:line at the
    first that is not."""
    previous = None
    with open_regular(path) as f:
        for lineno, text, rest in chunks(path, f):
            if text is None:
                if rest:
                    raise InputError(path, "ends inside a line: the file was cut", lineno)
                return
            for i, line in enumerate(text.split("\n")[:-1]):
                if check is not None:
                    check(path, line, lineno + i)
                if previous is not None and line <= previous:
                    what = "again" if line == previous else f"after {shown(previous[:80])}"
                    raise InputError(
                        path, f"{shown(line[:80])} {what}: the tracer writes the {noun} sorted, each once", lineno + i
                    )
                previous = line
                yield line


# -- writing --------------------------------------------------------------------------------


def appended_lines(path: str, repair: bool, skip: int = 0) -> Iterator[Tuple[int, bytes]]:
    """(number, bytes) of each line that is not blank of a file a run
    appends a line at a time (a report, a benchmark's results), past its
    first `skip` lines. A last line cut short (the run was killed as it
    wrote it) is an InputError naming it, or with `repair` (a --resume,
    which appends after it) cut off the file."""
    with open(path, "r+b") if repair else open_regular(path) as f:
        lineno, whole = 0, 0
        for raw in f:
            lineno += 1
            if not raw.endswith(b"\n"):
                if not repair:
                    raise InputError(
                        path, "ends inside a line: the run was killed as it wrote it (--resume mends it)", lineno
                    )
                f.truncate(whole)
                return
            whole += len(raw)
            if lineno > skip and raw.strip():
                yield lineno, raw


def temporary_of(path: str) -> str:
    """Where a file is written before it is renamed to `path`: the name the
    tracer's own writers use (.NAME.tmp beside it: core/file.h's
    TemporaryOf; the next writer there removes one a kill left)."""
    directory, name = os.path.split(os.path.abspath(path))
    return os.path.join(directory, f".{name}.tmp")


def _existing_mode(path: str) -> Optional[int]:
    """The mode of what `path` names, a link followed; None where nothing
    is there. An InputError for a link to nothing: writing through it would
    make a file where the link points, which is not the file named."""
    try:
        return os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.lexists(path):
            raise InputError(path, "cannot write: a symbolic link to nothing") from None
        return None
    except OSError as e:
        raise InputError(path, f"cannot write: {e.strerror or e}") from None


def replace_atomically(path: str, data: Union[str, bytes]) -> None:
    """`path` holding `data` (text is written as UTF-8), or as it was: a
    regular file (or a new one) is written beside it, flushed to the disk,
    then renamed over it (over a link's target, the link kept), so that no
    reader, nor a kill at any moment, finds it half written. Anything else
    there (a device, /dev/stdout, a FIFO a process reads) is written as it
    is, never replaced; a FIFO no process reads is an error, not a wait,
    and so is a link to nothing. An InputError naming `path` where it
    cannot be written."""
    content = data.encode("utf-8") if isinstance(data, str) else data
    mode = _existing_mode(path)
    if mode is not None and not stat.S_ISREG(mode):
        _write_through(path, content)
        return
    target = os.path.realpath(path)
    temporary = temporary_of(target)
    try:
        with open(temporary, "wb") as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, target)
    except OSError as e:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise InputError(path, f"cannot write: {e.strerror or e}") from None


def open_output(path: str, append: bool = False) -> TextIO:
    """`path` opened to write text into as it comes (a report written a
    line at a time, each flushed, so that a crash loses none before it): a
    regular file (or a new one) truncated (or, with `append`, written on
    at its end), a link's target the same, and anything else (a device, a
    FIFO a process reads) written as it is. A FIFO no process reads, or a
    link to nothing, is an InputError naming `path`, not a wait."""
    _existing_mode(path)
    flags = os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    return os.fdopen(_open_for_writing(path, flags), "a" if append else "w", encoding="utf-8")


def _open_for_writing(path: str, flags: int = 0) -> int:
    """A descriptor of `path` open for writing, blocking; opened without
    blocking first, so that a FIFO no process reads is an InputError (not
    a wait for a reader that may never come)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC | flags, 0o666)
    except OSError as e:
        unread_fifo = e.errno == errno.ENXIO and stat.S_ISFIFO(os.stat(path).st_mode)
        why = "a FIFO no process reads" if unread_fifo else e.strerror or str(e)
        raise InputError(path, f"cannot write: {why}") from None
    try:
        os.set_blocking(fd, True)
    except OSError as e:
        os.close(fd)
        raise InputError(path, f"cannot write: {e.strerror or e}") from None
    return fd


def _write_through(path: str, content: bytes) -> None:
    """`content` written into what is at `path` (not a regular file)."""
    fd = _open_for_writing(path)
    try:
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view) :]
    except OSError as e:
        raise InputError(path, f"cannot write: {e.strerror or e}") from None
    finally:
        os.close(fd)


def check_not_an_input(command: str, flag: str, output: str, inputs: Iterable[str]) -> None:
    """A UsageError (`COMMAND: FLAG OUTPUT is one of its inputs (INPUT,
    which COMMAND reads)`) where the file `output` names is one of the
    files the command reads, by another name too (a link, a hard link):
    writing it would destroy what the command is reading. Checked before
    any work, by every command that writes a file (export, replay, report)."""
    try:
        written = os.stat(output)
    except OSError:
        return  # nothing there yet (or nothing that can be read): no input to write over
    for given in inputs:
        try:
            read = os.stat(given)
        except OSError:
            continue
        if (read.st_dev, read.st_ino) == (written.st_dev, written.st_ino):
            raise UsageError(f"{command}: {flag} {output} is one of its inputs ({given}, which {command} reads)")


def unwritable(path: str) -> str:
    """Why the file `path` cannot be written ("" where it can), as far as
    can be known before the work that makes it: it is a directory; its
    directory is missing, or not a directory, or cannot be written (where
    replace_atomically puts it first); it is there and cannot be written;
    it is a link to nothing (replace_atomically refuses one)."""
    if os.path.isdir(path):
        return "is a directory"
    if os.path.islink(path) and not os.path.exists(path):
        return "a symbolic link to nothing"
    parent = os.path.dirname(path) or os.curdir
    if not os.path.exists(parent):
        probe = parent
        while not os.path.exists(probe):
            probe = os.path.dirname(probe) or os.curdir
        return f"{probe} is not a directory" if not os.path.isdir(probe) else f"no directory {parent}"
    if not os.path.isdir(parent):
        return f"{parent} is not a directory"
    if os.path.exists(path) and not os.access(path, os.W_OK):
        return "permission denied"
    if os.path.exists(path) and not stat.S_ISREG(os.stat(path).st_mode):
        return ""  # a device, a FIFO: written as it is
    directory = os.path.dirname(os.path.realpath(path))
    if not os.access(directory, os.W_OK | os.X_OK):
        return f"{directory} cannot be written (permission denied)"
    return ""


def unmakeable_directory(path: str) -> str:
    """Why the directory `path` cannot be written into, or made ("" where
    it can), as far as can be known before it is."""
    if os.path.exists(path):
        if not os.path.isdir(path):
            return "not a directory"
        return "" if os.access(path, os.W_OK | os.X_OK) else "cannot write into this directory: permission denied"
    parent = os.path.dirname(os.path.normpath(path)) or os.curdir
    while not os.path.exists(parent):
        parent = os.path.dirname(parent) or os.curdir
    if not os.path.isdir(parent):
        return f"cannot make this directory: {parent} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot make this directory: {parent} cannot be written (permission denied)"
    return ""
