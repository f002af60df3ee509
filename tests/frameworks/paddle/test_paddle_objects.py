"""Paddle's objects built before tracing (frameworks/paddle/objects.py),
written as the constructor calls that rebuild them: layers of paddle.nn and
paddle.vision (containers as the calls of their children, Eval(...) in
evaluation mode), optimizers with their hyperparameters and parameters,
learning-rate schedulers at their epoch. Where no call rebuilds the object
(a class of the program's own, a state changed in a way no constructor
says), the placeholder. Describing draws no random number, shows nothing
and writes no file the untraced program would not; and what is written
replays."""

from __future__ import annotations

import threading
import warnings
from pathlib import Path

import pytest

from api_tracer import APITracer
from api_tracer.config import format_line
from api_tracer.frameworks.paddle import objects
from api_tracer.frameworks.paddle.dialect import PaddleDialect
from support import run_script

paddle = pytest.importorskip("paddle")

from api_tracer.replay import Config, ReplayOptions, replay_one  # noqa: E402 - after importorskip("paddle")

DIALECT = PaddleDialect()
SEQUENTIAL = (
    "paddle.nn.Sequential(paddle.nn.Conv2D(3, 8, 3, padding=1), paddle.nn.BatchNorm2D(8), paddle.nn.ReLU(), "
    "paddle.nn.AdaptiveAvgPool2D(1), paddle.nn.Flatten(), paddle.nn.Linear(8, 4))"
)
TENSORS = ", ".join(f'Tensor([{shape}], "float32")' for shape in ["8, 3, 3, 3", "8", "8", "8", "8", "8", "8, 4", "4"])
ADAMW = f"paddle.optimizer.AdamW(learning_rate=0.01, parameters=[{TENSORS}], weight_decay=0.05)"


class MyNet(paddle.nn.Layer):
    """A layer of the program's own: no call of paddle's rebuilds it."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = paddle.nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)


def trace(tmp_path: Path, program, apis=None) -> list:
    """The config lines of `program` traced at level 0 (the default API list, or `apis`)."""
    out = tmp_path / "trace"
    with APITracer(dialect="paddle", output_path=str(out), levels=0, merge_output=True, api_list=apis):
        program()
    return (out / "api_configs.yaml").read_text().splitlines()


def described(layer) -> str:
    """A layer as the tracer writes it."""
    return format_line("", (DIALECT.describe_layer(layer),), {}, dialect=DIALECT)[1:-1]


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    """The program of the task: a model and optimizer built before tracing, one training step traced."""
    net = paddle.nn.Sequential(
        paddle.nn.Conv2D(3, 8, 3, padding=1),
        paddle.nn.BatchNorm2D(8),
        paddle.nn.ReLU(),
        paddle.nn.AdaptiveAvgPool2D(1),
        paddle.nn.Flatten(),
        paddle.nn.Linear(8, 4),
    )
    opt = paddle.optimizer.AdamW(parameters=net.parameters(), learning_rate=0.01, weight_decay=0.05)
    x, y = paddle.randn([2, 3, 16, 16]), paddle.to_tensor([1, 3])

    def program():
        loss = paddle.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()

    return trace(tmp_path_factory.mktemp("example"), program)


def test_a_model_built_before_tracing_is_written_as_the_calls_that_build_it(example):
    assert f'paddle.nn.Sequential.forward({SEQUENTIAL}, Tensor([2, 3, 16, 16], "float32"))' in example
    assert f"paddle.optimizer.AdamW.step({ADAMW})" in example
    assert f"paddle.optimizer.AdamW.clear_grad({ADAMW})" in example
    assert not [line for line in example if "Module(" in line or "Opaque(" in line]


def test_what_is_written_replays(example):
    lines = [line for line in example if line.startswith(("paddle.nn.Sequential.", "paddle.optimizer."))]
    assert len(lines) == 3
    for line in lines:
        result = replay_one(Config("x", 1, line), ReplayOptions(dialect="paddle"))
        assert result.status == "ok", (line, result.status, result.message)


def test_layers_in_evaluation_mode_are_written_inside_eval(tmp_path):
    frozen = paddle.nn.Sequential(paddle.nn.Linear(4, 4), paddle.nn.BatchNorm1D(4))
    frozen.eval()
    mixed = paddle.nn.Sequential(paddle.nn.Linear(4, 4), paddle.nn.Dropout(0.5))
    mixed[1].eval()  # a container in training mode: its children each with their own
    encoder = paddle.nn.TransformerEncoderLayer(8, 2, 16)
    encoder.dropout1.eval()  # a mix no call says
    x = paddle.ones([2, 4])

    def program():
        frozen(x)
        mixed(x)
        encoder(paddle.ones([1, 3, 8]))

    lines = trace(tmp_path, program, ["paddle.nn.Sequential.forward", "paddle.nn.TransformerEncoderLayer.forward"])
    assert lines == [
        "paddle.nn.Sequential.forward(Eval(paddle.nn.Sequential(paddle.nn.Linear(4, 4), paddle.nn.BatchNorm1D(4))), "
        'Tensor([2, 4], "float32"))',
        "paddle.nn.Sequential.forward(paddle.nn.Sequential(paddle.nn.Linear(4, 4), Eval(paddle.nn.Dropout())), "
        'Tensor([2, 4], "float32"))',
        'paddle.nn.TransformerEncoderLayer.forward(Opaque("paddle.nn.TransformerEncoderLayer"), '
        'Tensor([1, 3, 8], "float32"))',
    ]


def test_what_no_call_rebuilds_stays_a_placeholder():
    own = MyNet()
    holding_own = paddle.nn.Sequential(MyNet(), paddle.nn.ReLU())
    padded = paddle.nn.Conv2D(3, 4, 3)
    padded._updated_padding = [2, 2]  # what the constructor derives from padding, changed alone
    reshaped = paddle.nn.Linear(4, 5)
    reshaped.weight = paddle.create_parameter([4, 6], "float32")  # its bias stays of 5
    hooked = paddle.nn.Linear(4, 4)
    hooked.register_forward_post_hook(lambda layer, inputs, output: output * 2)
    cast = paddle.nn.Linear(4, 4)
    cast.to(dtype="float64")  # Linear takes no dtype: replay would build float32
    assert described(own) == f'Module("{MyNet.__module__}.MyNet")'
    assert described(holding_own) == 'Module("paddle.nn.Sequential")'
    assert described(padded) == 'Module("paddle.nn.Conv2D")'
    assert described(reshaped) == 'Module("paddle.nn.Linear")'
    assert described(hooked) == 'Module("paddle.nn.Linear")'
    assert described(cast) == 'Module("paddle.nn.Linear")'
    # a state changed in a way the constructor says is read back as it is now
    drop = paddle.nn.Dropout(0.2)
    drop.p = 0.7
    assert described(drop) == "paddle.nn.Dropout(p=0.7)"


def test_optimizers_of_program_functions_or_stepped_state_stay_opaque(tmp_path):
    layer = paddle.nn.Linear(2, 2)
    custom = paddle.optimizer.AdamW(parameters=layer.parameters(), apply_decay_param_fun=lambda name: True)
    plateau = paddle.optimizer.lr.ReduceOnPlateau(0.1, patience=0)
    stepped = paddle.optimizer.SGD(learning_rate=plateau, parameters=layer.parameters())
    fresh = paddle.optimizer.SGD(learning_rate=paddle.optimizer.lr.ReduceOnPlateau(0.1), parameters=layer.parameters())
    plateau.step(1.0)
    plateau.step(2.0)  # its best, its count of bad epochs: no constructor says them

    def program():
        custom.clear_grad()
        stepped.clear_grad()
        fresh.clear_grad()

    lines = trace(tmp_path, program, ["paddle.optimizer.AdamW.clear_grad", "paddle.optimizer.SGD.clear_grad"])
    tensors = 'parameters=[Tensor([2, 2], "float32"), Tensor([2], "float32")]'
    assert lines == [
        'paddle.optimizer.AdamW.clear_grad(Opaque("paddle.optimizer.AdamW"))',
        'paddle.optimizer.SGD.clear_grad(Opaque("paddle.optimizer.SGD"))',
        f"paddle.optimizer.SGD.clear_grad(paddle.optimizer.SGD(learning_rate=paddle.optimizer.lr.ReduceOnPlateau"
        f"(0.1), {tensors}))",
    ]


def test_optimizers_and_schedulers_are_written_with_their_hyperparameters(tmp_path):
    layer = paddle.nn.Linear(4, 2)
    schedule = paddle.optimizer.lr.StepDecay(0.1, step_size=2, gamma=0.5)
    clip = paddle.nn.ClipGradByGlobalNorm(1.0)
    momentum = paddle.optimizer.Momentum(schedule, 0.8, layer.parameters(), weight_decay=0.01, grad_clip=clip)
    groups = [{"params": [layer.weight], "learning_rate": 0.5}, {"params": [layer.bias], "beta1": 0.8}]
    adam = paddle.optimizer.Adam(learning_rate=0.01, parameters=groups)
    x = paddle.ones([3, 4])

    def program():
        for _ in range(3):
            layer(x).sum().backward()
            momentum.step()
            adam.step()
            momentum.clear_grad()
            schedule.step()

    lines = trace(tmp_path, program, ["paddle.optimizer.Momentum.step", "paddle.optimizer.Adam.step"])
    tensors = '[Tensor([4, 2], "float32"), Tensor([2], "float32")]'
    assert lines == [
        'paddle.optimizer.Adam.step(paddle.optimizer.Adam(learning_rate=0.01, parameters=[{"params": '
        '[Tensor([4, 2], "float32")], "learning_rate": 0.5}, {"params": [Tensor([2], "float32")], "beta1": 0.8}]))',
    ] + [
        f"paddle.optimizer.Momentum.step(paddle.optimizer.Momentum(learning_rate=paddle.optimizer.lr.StepDecay("
        f"0.1, 2, gamma=0.5{epoch}), momentum=0.8, parameters={tensors}, weight_decay=0.01, "
        f"grad_clip=paddle.nn.ClipGradByGlobalNorm(1.0)))"
        for epoch in ("", ", last_epoch=0", ", last_epoch=1")  # (the scheduler's epoch, as it steps)
    ]
    for line in lines:  # (replay's policy admits the schedulers and clips the tracer writes)
        result = replay_one(Config("x", 1, line), ReplayOptions(dialect="paddle"))
        assert result.status == "ok", (line, result.status, result.message)


@pytest.mark.parametrize(
    "call",
    [
        "paddle.nn.Conv2D(3, 8, 3, stride=2, padding=1, bias_attr=False)",
        "paddle.nn.Conv1DTranspose(4, 6, 3, dilation=2)",
        "paddle.nn.MaxPool2D(3, stride=2, padding=1)",
        "paddle.nn.AvgPool2D(2, exclusive=False)",
        "paddle.nn.Embedding(10, 4, padding_idx=0)",
        "paddle.nn.LayerNorm(8, epsilon=0.001)",
        'paddle.nn.LSTM(4, 6, direction="bidirect")',
        "paddle.nn.GRU(4, 6, num_layers=2)",
        "paddle.nn.MultiHeadAttention(8, 2, dropout=0.1)",
        'paddle.nn.TransformerEncoderLayer(8, 2, 16, activation="gelu")',
        "paddle.nn.TransformerEncoder(paddle.nn.TransformerEncoderLayer(8, 2, 16), 2)",
        "paddle.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1, num_decoder_layers=3, dim_feedforward=16, "
        'activation="gelu", normalize_before=True)',
        "paddle.nn.Identity()",
        "paddle.nn.LayerList([paddle.nn.Linear(2, 3), paddle.nn.Tanh()])",
        'paddle.nn.LayerDict({"a": paddle.nn.Linear(2, 3), "b": paddle.nn.Sigmoid()})',
        'paddle.nn.Sequential(("fc", paddle.nn.Linear(4, 4)), ("act", paddle.nn.GELU()))',
        "paddle.nn.Linear(4, 5, weight_attr=paddle.ParamAttr(initializer=paddle.nn.initializer.Constant(value=0.5)))",
        "paddle.vision.ops.ConvNormActivation(4, 6, stride=2)",
        "paddle.vision.models.resnet.BasicBlock(64, 128, stride=2, downsample=paddle.nn.Sequential("
        "paddle.nn.Conv2D(64, 128, 1, stride=2, bias_attr=False), paddle.nn.BatchNorm2D(128)))",
        "paddle.vision.models.resnet.BottleneckBlock(256, 64)",
    ],
)
def test_paddles_layers_are_written_as_the_call_that_built_them(call):
    layer = eval(call)  # (the test's own constructor calls)
    assert described(layer) == call
    built = eval(described(layer))  # and what is written builds an equal layer
    assert objects.same_layer(built, layer)


def test_a_vision_model_built_before_tracing_is_described(tmp_path):
    model = paddle.vision.models.resnet18(num_classes=10)
    model.eval()
    x = paddle.randn([1, 3, 32, 32])

    def program():
        model(x)
        model.layer2(paddle.randn([1, 64, 8, 8]))

    lines = trace(tmp_path, program, ["paddle.vision.models.ResNet.forward", "paddle.nn.Sequential.forward"])
    resnet = "paddle.vision.ResNet(paddle.vision.models.resnet.BasicBlock, depth=18, num_classes=10)"
    block = (
        "paddle.vision.models.resnet.BasicBlock(64, 128, stride=2, downsample=paddle.nn.Sequential("
        "paddle.nn.Conv2D(64, 128, 1, stride=2, bias_attr=False), paddle.nn.BatchNorm2D(128)))"
    )
    layer2 = f"Eval(paddle.nn.Sequential({block}, paddle.vision.models.resnet.BasicBlock(128, 128)))"
    assert lines == [
        f'paddle.nn.Sequential.forward({layer2}, Tensor([1, 64, 8, 8], "float32"))',
        f'paddle.vision.models.ResNet.forward(Eval({resnet}), Tensor([1, 3, 32, 32], "float32"))',
    ]
    for line in lines:  # (ResNet.forward is not on replay's allow-list: allowed here)
        result = replay_one(Config("x", 1, line), ReplayOptions(dialect="paddle", allow_unsafe=True))
        assert result.status == "ok", (line, result.status, result.message)


def test_the_layers_a_transformer_builds_are_read_back():
    """Transformer hands its attention layers ParamAttr() (the defaults),
    which is what Paddle makes of None: those layers are the calls without."""
    t = paddle.nn.Transformer(16, 2, 2, 2, 32)
    assert described(t.decoder.layers[0].self_attn) == "paddle.nn.MultiHeadAttention(16, 2, dropout=0.1)"
    assert described(t.encoder.layers[1]) == "paddle.nn.TransformerEncoderLayer(16, 2, 32)"


def test_a_layer_is_worked_out_once_while_its_members_stay(monkeypatch):
    seen = []
    work = objects._layer_recipe
    monkeypatch.setattr(objects, "_layer_recipe", lambda layer: seen.append(type(layer).__name__) or work(layer))
    net = paddle.nn.Sequential(paddle.nn.Linear(4, 4), paddle.nn.ReLU())
    assert described(net) == described(net) == "paddle.nn.Sequential(paddle.nn.Linear(4, 4), paddle.nn.ReLU())"
    assert seen == ["Sequential", "Linear", "ReLU"]
    net.eval()  # its modes: written anew, from what was worked out
    assert described(net) == "Eval(paddle.nn.Sequential(paddle.nn.Linear(4, 4), paddle.nn.ReLU()))"
    assert len(seen) == 3
    net[1] = paddle.nn.Tanh()  # a member replaced: worked out again
    net.eval()
    assert described(net) == "Eval(paddle.nn.Sequential(paddle.nn.Linear(4, 4), paddle.nn.Tanh()))"
    assert seen[3:] == ["Sequential", "Tanh"]


def test_an_optimizer_is_read_back_once_per_state(monkeypatch):
    seen = []
    work = objects.optimizer_recipe
    monkeypatch.setattr(objects, "optimizer_recipe", lambda *args: seen.append(1) or work(*args))
    dialect = PaddleDialect()  # (its own memo)
    schedule = paddle.optimizer.lr.StepDecay(0.1, step_size=1)
    sgd = paddle.optimizer.SGD(learning_rate=schedule, parameters=paddle.nn.Linear(2, 2).parameters())
    first = dialect.describe_optimizer(sgd)
    assert dialect.describe_optimizer(sgd) is first and len(seen) == 1
    schedule.step()  # (its epoch: written anew)
    assert "last_epoch=0" in str(dialect.describe_optimizer(sgd)) and len(seen) == 2
    sgd._parameter_list.append(paddle.create_parameter([3], "float32"))  # (a tensor more, in place)
    assert "[3]" in str(dialect.describe_optimizer(sgd)) and len(seen) == 3
    dialect.describe_optimizer(sgd)
    assert len(seen) == 3


PROGRAM = """
    import os, random, sys, threading, warnings
    import numpy as np
    import paddle
    warnings.simplefilter("always")  # every warning shown, however often: none may be added
    paddle.seed(7); np.random.seed(7); random.seed(7)
    model = paddle.nn.Sequential(paddle.nn.Linear(4, 8), paddle.nn.Dropout(0.5), paddle.nn.Linear(8, 4))
    lstm = paddle.nn.LSTM(4, 6)  # built without packing its weights
    schedule = paddle.optimizer.lr.StepDecay(0.1, step_size=1, verbose=True)  # prints as it steps
    opt = paddle.optimizer.Momentum(learning_rate=schedule, parameters=model.parameters())
    print(sorted(os.listdir(".")))

    def run():
        for _ in range(2):
            loss = model(paddle.randn([3, 4])).sum() + lstm(paddle.randn([2, 3, 4]))[0].sum()
            loss.backward(); opt.step(); opt.clear_grad(); schedule.step()
        print(float(loss))

    def reader(done, said):  # a data loader's thread, drawing while the layers are described
        mine, theirs = random.Random(11), np.random.RandomState(11)
        draws = 0
        while not done.is_set() or draws < 1000:
            draws += 1
            if random.random() != mine.random() or np.random.rand() != theirs.rand():
                said.append(f"draw {draws} was drawn before")
                return

    random.seed(11); np.random.seed(11)
    sys.setswitchinterval(1e-5)  # (the threads take turns often: the reader draws during the builds)
    done, said = threading.Event(), []
    thread = threading.Thread(target=reader, args=(done, said))
    thread.start()
    if sys.argv[1] == "traced":
        from api_tracer import APITracer
        apis = ["paddle.nn.Sequential.forward", "paddle.nn.LSTM.forward", "paddle.optimizer.Momentum.step"]
        with APITracer(dialect="paddle", output_path="../trace", levels=0, merge_output=True, api_list=apis):
            run()
    else:
        run()
    done.set(); thread.join()
    print("the reader's draws:", said or "each new")  # (numpy's and Python's: none drawn or put back but its own)
    random.seed(13); np.random.seed(13)  # (it drew as many as it had time for)
    print(paddle.randn([3]).numpy().tolist(), np.random.rand(2).tolist(), random.random())
    print(sorted(os.listdir(".")))
"""


def test_tracing_draws_prints_warns_and_writes_as_untraced(tmp_path):
    """The descriptions build layers, an LSTM among them, an optimizer and a
    verbose scheduler, while another thread draws numbers: that thread never
    draws a number twice, the program draws the same numbers afterwards,
    prints and warns the same, and finds no new file."""
    runs = {}
    for mode in ("untraced", "traced"):
        (tmp_path / mode).mkdir()
        runs[mode] = run_script(PROGRAM, tmp_path / mode, mode, timeout=300)
        assert runs[mode].returncode == 0, runs[mode].stderr[-3000:]
    assert runs["traced"].stdout == runs["untraced"].stdout
    assert "the reader's draws: each new" in runs["traced"].stdout
    assert runs["traced"].stderr == runs["untraced"].stderr
    lines = (tmp_path / "trace" / "api_configs.yaml").read_text().splitlines()
    assert any(line.startswith("paddle.nn.LSTM.forward(paddle.nn.LSTM(4, 6)") for line in lines), lines
    assert any("paddle.optimizer.lr.StepDecay(0.1, 1, last_epoch=0, verbose=True)" in line for line in lines), lines


def test_a_build_hides_its_own_warnings_not_another_threads():
    with warnings.catch_warnings(record=True) as caught:  # (the test's own filters)
        warnings.simplefilter("always")
        with objects.probing():
            warnings.warn("the build's", stacklevel=1)
            other = threading.Thread(target=warnings.warn, args=("another thread's",))
            other.start()
            other.join()
        warnings.warn("after the build", stacklevel=1)
    assert [str(w.message) for w in caught] == ["another thread's", "after the build"]
