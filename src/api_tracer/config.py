"""Config lines as data: parse them into Python values, and write those
values back as config lines. Both go through the C++ core (parse.h, format.h);
nothing here evaluates a line. This is the one place Python reaches them."""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

from . import _C
from .errors import ConfigSyntaxError

__all__ = ["ConfigSyntaxError", "api_of", "parse_call", "parse_arguments", "format_line", "format_value"]

# The longest config line parsed, in characters. A line's values take up to
# some 40 times its length in memory (a 50 MB line took 1.8 GB), so a longer
# line is refused before it is parsed: at most about 160 MB. The tracer writes
# none near it (tensors are written by their shapes, not their values).
MAX_LINE = 1 << 22


def _within_bound(line: str) -> None:
    if len(line) > MAX_LINE:
        raise ConfigSyntaxError(
            f"a line of {len(line)} characters: a config line holds at most {MAX_LINE} (MAX_LINE)", MAX_LINE + 1
        )


def parse_call(line: str, *, path: str = "", lineno: int = 0) -> Tuple[str, List[Any], Dict[str, Any]]:
    """(api, args, kwargs) of a config line. Raises ConfigSyntaxError naming
    the column (and path:line when given); a line longer than MAX_LINE is
    refused before it is parsed."""
    try:
        _within_bound(line)
        return _C.parse_call(line)
    except ConfigSyntaxError as e:
        raise ConfigSyntaxError(e.message, e.column, line, path, lineno) from None


def api_of(line: str) -> str:
    """The API name a config line starts with (up to its first '(')."""
    return line[: line.index("(")] if "(" in line else line


def parse_arguments(line: str) -> Tuple[str, List[Any], Dict[str, Any]]:
    """(api, args, kwargs) of a config line whatever its API's name (a
    dialect's own): the API is set aside before the arguments are parsed.
    Raises ConfigSyntaxError naming the line's column."""
    _within_bound(line)
    api = api_of(line)
    if api == line:
        raise ConfigSyntaxError("not a config line: no '(' after its API", len(line) + 1, line)
    try:
        _, args, kwargs = _C.parse_call("f" + line[len(api) :])
    except ConfigSyntaxError as e:
        raise ConfigSyntaxError(e.message, e.column + len(api) - 1, line) from None
    return api, args, kwargs


def format_line(
    api: str,
    args: Sequence[Any],
    kwargs: Dict[str, Any],
    *,
    dialect: Any = None,
    show_device: bool = False,
    show_requires_grad: bool = False,
) -> str:
    """The config line of a call of `api`, as the tracer would write it:
    the values no config line holds natively written as `dialect`
    classifies them (None: parsed values only, values.py's and Python's
    literals, which need none), devices and requires_grad shown as asked."""
    classify = dialect.classify if dialect is not None else _values_only
    tensor_type_name = dialect.tensor_type_name if dialect is not None else _values_only
    return _C.format_call(
        api,
        tuple(args),
        dict(kwargs),
        classify=classify,
        tensor_type_name=tensor_type_name,
        show_device=show_device,
        show_requires_grad=show_requires_grad,
    )


def format_value(value: Any) -> str:
    """A parsed value (values.py's classes, Python's literals) as a config
    line writes it."""
    return format_line("", (value,), {})[1:-1]


def _values_only(tp: type) -> Any:
    raise TypeError(
        f"a {tp.__module__}.{tp.__qualname__} is not a value of a parsed config line: format it with "
        "the dialect that writes it"
    )
