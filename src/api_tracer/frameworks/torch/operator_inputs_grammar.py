"""PyTorch's operator-inputs format, its grammar: the words it writes (an
operator's line, a count, the dtypes' abbreviations), the kinds of what it
or a config line cannot carry, and `InputLine`, a tokenizer and
recursive-descent parser of one input line's values (nothing evaluated),
each value made a config line's (values.py). operator_inputs.py reads and
writes the files with it."""

from __future__ import annotations

import math
import re
import sys
from typing import Any, Dict, List, NamedTuple, Tuple

from ... import _C
from ...errors import InputError
from ...formats.fileset import COUNT_MAX
from ...values import Call, Symbol, TensorSpec

OPERATOR = "Operator: "  # the line an operator's inputs follow
COUNT = "cnt"  # an input line: `cnt: N, ((args...), {kwargs})`

# The dtypes the format abbreviates (operator_inp_utils.py's table), by the
# name a config line gives them. Any other dtype is written `torch.NAME`,
# which PyTorch's loader reads too.
ABBREVIATIONS = {
    "bfloat16": "bf16",
    "float16": "f16",
    "float32": "f32",
    "float64": "f64",
    "complex32": "c32",
    "complex64": "c64",
    "complex128": "c128",
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "bool": "b8",
    "uint8": "u8",
}
DTYPE_OF = {abbreviation: name for name, abbreviation in ABBREVIATIONS.items()}
# The dtypes a T(...) may have: torch's, less the quantized ones (a
# quantized tensor needs its scale and zero point, which T has no place for).
TENSOR_DTYPES = frozenset(ABBREVIATIONS) | {
    "float8_e4m3fn",
    "float8_e4m3fnuz",
    "float8_e5m2",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float4_e2m1fn_x2",
    "uint16",
    "uint32",
    "uint64",
    "bits1x8",
    "bits2x4",
    "bits4x2",
    "bits8",
    "bits16",
    *(f"int{n}" for n in range(1, 8)),
    *(f"uint{n}" for n in range(1, 8)),
}
# Old files name an overload that has another name now; PyTorch's loader
# reads them so.
RENAMED = {"aten.sum.SymInt": "aten.sum.dim_IntList"}

OPERATOR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_DTYPE_NAME = re.compile(r"[a-z][a-z0-9_]*")
SIZE_SYMBOL = re.compile(r"[su][0-9]+")  # a symbolic size, as PyTorch names them: s0 (backed), u0 (unbacked)
_LIKE_ABBREVIATION = re.compile(r"[a-z]+[0-9]+")
# The nesting the reader follows: the containers in containers a config line holds (the tracer's
# converters write a value nested deeper as Opaque, which replay skips); an input's own depth is 2 (inside
# the line's tuple of inputs, and its tuple or dict of arguments).
MAX_DEPTH = _C.MAX_VALUE_DEPTH + 1
_INPUT_DEPTH = 2
_INT64 = (-(2**63), 2**63 - 1)
LINE = re.compile(rb"[^\r\n]+")  # a line's text, for the line ends bytes.splitlines knows

# The kinds of lines left out that are this format's own (formats/foreign.py
# has those every format shares). Writing: levels 0 and 1's APIs (torch.add,
# torch.Tensor.sum, ...); a named constant or class not under torch. (float,
# an enum of the program's); torch.SymInt("...") other than a plain s0 or u0
# the format can name.
NOT_OPERATOR = "not an operator"
OUTSIDE_TORCH = "constant outside torch"
SYMBOLIC_INT = "symbolic int"
# Reading: what an input line holds that a config line cannot carry.
SYMBOLIC_SIZE = "symbolic size"  # T([s0, 128], f16): a config line's sizes are ints
SPARSE_WITHOUT_NNZ = "sparse tensor without nnz"


class _Token(NamedTuple):
    kind: str  # "number", "name", "string", "punct", "end"
    text: str  # as written; a string's: its value
    column: int  # 1-based


_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?j?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_PLAIN = re.compile(r"[^\\'\"\x00-\x1f\x7f]+")  # string characters that stand for themselves
_PUNCT = "()[]{},:=+-"
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "r": "\r", "t": "\t"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_CONSTANTS = {"None": None, "True": True, "False": False, "Ellipsis": Ellipsis, "inf": math.inf, "nan": math.nan}


class InputLine:
    """One input line: tokens scanned as they are needed (a few ahead), and
    values parsed by recursive descent, at most MAX_DEPTH deep."""

    def __init__(self, text: str, path: str, lineno: int) -> None:
        self.text, self.path, self.lineno = text, path, lineno
        self.offset = 0  # where scanning goes on
        self.ahead: List[_Token] = []
        self.left_out = ""  # the kind, where the line holds what a config line cannot

    def fail(self, message: str, column: int) -> InputError:
        return InputError(self.path, message, self.lineno, column)

    # -- tokens

    def peek(self, k: int = 0) -> _Token:
        while len(self.ahead) <= k:
            self.ahead.append(self._scan())
        return self.ahead[k]

    def next(self) -> _Token:
        token = self.peek()
        del self.ahead[0]
        return token

    def at(self, punct: str, k: int = 0) -> bool:
        token = self.peek(k)
        return token.kind == "punct" and token.text == punct

    def expect(self, punct: str, what: str = "") -> _Token:
        token = self.next()
        if token.kind != "punct" or token.text != punct:
            raise self.fail(f"expected '{punct}'{what}, found {_shown(token)}", token.column)
        return token

    def _scan(self) -> _Token:
        text, i = self.text, self.offset
        while i < len(text) and text[i] in " \t":
            i += 1
        column = i + 1
        if i == len(text):
            self.offset = i
            return _Token("end", "", column)
        c = text[i]
        if c in "'\"":
            value, self.offset = self._string(i)
            return _Token("string", value, column)
        for kind, pattern in (("number", _NUMBER), ("name", _NAME)):
            m = pattern.match(text, i)
            if m:
                self.offset = m.end()
                return _Token(kind, m.group(), column)
        if text.startswith("...", i):
            self.offset = i + 3
            return _Token("punct", "...", column)
        if c in _PUNCT:
            self.offset = i + 1
            return _Token("punct", c, column)
        raise self.fail(f"unexpected character {c!r}", column)

    def _string(self, start: int) -> Tuple[str, int]:
        """A quoted string's value, and where it ends: the escapes Python's
        repr writes (\\\\ \\' \\" \\n \\r \\t \\xNN \\uNNNN \\UNNNNNNNN), nothing else."""
        text, quote, i = self.text, self.text[start], start + 1
        out = []
        while True:
            m = _PLAIN.match(text, i)
            if m:
                out.append(m.group())
                i = m.end()
            if i == len(text):
                raise self.fail("a string that is not closed", start + 1)
            c = text[i]
            if c == quote:
                return "".join(out), i + 1
            if c in "'\"":
                out.append(c)
                i += 1
            elif c != "\\":
                raise self.fail(f"the control character {c!r} in a string (it is written escaped)", i + 1)
            else:
                char, i = self._escape(i)
                out.append(char)

    def _escape(self, i: int) -> Tuple[str, int]:
        e = self.text[i + 1 : i + 2]
        if e in _ESCAPES:
            return _ESCAPES[e], i + 2
        if e not in _HEX_ESCAPES:
            raise self.fail(f"unknown escape '\\{e}' in a string", i + 1)
        n = _HEX_ESCAPES[e]
        digits = self.text[i + 2 : i + 2 + n]
        if len(digits) != n or any(d not in "0123456789abcdefABCDEF" for d in digits):
            raise self.fail(f"'\\{e}' takes {n} hexadecimal digits", i + 1)
        code = int(digits, 16)
        if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            raise self.fail(f"'\\{e}{digits}' is not a character", i + 1)
        return chr(code), i + 2 + n

    # -- the line

    def input_line(self) -> Tuple[int, Tuple[Any, ...], Dict[str, Any]]:
        """(calls, args, kwargs) of `cnt: N, ((args...), {kwargs})`."""
        first = self.next()
        if first.kind != "name" or first.text != COUNT or not self.at(":"):
            raise self.fail(f"an input line starts with '{COUNT}: N, ', not {_shown(first)}", first.column)
        self.expect(":")
        calls = self._count()
        self.expect(",")
        self.expect("(", " (the inputs: ((args...), {kwargs}))")
        args_at = self.peek()
        args = self.value(1)
        if not isinstance(args, tuple):
            raise self.fail("the positional arguments are a tuple, (a, b) or (a,)", args_at.column)
        self.expect(",")
        kwargs_at = self.peek()
        kwargs = self.value(1)
        if not isinstance(kwargs, dict):
            raise self.fail("the keyword arguments are a dict, {'name': value}", kwargs_at.column)
        for name in kwargs:
            if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
                raise self.fail(f"a keyword argument's name is an identifier, not {name!r:.80}", kwargs_at.column)
        self.expect(")")
        end = self.next()
        if end.kind != "end":
            raise self.fail(f"more after the inputs: {_shown(end)}", end.column)
        return calls, args, kwargs

    def _count(self) -> int:
        token = self.next()
        if token.kind != "number" or not token.text.isdigit():
            raise self.fail(f"a count is a whole number, not {_shown(token)}", token.column)
        if len(token.text) > 20 or not 1 <= int(token.text) <= COUNT_MAX:
            raise self.fail(f"a count of {token.text[:24]}: not from 1 to 2^64 - 1", token.column)
        return int(token.text)

    # -- values

    def value(self, depth: int) -> Any:
        token = self.next()
        if depth > MAX_DEPTH + _INPUT_DEPTH:
            raise self.fail(f"nested more than {MAX_DEPTH} deep (what a config line holds)", token.column)
        if token.kind == "string":
            return token.text
        if token.kind == "number":
            return self._number(token, "")
        if token.kind == "name":
            return self._named(token, depth)
        if token.kind == "punct":
            if token.text == "-":
                return self._negative(self.next())
            if token.text == "[":
                return self._items("]", depth)
            if token.text == "(":
                return self._paren(depth)
            if token.text == "{":
                return self._dict(depth)
            if token.text == "...":
                return Ellipsis
        raise self.fail(f"expected a value, found {_shown(token)}", token.column)

    def _number(self, token: _Token, sign: str) -> Any:
        text = token.text
        if text.endswith("j"):
            return complex(0.0, float(sign + text[:-1]))
        if any(c in text for c in ".eE"):
            return float(sign + text)
        limit = sys.get_int_max_str_digits()
        if limit and len(text) > limit:
            raise self.fail(
                f"an integer of {len(text)} digits: more than Python reads ({limit}, sys.get_int_max_str_digits())",
                token.column,
            )
        return int(sign + text)

    def _negative(self, token: _Token) -> Any:
        if token.kind == "number":
            return self._number(token, "-")
        if token.kind == "name" and token.text in ("inf", "nan"):
            return float("-" + token.text)
        if token.kind == "name" and token.text in ("infj", "nanj"):
            return complex(0.0, float("-" + token.text[:-1]))
        raise self.fail(f"expected a number after '-', found {_shown(token)}", token.column)

    def _items(self, close: str, depth: int) -> List[Any]:
        """The values up to `close` (the opening one read), ", "-separated, a
        trailing comma allowed."""
        items: List[Any] = []
        while not self.at(close):
            items.append(self.value(depth + 1))
            if not self.at(close):
                self.expect(",", f" or '{close}'")
        self.next()
        return items

    def _paren(self, depth: int) -> Any:
        """A tuple, `()`, `(a,)`, `(a, b)`; or a complex, `(1+2j)`."""
        if self._complex_ahead():
            return self._complex()
        if self.at(")"):
            self.next()
            return ()
        first = self.value(depth + 1)
        if self.at(")"):
            raise self.fail("a value in parentheses: a tuple of one is written (a,)", self.peek().column)
        self.expect(",", " or ')'")
        return (first, *self._items(")", depth))

    def _complex_ahead(self) -> bool:
        k = 1 if self.at("-") else 0
        real = self.peek(k)
        real_ok = (real.kind == "number" and not real.text.endswith("j")) or (
            real.kind == "name" and real.text in ("inf", "nan")
        )
        return real_ok and (self.at("+", k + 1) or self.at("-", k + 1))

    def _complex(self) -> complex:
        negative = self.at("-")
        if negative:
            self.next()
        real = float(("-" if negative else "") + self.next().text)
        sign = "-" if self.next().text == "-" else ""  # the + or - between the parts
        token = self.next()
        if not (
            (token.kind == "number" and token.text.endswith("j"))
            or (token.kind == "name" and token.text in ("infj", "nanj"))
        ):
            raise self.fail(f"expected the imaginary part (2j), found {_shown(token)}", token.column)
        imag = float(sign + token.text[:-1])
        self.expect(")")
        return complex(real, imag)

    def _dict(self, depth: int) -> Dict[Any, Any]:
        out: Dict[Any, Any] = {}
        while not self.at("}"):
            key_at = self.peek()
            key = self.value(depth + 1)
            try:
                hash(key)
            except TypeError:
                raise self.fail(f"a dict key that cannot be hashed ({type(key).__name__})", key_at.column) from None
            self.expect(":")
            out[key] = self.value(depth + 1)
            if not self.at("}"):
                self.expect(",", " or '}'")
        self.next()
        return out

    def _named(self, token: _Token, depth: int) -> Any:
        name = token.text
        if self.at("("):
            return self._call(token, depth)
        if name in _CONSTANTS:
            return _CONSTANTS[name]
        if name in ("infj", "nanj"):
            return complex(0.0, float(name[:-1]))
        if name in DTYPE_OF:
            return Symbol("torch." + DTYPE_OF[name])
        if SIZE_SYMBOL.fullmatch(name):
            return Call("torch.SymInt", name)
        if _torch_name(name):
            return Symbol(_torch_name(name))
        if _LIKE_ABBREVIATION.fullmatch(name):
            raise self.fail(f"unknown dtype abbreviation {name!r} (the format's: {', '.join(DTYPE_OF)})", token.column)
        raise self.fail(f"unknown name {name[:80]!r}", token.column)

    # -- calls: T, ST, slice, torch.device, torch.Size

    def _call(self, token: _Token, depth: int) -> Any:
        name = _torch_name(token.text) or token.text
        build = {
            "T": self._tensor,
            "ST": self._sparse,
            "slice": self._slice,
            "torch.device": self._device,
            "torch.Size": self._size,
        }.get(name)
        if build is None:
            raise self.fail(
                f"unknown call {token.text[:80]}(...): the format's are T, ST, slice, torch.device, torch.Size",
                token.column,
            )
        self.next()  # (
        args, kwargs = self._arguments(depth)
        return build(token.column, args, kwargs)

    def _arguments(self, depth: int) -> Tuple[List[Any], Dict[str, Any]]:
        args: List[Any] = []
        kwargs: Dict[str, Any] = {}
        while not self.at(")"):
            token = self.peek()
            if token.kind == "name" and self.at("=", 1):
                if "." in token.text or token.text in kwargs:
                    raise self.fail(f"a keyword argument {token.text[:80]!r} that cannot be", token.column)
                self.next()
                self.next()
                kwargs[token.text] = self.value(depth + 1)
            elif kwargs:
                raise self.fail("a positional argument after a keyword argument", token.column)
            else:
                args.append(self.value(depth + 1))
            if not self.at(")"):
                self.expect(",", " or ')'")
        self.next()
        return args, kwargs

    def _tensor(self, column: int, args: List[Any], kwargs: Dict[str, Any]) -> TensorSpec:
        if len(args) != 2 or set(kwargs) - {"stride"}:
            raise self.fail("T takes ([sizes], dtype) and an optional stride=(...)", column)
        shape = self._sizes(args[0], column)
        stride = None if kwargs.get("stride") is None else self._sizes(kwargs["stride"], column)
        if stride is not None and len(stride) != len(shape):
            raise self.fail(f"T's stride has {len(stride)} entries for {len(shape)} sizes", column)
        return TensorSpec(shape, self._dtype(args[1], column), stride)

    def _sparse(self, column: int, args: List[Any], kwargs: Dict[str, Any]) -> TensorSpec:
        """ST([sizes], dtype, layout, is_coalesced[, nnz]): is_coalesced,
        which a config line has no place for, is dropped."""
        if not 4 <= len(args) <= 5 or kwargs:
            raise self.fail("ST takes ([sizes], dtype, layout, is_coalesced[, nnz])", column)
        layout, coalesced = args[2], args[3]
        if not isinstance(layout, Symbol) or not layout.name.startswith("torch.sparse_"):
            raise self.fail("ST's layout is a sparse one, torch.sparse_coo, ...", column)
        if not isinstance(coalesced, bool):
            raise self.fail("ST's is_coalesced is True or False", column)
        nnz = args[4] if len(args) == 5 else None
        if nnz is not None and (not ints([nnz]) or not 0 <= nnz <= _INT64[1]):
            raise self.fail("ST's nnz is an int of at least 0", column)
        if nnz is None:
            self.left_out = self.left_out or SPARSE_WITHOUT_NNZ
        return TensorSpec(self._sizes(args[0], column), self._dtype(args[1], column), layout=layout.name, nnz=nnz)

    def _sizes(self, value: Any, column: int) -> List[int]:
        if not isinstance(value, (list, tuple)):
            raise self.fail("a tensor's sizes and strides are a list or tuple of ints", column)
        sizes = []
        for v in value:
            if isinstance(v, Call) and v.name == "torch.SymInt":
                self.left_out = self.left_out or SYMBOLIC_SIZE
                v = 0
            if not ints([v]) or not _INT64[0] <= v <= _INT64[1]:
                raise self.fail(f"a tensor's size or stride is an int of 64 bits, not {v!r:.80}", column)
            sizes.append(v)
        return sizes

    def _dtype(self, value: Any, column: int) -> str:
        name = value.name[len("torch.") :] if isinstance(value, Symbol) else ""
        if name not in TENSOR_DTYPES:
            raise self.fail(f"a tensor's dtype is an abbreviation (f32) or torch.NAME, not {value!r:.80}", column)
        return name

    def _slice(self, column: int, args: List[Any], kwargs: Dict[str, Any]) -> slice:
        if len(args) != 3 or kwargs:
            raise self.fail("slice takes (start, stop, step)", column)
        return slice(*args)

    def _device(self, column: int, args: List[Any], kwargs: Dict[str, Any]) -> Call:
        if len(args) != 1 or kwargs or not isinstance(args[0], str):
            raise self.fail("torch.device takes one string, torch.device('cuda:0')", column)
        return Call("torch.device", args[0])

    def _size(self, column: int, args: List[Any], kwargs: Dict[str, Any]) -> Call:
        if len(args) != 1 or kwargs or not ints(args[0]):
            raise self.fail("torch.Size takes a list of ints, torch.Size([2, 3])", column)
        return Call("torch.Size", list(args[0]))


def _torch_name(name: str) -> str:
    """A dotted name under torch (`th.` is PyTorch's loader's alias for
    `torch.`), spelled `torch.X`; "" for any other."""
    for prefix in ("torch.", "th."):
        if name.startswith(prefix):
            return "torch." + name[len(prefix) :]
    return ""


def _shown(token: _Token) -> str:
    if token.kind == "end":
        return "the end of the line"
    if token.kind == "string":
        return "a string"
    return repr(token.text[:80])


def ints(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)
