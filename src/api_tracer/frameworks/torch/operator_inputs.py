"""PyTorch's "operator inputs" format: config lines written as it, and read
back from it.

PyTorch's operator benchmarks (benchmarks/dynamo/microbenchmarks/
operator_inp_logs, read by operator_inp_utils.py; tritonbench and
BackendBench read them too) keep the inputs of aten operators as text:

    Operator: aten.addmm.default
    cnt: 12, ((T([768], f16), T([64, 768], f16), T([768, 768], f16, stride=(1, 768))), {})

a line per operator, then a line per distinct input: how many calls made
it, and its positional and keyword arguments as Python's repr writes them,
with a tensor as `T([sizes], dtype[, stride=(...)])` and a dtype as its
abbreviation (`f16`). docs/format.md says which values the format carries.

Writing: a config line of an operator (`torch.ops.NS.NAME.OVERLOAD(...)`)
whose every value the format carries becomes an input line; any other
line is left out, counted by kind (`LeftOut`), for the caller to report.

Reading: a tokenizer and a recursive-descent parser of the format's values,
nothing evaluated; each input line becomes the config line of the same
call. A line that breaks the format raises `InputError` naming path, line
and column; a line the config line cannot carry (a symbolic size) is left
out, counted by kind.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

from ...config import MAX_LINE, format_line, parse_call
from ...errors import InputError, warn
from ...formats.fileset import COUNT_MAX
from ...formats.foreign import (
    OBJECT,
    PLACEHOLDERS,
    QUANTIZED,
    TENSOR_DEVICE,
    TENSOR_DTYPE,
    TENSOR_GRAD,
    TENSOR_LAYOUT,
    TENSOR_VIEW,
    UNREADABLE,
    Entry,
    LeftOut,
    NotCarried,
    Reader,
)
from ...formats.io import decode_line
from ...values import Call, Symbol, TensorSpec
from .operator_inputs_grammar import (
    ABBREVIATIONS,
    COUNT,
    DTYPE_OF,
    LINE,
    NOT_OPERATOR,
    OPERATOR,
    OPERATOR_NAME,
    OUTSIDE_TORCH,
    RENAMED,
    SIZE_SYMBOL,
    SYMBOLIC_INT,
    TENSOR_DTYPES,
    InputLine,
    ints,
)


def is_operator_inputs(data: bytes) -> bool:
    """Whether a file's content is in the operator-inputs format: its first
    line that is neither blank nor a comment starts with `Operator: `.
    Only the lines up to it are looked at."""
    for m in LINE.finditer(data):
        line = m.group().strip()
        if line and not line.startswith(b"#"):
            return line.startswith(OPERATOR.encode())
    return False


# -- writing ----------------------------------------------------------------------


def write_operator_inputs(
    configs: Iterable[Tuple[int, str, int]], left_out: Optional[LeftOut] = None
) -> Tuple[str, LeftOut]:
    """The operator-inputs text of config lines, each given as (its line
    number, its text, its calls), and the lines left out (added to
    `left_out` where given). Operators come sorted, as PyTorch writes
    them; each one's inputs in the order of their lines."""
    left_out = left_out if left_out is not None else LeftOut()
    operators: Dict[str, Dict[str, int]] = {}
    for line, text, calls in configs:
        try:
            operator, inputs = input_line(text)
        except NotCarried as e:
            left_out.add(e.kind, line)
            continue
        counts = operators.setdefault(operator, {})
        counts[inputs] = min(counts.get(inputs, 0) + calls, COUNT_MAX)
    out = []
    for operator in sorted(operators):
        out.append(f"{OPERATOR}{operator}\n")
        out.extend(f"{COUNT}: {n}, {inputs}\n" for inputs, n in operators[operator].items())
    return "".join(out), left_out


def input_line(config: str) -> Tuple[str, str]:
    """(the operator, `((args...), {kwargs})`) of a config line, or
    NotCarried."""
    try:
        api, args, kwargs = parse_call(config)
    except ValueError:
        raise NotCarried(UNREADABLE) from None
    if not api.startswith("torch.ops.") or not OPERATOR_NAME.fullmatch(api[len("torch.ops.") :]):
        raise NotCarried(NOT_OPERATOR)
    keywords = ", ".join(f"{name!r}: {written(v)}" for name, v in kwargs.items())
    return api[len("torch.ops.") :], f"({written(tuple(args))}, {{{keywords}}})"


def written(value: Any) -> str:
    """A value of a parsed config line as the format writes it: Python's
    repr, with tensors, dtypes and the torch objects it knows spelled its
    way."""
    if value is None or isinstance(value, (bool, int, float, complex, str)):
        return repr(value)
    if value is Ellipsis:
        return "Ellipsis"
    if isinstance(value, list):
        return "[" + ", ".join(written(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(written(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{written(k)}: {written(v)}" for k, v in value.items()) + "}"
    if isinstance(value, slice):
        return f"slice({written(value.start)}, {written(value.stop)}, {written(value.step)})"
    if isinstance(value, TensorSpec):
        return _written_tensor(value)
    if isinstance(value, Symbol):
        return _written_symbol(value.name)
    if isinstance(value, Call):
        return _written_call(value)
    raise NotCarried(OBJECT)


def _written_tensor(t: TensorSpec) -> str:
    """`T([2, 3], f32)`, `T([2, 3], f32, stride=(1, 2))`, `T([4], torch.uint16)`."""
    if t.device != "cpu":
        raise NotCarried(TENSOR_DEVICE)
    if t.requires_grad:
        raise NotCarried(TENSOR_GRAD)
    if t.qscheme is not None or t.scale is not None:
        raise NotCarried(QUANTIZED)
    if t.layout is not None or t.nnz is not None:
        raise NotCarried(TENSOR_LAYOUT)
    if t.storage_offset is not None or t.storage_size is not None:
        raise NotCarried(TENSOR_VIEW)
    if t.dtype not in TENSOR_DTYPES:
        raise NotCarried(QUANTIZED if t.dtype.startswith(("qint", "quint")) else TENSOR_DTYPE)
    dtype = ABBREVIATIONS.get(t.dtype, f"torch.{t.dtype}")
    stride = "" if t.stride is None else f", stride={written(tuple(t.stride))}"
    return f"T({written(list(t.shape))}, {dtype}{stride})"


def _written_symbol(name: str) -> str:
    """A dtype as its abbreviation where it has one; any other constant
    of torch's by its name (`torch.channels_last`), which PyTorch's loader
    reads."""
    if not name.startswith("torch."):
        raise NotCarried(OUTSIDE_TORCH)
    return ABBREVIATIONS.get(name[len("torch.") :], name)


def _written_call(c: Call) -> str:
    one_str = len(c.args) == 1 and not c.kwargs and isinstance(c.args[0], str)
    if c.name == "torch.device" and one_str:
        return f"torch.device({c.args[0]!r})"
    if c.name == "torch.Size" and len(c.args) == 1 and not c.kwargs and ints(c.args[0]):
        return f"torch.Size({written(list(c.args[0]))})"
    if c.name == "torch.SymInt":
        name = c.args[0] if one_str else ""
        if SIZE_SYMBOL.fullmatch(name) and name not in DTYPE_OF:
            return name
        raise NotCarried(SYMBOLIC_INT)
    raise NotCarried(c.name if c.name in PLACEHOLDERS else OBJECT)


# -- reading ----------------------------------------------------------------------


def read_operator_inputs(path: str, data: bytes) -> Tuple[List[Entry], LeftOut]:
    """The config lines of an operator-inputs file's content, each once,
    with the first line that gave it and the calls of every line that did;
    and the input lines left out, by kind. Blank lines and `#` comments are
    skipped. Raises InputError naming path, line and column at the first
    line that breaks the format."""
    entries: Dict[str, Entry] = {}
    left_out = LeftOut()
    operator: Optional[str] = None
    for lineno, raw in enumerate(data.splitlines(), 1):  # the line ends read_config_file knows
        if len(raw) > MAX_LINE:  # (its parse would take some 30 times its length)
            raise InputError(path, f"a line of {len(raw)} bytes: an input line may hold at most {MAX_LINE}", lineno)
        text = decode_line(raw, path, lineno)
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith(OPERATOR.rstrip()):
            operator = _operator(text, path, lineno)
            continue
        if operator is None:
            raise InputError(path, f"an input line before any '{OPERATOR.rstrip()}' line", lineno, 1)
        parser = InputLine(text, path, lineno)
        calls, args, kwargs = parser.input_line()
        if parser.left_out:
            left_out.add(parser.left_out, lineno)
            continue
        config = _config_line(operator, args, kwargs, path, lineno)
        before = entries.get(config)
        entries[config] = Entry(
            before.line if before else lineno, config, min((before.calls if before else 0) + calls, COUNT_MAX)
        )
    return list(entries.values()), left_out


def read_said(path: str, data: bytes) -> List[Entry]:
    """read_operator_inputs, the input lines it left out said in one
    warning on stderr."""
    entries, left_out = read_operator_inputs(path, data)
    if left_out:
        warn(f"{path}: left out {left_out.total} input lines, which a config line cannot carry: {left_out.describe()}")
    return entries


def operators_held(text: str) -> str:
    """What a written text holds, as export says it: "3 operators"."""
    return f"{sum(1 for line in text.splitlines() if line.startswith(OPERATOR))} operators"


READER = Reader("PyTorch's operator inputs", is_operator_inputs, read_said)  # (Framework.reads)


def _operator(text: str, path: str, lineno: int) -> str:
    """`torch.ops.NS.NAME.OVERLOAD` of an `Operator: NS.NAME.OVERLOAD` line."""
    head = text.index(OPERATOR.rstrip()) + len(OPERATOR.rstrip())
    name = text[head:].strip()
    if not OPERATOR_NAME.fullmatch(name):
        column = head + len(text[head:]) - len(text[head:].lstrip()) + 1
        raise InputError(
            path,
            f"{name[:80]!r} is not an operator's name, NAMESPACE.NAME.OVERLOAD (aten.addmm.default)",
            lineno,
            column,
        )
    return "torch.ops." + RENAMED.get(name, name)


def _config_line(api: str, args: Tuple[Any, ...], kwargs: Dict[str, Any], path: str, lineno: int) -> str:
    """The config line of the call, checked to read back."""
    line = format_line(api, args, kwargs)
    try:
        parse_call(line)
    except ValueError as e:
        raise InputError(path, f"the input makes no config line: {e}", lineno) from None
    return line
