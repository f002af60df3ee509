"""Every option of the tracer, defined once.

``TracerOptions`` holds the options of one ``APITracer``: each field with its
check, its help and its flag on ``api-tracer run``. ``APITracer`` validates
its arguments by making one; ``api-tracer run`` derives its flags from the
fields (``add_run_flags``, ``from_run_flags``); ``--follow-children`` hands
them to child processes as JSON (``asdict``); and the fields the C++ core
reads go to it in one call as a ``_C.TraceOptions`` (``to_native``), the
struct of csrc/core/options.h, whose defaults and enums these fields take.

Adding an option: a field here, and the C++ field that uses it (with its
binding in csrc/python/session_bindings.cc, which a test holds to this
class).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from .. import _C
from ..flags import byte_count, level_list, seconds

_DEFAULTS = _C.TraceOptions()  # the C++ fields' defaults
STACK_FORMATS: Tuple[str, ...] = tuple(_C.StackFormat.__members__)
NESTINGS: Tuple[str, ...] = tuple(_C.Nesting.__members__)

# -- checks: each takes (name, value) and gives the value the option keeps ------


def check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, not {value!r}")
    return value


def check_path(name: str, value: Any) -> str:
    if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
        raise ValueError(f"{name} must be a non-empty path, not {value!r}")
    if "\0" in os.fsdecode(value):
        raise ValueError(f"{name} must not contain a NUL character: {value!r}")
    return os.fspath(value)


def check_levels(name: str, value: Any) -> tuple:
    """Level numbers and TracingHook classes, as a tuple; which numbers a
    dialect offers is the tracer's to check."""
    items = tuple(value) if isinstance(value, (list, tuple)) else (value,)
    for item in items:
        if not (isinstance(item, type) or (isinstance(item, int) and not isinstance(item, bool))):
            raise ValueError(f"{name}: {item!r} is not a level")
    return items


def check_patterns(name: str, value: Any) -> Optional[List[str]]:
    if value is None:
        return None
    if isinstance(value, str) or not all(isinstance(p, str) for p in value):
        raise ValueError(f"{name} must be a list of API-name patterns (strings), not {value!r}")
    return list(value)


def check_include(name: str, value: Any) -> Optional[List[str]]:
    """Patterns of the APIs to record: None for all; an empty list, which
    would record nothing, is refused rather than read as all."""
    patterns = check_patterns(name, value)
    if patterns is not None and not patterns:
        raise ValueError(f"{name}=[] would record no API: give None to record every API, or the patterns to keep")
    return patterns


def program_name() -> str:
    """The running program's name, as a label: its script's file name
    (a package's directory for its __main__.py), else "python"."""
    path = sys.argv[0] if sys.argv and sys.argv[0] not in ("", "-c", "-") else ""
    name = os.path.basename(path)
    if name == "__main__.py":
        name = os.path.basename(os.path.dirname(os.path.abspath(path)))
    return name or "python"


LABEL_MAX = _C.MAX_LABEL  # characters of a label (core/sources.h: a key YAML readers bound)


def as_label(text: str) -> str:
    """`text` made a label: what is not printable as '?', and at most
    LABEL_MAX characters (a longer one ends with a hash of the whole, so
    that two long names stay two labels)."""
    label = "".join(c if c.isprintable() else "?" for c in text) or "?"
    if len(label) > LABEL_MAX:
        digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        label = f"{label[: LABEL_MAX - 17]}~{digest}"
    return label


def check_label(name: str, value: Any) -> Optional[str]:
    """None (no api_config_sources.yaml), True (the program's name) or a
    label: printable text, one line, at most LABEL_MAX characters."""
    if value is True:
        return as_label(program_name())
    if value is None:
        return None
    if not isinstance(value, str) or not value or not value.isprintable() or len(value) > LABEL_MAX:
        raise ValueError(
            f"{name} must be None, True (the program's name) or printable text of 1 to {LABEL_MAX} "
            f"characters, not {value!r}"
        )
    return value


def one_of(choices: Sequence[str]) -> Callable[[str, Any], str]:
    def check(name: str, value: Any) -> str:
        if value not in choices:
            raise ValueError(f"{name} must be one of {list(choices)}, not {value!r}")
        return value

    return check


def amount(kind: type, unit: str) -> Callable[[str, Any], Any]:
    """A finite amount of `unit`, 0 or more, as `kind` (int or float)."""
    accepted = (int, float) if kind is float else int

    def check(name: str, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, accepted) or not 0 <= value < 2**63:
            raise ValueError(f"{name} must be a number of {unit} (0 or more), not {value!r}")
        return kind(value)

    return check


# -- the options ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Spec:
    """What a field of TracerOptions is besides its value."""

    help: str
    check: Callable[[str, Any], Any]
    native: Optional[Callable[[Any], Any]]  # the value as the field of _C.TraceOptions takes it; None: Python's own
    flags: Tuple[str, ...]  # on `api-tracer run`; () for none
    flag_options: Dict[str, Any]  # argparse's keywords for the flag
    from_flag: Optional[Callable[[Any], Dict[str, Any]]]  # the flag's value -> options (default: this one)


def _same(value: Any) -> Any:
    return value


def _member(enum: Any) -> Callable[[str], Any]:
    return lambda name: enum.__members__[name]


def option(
    value: Any,
    help: str,
    check: Callable[[str, Any], Any],
    *,
    native: Optional[Callable[[Any], Any]] = _same,
    flags: Optional[Tuple[str, ...]] = None,
    from_flag: Optional[Callable[[Any], Dict[str, Any]]] = None,
    **flag_options: Any,
) -> Any:
    """A field of TracerOptions whose default is `value`. Its flag on
    `api-tracer run` is --NAME (with dashes; --no-NAME for a bool that
    defaults to True) unless `flags` says otherwise (() for none); `native`
    turns the value into the C++ field's (None: an option of Python's own);
    `flag_options` are argparse's keywords for it (its default included,
    where it differs)."""
    spec = Spec(help, check, native, flags if flags is not None else (), flag_options, from_flag)
    return dataclasses.field(default=value, metadata={"spec": spec, "derive_flag": flags is None})


@dataclasses.dataclass(frozen=True)
class TracerOptions:
    """The options of one APITracer (see its docstring for each one)."""

    output_path: Union[str, os.PathLike] = option(
        _DEFAULTS.output_path,
        "output directory (created if needed; a relative one is taken from the working "
        "directory at start, so a program that changes directory later writes there still)",
        check_path,
        native=lambda path: os.path.abspath(os.fsdecode(path)),
        flags=("-o", "--output"),
        metavar="DIR",
    )
    levels: Any = option(
        0,
        "comma-separated levels: torch's 0 setattr, 1 torch function mode, 2 dispatch mode, 3 native observer; "
        "paddle's 0 outermost APIs, 1 every API call, 2 eager operators",
        check_levels,
        native=None,
        type=level_list,
        default=None,
        metavar="1,2",
    )
    merge_output: bool = option(False, "one file set for all levels", check_bool, flags=("--merge",))
    record_stack: bool = option(False, "write api_stacks.yaml", check_bool, flags=())
    stack_format: str = option(
        _DEFAULTS.stack_format.name,
        "record call stacks, in this format",
        one_of(STACK_FORMATS),
        flags=("--stack",),
        native=_member(_C.StackFormat),
        choices=STACK_FORMATS,
        default=None,
        from_flag=lambda v: {} if v is None else {"record_stack": True, "stack_format": v},
    )
    disable_torch_api_list: bool = option(
        False, "level 0 wraps everything a full scan of torch found, not the public API list", check_bool, native=None
    )
    _: dataclasses.KW_ONLY
    label: Optional[Union[str, bool]] = option(
        None,
        "the name of the set's source (a model, a test, a job), kept per config in api_config_sources.yaml "
        "(default: the program's name)",
        check_label,
        native=lambda label: label or "",
        flags=("--label",),
        default=True,
        metavar="NAME",
    )
    include_apis: Optional[List[str]] = option(
        None,
        "API-name pattern to record (repeatable; default: all)",
        check_include,
        flags=("--include",),
        native=lambda patterns: patterns or [],
        action="append",
        metavar="PATTERN",
    )
    exclude_apis: Optional[List[str]] = option(
        None,
        "API-name pattern not to record (repeatable; default: the dialect's)",
        check_patterns,
        native=None,
        flags=("--exclude",),
        action="append",
        metavar="PATTERN",
    )
    api_list: Optional[List[str]] = option(
        None, "level 0 wraps these API names instead of a list file", check_patterns, native=None, flags=()
    )
    show_device: bool = option(_DEFAULTS.show_device, "config lines show tensors' devices other than cpu", check_bool)
    show_requires_grad: bool = option(_DEFAULTS.show_requires_grad, "config lines show requires_grad=True", check_bool)
    stream_trace: bool = option(
        _DEFAULTS.stream_trace,
        "write api_trace.yaml and api_trace.txt (off: configs, APIs and statistics only)",
        check_bool,
    )
    nesting: str = option(
        _DEFAULTS.nesting.name,
        "which operator calls level 3 keeps",
        one_of(NESTINGS),
        native=_member(_C.Nesting),
        choices=NESTINGS,
    )
    value_ranges: bool = option(
        _DEFAULTS.value_ranges,
        "keep a value profile of each integer and bool tensor argument (replay draws from it)",
        check_bool,
    )
    float_ranges: bool = option(
        _DEFAULTS.float_ranges,
        "with value_ranges: profile floating tensor arguments too, their finite values' "
        "range and their non-finite values (replay draws inside it)",
        check_bool,
    )
    snapshot_interval: float = option(
        _DEFAULTS.snapshot_interval,
        "rewrite the summary files this often, so a killed job keeps them (seconds; 0: at start and stop only)",
        amount(float, "seconds"),
        type=seconds,
        metavar="SECONDS",
    )
    trace_limit: int = option(
        _DEFAULTS.trace_limit,
        "the most bytes api_trace.* of a file set take (512M, 1G; 0: no limit)",
        amount(int, "bytes"),
        type=byte_count,
        metavar="BYTES",
    )

    def __post_init__(self) -> None:
        for f in fields():
            object.__setattr__(self, f.name, spec(f).check(f.name, getattr(self, f.name)))
        if self.float_ranges and not self.value_ranges:
            raise ValueError(
                "float_ranges=True needs value_ranges=True: the floating profiles are written with "
                "the others, to api_value_ranges.yaml"
            )

    def asdict(self) -> Dict[str, Any]:
        """The options as plain data (JSON), for a child process."""
        return dataclasses.asdict(self)

    def to_native(self, levels: List[int], exclude_apis: List[str]) -> Any:
        """The _C.TraceOptions of these options, for tracing `levels` (the
        numbers of the hooks chosen) with the dialect's `exclude_apis` where
        none were given."""
        native = _C.TraceOptions()
        for f in fields():
            to_native = spec(f).native
            if to_native is not None:
                setattr(native, f.name, to_native(getattr(self, f.name)))
        native.levels = levels
        native.exclude_apis = exclude_apis if self.exclude_apis is None else self.exclude_apis
        return native


def fields() -> Tuple[dataclasses.Field, ...]:
    return tuple(f for f in dataclasses.fields(TracerOptions) if f.name != "_")


def spec(f: dataclasses.Field) -> Spec:
    return f.metadata["spec"]


def _flag(f: dataclasses.Field) -> Tuple[Tuple[str, ...], Dict[str, Any]]:
    """The flags of a field and argparse's keywords for them."""
    s = spec(f)
    keywords = dict(help=s.help, dest=f.name, **s.flag_options)
    if not f.metadata["derive_flag"]:
        flags = s.flags
    elif f.default is True:
        flags = ("--no-" + f.name.replace("_", "-"),)
        keywords["help"] = "do not " + s.help
    else:
        flags = ("--" + f.name.replace("_", "-"),)
    if isinstance(f.default, bool) and "action" not in keywords:
        keywords["action"] = "store_false" if f.default else "store_true"
    keywords.setdefault("default", f.default)
    return flags, keywords


def add_run_flags(add: Callable[..., Any]) -> None:
    """Adds a flag for each option that has one, through `add` (a parser's
    add_argument)."""
    for f in fields():
        flags, keywords = _flag(f)
        if flags:
            add(*flags, **keywords)


def from_run_flags(args: argparse.Namespace) -> TracerOptions:
    """The options the flags of `api-tracer run` give (checked)."""
    values: Dict[str, Any] = {}
    for f in fields():
        if f.name in vars(args):
            value = getattr(args, f.name)
            if value is None and spec(f).flag_options.get("default", ...) is None:
                continue  # not given, and the flag has no default of its own: APITracer's
            from_flag = spec(f).from_flag
            values.update(from_flag(value) if from_flag else {f.name: value})
    return TracerOptions(**values)
