"""Config lines as data: parse them into Python values, and write Python
calls as config lines. Both go through the C++ core (parse.h, format.h);
nothing here evaluates a line."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from . import _C
from .dialect import FrameworkDialect, PyTorchDialect


class ConfigSyntaxError(ValueError):
    """A config line that does not follow the grammar (docs/format.md)."""

    def __init__(self, message: str, column: int, line: str = "", path: str = "", lineno: int = 0) -> None:
        self.message, self.column, self.line, self.path, self.lineno = message, column, line, path, lineno
        where = f"{path}:{lineno}:{column}" if path else f"column {column}"
        super().__init__(f"{where}: {message}")


def parse_call(line: str, *, path: str = "", lineno: int = 0) -> Tuple[str, List[Any], Dict[str, Any]]:
    """(api, args, kwargs) of a config line. Raises ConfigSyntaxError naming
    the column (and path:line when given)."""
    try:
        return _C.parse_call(line)
    except ValueError as e:
        if len(e.args) == 2 and isinstance(e.args[1], int):
            raise ConfigSyntaxError(e.args[0], e.args[1], line, path, lineno) from None
        raise


def format_call(api: str, /, *args: Any, _dialect: Optional[FrameworkDialect] = None, **kwargs: Any) -> str:
    """The config line of a call of `api` with these arguments, as the tracer
    would write it (a keyword argument may be named `api`)."""
    dialect = _dialect or PyTorchDialect()
    return _C.format_call(api, args, kwargs, classify=dialect.classify, tensor_type_name=dialect.tensor_type_name)
