"""PaddleAPITest's config lines: config lines of Paddle APIs written as the
engine of PaddleAPITest (github.com/PFCCLab/PaddleAPITest) reads them.

Its files hold one call a line, in a style of their own:

    paddle.concat(list[Tensor([3, 5],"float32"),Tensor([3, 5],"float32"),], axis=0, )
    paddle.Tensor.__getitem__(Tensor([4, 8],"float32"), tuple(slice(None,2,None),Ellipsis,), )
    paddle.cast(Tensor([2, 3],"int64"), Dtype(float32), )

each argument followed by `, `, lists as `list[a,b,]`, tuples as
`tuple(a,b,)`, dtypes as `Dtype(float32)`, places as `Place(gpu:0)`.
Its reader (tester/api_config/config_analyzer.py, `APIConfig`) is no
grammar but a scan: it finds the next token, dispatches on it, and cuts a
tensor, a slice or a complex at its first `)`; a list holding no tensor has
its commas turned to spaces, a tuple its commas to ` , `; a string is the
text from its first token to the next `"`, with no escapes. So a value is
written only where that scan reads it back as itself: a string with a `"`,
a `=` after its first token, or a first token the scan takes for a name
(`list`, `nan`, ...), a slice or complex inside a list of no tensor, a
dict: each has no spelling there, and its line is left out, counted by kind
(`LeftOut`, as the operator-inputs writer counts them). docs/format.md says
what is carried.

Lines of other frameworks' APIs (torch.add, torch.ops.aten...) are left
out: PaddleAPITest runs Paddle's. Reading is the config parser's: it
reads their spellings as values (csrc/core/parse.cc), so their files
replay as they are.
"""

from __future__ import annotations

import math
import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ...config import parse_call
from ...formats.foreign import (
    OBJECT,
    PLACEHOLDERS,
    QUANTIZED,
    TENSOR_DEVICE,
    TENSOR_DTYPE,
    TENSOR_LAYOUT,
    TENSOR_VIEW,
    UNREADABLE,
    LeftOut,
    NotCarried,
)
from ...values import Call, Symbol, TensorSpec
from .names import DTYPES

# The dtypes a tensor of theirs is made in (TensorConfig's table of them),
# which Dtype(...) names too: Paddle's.
TENSOR_DTYPES = frozenset(DTYPES)
# The classes `type(...)` names: numpy's scalar types (Paddle's dtypes but
# those numpy lacks, and its bool_), and Python's.
NUMPY_TYPES = frozenset({"bool_", *DTYPES} - {"bfloat16", "float8_e4m3fn", "float8_e5m2"})
BUILTIN_TYPES = frozenset({"bool", "int", "float", "complex"})
# The first tokens their reader dispatches on: a string that starts with
# one is read as that, not as a string.
READER_NAMES = frozenset(
    {"TensorConfig", "Dtype", "Place", "VarType", "list", "tuple", "slice", "complex", "type", "nan"}
)
EINSUM = "paddle.einsum"  # their reader takes its equation, the line's first string, apart

_GPU = re.compile(r"gpu(?::[0-9]+)?")
# Their token: a run of these characters from a word boundary to a word
# boundary (where the run starts with a word character), or "-" and such a
# run, or "." and digits.
_WORD = re.compile(r"[A-Za-z0-9_]")
_TOKEN = re.compile(r"[A-Za-z0-9._+-]+\b")
_NEGATIVE = re.compile(r"-[A-Za-z0-9._+-]+\b")
_DECIMAL = re.compile(r"\.[0-9]+")
_INT = re.compile(r"[+-]?[0-9](?:_?[0-9])*")  # a token int() reads, which their reader takes a "." after

# The kinds of lines left out, beside operator_inputs' (UNREADABLE, OBJECT,
# the placeholders, the tensor kinds).
NOT_PADDLE = "not a Paddle API"  # torch.add, torch.ops.aten.add.Tensor: PaddleAPITest runs Paddle's
API_NAME = "API name"  # ending in "Tensor": their reader renames "Tensor(" everywhere
STRING = "string"  # one their reader does not read back as itself (above)
EINSUM_EQUATION = "einsum equation"  # paddle.einsum without its equation as the line's first value
DICT = "dict"
SLICE = "slice"  # a bound that is not an int or None
LIST_ITEM = "slice or complex in a list of no tensor"  # its commas become spaces there
CONSTANT = "named constant"  # not a dtype nor a class type(...) names: an enum member, paddle.nn.Layer
PLACE = "place"  # other than CPUPlace and CUDAPlace: their reader makes CPUPlace of any other


def write_paddleapitest(
    configs: Iterable[Tuple[int, str, int]], left_out: Optional[LeftOut] = None
) -> Tuple[str, LeftOut]:
    """PaddleAPITest's text of config lines, each given as (its line
    number, its text, its calls), and the lines left out (added to
    `left_out` where given): a line per distinct call, in the order of the
    configs. Their files have no counts, so the calls go unwritten."""
    left_out = left_out if left_out is not None else LeftOut()
    lines: Dict[str, None] = {}
    for line, text, _calls in configs:
        try:
            lines.setdefault(config_line(text))
        except NotCarried as e:
            left_out.add(e.kind, line)
    return "".join(f"{line}\n" for line in lines), left_out


def config_line(config: str) -> str:
    """The PaddleAPITest line of one of our config lines, or NotCarried."""
    try:
        api, args, kwargs = parse_call(config)
    except ValueError:
        raise NotCarried(UNREADABLE) from None
    if not api.startswith("paddle."):
        raise NotCarried(NOT_PADDLE)
    if api.endswith("Tensor"):
        raise NotCarried(API_NAME)
    # (names, the API's and the keywords', are ASCII identifiers, as their reader's tokens)
    parts = [_Writer(api == EINSUM and i == 0).value(v) for i, v in enumerate(args)]
    parts += [f"{name}={_Writer(keyword=True).value(v)}" for name, v in kwargs.items()]
    line = api + "(" + "".join(f"{p}, " for p in parts) + ")"
    if api == EINSUM and (not args or not isinstance(args[0], str) or "equation" in line):
        raise NotCarried(EINSUM_EQUATION)  # (with "equation" anywhere, their reader makes it a keyword)
    return line


class _Writer:
    """One argument's value, written: where it is (in a container, in a
    list of no tensor) decides what can be."""

    def __init__(self, equation: bool = False, keyword: bool = False) -> None:
        self.equation = equation  # paddle.einsum's first argument: the scan takes it whole
        self.keyword = keyword  # a keyword argument's value: no "=" after its first token can make it one

    def value(self, v: Any, contained: bool = False, spaced: bool = False) -> str:
        """`contained`: inside a list or tuple; `spaced`: inside a list of no
        tensor, whose commas their reader turns to spaces."""
        if v is None or isinstance(v, bool):
            return str(v)
        if isinstance(v, int):
            return str(v)
        if isinstance(v, float):
            return _real(v)
        if isinstance(v, complex):
            if spaced:
                raise NotCarried(LIST_ITEM)
            return f"complex({_real(v.real)},{_real(v.imag)})"
        if isinstance(v, str):
            return self._string(v, contained)
        if v is Ellipsis:
            return "Ellipsis"
        if isinstance(v, list):
            spaced = spaced or not _holds_tensor(v)
            return "list[" + "".join(f"{self.value(item, True, spaced)}," for item in v) + "]"
        if isinstance(v, tuple):
            return "tuple(" + "".join(f"{self.value(item, True, spaced)}," for item in v) + ")"
        if isinstance(v, slice):
            if spaced:
                raise NotCarried(LIST_ITEM)
            bounds = (v.start, v.stop, v.step)
            if not all(b is None or isinstance(b, int) for b in bounds):
                raise NotCarried(SLICE)
            return "slice(" + ",".join(str(b) for b in bounds) + ")"
        if isinstance(v, TensorSpec):
            return _tensor(v)
        if isinstance(v, Symbol):
            return _symbol(v.name)
        if isinstance(v, Call):
            return self._call(v, contained, spaced)
        if isinstance(v, dict):
            raise NotCarried(DICT)
        raise NotCarried(OBJECT)

    def _string(self, s: str, contained: bool) -> str:
        """`"text"`, raw: their reader has no escapes; it reads the text up
        to the next `"` once it has found the string's first token."""
        if not s or not s.isascii() or not s.isprintable() or '"' in s or "Tensor(" in s or "paddle.Size(" in s:
            raise NotCarried(STRING)  # (their reader rewrites "Tensor(" and "paddle.Size([...])" in the whole line)
        if self.equation:
            self.equation = False
            return f'"{s}"'
        if contained and any(c in s for c in ",()[]"):
            raise NotCarried(STRING)  # a container is cut by counting brackets, its commas rewritten
        token = _first_token(s)
        if token is None or token in READER_NAMES:
            raise NotCarried(STRING)
        if not contained and not self.keyword and s[len(token) : len(token) + 1] == "=":
            raise NotCarried(STRING)  # their reader would take it for a keyword argument's name
        return f'"{s}"'

    def _call(self, c: Call, contained: bool, spaced: bool) -> str:
        if c.name == "paddle.CPUPlace" and not c.args and not c.kwargs:
            return "Place(cpu)"
        if c.name == "paddle.CUDAPlace" and not c.kwargs and len(c.args) == 1 and _is_int(c.args[0]) and c.args[0] >= 0:
            return f"Place(gpu:{c.args[0]})"
        if c.name.endswith("Place") and c.name.startswith("paddle."):
            raise NotCarried(PLACE)
        scalar = c.name.startswith("numpy.") and c.name[len("numpy.") :] in NUMPY_TYPES
        if scalar and len(c.args) == 1 and not c.kwargs and isinstance(c.args[0], (bool, int, float, complex)):
            return self.value(c.args[0], contained, spaced)  # a numpy scalar as Python's (their tracer's way)
        raise NotCarried(c.name if c.name in PLACEHOLDERS else OBJECT)


def _first_token(s: str) -> Optional[str]:
    """The token their reader finds first in a string, where it starts at
    the string's first character (it must: the reader knows a string by the
    quote just before its first token)."""
    text = s + '"'  # what follows it in the line
    decimal = _DECIMAL.match(text)
    if decimal:
        return decimal.group()  # (taken as it is)
    m = _TOKEN.match(text) if _WORD.match(text) else _NEGATIVE.match(text)
    if m is None:
        return None
    token = m.group()
    return token + "." if _INT.fullmatch(token) and text[m.end()] == "." else token  # "2." is taken whole


def _real(x: float) -> str:
    """A float as Python writes it, its infinities and NaN as math's names
    (their reader evaluates math.inf; NaN's sign is not kept)."""
    if math.isnan(x):
        return "math.nan"
    if math.isinf(x):
        return "math.inf" if x > 0 else "-math.inf"
    return repr(x)


def _tensor(t: TensorSpec) -> str:
    """`Tensor([2, 3],"float32")`; `Tensor([3, 2],"float32",is_contiguous=False,strides=[1, 3])`
    where not contiguous. A tensor is made where their engine makes tensors
    (a GPU): a device other than a GPU is left out."""
    if t.device != "cpu" and not _GPU.fullmatch(t.device):
        raise NotCarried(TENSOR_DEVICE)
    for kind, fields in _UNSAID:
        if any(getattr(t, f) is not None for f in fields):
            raise NotCarried(kind)
    if t.dtype not in TENSOR_DTYPES:
        raise NotCarried(QUANTIZED if t.dtype.startswith(("qint", "quint")) else TENSOR_DTYPE)
    strides = "" if t.stride is None else f",is_contiguous=False,strides={list(t.stride)}"
    return f'Tensor({list(t.shape)},"{t.dtype}"{strides})'


# What a tensor of theirs has no place for: a quantized tensor's parameters,
# a sparse layout, a view's place in a larger storage.
_UNSAID = (
    (QUANTIZED, ("qscheme", "scale")),
    (TENSOR_LAYOUT, ("layout", "nnz")),
    (TENSOR_VIEW, ("storage_offset", "storage_size")),
)


def _symbol(name: str) -> str:
    """A dtype as `Dtype(float32)`; a class as `type(numpy.float32)`,
    `type(float)`."""
    module, _, short = name.rpartition(".")
    if module == "paddle" and short in TENSOR_DTYPES:
        return f"Dtype({short})"
    if (module == "numpy" and short in NUMPY_TYPES) or (not module and short in BUILTIN_TYPES):
        return f"type({name})"
    raise NotCarried(CONSTANT)


def _holds_tensor(value: Any) -> bool:
    if isinstance(value, TensorSpec):
        return True
    return isinstance(value, (list, tuple)) and any(_holds_tensor(v) for v in value)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def apis(text: str) -> List[str]:
    """The distinct APIs of a written text, in the order of their first lines."""
    return list(dict.fromkeys(line[: line.index("(")] for line in text.splitlines()))


def apis_held(text: str) -> str:
    """What a written text holds, as export says it: "3 APIs"."""
    return f"{len(apis(text))} APIs"
