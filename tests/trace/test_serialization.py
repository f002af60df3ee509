"""Every kind of argument is written faithfully, and never makes the tracer raise."""

import collections
import enum
import functools

import numpy as np
import pytest
import torch
import torch.nn as nn
import yaml

from api_tracer import APITracer, parse_call
from support import read_set, trace_lines

Point = collections.namedtuple("Point", "x y")


class Color(enum.Enum):
    RED = 1


class Thing:
    pass


class MyTensor(torch.Tensor):
    pass


def sink(*args, **kwargs):
    """An API of the test's own that takes anything."""
    return None


SINK = f"{__name__}.sink"


def trace_sink(out, *calls):
    with APITracer(output_path=str(out), levels=0, merge_output=True, api_list=[SINK]):
        for args, kwargs in calls:
            sink(*args, **kwargs)
    return trace_lines(out)


def one(out, *args, **kwargs):
    [line] = trace_sink(out, (args, kwargs))
    prefix = SINK + "("
    assert line.startswith(prefix) and line.endswith(")")
    return line[len(prefix) : -1]


CASES = [
    ((torch.zeros(2, 3),), 'Tensor([2, 3], "float32")'),
    ((torch.zeros(4, 5).t(),), 'Tensor([5, 4], "float32", stride=[1, 5])'),
    ((torch.zeros(()),), 'Tensor([], "float32")'),
    ((nn.Parameter(torch.zeros(3)),), 'Tensor([3], "float32")'),
    ((torch.zeros(2).as_subclass(MyTensor),), 'Tensor([2], "float32")'),
    (
        (torch.zeros(2, dtype=torch.bfloat16), torch.zeros(1, dtype=torch.bool)),
        'Tensor([2], "bfloat16"), Tensor([1], "bool")',
    ),
    ((torch.zeros(2, 2).to_sparse(),), 'Tensor([2, 2], "float32", layout=torch.sparse_coo, nnz=0)'),
    (("a\ud800b", "é"), '"a\\\\ud800b", "é"'),  # a lone surrogate is escaped, never an error
    (
        (1 + 2j, 3j, float("inf"), float("-inf"), float("nan"), 0.1, 1e-05, -0.0),
        "(1+2j), 3j, inf, -inf, nan, 0.1, 1e-05, -0.0",
    ),
    ((2**70, -(2**64), True, None), "1180591620717411303424, -18446744073709551616, True, None"),
    ((np.float32(1.5), np.int64(3), np.bool_(True)), "numpy.float32(1.5), numpy.int64(3), numpy.bool(True)"),
    ((np.zeros((2, 3)),), 'numpy.ndarray([2, 3], "float64")'),
    (
        (torch.Size([2, 3]), torch.float16, torch.device("cuda:1"), torch.device("cpu")),
        'torch.Size([2, 3]), torch.float16, torch.device("cuda:1"), torch.device("cpu")',
    ),
    (
        (torch.strided, torch.channels_last, torch.per_tensor_affine),
        "torch.strided, torch.channels_last, torch.per_tensor_affine",
    ),
    ((torch.Generator(),), 'torch.Generator(device="cpu")'),
    ((slice(1, None, 2), ..., slice(None)), "slice(1, None, 2), ..., slice(None, None, None)"),
    (([1, (2, [3.5])], {"a": [1], 2: None}, (), (1,)), '[1, (2, [3.5])], {"a": [1], 2: None}, (), (1,)'),
    ((Point(1, 2),), f"{__name__}.Point(x=1, y=2)"),
    ((Color.RED,), f"{__name__}.Color.RED"),
    ((nn.Linear(3, 4), nn.Linear(2, 2, bias=False)), "torch.nn.Linear(3, 4), torch.nn.Linear(2, 2, bias=False)"),
    (
        (torch.relu, torch.Tensor.add, torch.ops.aten.add.Tensor, float),
        'Callable("torch.relu"), Callable("torch.Tensor.add"), Callable("torch.ops.aten.add.Tensor"), float',
    ),
    ((Thing(), object(), b"raw"), f'Opaque("{__name__}.Thing"), Opaque("object"), Opaque("bytes")'),
    # a partial is the call that binds its arguments, its callable by its public name
    (
        (
            functools.partial(nn.modules.batchnorm.BatchNorm2d, eps=0.001),
            functools.partial(torch.relu),
            functools.partial(torch.nn.functional.dropout, p=0.3),
        ),
        'functools.partial(torch.nn.BatchNorm2d, eps=0.001), functools.partial(Callable("torch.relu")), '
        'functools.partial(Callable("torch.nn.functional.dropout"), p=0.3)',
    ),
    (('a "q" \\ \n\t', "é"), '"a \\"q\\" \\\\ \\n\\t", "é"'),
    # a storage is its size in bytes (a typed one's dtype too), what replay builds one of
    (
        (torch.UntypedStorage(48), torch.zeros(3, dtype=torch.int16).untyped_storage()),
        "Storage(48), Storage(6)",
    ),
    ((torch.TypedStorage(3, dtype=torch.float64, _internal=True),), "Storage(24, dtype=torch.float64)"),
    # a generator of a module's members is what it will yield; any other, its type
    ((nn.Linear(3, 2).parameters(),), '[Tensor([2, 3], "float32"), Tensor([2], "float32")]'),
    ((nn.Linear(3, 2, bias=False).named_parameters(prefix="l"),), '[("l.weight", Tensor([2, 3], "float32"))]'),
    (
        (nn.BatchNorm1d(2).buffers(recurse=False),),
        '[Tensor([2], "float32"), Tensor([2], "float32"), Tensor([], "int64")]',
    ),
    (((x for x in [1]),), 'Opaque("generator")'),
]


@pytest.mark.parametrize("args,text", CASES, ids=[str(i) for i in range(len(CASES))])
def test_values_are_written_faithfully(out, args, text):
    assert one(out, *args) == text


def test_keyword_only_calls(out):
    assert trace_sink(out, ((), {"k": 1, "dtype": torch.int8})) == [f"{SINK}(k=1, dtype=torch.int8)"]


def test_return_types_and_symints(out):
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    mx = torch.max(torch.tensor([[1.0, 2.0]]), 1)
    s = ShapeEnv().create_unbacked_symint()
    assert one(out, mx, s) == (
        'torch.return_types.max(values=Tensor([1], "float32"), indices=Tensor([1], "int64")), torch.SymInt("u0")'
    )


def test_lambdas_and_local_functions_name_themselves(out):
    text = one(out, lambda x: x)
    assert text == f'Callable("{__name__}.test_lambdas_and_local_functions_name_themselves.<locals>.<lambda>")'


def test_cycles_and_deep_nesting_do_not_crash(out):
    cyc = []
    cyc.append(cyc)
    deep = []
    cur = deep
    for _ in range(100):
        cur.append([])
        cur = cur[0]
    text = one(out, cyc, deep)
    assert 'Opaque("list")' in text
    parse_call(f"{SINK}({text})")


def test_yaml_keeps_every_field(out):
    p = nn.Parameter(torch.zeros(2, 3).t())
    with APITracer(output_path=str(out), levels=0, merge_output=True, api_list=[SINK]):
        sink(p, torch.device("cuda:0"), 1 + 2j, (1,), slice(None, 2, None), ..., torch.float16)
    [record] = yaml.safe_load(read_set(out)["api_trace.yaml"])
    t, dev, c, tup, sl, ell, dt = record["args"]
    assert t == {
        "type": "torch.Tensor",
        "shape": [3, 2],
        "dtype": "torch.float32",
        "device": "cpu",
        "stride": [1, 3],
        "requires_grad": True,
        "subclass": "torch.nn.Parameter",
    }
    assert dev == {"type": "object", "name": "torch.device", "args": ["cuda:0"]}
    assert c == {"type": "complex", "real": 1.0, "imag": 2.0}
    assert tup == {"type": "tuple", "items": [1]}
    assert sl == {"type": "slice", "start": None, "stop": 2, "step": None}
    assert ell == {"type": "ellipsis"}
    assert dt == {"type": "symbol", "name": "torch.float16"}


def test_optional_tensor_fields_in_config_lines(out):
    x = torch.zeros(2, requires_grad=True)
    with APITracer(
        output_path=str(out), levels=0, merge_output=True, api_list=[SINK], show_device=True, show_requires_grad=True
    ):
        sink(x, torch.zeros(1, device="meta"))
    assert trace_lines(out) == [
        f'{SINK}(Tensor([2], "float32", requires_grad=True), Tensor([1], "float32", device="meta"))'
    ]


def test_every_written_line_parses_back(out):
    lines = trace_sink(out, *[(args, {}) for args, _ in CASES])
    for line in lines:
        api, args, kwargs = parse_call(line)
        assert api == SINK


class Counting(nn.Linear):
    """A module that lists its parameters its own way (counting)."""

    listed = 0

    def named_parameters(self, *args, **kwargs):
        Counting.listed += 1
        return super().named_parameters(*args, **kwargs)


def test_a_generator_is_read_without_being_consumed_or_run_otherwise(out):
    """The program's generator is left for its callee whole; one started,
    or of a module that lists its members its own way (code of the
    program's, which reading it would run), is written by its type."""
    model = nn.Linear(3, 2)
    fresh, started, own = model.parameters(), model.parameters(), Counting(3, 2).parameters()
    next(started)
    assert one(out, fresh, started, own) == (
        '[Tensor([2, 3], "float32"), Tensor([2], "float32")], Opaque("generator"), Opaque("generator")'
    )
    assert list(fresh) == list(model.parameters()) and len(list(started)) == 1
    assert Counting.listed == 0 and len(list(own)) == 2 and Counting.listed == 1


def test_a_data_loaders_storages_are_written_by_their_size_and_replay(tmp_path):
    """A DataLoader's workers collate into shared memory: the batch is made
    with set_ over a storage (levels 2 and 3, in the worker and in the
    program), written Storage(nbytes), and replayed."""
    from api_tracer.replay import Config, replay_one
    from support import run_cli

    script = tmp_path / "load.py"
    script.write_text(
        "import torch\n"
        "from torch.utils.data import DataLoader, TensorDataset\n"
        "data = TensorDataset(torch.randn(8, 3), torch.arange(8))\n"
        "for batch in DataLoader(data, batch_size=4, num_workers=1):\n"
        "    pass\n"
    )
    out = tmp_path / "out"
    done = run_cli("run", "--follow-children", "--levels", "2,3", "-o", str(out), str(script), timeout=300)
    assert done.returncode == 0, done.stderr
    lines = {
        line
        for path in out.rglob("api_configs_level_*.yaml")
        for line in path.read_text().splitlines()
        if ".set_." in line
    }
    assert {
        'torch.ops.aten.set_.source_Storage(Tensor([], "float32"), Storage(48))',
        'torch.ops.aten.set_.source_Storage(Tensor([], "int64"), Storage(32))',
        'torch.ops.aten.set_.source_Storage_storage_offset(Tensor([0], "float32"), Storage(48), 0, [4, 3], [3, 1])',
        'torch.ops.aten.set_.source_Storage_storage_offset(Tensor([0], "int64"), Storage(32), 0, [4], [1])',
    } <= lines
    assert not [line for line in lines if "Opaque" in line]
    assert {line: replay_one(Config("x", 1, line)).status for line in lines} == dict.fromkeys(lines, "ok")
