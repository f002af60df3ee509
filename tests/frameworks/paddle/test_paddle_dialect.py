"""The Paddle dialect at level 0: Paddle's values written as the format
writes them (docs/format.md), read natively by the converter's TensorReader."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from api_tracer import _C, APITracer
from api_tracer.frameworks.dialect import FrameworkDialect
from api_tracer.frameworks.paddle.dialect import PaddleDialect
from api_tracer.frameworks.paddle.names import DTYPES
from support.paddle_dtypes import paddle_dtypes

paddle = pytest.importorskip("paddle")  # pinned in requirements.txt: always there in CI


def configs(out: Path) -> list:
    return (out / "api_configs.yaml").read_text().splitlines()


def trace(tmp_path: Path, apis: list, program, **options) -> list:
    out = tmp_path / "trace"
    with APITracer(dialect="paddle", output_path=str(out), levels=0, merge_output=True, api_list=apis, **options):
        program()
    return configs(out)


def test_tensors_are_written_with_shape_dtype_strides_and_gradient_flag(tmp_path):
    x = paddle.ones([3, 4])
    w = paddle.ones([4, 3])
    w.stop_gradient = False

    def program():
        paddle.matmul(x, x.T)  # a transposed view: paddle keeps its strides
        paddle.matmul(x, w)
        paddle.add(x.astype("int64"), paddle.zeros([3, 4], dtype="int64"))

    lines = trace(tmp_path, ["paddle.matmul", "paddle.add"], program, show_requires_grad=True)
    assert lines == [
        'paddle.add(Tensor([3, 4], "int64"), Tensor([3, 4], "int64"))',
        'paddle.matmul(Tensor([3, 4], "float32"), Tensor([4, 3], "float32", requires_grad=True))',
        'paddle.matmul(Tensor([3, 4], "float32"), Tensor([4, 3], "float32", stride=[1, 4]))',
    ]


def test_the_dtype_table_is_paddles():
    assert sorted(DTYPES) == paddle_dtypes()


@pytest.mark.parametrize("dtype", paddle_dtypes())
def test_every_dtype_is_named_as_paddle_names_it(tmp_path, dtype):
    x = paddle.zeros([2], dtype=dtype)
    lines = trace(tmp_path, ["paddle.cast"], lambda: paddle.cast(x, getattr(paddle, dtype)))
    assert lines == [f'paddle.cast(Tensor([2], "{dtype}"), paddle.{dtype})']


def test_places_are_written_as_the_calls_that_make_them(tmp_path):
    x = paddle.ones([2])
    lines = trace(
        tmp_path,
        ["paddle.to_tensor"],
        lambda: (paddle.to_tensor([1.0], place=paddle.CPUPlace()), paddle.to_tensor([2.0], place=x.place)),
    )
    assert lines == [
        "paddle.to_tensor([1.0], place=paddle.CPUPlace())",
        "paddle.to_tensor([2.0], place=paddle.CPUPlace())",
    ]


def test_layers_are_written_as_the_construction_level_0_saw(tmp_path):
    x = paddle.ones([3, 4])
    before = paddle.nn.Linear(4, 2)

    def program():
        layer = paddle.nn.Linear(
            4, 5, weight_attr=paddle.ParamAttr(name="w0", initializer=paddle.nn.initializer.Constant(0.5))
        )
        layer(x)
        before(x)
        drop = paddle.nn.Dropout(0.3)
        drop.eval()
        drop(x)

    apis = ["paddle.nn.Linear", "paddle.nn.Linear.forward", "paddle.nn.Dropout", "paddle.nn.Dropout.forward"]
    lines = trace(tmp_path, apis, program)
    linear = (
        'paddle.nn.Linear(4, 5, weight_attr=paddle.ParamAttr(name="w0", '
        "initializer=paddle.nn.initializer.Constant(value=0.5)))"
    )
    assert lines == [
        "paddle.nn.Dropout(p=0.3)",
        'paddle.nn.Dropout.forward(Eval(paddle.nn.Dropout(p=0.3)), Tensor([3, 4], "float32"))',
        linear,
        'paddle.nn.Linear.forward(paddle.nn.Linear(4, 2), Tensor([3, 4], "float32"))',  # (built before: read back)
        f'paddle.nn.Linear.forward({linear}, Tensor([3, 4], "float32"))',
    ]


def test_a_layer_changing_mode_is_written_again(tmp_path):
    x = paddle.ones([2, 4])

    def program():
        layer = paddle.nn.Sequential(paddle.nn.Linear(4, 4), paddle.nn.Dropout(0.5))
        layer.eval()
        layer(x)
        layer.train()
        layer[1].eval()  # a container's children in their own modes
        layer(x)
        block = paddle.nn.TransformerEncoderLayer(4, 2, 8)
        block.dropout1.eval()  # a mix of modes inside a layer: no call says it
        block(paddle.ones([1, 2, 4]))

    apis = ["paddle.nn.Sequential", "paddle.nn.Sequential.forward", "paddle.nn.TransformerEncoderLayer.forward"]
    lines = trace(tmp_path, apis, program)
    assert (
        "paddle.nn.Sequential.forward(Eval(paddle.nn.Sequential(paddle.nn.Linear(4, 4), paddle.nn.Dropout())), "
        'Tensor([2, 4], "float32"))' in lines
    )
    assert (
        "paddle.nn.Sequential.forward(paddle.nn.Sequential(paddle.nn.Linear(4, 4), Eval(paddle.nn.Dropout())), "
        'Tensor([2, 4], "float32"))' in lines
    )
    assert (
        'paddle.nn.TransformerEncoderLayer.forward(Opaque("paddle.nn.TransformerEncoderLayer"), '
        'Tensor([1, 2, 4], "float32"))' in lines
    )


def test_optimizers_are_their_construction_or_read_back(tmp_path):
    layer = paddle.nn.Linear(2, 2)
    early = paddle.optimizer.SGD(learning_rate=0.1, parameters=layer.parameters())

    def program():
        adam = paddle.optimizer.Adam(learning_rate=0.01, parameters=layer.parameters())
        layer(paddle.ones([1, 2])).sum().backward()
        adam.step()
        early.step()

    lines = trace(
        tmp_path, ["paddle.optimizer.Adam", "paddle.optimizer.Adam.step", "paddle.optimizer.SGD.step"], program
    )
    adam = 'paddle.optimizer.Adam(learning_rate=0.01, parameters=[Tensor([2, 2], "float32"), Tensor([2], "float32")])'
    assert lines == [
        adam,
        f"paddle.optimizer.Adam.step({adam})",
        # (built before tracing: read back)
        'paddle.optimizer.SGD.step(paddle.optimizer.SGD(learning_rate=0.1, parameters=[Tensor([2, 2], "float32"), '
        'Tensor([2], "float32")]))',
    ]


def test_objects_read_back_only_where_the_call_rebuilds_them(tmp_path):
    normal = paddle.nn.initializer.Normal(0.0, 2.0)  # keeps std as _std_dev: not read back
    decay = paddle.regularizer.L2Decay(1e-4)
    lines = trace(
        tmp_path,
        ["paddle.nn.Linear"],
        lambda: paddle.nn.Linear(2, 2, weight_attr=paddle.ParamAttr(initializer=normal, regularizer=decay)),
    )
    assert lines == [
        "paddle.nn.Linear(2, 2, weight_attr=paddle.ParamAttr(initializer="
        'Opaque("paddle.nn.initializer.Normal"), regularizer=paddle.regularizer.L2Decay(coeff=0.0001)))'
    ]


def test_integer_tensors_get_value_profiles(tmp_path):
    logits = paddle.ones([4, 8])
    label = paddle.to_tensor([3, 1, 7, 1])
    out = tmp_path / "trace"
    with APITracer(
        dialect="paddle",
        output_path=str(out),
        levels=0,
        merge_output=True,
        value_ranges=True,
        api_list=["paddle.nn.functional.cross_entropy"],
    ):
        paddle.nn.functional.cross_entropy(logits, label)
    ranges = (out / "api_value_ranges.yaml").read_text()
    assert "args[1]:\n    - 1\n    - 7\n" in ranges and "values:\n    args[1]:\n    - 1\n    - 3\n    - 7\n" in ranges


def test_a_decorated_constructor_is_recorded_with_its_parameters(tmp_path):
    # paddle.nn.Linear.__init__ is a decorator's wrapper(*args, **kwargs)
    assert paddle.nn.Linear.__init__.__code__.co_argcount == 0
    lines = trace(tmp_path, ["paddle.nn.Linear"], lambda: paddle.nn.Linear(in_features=3, out_features=2, name="fc"))
    assert lines == ['paddle.nn.Linear(3, 2, name="fc")']


class FakeTensor:
    """A tensor of a framework of no one's, for the TensorReader alone."""

    def __init__(self, shape, dtype, strides, frozen):
        self.shape, self.dtype, self.strides, self.frozen = shape, dtype, strides, frozen


F32, ODD = object(), object()


class FakeDialect(FrameworkDialect):
    name = "fake"
    reader = _C.TensorReader(
        shape="shape",
        dtype="dtype",
        dtypes={F32: "float32"},
        dtype_name=lambda d: "odd",
        stride="strides",
        requires_grad="frozen",
        grad_negated=True,
    )

    def classify(self, tp):
        return (_C.Rule.tensor, self.reader) if tp is FakeTensor else super().classify(tp)


@pytest.mark.parametrize(
    "tensor, written",
    [
        (FakeTensor([2, 3], F32, [3, 1], True), 'Tensor([2, 3], "float32")'),
        (FakeTensor([2, 3], F32, [1, 2], True), 'Tensor([2, 3], "float32", stride=[1, 2])'),
        (FakeTensor([2, 1], F32, [1, 7], True), 'Tensor([2, 1], "float32")'),  # a size-1 dimension's stride is free
        (FakeTensor([0, 3], F32, [9, 9], True), 'Tensor([0, 3], "float32")'),  # no elements: contiguous
        (FakeTensor([4], ODD, [1], False), 'Tensor([4], "odd", requires_grad=True)'),
        (FakeTensor("oops", F32, [1], True), 'Opaque("test_paddle_dialect.FakeTensor")'),
    ],
)
def test_the_tensor_reader_reads_any_framework_s_tensor(tensor, written):
    d = FakeDialect()
    line = _C.format_call(
        "f", (tensor,), {}, classify=d.classify, tensor_type_name=d.tensor_type_name, show_requires_grad=True
    )
    assert line == f"f({written})"


def test_the_tensor_reader_refuses_a_callback_that_is_not_callable():
    with pytest.raises(TypeError, match="dtype_name must be callable"):
        _C.TensorReader(shape="shape", dtype="dtype", dtypes={}, dtype_name=3)


def test_run_dialect_paddle_traces_a_script(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("import paddle\nx = paddle.ones([2, 3])\nprint(paddle.concat([x, x], axis=0).shape)\n")
    out = tmp_path / "trace"
    r = subprocess.run(
        [sys.executable, "-m", "api_tracer", "run", "--dialect", "paddle", "--merge", "-o", str(out), str(script)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout == "paddle.Size([4, 3])\n"
    assert 'paddle.concat([Tensor([2, 3], "float32"), Tensor([2, 3], "float32")], axis=0)' in configs(out)


def test_an_unknown_dialect_is_refused_by_name():
    with pytest.raises(ValueError, match="dialect must be one of \\['paddle', 'torch'\\]"):
        APITracer(dialect="jax")


def test_levels_paddle_has_no_hook_for_are_refused():
    with pytest.raises(ValueError, match=r"levels: 3 is not a level; allowed: 0 \(ApiHook\), 1 \(NestedApiHook\), "):
        APITracer(dialect="paddle", levels=[0, 3])


def test_the_dialect_is_a_framework_dialect():
    assert isinstance(PaddleDialect(), FrameworkDialect)
    assert PaddleDialect().hook_classes().keys() == {0, 1, 2}
