"""PyTorch's operator-inputs format (api_tracer/operator_inputs.py): config
lines written as it come back as the very same lines, what it cannot carry
is counted by kind, hostile files are refused with path:line:column and
never evaluated, and export, replay, fuzz and the pytest plugin read it."""

import ast
import builtins
import json
import signal

import pytest

from api_tracer import APITracer, format_call, parse_call
from api_tracer.cli import main
from api_tracer.errors import InputError
from api_tracer.formats.configs import read_config_file
from api_tracer.frameworks.torch.operator_inputs import (
    TENSOR_DTYPES,
    is_operator_inputs,
    read_operator_inputs,
    write_operator_inputs,
)
from support import COMPLEX_NUMBERS, NUMBERS, assert_counted_by_kind, export_lines, run_cli

OP = "torch.ops.aten.op.default"


@pytest.fixture(autouse=True)
def no_hang():
    """Every test here ends within 60 s, or fails (a reader that loops)."""

    def timeout(signum, frame):
        raise TimeoutError("the test ran for 60 s")

    before = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, before)


def round_trip(lines):
    """The config lines back from the operator-inputs text of `lines`, and
    what was left out on each side."""
    text, left_out = write_operator_inputs((i, line, 1) for i, line in enumerate(lines, 1))
    entries, left_back = read_operator_inputs("ops.txt", text.encode())
    return [e.config for e in entries], text, left_out, left_back


# -- every kind of value the config line has ---------------------------------------------

CARRIED = [
    # tensors: strides, 0-d, empty, expanded
    'Tensor([2, 3], "float32")',
    'Tensor([2, 3], "float32", stride=[1, 2])',
    'Tensor([], "float64")',
    'Tensor([0, 4], "int64")',
    'Tensor([2, 4], "float16", stride=[0, 0])',
    'Tensor([5], "bool", stride=[2])',
    # scalars
    *NUMBERS,
    "True",
    "False",
    "None",
    *COMPLEX_NUMBERS,
    "infj",
    "1e+300j",
    "(1.5e-10+0j)",
    # strings
    '""',
    '"a"',
    '"a\\"b"',
    '"it\'s"',
    '"both \' and \\""',
    '"\\\\"',
    '"\\n\\r\\t"',
    '"\\x00\\x7f"',
    '"é中😀"',
    # containers
    "[]",
    "()",
    "(1,)",
    "(1, 2)",
    "[1, [2, [3, (4,)]]]",
    "{}",
    '{"k": 1, 1: [2], None: ()}',
    '{torch.Size([2]): Tensor([2], "float32")}',
    '[{"a": (Tensor([1], "int32"), [None])}]',
    # slices, Ellipsis
    "slice(None, 2, None)",
    "slice(1, None, -1)",
    "...",
    "[..., slice(0, 1, 1)]",
    # torch constants and objects
    "torch.float16",
    "torch.bfloat16",
    "torch.uint16",
    "torch.float8_e4m3fn",
    "torch.bool",
    "torch.strided",
    "torch.sparse_coo",
    "torch.channels_last",
    "torch.contiguous_format",
    "torch.preserve_format",
    "torch.per_tensor_affine",
    'torch.device("cpu")',
    'torch.device("cuda:0")',
    "torch.Size([2, 3])",
    "torch.Size([])",
    'torch.SymInt("s0")',
    'torch.SymInt("u12")',
]


@pytest.mark.parametrize("value", CARRIED)
def test_every_carried_kind_comes_back_as_the_same_line(value):
    lines = [f"{OP}({value})", f'{OP}(Tensor([2], "float32"), x={value})', f"{OP}([{value}], ({value},))"]
    for line in lines:  # each as the formatter writes it
        api, args, kwargs = parse_call(line)
        assert format_call(api, *args, **kwargs) == line
    back, text, left_out, left_back = round_trip(lines)
    assert back == lines, text
    assert not left_out and not left_back
    assert text.startswith("Operator: aten.op.default\ncnt: 1, ((")


def test_every_dtype_a_tensor_has_comes_back():
    lines = [f'{OP}(Tensor([2], "{d}"), torch.{d})' for d in sorted(TENSOR_DTYPES)]
    back, text, left_out, _ = round_trip(lines)
    assert back == lines and not left_out
    assert "T([2], f16), f16)" in text and "T([2], bf16), bf16)" in text and "T([2], b8), b8)" in text
    assert "T([2], torch.uint16), torch.uint16)" in text  # no abbreviation: as PyTorch's loader reads it


def test_operators_of_any_namespace_and_no_arguments_come_back():
    lines = [
        'torch.ops.prims.convert_element_type.default(Tensor([2], "float32"), torch.float16)',
        "torch.ops.mylib.op.Tensor()",
        'torch.ops.aten.add.out(Tensor([1], "int8"), out=Tensor([1], "int8"))',
    ]
    back, text, _, _ = round_trip(lines)
    assert sorted(back) == sorted(lines)
    assert "Operator: mylib.op.Tensor\ncnt: 1, ((), {})\n" in text


NOT_CARRIED = [  # (line, the kind it is counted as)
    ('torch.add(Tensor([2], "float32"), 1)', "not an operator"),
    ('torch.Tensor.sum(Tensor([2], "float32"))', "not an operator"),
    ('torch.nn.functional.relu(Tensor([2], "float32"))', "not an operator"),
    ("torch.ops.aten.add(1, 2)", "not an operator"),  # no overload
    (f'{OP}(Opaque("mypkg.Thing"))', "Opaque"),
    (f'{OP}(Callable("torch.relu"))', "Callable"),
    (f'{OP}(Module("mypkg.Net"))', "Module"),
    (f"{OP}(Eval(torch.nn.Dropout(p=0.2)))", "Eval"),
    (f'{OP}(Filled(Tensor([4], "float32"), nan))', "Filled"),
    (f"{OP}(torch.nn.Linear(3, 4))", "object"),
    (f'{OP}(torch.Generator(device="cpu"))', "object"),
    (f"{OP}(numpy.float32(1.5))", "object"),
    (f"{OP}(float)", "constant outside torch"),
    (f'{OP}(torch.SymInt("2*s0"))', "symbolic int"),
    (f'{OP}(torch.SymInt("u8"))', "symbolic int"),  # u8 is uint8 in the format
    (f'{OP}(Tensor([2], "float32", device="cuda:0"))', "tensor device"),
    (f'{OP}(Tensor([2], "float32", requires_grad=True))', "tensor requires_grad"),
    (f'{OP}(Tensor([2], "float32", storage_offset=1, storage_size=4))', "tensor storage offset"),
    (f'{OP}(Tensor([2, 3], "float32", layout=torch.sparse_coo, nnz=2))', "tensor layout"),
    (f'{OP}(Tensor([2], "qint8", scale=0.1, zero_point=0))', "quantized tensor"),
    (f'{OP}(Tensor([2], "banana"))', "tensor dtype"),
    (f"{OP}(Tensor([2], ", "unreadable line"),
]


def test_what_the_format_cannot_carry_is_counted_by_kind():
    carried = f'{OP}(Tensor([2], "float32"))'
    lines = [line for line, _ in NOT_CARRIED] + [carried]
    back, text, left_out, _ = round_trip(lines)
    assert back == [carried]
    # "not an operator": four lines, the first on line 1
    assert_counted_by_kind(left_out, NOT_CARRIED, {"not an operator": [4, 1], "object": [3, 10]})


def test_export_says_what_it_left_out_in_one_line(tmp_path, capsys):
    lines = (
        [f'{OP}(Tensor([2], "float32"))'] * 3
        + ['torch.add(Tensor([2], "float32"), 1)'] * 2
        + [f'{OP}(Opaque("x"))', b'torch.ops.aten.op.default("\xff")'.decode("latin-1")]
    )
    configs, said, warned, text = export_lines(tmp_path, lines, "operator-inputs", capsys)
    assert warned == [
        f"api-tracer: warning: export: {configs}: left out 3 of 4 config lines, which the operator-inputs format "
        "cannot carry: 1 not an operator (line 4), 1 Opaque (line 6), 1 unreadable line (line 7)"
    ]
    assert text == "Operator: aten.op.default\ncnt: 3, ((T([2], f32),), {})\n"  # api_trace.txt: counted
    assert "1 config lines of 1 operators" in said


# -- counts ------------------------------------------------------------------------------


def test_counts_add_up_and_come_back(tmp_path):
    data = (
        b"# made by hand\n\nOperator: aten.sum.dim_IntList\n"
        b"cnt: 3, ((T([64, 128], f32), [0], True), {'dtype': torch.float32})\n"
        b"cnt: 4, ((T([64, 128], f32), [0], True), {'dtype': f32})\n"  # the same config line
        b"cnt: 18446744073709551615, ((T([2], f16), [0]), {})\n"
        b"Operator: aten.sum.SymInt\n"  # old files' name of dim_IntList
        b"cnt: 2, ((T([2], f16), [0]), {})\n"
    )
    entries, left_out = read_operator_inputs("ops.txt", data)
    line = 'torch.ops.aten.sum.dim_IntList(Tensor([64, 128], "float32"), [0], True, dtype=torch.float32)'
    assert [(e.line, e.config, e.calls) for e in entries] == [
        (4, line, 7),
        (6, 'torch.ops.aten.sum.dim_IntList(Tensor([2], "float16"), [0])', 2**64 - 1),
    ]
    assert not left_out
    text, _ = write_operator_inputs(entries)
    assert text == (
        "Operator: aten.sum.dim_IntList\n"
        "cnt: 7, ((T([64, 128], f32), [0], True), {'dtype': f32})\n"
        "cnt: 18446744073709551615, ((T([2], f16), [0]), {})\n"
    )


def test_export_takes_the_calls_from_the_sets_sources(tmp_path, capsys):
    """Where the set has api_config_sources.yaml (traced with a label), its
    calls are written; where it has none, the lines are counted."""
    import torch

    x = torch.ones(2, 3)
    for label in ("bert", None):
        directory = tmp_path / str(label)
        with APITracer(output_path=str(directory), levels=[2], merge_output=True, stream_trace=False, label=label):
            for _ in range(5):
                torch.relu(x)
        out = tmp_path / f"{label}.txt"
        assert main(["export", "--format", "operator-inputs", str(directory / "api_configs.yaml"), "-o", str(out)]) == 0
        assert out.read_text().splitlines() == [
            "Operator: aten.relu.default",
            f"cnt: {5 if label else 1}, ((T([2, 3], f32),), {{}})",
        ]


def test_symbolic_sizes_are_left_out_and_said(tmp_path, capsys):
    path = tmp_path / "ops.txt"
    path.write_text(
        "Operator: aten.relu.default\ncnt: 1, ((T([s0, 128], f16),), {})\n"
        "cnt: 2, ((T([8, 128], f16, stride=(u0, 1)),), {})\ncnt: 5, ((T([8], f16),), {})\n"
        "Operator: aten.add.Tensor\ncnt: 1, ((ST([2, 3], f32, torch.sparse_coo, False), 1), {})\n"
    )
    configs = read_config_file(str(path))
    assert [(c.line, c.text) for c in configs] == [(4, 'torch.ops.aten.relu.default(Tensor([8], "float16"))')]
    assert capsys.readouterr().err.splitlines() == [
        f"api-tracer: warning: {path}: left out 3 input lines, which a config line cannot carry: "
        "2 symbolic size (first at line 2), 1 sparse tensor without nnz (line 6)"
    ]


def test_sparse_tensors_with_nnz_are_read():
    entries, _ = read_operator_inputs(
        "ops.txt", b"Operator: aten.add.Tensor\ncnt: 1, ((ST([2, 3], f32, torch.sparse_coo, True, 4), 1), {})\n"
    )
    assert [e.config for e in entries] == [
        'torch.ops.aten.add.Tensor(Tensor([2, 3], "float32", layout=torch.sparse_coo, nnz=4), 1)'
    ]


# -- hostile and broken files ------------------------------------------------------------

HEAD = b"Operator: aten.op.default\n"
BROKEN = [  # (content, line, column, what the message says)
    (HEAD + b"cnt: 1, ((T([2], f32),), {}\n", 2, 28, "expected ')'"),
    (HEAD + b"cnt: 1, ((T([2], f32)), {})\n", 2, 22, "a tuple of one is written (a,)"),
    (HEAD + b"cnt: 1, ((T([2], f17),), {})\n", 2, 18, "unknown dtype abbreviation 'f17'"),
    (HEAD + b"cnt: 1, ((T([2], torch.float),), {})\n", 2, 11, "a tensor's dtype"),
    (HEAD + b"((T([2], f32),), {})\n", 2, 1, "starts with 'cnt: N, '"),
    (HEAD + b"cnt 1, ((), {})\n", 2, 1, "starts with 'cnt: N, '"),
    (HEAD + b"cnt: 0, ((), {})\n", 2, 6, "not from 1 to 2^64 - 1"),
    (HEAD + b"cnt: 18446744073709551616, ((), {})\n", 2, 6, "not from 1 to 2^64 - 1"),
    (HEAD + b"cnt: 1.5, ((), {})\n", 2, 6, "a count is a whole number"),
    (HEAD + b"cnt: 1, ((" + b"9" * 5000 + b",), {})\n", 2, 11, "an integer of 5000 digits"),
    (HEAD + b"cnt: 1, ((T([99999999999999999999], f32),), {})\n", 2, 11, "an int of 64 bits"),
    (HEAD + b"cnt: 1, ((T([2, 3], f32, stride=(1,)),), {})\n", 2, 11, "stride has 1 entries for 2 sizes"),
    (b"cnt: 1, ((T([2], f32),), {})\n", 1, 1, "before any 'Operator:' line"),
    (HEAD + b"cnt: 1, ((" + b"[" * 100_000 + b"]" * 100_000 + b",), {})\n", 2, 45, "nested more than 33 deep"),
    (HEAD + b"cnt: 1, ((" + b"[" * 34 + b"1" + b"]" * 34 + b",), {})\n", 2, 45, "nested more than 33 deep"),
    (HEAD + b"cnt: 1, (('caf\xe9',), {})\n", 2, 15, "not UTF-8: byte 0xe9"),
    (HEAD + b"cnt: 1, (('\\ud800',), {})\n", 2, 12, "is not a character"),
    (HEAD + b"cnt: 1, (('\\q',), {})\n", 2, 12, "unknown escape"),
    (HEAD + b"cnt: 1, (('abc,), {})\n", 2, 11, "not closed"),
    (HEAD + b"cnt: 1, (('a\x01',), {})\n", 2, 13, "control character"),
    (HEAD + b"cnt: 1, ((1,), {1: 2})\n", 2, 16, "an identifier"),
    (HEAD + b"cnt: 1, ([1], {})\n", 2, 10, "are a tuple"),
    (HEAD + b"cnt: 1, ((), {}) x\n", 2, 18, "more after the inputs"),
    (HEAD + b"cnt: 1, (({[1]: 2},), {})\n", 2, 12, "cannot be hashed"),
    (HEAD + b"cnt: 1, ((__import__('os').system('true'),), {})\n", 2, 11, "unknown call __import__"),
    (HEAD + b"cnt: 1, ((os.system,), {})\n", 2, 11, "unknown name 'os.system'"),
    (HEAD + b"cnt: 1, ((1 if 1 else 2,), {})\n", 2, 13, "expected ',' or ')'"),
    (HEAD + b"cnt: 1, ((lambda: 1,), {})\n", 2, 11, "unknown name 'lambda'"),
    (HEAD + b"cnt: 1, ((1; 2,), {})\n", 2, 12, "unexpected character ';'"),
    (b"Operator: __import__('os').system('true')\n", 1, 11, "is not an operator's name"),
    (b"Operator: aten.relu\n", 1, 11, "is not an operator's name"),
]


@pytest.mark.parametrize("content,line,column,message", BROKEN, ids=[m for *_, m in BROKEN])
def test_a_broken_file_names_path_line_and_column(content, line, column, message):
    with pytest.raises(InputError) as e:
        read_operator_inputs("ops.txt", content)
    assert (e.value.path, e.value.line, e.value.column) == ("ops.txt", line, column), str(e.value)
    assert message in e.value.message
    assert str(e.value).startswith(f"ops.txt:{line}:{column}: ")


def test_a_long_line_is_read_in_linear_time():
    sizes = ", ".join(["1"] * 200_000)
    entries, _ = read_operator_inputs("ops.txt", HEAD + f"cnt: 1, (([{sizes}], '{'x' * 1_000_000}'), {{}})\n".encode())
    assert len(entries) == 1 and len(entries[0].config) > 1_500_000


def test_a_line_past_the_parse_bound_is_refused_unparsed():
    from api_tracer.config import MAX_LINE

    line = b"cnt: 1, ((" + b"1, " * (MAX_LINE // 3) + b"), {})\n"
    with pytest.raises(InputError, match=rf"ops.txt:2: a line of {len(line) - 1} bytes: an input line may hold"):
        read_operator_inputs("ops.txt", HEAD + line)


def test_the_deepest_value_a_config_line_holds_is_read_whole():
    """33 lists in lists (what the tracer's converters write before Opaque)
    come back as they are; one more is refused (the table above), not cut
    to Opaque("list") and skipped by replay."""
    deep = "[" * 33 + "1" + "]" * 33
    entries, _ = read_operator_inputs("ops.txt", HEAD + f"cnt: 1, (({deep},), {{}})\n".encode())
    assert [e.config for e in entries] == [f"torch.ops.aten.op.default({deep})"]


def test_replay_says_a_broken_file_as_bad_input(tmp_path, capsys):
    path = tmp_path / "ops.txt"
    path.write_bytes(HEAD + b"cnt: 1, ((T([2], f32),), {})\ncnt: 1, ((T([2], f99),), {})\n")
    assert main(["replay", str(path)]) == 2
    assert (
        capsys.readouterr().err.strip() == f"api-tracer: {path}:3:18: unknown dtype abbreviation 'f99' (the "
        "format's: bf16, f16, f32, f64, c32, c64, c128, i8, i16, i32, i64, b8, u8)"
    )


def test_reading_evaluates_nothing(tmp_path, monkeypatch):
    """Nothing of a line is evaluated: eval, exec, compile and literal_eval
    are never called while a file of every value reads, and code is refused."""
    called = []

    def watched(name, original):
        def call(*args, **kwargs):
            called.append(name)
            return original(*args, **kwargs)

        return call

    lines = [f"{OP}({value})" for value in CARRIED]
    text, _ = write_operator_inputs((i, line, 1) for i, line in enumerate(lines, 1))
    marker = tmp_path / "evaluated"
    hostile = [f"__import__('os').system('touch {marker}')", f"open('{marker}', 'w')", "T.__class__"]
    for name in ("eval", "exec", "compile"):
        monkeypatch.setattr(builtins, name, watched(name, getattr(builtins, name)))
    monkeypatch.setattr(ast, "literal_eval", watched("literal_eval", ast.literal_eval))
    entries, _ = read_operator_inputs("ops.txt", text.encode())
    refused = []
    for code in hostile:
        try:
            read_operator_inputs("ops.txt", HEAD + f"cnt: 1, (({code},), {{}})\n".encode())
        except InputError as e:
            refused.append(e.column)
    monkeypatch.undo()
    assert called == []
    assert [e.config for e in entries] == lines
    assert refused == [11, 11, 11] and not marker.exists()


# -- finding the format, and the commands that read it -----------------------------------


def test_the_format_is_found_by_content():
    assert is_operator_inputs(b"\n# a comment\n  \nOperator: aten.relu.default\ncnt: 1, ((T([2], f32),), {})\n")
    assert not is_operator_inputs(b'torch.ops.aten.relu.default(Tensor([2], "float32"))\nOperator: aten.x.y\n')
    assert not is_operator_inputs(b"Operators: aten.relu.default\n")
    assert not is_operator_inputs(b"")


def traced_set(directory):
    import torch

    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(4 * 6 * 6, 5),
        torch.nn.LogSoftmax(dim=1),
    )
    x = torch.randn(2, 3, 8, 8)
    with APITracer(output_path=str(directory), levels=[2], merge_output=True):
        for _ in range(2):
            model(x).sum().backward()
    return directory


def test_an_exported_set_replays_every_line(tmp_path, capsys):
    traced = traced_set(tmp_path / "set")
    configs = [c.text for c in read_config_file(str(traced / "api_configs.yaml"))]
    out = tmp_path / "ops.txt"
    assert main(["export", "--format", "operator-inputs", str(traced / "api_trace.txt"), "-o", str(out)]) == 0
    assert capsys.readouterr().err == ""  # level 2 holds operators only: every line carried
    text = out.read_text()
    trace = (traced / "api_trace.txt").read_text().splitlines()
    assert sum(int(line.split(",")[0][len("cnt: ") :]) for line in text.splitlines() if line.startswith("cnt")) == len(
        trace
    )  # every call counted
    assert not list(tmp_path.glob(".*.tmp"))
    report = tmp_path / "report.jsonl"
    result = run_cli("replay", str(out), "-o", str(report), timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    results = [json.loads(line) for line in report.read_text().splitlines()]
    assert len(results) == len(configs)
    assert sorted(r["config"] for r in results) == sorted(configs)
    assert [r["status"] for r in results] == ["ok"] * len(configs)
    lines = text.splitlines()
    assert all(lines[r["line"] - 1].startswith("cnt: ") and r["file"] == str(out) for r in results)


def test_fuzz_and_the_pytest_plugin_read_the_format(tmp_path, pytester):
    from api_tracer.fuzz.campaign import read_seeds

    path = pytester.path / "ops.txt"
    path.write_text(
        "Operator: aten.relu.default\ncnt: 4, ((T([2, 3], f32),), {})\n"
        "Operator: aten.add.Tensor\ncnt: 1, ((T([3], f16), T([3], f16)), {'alpha': 2})\n"
    )
    seeds, left_out = read_seeds([str(path)])
    assert [(s.number, s.text) for s in seeds] == [
        (2, 'torch.ops.aten.relu.default(Tensor([2, 3], "float32"))'),
        (4, 'torch.ops.aten.add.Tensor(Tensor([3], "float16"), Tensor([3], "float16"), alpha=2)'),
    ] and not left_out
    result = pytester.runpytest_subprocess("--api-replay", str(path), "-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*L2:torch.ops.aten.relu.default*", "*L4:torch.ops.aten.add.Tensor*"])


def test_export_refuses_bad_paths_and_keeps_the_old_file(tmp_path, capsys):
    configs = tmp_path / "configs.txt"
    configs.write_text(f'{OP}(Tensor([2], "float32"))\n')
    out = tmp_path / "ops.txt"
    out.write_text("before\n")
    broken = tmp_path / "broken.txt"
    broken.write_bytes(HEAD + b"cnt: x\n")
    assert main(["export", "--format", "operator-inputs", str(broken), "-o", str(out)]) == 2
    assert out.read_text() == "before\n"
    assert main(["export", "--format", "operator-inputs", str(configs), "-o", str(configs)]) == 2
    assert main(["export", "--format", "operator-inputs", str(tmp_path / "none"), "-o", str(out)]) == 2
    assert main(["export", "--format", "operator-inputs", str(configs), "-o", str(tmp_path / "no" / "x")]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"api-tracer: {broken}:2:6: a count is a whole number, not 'x'",
        f"api-tracer: export: -o {configs} is one of its inputs ({configs}, which export reads)",
        f"api-tracer: {tmp_path / 'none'}: no such file",
        f"api-tracer: export: -o {tmp_path / 'no' / 'x'}: no directory {tmp_path / 'no'}",
    ]
    assert main(["export", "--format", "operator-inputs", str(configs), "-o", str(out)]) == 0
    assert out.read_text() == "Operator: aten.op.default\ncnt: 1, ((T([2], f32),), {})\n"
    with pytest.raises(SystemExit):
        main(["export", "--format", "csv", str(configs), "-o", str(out)])
