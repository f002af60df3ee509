"""PaddleAPITest's config lines (api_tracer/paddleapitest.py): every kind
of value our config lines give for Paddle, exported, reads back as itself
through a reader that scans a line as PaddleAPITest's does; a few lines are
held to their exact text; what the format cannot carry is counted by kind;
and export refuses a broken input with path:line."""

import ast
import math
import re
from typing import Any, List, NamedTuple, Optional, Tuple

import pytest

from api_tracer.cli import main
from api_tracer.config import parse_call
from api_tracer.formats.foreign import NotCarried
from api_tracer.frameworks.paddle.paddleapitest import config_line, write_paddleapitest
from api_tracer.values import Call, Symbol, TensorSpec
from support import COMPLEX_NUMBERS, NUMBERS, assert_counted_by_kind, export_lines
from support.paddle_dtypes import paddle_dtypes

# -- their reader, as this test reads it ----------------------------------------------
#
# Written for this test from PFCCLab/PaddleAPITest, tester/api_config/
# config_analyzer.py (APIConfig and TensorConfig; the version with Place(...)
# and non-contiguous tensors, 2026), and checked against its config files
# (tester/api_config/*.txt). It is no grammar but a scan, and this reader
# scans as it does: the API is the text up to the first "("; "Tensor(" is
# renamed "TensorConfig(" in the whole line; then, from where the last value
# ended, the next token (a run of [A-Za-z0-9._+-] from a word boundary to a
# word boundary, or "-" and such a run, or "." and digits, searched in the
# rest of the line cut off there) says what comes: a token followed by "="
# is a keyword's name; TensorConfig is the text up to its first ")",
# evaluated; Dtype and Place read what follows; list[...] and tuple(...)
# are cut by counting their brackets, a list holding no "TensorConfig" has
# its commas made spaces, a tuple its commas " , ", and their items are
# scanned alike; slice(...) and complex(...) are evaluated up to their first
# ")"; a token right after a quote starts a string, which runs to the next
# quote; anything else is evaluated. paddle.einsum's equation is the line's
# first string, taken whole. Here nothing is evaluated by eval: the few
# expressions a line holds are read from their syntax tree.


class TensorConfig(NamedTuple):
    shape: List[int]
    dtype: str
    place: Any = None
    is_contiguous: bool = True
    strides: Optional[List[int]] = None


class Dtype(NamedTuple):
    name: str


class Place(NamedTuple):
    name: str  # "cpu", "gpu:1"


class TypeOf(NamedTuple):
    name: str  # the class type(...) names: "numpy.float32", "float"


# The dtypes their Dtype(...) reads (through paddle's converter of numpy's
# names): Paddle's.
DTYPES = set(paddle_dtypes())
TOKEN_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+-")


def _word(text: str, i: int) -> bool:
    return 0 <= i < len(text) and (text[i].isalnum() or text[i] == "_")


def _run(text: str, i: int) -> int:
    while i < len(text) and text[i] in TOKEN_CHARS:
        i += 1
    return i


def _back_to_boundary(text: str, start: int, end: int) -> int:
    """The furthest end in (start, end] at a word boundary, or -1."""
    for e in range(end, start, -1):
        if _word(text, e - 1) != _word(text, e):
            return e
    return -1


def find_token(text: str) -> Tuple[Optional[str], int]:
    """Their next token in `text` (the rest of a line, cut off where the
    scan is), and where it ends; (None, -1) where there is none."""
    for p in range(len(text)):
        if _word(text, p) and not _word(text, p - 1):
            end = _back_to_boundary(text, p, _run(text, p))
            if end > 0:
                return text[p:end], end
        if text[p] == "-":
            end = _back_to_boundary(text, p + 1, _run(text, p + 1))
            if end > p + 1:
                return text[p:end], end
        if text[p] == "." and p + 1 < len(text) and text[p + 1].isdigit():
            end = p + 1
            while end < len(text) and text[end].isdigit():
                end += 1
            return text[p:end], end
    return None, -1


def _evaluate(node: ast.AST) -> Any:
    """The expressions a line holds, read from their syntax tree."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand)
    if (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "math"
        and node.attr in ("inf", "nan")
    ):
        return getattr(math, node.attr)
    if isinstance(node, ast.Name) and node.id == "Ellipsis":
        return Ellipsis
    if isinstance(node, ast.Call) and ast.unparse(node) == "float('nan')":
        return math.nan
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_evaluate(e) for e in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    raise ValueError(f"their reader's eval fails on {ast.unparse(node)!r}")


def _call(text: str, name: str) -> Tuple[List[Any], dict]:
    node = ast.parse(text, mode="eval").body
    assert isinstance(node, ast.Call) and ast.unparse(node.func) == name, text
    return [_evaluate(a) for a in node.args], {k.arg: _evaluate(k.value) for k in node.keywords}


def _tensor_config(shape, dtype, place=None, is_contiguous=True, strides=None):  # TensorConfig's signature
    return TensorConfig(shape, dtype, place, is_contiguous, strides)


class TheirReader:
    """One line, read as PaddleAPITest's APIConfig reads it."""

    def __init__(self, line: str) -> None:
        text = re.sub(r"paddle\.Size\(\s*(\[[^\]]*\])\s*\)", r"\1", line.replace("\n", ""))
        text = text.replace("Tensor(", "TensorConfig(")
        self.api = text[: text.index("(")]
        self.args: List[Any] = []
        self.kwargs: dict = {}
        at = len(self.api)
        if self.api == "paddle.einsum":
            first = text.index('"')
            close = text.index('"', first + 1)
            (
                self.kwargs.__setitem__("equation", text[first + 1 : close])
                if "equation" in text
                else self.args.append(text[first + 1 : close])
            )
            at = close
        while True:
            token, at_end = self.token(text, at)
            if token is None:
                return
            name = None
            if text[at_end] == "=":
                name = token
                token, at_end = self.token(text, at_end + 1)
            value, at = self.value(token, text, at_end)
            if name is None:
                self.args.append(value)
            else:
                self.kwargs[name] = value

    @staticmethod
    def token(text: str, at: int) -> Tuple[Optional[str], int]:
        token, end = find_token(text[at:])
        if token is None:
            return None, -1
        end += at
        try:
            int(token)
            if end < len(text) and text[end] == ".":
                return token + ".", end + 1  # "2." whole
        except ValueError:
            pass
        return token, end

    def items(self, inner: str) -> List[Any]:
        out, at = [], 1
        while True:
            token, end = self.token(inner, at)
            if token is None:
                return out
            value, at = self.value(token, inner, end)
            out.append(value)

    def value(self, token: str, text: str, end: int) -> Tuple[Any, int]:
        if token == "TensorConfig":
            start = end - len(token)
            close = text.index(")", start)
            args, kwargs = _call(text[start : close + 1], "TensorConfig")
            return _tensor_config(*args, **kwargs), close + 1
        if token == "Dtype":
            name, after = self.token(text, end)
            assert name in DTYPES, name
            return Dtype(name), after
        if token in ("Place", "type", "slice", "complex"):
            opening, close = text.index("(", end), text.index(")", end)
            inner = text[opening + 1 : close]
            if token == "Place":
                kind, _, index = inner.partition(":")
                return (Place(f"gpu:{int(index or 0)}") if kind.startswith("gpu") else Place("cpu")), close + 1
            if token == "type":
                return TypeOf("numpy.bool_" if inner == "numpy.bool" else inner), close + 1
            if token == "complex" and "nan" in inner and inner[inner.index("nan") - 1] != ".":
                inner = inner.replace("nan", "float('nan')")
            args, kwargs = _call(f"{token}({inner})", token)
            return (slice if token == "slice" else complex)(*args, **kwargs), close + 1
        if token in ("list", "tuple"):
            opening, closing = "[("[token == "tuple"], "])"[token == "tuple"]
            depth, i = 0, end
            while True:
                depth += {opening: 1, closing: -1}.get(text[i], 0)
                if depth == 0:
                    break
                i += 1
            inner = text[end : i + 1]
            if token == "list" and "TensorConfig" not in inner:
                inner = inner.replace(",", " ")
            if token == "tuple":
                inner = inner.replace(",", " , ")
            items = self.items(inner)
            return (items if token == "list" else tuple(items)), i + 1
        if token == "nan":
            return math.nan, end
        if text[end - len(token) - 1] == '"':
            close = text.index('"', end)
            return text[end - len(token) : close], close
        return _evaluate(ast.parse("0" + token if token.startswith(".") else token, mode="eval").body), end


# -- what a line should read back as ----------------------------------------------------


def expected(value: Any) -> Any:
    """One of our parsed values as their reader's value of it."""
    if isinstance(value, TensorSpec):
        strides = None if value.stride is None else list(value.stride)
        return TensorConfig(list(value.shape), value.dtype, None, strides is None, strides)
    if isinstance(value, Symbol):
        module, _, short = value.name.rpartition(".")
        if module == "paddle":
            return Dtype(short)
        return TypeOf("numpy.bool_" if value.name == "numpy.bool" else value.name)
    if isinstance(value, Call):
        if value.name == "paddle.CPUPlace":
            return Place("cpu")
        if value.name == "paddle.CUDAPlace":
            return Place(f"gpu:{value.args[0]}")
        assert value.name.startswith("numpy."), value
        return value.args[0]
    if isinstance(value, list):
        return [expected(v) for v in value]
    if isinstance(value, tuple):
        return tuple(expected(v) for v in value)
    if isinstance(value, dict):
        return {k: expected(v) for k, v in value.items()}
    return value


def same(a: Any, b: Any) -> bool:
    """Equal, and of one type, all the way down; NaN equal to NaN, -0.0 not to 0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, complex):
        return same(a.real, b.real) and same(a.imag, b.imag)
    if isinstance(a, slice):
        return same((a.start, a.stop, a.step), (b.start, b.stop, b.step))
    if isinstance(a, (list, tuple)):  # (the NamedTuples too)
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return a == b


def ours(value: Any) -> Any:
    """One of our parsed values as our own parser reads its exported
    spelling: what their format does not carry (a tensor's device and
    requires_grad, a numpy scalar's type) gone, as it is for their reader."""
    if isinstance(value, TensorSpec):
        return TensorSpec(value.shape, value.dtype, value.stride)
    if isinstance(value, Call) and value.name.startswith("numpy."):
        return value.args[0]
    if isinstance(value, list):
        return [ours(v) for v in value]
    if isinstance(value, tuple):
        return tuple(ours(v) for v in value)
    if isinstance(value, dict):
        return {k: ours(v) for k, v in value.items()}
    return value


def reads_back(line: str) -> str:
    """The exported line, held to read back as `line`'s call, by their
    reader and by our own parser (which reads their spellings)."""
    out = config_line(line)
    api, args, kwargs = parse_call(line)
    theirs = TheirReader(out)
    assert theirs.api == api
    assert same(theirs.args, expected(args)), (out, theirs.args)
    assert same(theirs.kwargs, expected(kwargs)), (out, theirs.kwargs)
    if "\\" not in out:  # (their strings have no escapes, ours do: their corpus holds no backslash)
        assert same(parse_call(out), (api, ours(args), ours(kwargs))), (out, parse_call(out))
    return out


# -- every kind of value our config lines give for Paddle ------------------------------

T = 'Tensor([2, 3], "float32")'
ANYWHERE = [
    # tensors: every dtype, 0-d, empty, not contiguous; requires_grad and a GPU go unsaid
    *(f'Tensor([4], "{d}")' for d in sorted(DTYPES)),
    'Tensor([], "float64")',
    'Tensor([0, 4], "int64")',
    'Tensor([3, 2], "float32", stride=[1, 3])',
    'Tensor([2, 4], "float16", stride=[0, 0])',
    'Tensor([31376, 768], "float32", requires_grad=True)',
    'Tensor([2], "bfloat16", device="gpu:0")',
    # scalars
    *NUMBERS,
    "-2.5",
    "1e+22",
    "True",
    "False",
    "None",
    "...",
    # strings their reader takes back: words, spaces, a sign, digits, dots
    '"NCHW"',
    '"bilinear"',
    '"upscale_in_train"',
    '"gpu:0"',
    '"linear_0.w_0"',
    '"a b  c"',
    '"-1"',
    '"-1.5"',
    '".5x"',
    '"2."',
    '"2"',
    '"x\\\\y"',
    '"ab c=1"',
    '"type_"',
    '"lists"',
    '"nanx"',
    # dtypes, places, classes, numpy scalars
    "paddle.float32",
    "paddle.bfloat16",
    "paddle.float8_e5m2",
    "paddle.bool",
    "paddle.complex128",
    "paddle.CPUPlace()",
    "paddle.CUDAPlace(0)",
    "paddle.CUDAPlace(3)",
    "numpy.float32",
    "numpy.bool",
    "numpy.int64",
    "float",
    "int",
    "bool",
    "numpy.float32(1.5)",
    "numpy.int64(-3)",
    "numpy.float64(nan)",
    "numpy.bool(True)",
    # containers
    "[]",
    "()",
    "(1,)",
    "(1, 2)",
    "[1, [2, [3, (4,)]]]",
    "[[]]",
    "((), [])",
    '["NCHW", "gpu:0"]',
    f"[{T}, {T}]",
    f"[[{T}], ({T}, 1)]",
    f"({T}, [1, 2], None)",
    "[paddle.float32, paddle.CPUPlace(), float]",
]
NOT_IN_A_LIST_OF_NO_TENSOR = [  # their commas would become spaces there
    *COMPLEX_NUMBERS,
    "(inf+0j)",
    "numpy.complex64((1+2j))",
    "slice(None, 2, None)",
    "slice(1, None, -1)",
    "slice(-3, -1, 2)",
    "(slice(None, None, None), ..., -1)",
    f"[{T}, slice(0, 1, 1), (1+2j)]",
]
AT_THE_TOP = [  # outside a list or tuple only: a container is cut at brackets, its commas rewritten
    '"ij,jk->ik"',
    '"f(x)"',
    '"a[0]"',
    '"a, b"',
]


@pytest.mark.parametrize("value", ANYWHERE + NOT_IN_A_LIST_OF_NO_TENSOR + AT_THE_TOP)
def test_every_value_reads_back_as_itself(value):
    reads_back(f"paddle.f({value})")
    reads_back(f"paddle.f({T}, 1, key={value})")
    if value in AT_THE_TOP:
        return
    reads_back(f"paddle.f(({value},), ({value}, {value}))")
    reads_back(f"paddle.f([{T}, {value}], k=[{value}, {T}])")
    if value not in NOT_IN_A_LIST_OF_NO_TENSOR:
        reads_back(f"paddle.f([{value}], [1, {value}, [{value}]], k=[({value},)])")


def test_many_values_in_one_line_read_back():
    values = ANYWHERE + NOT_IN_A_LIST_OF_NO_TENSOR + AT_THE_TOP
    line = (
        "paddle.nn.functional.f("
        + ", ".join(values)
        + ", "
        + ", ".join(f"k{i}={v}" for i, v in enumerate(values))
        + ")"
    )
    reads_back(line)


def test_einsum_keeps_its_equation_first():
    out = reads_back(f'paddle.einsum("...ij,jk->...ik", {T}, Tensor([3, 4], "float32"))')
    assert out == 'paddle.einsum("...ij,jk->...ik", Tensor([2, 3],"float32"), Tensor([3, 4],"float32"), )'


def test_the_reader_is_no_pushover():
    """Where the exporter leaves a value out, the reader indeed misreads it:
    the round trip holds the exporter to their scan, not to ours."""
    assert TheirReader('paddle.f(list["a,b",1,], )').args == [["a b", 1]]
    assert TheirReader('paddle.f(tuple("a,b",), )').args == [("a , b",)]
    assert TheirReader('paddle.f("nan", )').args != ["nan"]
    assert TheirReader("paddle.f(list[1,2,], )").args == [[1, 2]]
    with pytest.raises((SyntaxError, ValueError)):
        TheirReader("paddle.f(list[slice(1,2,None),], )")
    with pytest.raises((SyntaxError, ValueError)):
        TheirReader('paddle.f(".a", )')
    with pytest.raises(ValueError):
        TheirReader('paddle.f("k=v", )')  # a keyword k, and the name v to evaluate


# -- the exact text ---------------------------------------------------------------------

GOLDEN = [
    (
        'paddle.concat([Tensor([3, 5], "float32"), Tensor([3, 5], "float32")], axis=0)',
        'paddle.concat(list[Tensor([3, 5],"float32"),Tensor([3, 5],"float32"),], axis=0, )',
    ),
    ('paddle.Tensor.__add__(Tensor([6, 5], "float32"), 1)', 'paddle.Tensor.__add__(Tensor([6, 5],"float32"), 1, )'),
    ('paddle.cast(Tensor([2, 3], "int64"), paddle.float32)', 'paddle.cast(Tensor([2, 3],"int64"), Dtype(float32), )'),
    (
        'paddle.Tensor.__getitem__(Tensor([4, 8], "float32", stride=[1, 4], requires_grad=True), '
        "(slice(None, 2, None), ..., -1))",
        'paddle.Tensor.__getitem__(Tensor([4, 8],"float32",is_contiguous=False,strides=[1, 4]), '
        "tuple(slice(None,2,None),Ellipsis,-1,), )",
    ),
    (
        "paddle.full([2, 3], -inf, dtype=paddle.bfloat16, place=paddle.CUDAPlace(0))",
        "paddle.full(list[2,3,], -math.inf, dtype=Dtype(bfloat16), place=Place(gpu:0), )",
    ),
    (
        'paddle.full_like(Tensor([], "complex64"), (nan+1e-05j), dtype=numpy.float32, name="x")',
        'paddle.full_like(Tensor([],"complex64"), complex(math.nan,1e-05), dtype=type(numpy.float32), name="x", )',
    ),
    ("paddle.get_default_dtype()", "paddle.get_default_dtype()"),
    ("paddle.f((), [], ((1,),))", "paddle.f(tuple(), list[], tuple(tuple(1,),), )"),
]


@pytest.mark.parametrize("line, written", GOLDEN)
def test_the_lines_are_written_exactly_so(line, written):
    assert config_line(line) == written


# -- what is left out -------------------------------------------------------------------

NOT_CARRIED = [
    ('torch.add(Tensor([2], "float32"), 1)', "not a Paddle API"),
    ('torch.ops.aten.relu.default(Tensor([2], "float32"))', "not a Paddle API"),
    ('paddle.nn.Linear.forward(paddle.nn.Linear(4, 5), Tensor([3, 4], "float32"))', "object"),
    ('paddle.f(paddle.ParamAttr(name="w"))', "object"),
    ('paddle.f({"a": 1})', "dict"),
    ('paddle.f(Opaque("x"))', "Opaque"),
    ('paddle.nn.functional.relu(Module("paddle.nn.ReLU"))', "Module"),
    ("paddle.f(Eval(paddle.nn.Dropout(p=0.5)))", "Eval"),
    ('paddle.f(Callable("f"))', "Callable"),
    ('paddle.f(Filled(Tensor([2], "float32"), nan))', "Filled"),
    ('paddle.f(Tensor([2], "float32", device="xpu:0"))', "tensor device"),
    ('paddle.f(Tensor([2], "float32", storage_offset=1, storage_size=4))', "tensor storage offset"),
    ('paddle.f(Tensor([2, 3], "float32", layout=torch.sparse_coo, nnz=2))', "tensor layout"),
    ('paddle.f(Tensor([2], "uint16"))', "tensor dtype"),
    ("paddle.f(paddle.CUDAPinnedPlace())", "place"),
    ("paddle.f(paddle.XPUPlace(0))", "place"),
    ("paddle.f(paddle.nn.initializer.Normal)", "named constant"),
    ('paddle.f("")', "string"),
    ('paddle.f("say \\"hi\\"")', "string"),
    ('paddle.f("a\\nb")', "string"),
    ('paddle.f("é")', "string"),
    ('paddle.f(".a")', "string"),
    ('paddle.f("list")', "string"),
    ('paddle.f("nan")', "string"),
    ('paddle.f("k=v")', "string"),
    ('paddle.f("Tensor(2)")', "string"),
    ('paddle.f(["a,b"])', "string"),
    ("paddle.f([slice(1, 2, None)])", "slice or complex in a list of no tensor"),
    ('paddle.f([[Tensor([2], "float32")], [(1+2j)]])', "slice or complex in a list of no tensor"),
    ("paddle.f(slice(0.5, None, None))", "slice"),
    ('paddle.einsum(Tensor([2], "float32"))', "einsum equation"),
    ('paddle.einsum("i,j", Tensor([2], "float32"), equation=1)', "einsum equation"),
    ('paddle.sparse.SparseTensor(Tensor([2], "float32"))', "API name"),
    ('paddle.f(Tensor([2], "float32")', "unreadable line"),
]


def test_what_the_format_cannot_carry_is_counted_by_kind():
    carried = f"paddle.f({T})"
    lines = [line for line, _ in NOT_CARRIED] + [carried]
    text, left_out = write_paddleapitest((i, line, 1) for i, line in enumerate(lines, 1))
    assert text == 'paddle.f(Tensor([2, 3],"float32"), )\n'
    for line, kind in NOT_CARRIED:
        with pytest.raises(NotCarried) as e:
            config_line(line)
        assert e.value.kind == kind, line
    # "not a Paddle API": two lines, the first on line 1
    assert_counted_by_kind(left_out, NOT_CARRIED, {"not a Paddle API": [2, 1], "string": [10, 18]})


# -- export --------------------------------------------------------------------------------


def test_export_writes_each_line_once_and_says_what_it_left_out(tmp_path, capsys):
    lines = (
        [f"paddle.add({T}, {T})"] * 3
        + ['torch.add(Tensor([2], "float32"), 1)'] * 2
        + [
            f"paddle.add({T[:-1]}, requires_grad=True), {T})",  # the same line once requires_grad goes
            'paddle.f(Opaque("x"))',
            'paddle.nn.functional.relu(Tensor([2], "float16"))',
            b'paddle.f("\xff")'.decode("latin-1"),
        ]
    )
    configs, said, warned, text = export_lines(tmp_path, lines, "paddleapitest", capsys)
    assert warned == [
        f"api-tracer: warning: export: {configs}: left out 3 of 6 config lines, which the paddleapitest format "
        "cannot carry: 1 not a Paddle API (line 4), 1 Opaque (line 7), 1 unreadable line (line 9)"
    ]
    assert text == (
        'paddle.add(Tensor([2, 3],"float32"), Tensor([2, 3],"float32"), )\n'
        'paddle.nn.functional.relu(Tensor([2],"float16"), )\n'
    )
    assert said == f"export: 3 config lines of 2 APIs written to {tmp_path / 'exported-paddleapitest.txt'}\n"


def test_export_refuses_a_broken_input_with_path_and_line(tmp_path, capsys):
    out = tmp_path / "configs.txt"
    out.write_text("before\n")
    broken = tmp_path / "ops.txt"
    broken.write_bytes(b"Operator: aten.relu.default\ncnt: x, ((T([2], f32),), {})\n")
    assert main(["export", "--format", "paddleapitest", str(broken), "-o", str(out)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"api-tracer: {broken}:2:6: a count is a whole number, not 'x'"]
    assert out.read_text() == "before\n"
    assert main(["export", "--format", "paddleapitest", str(tmp_path / "none"), "-o", str(out)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"api-tracer: {tmp_path / 'none'}: no such file"]
    assert out.read_text() == "before\n"
