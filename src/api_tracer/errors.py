"""The errors the command line's subcommands share (a module of its own:
cli.py imports the subcommands, so they cannot import it)."""
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
        self.path, self.message, self.line, self.column = path, message, line, column
        where = path + (f":{line}" if line else "") + (f":{column}" if line and column else "")
        super().__init__(f"{where}: {message}")


def warn(message: str) -> None:
    """A repair the command made, or what it could not check: one line
    `api-tracer: warning: MESSAGE` on stderr; the command goes on."""
    print(f"{PROG}: warning: {message}", file=sys.stderr, flush=True)
