"""Config lines are data: parsed by the project's parser, never evaluated."""

import collections
import os
import random
import sys

import pytest
import torch

from api_tracer import APITracer, Call, ConfigSyntaxError, Symbol, TensorSpec, format_call, parse_call
from support import trace_lines


def assert_syntax_error(line: str, column: int, says: str) -> None:
    """parse_call(line) raises ConfigSyntaxError at `column`, saying `says`."""
    with pytest.raises(ConfigSyntaxError) as e:
        parse_call(line)
    assert e.value.column == column, e.value
    assert says in e.value.message, e.value


def test_parse_gives_python_values():
    api, args, kwargs = parse_call(
        'torch.ops.aten.addmm.default(Tensor([4], "float32"), Tensor([3, 4], "float32", stride=[1, 3]), '
        '(slice(None, 2, None), ...), [1, 2.5, (1+2j)], {"k": None}, beta=torch.float16, '
        'device=torch.device("cuda:0"), big=123456789012345678901234567890)'
    )
    assert api == "torch.ops.aten.addmm.default"
    assert args == [
        TensorSpec([4], "float32"),
        TensorSpec([3, 4], "float32", stride=[1, 3]),
        (slice(None, 2, None), ...),
        [1, 2.5, 1 + 2j],
        {"k": None},
    ]
    assert kwargs == {
        "beta": Symbol("torch.float16"),
        "device": Call("torch.device", "cuda:0"),
        "big": 123456789012345678901234567890,
    }


def test_format_then_parse_round_trips():
    args = (
        torch.zeros(2, 3).t(),
        1e-05,
        float("inf"),
        "s\n",
        [1, (2,)],
        {"a": 1},
        slice(1, 2, 3),
        ...,
        torch.int8,
        torch.device("cpu"),
        torch.Size([1]),
        2**80,
        -0.0,
        1j,
    )
    line = format_call("torch.f", *args, alpha=2)
    api, parsed, kwargs = parse_call(line)
    assert format_call(api, *parsed, **kwargs) == line
    assert parsed[0] == TensorSpec([3, 2], "float32", stride=[1, 3])


CODE_LINES = [
    '__import__("os").system("touch PWNED")',
    'torch.add(__import__("os").system("touch PWNED"))',
    'torch.add(open("PWNED", "w"))',
    'torch.add((lambda: __import__("os").system("touch PWNED"))())',
    "torch.add(torch.__class__.__bases__[0].__subclasses__())",
    "torch.add(exec(\"import os; os.system('touch PWNED')\"))",
    "torch.add(1); import os",
]


@pytest.mark.parametrize("line", CODE_LINES)
def test_code_is_never_run(tmp_path, monkeypatch, line):
    monkeypatch.chdir(tmp_path)
    try:
        parse_call(line)
    except ConfigSyntaxError as e:
        assert e.column >= 1
    assert not os.path.exists("PWNED")


def test_lines_that_parse_as_calls_stay_inert_data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    api, args, kwargs = parse_call('torch.add(open("PWNED", "w"))')
    assert args == [Call("open", "PWNED", "w")]  # a name and its arguments, nothing more
    assert not os.path.exists("PWNED")


def test_malformed_line_reports_file_line_and_column():
    with pytest.raises(ConfigSyntaxError) as e:
        parse_call("torch.add(1,, 2)", path="configs.txt", lineno=7)
    assert str(e.value).startswith("configs.txt:7:13: ")
    assert (e.value.lineno, e.value.column) == (7, 13)


# Numbers out of double's range read as Python's float() reads them.
FLOAT_TEXTS = [
    "1e309",
    "1.8e308",
    "1e999999",
    "-1e309",
    "1.7976931348623159e308",
    "1.7976931348623158e308",
    "1" + "0" * 400 + ".5",
    "1e-400",
    "-1e-400",
    "1e-99999999999999999999",
    "0." + "0" * 400 + "5e400",
    "2e-324",
    "3e-324",
    "5e-324",
    "-4.9406564584124654e-324",
    "2.2250738585072011e-308",
    "inf",
    "-inf",
]


@pytest.mark.parametrize("text", FLOAT_TEXTS)
def test_floats_read_as_pythons_float(text):
    expected = float(text)
    (value, imaginary), _ = parse_call(f"torch.f({text}, {text}j)")[1:]
    assert repr(value) == repr(expected)  # tells inf from 0.0 and -0.0 from 0.0
    assert repr(imaginary) == repr(complex(0.0, expected))


def test_random_floats_read_as_pythons_float():
    rng = random.Random(10)
    texts = [
        f"{rng.choice(['', '-'])}{rng.randrange(10 ** rng.randrange(1, 25))}.{rng.randrange(10**6)}"
        f"e{rng.choice([rng.randrange(-340, -300), rng.randrange(300, 320), rng.randrange(-30, 30)])}"
        for _ in range(2000)
    ]
    _, values, _ = parse_call(f"torch.f({', '.join(texts)})")
    assert [repr(v) for v in values] == [repr(float(t)) for t in texts]


# Integers: any size up to Python's int-string limit, a syntax error beyond.
@pytest.fixture
def int_digit_limit():
    saved = sys.get_int_max_str_digits()
    yield sys.set_int_max_str_digits
    sys.set_int_max_str_digits(saved)


def test_integers_up_to_pythons_digit_limit_parse(int_digit_limit):
    int_digit_limit(4300)
    big = "9" * 4300
    assert parse_call(f"torch.f({big}, -{big}, {'0' * 4299}1)")[1] == [int(big), -int(big), 1]


@pytest.mark.parametrize("text", ["9" * 4301, "-" + "9" * 4301, "0" * 4301, "1" * 100000])
def test_integers_over_pythons_digit_limit_are_syntax_errors(int_digit_limit, text):
    int_digit_limit(4300)
    assert_syntax_error(f"torch.f(1, {text})", 12, "sys.set_int_max_str_digits")


def test_the_digit_limit_is_read_at_each_parse(int_digit_limit):
    line = f"torch.f({'9' * 5000})"
    int_digit_limit(5000)
    assert parse_call(line)[1] == [int("9" * 5000)]
    int_digit_limit(0)  # no limit
    assert parse_call(f"torch.f({'9' * 50000})")[1] == [int("9" * 50000)]
    int_digit_limit(4999)
    with pytest.raises(ConfigSyntaxError):
        parse_call(line)


# A lone surrogate, raw or escaped, is not a character: a syntax error at it.
@pytest.mark.parametrize(
    "line, column",
    [
        ("torch.f(\ud800)", 9),
        ('torch.f("é\udfff")', 11),
        ('torch.f(1, x="\ud83d\ude00")', 15),  # a pair in a str is two lone surrogates
        ('torch.f("a\\ud800")', 11),
        ('torch.f("\\U0000dc00", "\\ud83d\\ude00")', 10),
    ],
)
def test_lone_surrogates_are_syntax_errors(line, column):
    assert_syntax_error(line, column, "surrogate")


def test_characters_beyond_the_bmp_parse():
    assert parse_call('torch.f("😀", "\\U0001F600\\ud7ff\\ue000")')[1] == ["😀", "😀\ud7ff\ue000"]


# Dict keys: what Python can hash; a Call stands for a value that may be hashable.
@pytest.mark.parametrize(
    "line, column",
    [
        ("torch.f({[1]: 2})", 10),
        ("torch.f({1: 2, (1, {}): 3})", 16),
        ("torch.f(x={(1, (2, [3])): 4})", 12),
        ("torch.f({slice(1, [2], 3): 4})", 10),
    ]
    + ([] if sys.version_info >= (3, 12) else [("torch.f({(1, slice(1, 2, 3)): 2})", 10)]),
)
def test_unhashable_dict_keys_are_syntax_errors(line, column):
    assert_syntax_error(line, column, "hashable")


def test_calls_are_dict_keys_whatever_they_hold():
    (d,) = parse_call("torch.f({torch.Size([2, 3]): 1, a(b={1: [2]}, c=slice(1, 2, 3)): 2})")[1]
    assert d[Call("torch.Size", [2, 3])] == 1
    assert d[Call("a", b={1: [2]}, c=slice(1, 2, 3))] == 2
    assert hash(Call("a", [1], k={1: 2})) == hash(Call("a", [1.0], k={True: 2.0}))  # equal, so hashed alike


def test_name_and_self_are_keyword_arguments_of_a_call():
    assert parse_call("torch.f(a(name=1, self=2))")[1] == [Call("a", name=1, self=2)]
    nt = collections.namedtuple("nt", "name self")
    line = format_call("torch.f", nt(1, 2))
    assert line == f"torch.f({__name__}.nt(name=1, self=2))"
    assert parse_call(line)[1] == [Call(f"{__name__}.nt", name=1, self=2)]


def test_dict_keys_the_formatter_writes_parse_back():
    line = format_call("torch.f", {torch.Size([2, 3]): 1, (1, torch.Size([2])): 2, torch.float16: 3})
    api, args, kwargs = parse_call(line)
    assert format_call(api, *args, **kwargs) == line


# The formatter's side: special numbers are written so that they read back.
INF, NAN = float("inf"), float("nan")
SPECIAL_NUMBERS = [
    INF,
    -INF,
    NAN,
    -0.0,
    5e-324,
    1.7976931348623157e308,
    1e-320,
    complex(INF, NAN),
    complex(0.0, -INF),
    complex(-0.0, 5e-324),
    2**63,
    -(2**63) - 1,
    10**4299,
    -(10**4299),
]


def test_special_numbers_format_and_parse_back(int_digit_limit):
    int_digit_limit(4300)
    line = format_call("torch.f", *SPECIAL_NUMBERS, x=INF)
    _, args, kwargs = parse_call(line)
    assert [repr(a) for a in args] == [repr(n) for n in SPECIAL_NUMBERS] and kwargs == {"x": INF}
    assert format_call("torch.f", 10**4300) == 'torch.f(Opaque("int"))'  # past the limit str() refuses


def test_traced_special_numbers_parse_back(out, int_digit_limit):
    x = torch.ones(2)
    int_digit_limit(0)  # the traced program lifted the limit: its long ints are written in full
    with APITracer(output_path=str(out), levels=[1, 2], merge_output=True):
        torch.full((2,), INF)
        torch.clamp(x, min=-INF, max=INF)
        x.add(NAN).mul(1e308).mul(5e-324)
        with pytest.raises(OverflowError):
            torch.add(x, 10**5000)
    lines = trace_lines(out)
    int_digit_limit(5000)
    with pytest.raises(ConfigSyntaxError, match="sys.set_int_max_str_digits"):
        parse_call(lines[-1])
    int_digit_limit(5001)
    for line in lines:
        api, args, kwargs = parse_call(line)
        assert format_call(api, *args, **kwargs) == line
    assert parse_call(lines[-1])[1] == [TensorSpec([2], "float32"), 10**5000]
    assert [line for line in lines if "inf" in line or "nan" in line or "e-324" in line] == [
        "torch.full((2,), inf)",
        'torch.ops.aten.full.default([2], inf, device=torch.device("cpu"), pin_memory=False)',
        'torch.clamp(Tensor([2], "float32"), min=-inf, max=inf)',
        'torch.ops.aten.clamp.default(Tensor([2], "float32"), -inf, inf)',
        'torch.Tensor.add(Tensor([2], "float32"), nan)',
        'torch.ops.aten.add.Tensor(Tensor([2], "float32"), nan)',
        'torch.Tensor.mul(Tensor([2], "float32"), 5e-324)',
        'torch.ops.aten.mul.Tensor(Tensor([2], "float32"), 5e-324)',
    ]


def test_storages_format_as_their_size_and_parse_back():
    storages = (torch.UntypedStorage(48), torch.TypedStorage(2, dtype=torch.float16, _internal=True))
    line = format_call("torch.Tensor.set_", *storages)
    assert line == "torch.Tensor.set_(Storage(48), Storage(4, dtype=torch.float16))"
    assert parse_call(line) == (
        "torch.Tensor.set_",
        [Call("Storage", 48), Call("Storage", 4, dtype=Symbol("torch.float16"))],
        {},
    )


def test_a_line_longer_than_the_parse_bound_is_refused_before_it_is_parsed(tmp_path):
    """A line's values take some 40 times its length (50 MB took 1.8 GB):
    past MAX_LINE characters the line is refused, by name, unparsed; one at
    the bound parses. Replay says it as the line's syntax error and goes on."""
    import subprocess

    from api_tracer.config import MAX_LINE, parse_arguments
    from support import CLI

    head = "torch.cat([" + 'Tensor([2], "float32"), ' * 16
    line = head + "1, " * ((MAX_LINE - len(head) - 2) // 3) + "])"
    line += " " * (MAX_LINE - len(line))
    assert len(line) == MAX_LINE and parse_call(line)[0] == "torch.cat"
    for parse in (parse_call, parse_arguments):
        with pytest.raises(ConfigSyntaxError, match=f"a line of {MAX_LINE + 1} characters: a config line holds"):
            parse(line + " ")

    def peak(name: str, exit_status: int) -> int:  # the replaying process's peak resident bytes
        with open(tmp_path / f"{name}.out", "wb") as out:
            p = subprocess.Popen([*CLI, "replay", name], cwd=tmp_path, stdout=out, stderr=subprocess.DEVNULL)
            _, status, usage = os.wait4(p.pid, 0)
        assert os.waitstatus_to_exitcode(status) == exit_status
        return usage.ru_maxrss * 1024

    add = 'torch.add(Tensor([2], "float32"), 1)\n'
    (tmp_path / "small.txt").write_text(add)
    (tmp_path / "big.txt").write_text("torch.cat([" + "1, " * 20_000_000 + "])\n" + add)  # 60 MB
    grown = peak("big.txt", 1) - peak("small.txt", 0)  # (1: a line invalid)
    out = (tmp_path / "big.txt.out").read_text()
    assert "1 ok" in out and "1 invalid" in out and "characters: a config line holds at most" in out, out
    assert grown < 1 << 30, grown  # (parsed, the line took 2.2 GB)
