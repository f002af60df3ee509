"""The errors api_tracer raises for bad input, one class each, and the
warnings of the command line. The C++ core's errors come out as these too:
its `Status` (csrc/core/status.h) is mapped to them in one place
(csrc/python/bindings.h, RaiseIfError), once __init__.py has registered
them with the extension: a config line that does not parse is a
ConfigSyntaxError, a file that is not as the tracer writes it an
InputError naming it, a file that cannot be written an OSError.

A module of its own, below every other: every stage raises these."""

from __future__ import annotations

import sys
from typing import Optional

PROG = "api-tracer"


class UsageError(Exception):
    """A bad command line or input: printed as `api-tracer: MESSAGE` on
    stderr, exit code 2."""


class InputError(UsageError):
    """A file that cannot be read as what it should be, or written:
    `PATH[:LINE[:COLUMN]]: what is wrong`."""

    def __init__(self, path: str, message: str, line: Optional[int] = None, column: Optional[int] = None) -> None:
        self.path, self.message, self.line, self.column = path, message, line or None, column or None
        where = path + (f":{line}" if line else "") + (f":{column}" if line and column else "")
        super().__init__(f"{where}: {message}")


class ConfigSyntaxError(ValueError):
    """A config line that does not follow the grammar (docs/format.md):
    what is wrong, and its column (1-based); where known, the line itself
    and the file and line number it was read from."""

    def __init__(self, message: str, column: int, line: str = "", path: str = "", lineno: int = 0) -> None:
        self.message, self.column, self.line, self.path, self.lineno = message, column, line, path, lineno
        where = f"{path}:{lineno}:{column}" if path else f"column {column}"
        super().__init__(f"{where}: {message}")


def warn(message: str) -> None:
    """A repair the command made, or what it could not check: one line
    `api-tracer: warning: MESSAGE` on stderr; the command goes on."""
    print(f"{PROG}: warning: {message}", file=sys.stderr, flush=True)
