"""api_tracer._paddle_backward records the backward API calls Paddle's eager
autograd engine makes from C++ (matmul_grad, relu_grad, ...), with their
input arguments, and changes nothing: gradients are bit-identical with
recording on, off, and after uninstall(); a recorded call replays through
paddle._C_ops.<name>(*args).

The module patches process-wide GOT slots; every test puts them back.
"""

from __future__ import annotations

import importlib

import pytest

paddle = pytest.importorskip("paddle")
pb = importlib.import_module("api_tracer._paddle_backward")  # built wherever paddle (pinned) is: always here


def make_mlp():
    paddle.seed(1234)
    net = paddle.nn.Sequential(
        paddle.nn.Linear(8, 16), paddle.nn.ReLU(), paddle.nn.Linear(16, 16), paddle.nn.ReLU(), paddle.nn.Linear(16, 4)
    )
    x = paddle.randn([5, 8])
    return net, x


def grads(net, x) -> list[bytes]:
    loss = net(x).mean()
    loss.backward()
    out = [p.grad.numpy().tobytes() for p in net.parameters()]
    net.clear_gradients()
    return out


@pytest.fixture
def recorder():
    calls: list[tuple[str, tuple]] = []
    n = pb.install(lambda name, args: calls.append((name, args)))
    try:
        yield n, calls
    finally:
        pb.set_recording(False)
        pb.uninstall()
    assert pb.patched_slots() == 0


def spec(v):
    return (tuple(v.shape), v.dtype) if isinstance(v, paddle.Tensor) else v


def test_records_mlp_backward_transparently(recorder):
    n, calls = recorder
    assert n > 300  # 418 with Paddle 3.3.0
    assert {"matmul_grad", "relu_grad", "add_grad"} <= set(pb.functions())
    net, x = make_mlp()
    reference = grads(net, x)  # installed, not recording
    assert calls == []

    pb.set_recording(True)
    traced = grads(net, x)
    pb.set_recording(False)
    assert traced == reference

    names = [name for name, _ in calls]
    assert names.count("matmul_grad") == 3
    assert names.count("relu_grad") == 2
    assert names.count("add_grad") == 3
    f32 = paddle.float32
    mm = [tuple(spec(a) for a in args) for name, args in calls if name == "matmul_grad"]
    # the engine runs the last layer first: matmul_grad(x, y, out_grad, transpose_x, transpose_y)
    assert mm == [
        (((5, 16), f32), ((16, 4), f32), ((5, 4), f32), False, False),
        (((5, 16), f32), ((16, 16), f32), ((5, 16), f32), False, False),
        (((5, 8), f32), ((8, 16), f32), ((5, 16), f32), False, False),
    ]
    add = [tuple(spec(a) for a in args) for name, args in calls if name == "add_grad"]
    assert add[0] == (((5, 4), f32), ((4,), f32), ((5, 4), f32), -1)  # add_grad(x, y, out_grad, axis)
    relu = [tuple(spec(a) for a in args) for name, args in calls if name == "relu_grad"]
    assert relu[0] == (((5, 16), f32), ((5, 16), f32))  # relu_grad(out, out_grad)
    mean = [args for name, args in calls if name == "mean_grad"]
    assert mean and mean[0][2:] == ([], False, False)  # IntArray axis -> list, keepdim, reduce_all

    # replay: the first layer's matmul_grad gives its weight's gradient, bit for bit
    x_grad, y_grad = paddle._C_ops.matmul_grad(*calls[names.index("matmul_grad", len(names) - 3)][1])
    assert tuple(x_grad.shape) == (5, 8) and tuple(y_grad.shape) == (8, 16)
    assert y_grad.numpy().tobytes() == reference[0]


def test_attributes_of_other_types(recorder):
    _, calls = recorder
    pb.set_recording(True)
    x = paddle.randn([3, 4])
    x.stop_gradient = False
    paddle.pow(x, 2.0).sum().backward()  # Scalar
    v, _ = paddle.cummax(x, axis=0, dtype="int64")  # DataType
    v.sum().backward()
    a, b = paddle.randn([2, 3]), paddle.randn([2, 5])
    a.stop_gradient = b.stop_gradient = False
    paddle.concat([a, b], axis=1).sum().backward()  # vector<Tensor>, Scalar axis
    pb.set_recording(False)
    by_name = {name: args for name, args in calls}
    assert by_name["pow_grad"][2] == 2.0 and isinstance(by_name["pow_grad"][2], float)
    assert by_name["cummax_grad"][3:] == (0, paddle.int64)
    assert by_name["cummax_grad"][1].dtype == paddle.int64
    xs, out_grad, axis = by_name["concat_grad"]
    assert [tuple(t.shape) for t in xs] == [(2, 3), (2, 5)] and tuple(out_grad.shape) == (2, 8) and axis == 1


def test_double_grad_is_recorded_once(recorder):
    _, calls = recorder
    pb.set_recording(True)
    z = paddle.randn([3])
    z.stop_gradient = False
    (g,) = paddle.grad(paddle.tanh(z).sum(), z, create_graph=True)
    g.sum().backward()
    pb.set_recording(False)
    names = [name for name, _ in calls]
    assert "tanh_grad" in names and names.count("tanh_double_grad") == 1


def test_a_failing_callback_changes_nothing():
    net, x = make_mlp()
    reference = grads(net, x)
    seen = []

    def bad(name, args):
        seen.append(name)
        raise RuntimeError("callback failure")

    pb.install(bad)
    try:
        pb.set_recording(True)
        assert grads(net, x) == reference
    finally:
        pb.set_recording(False)
        pb.uninstall()
    assert "matmul_grad" in seen


def test_uninstall_restores_everything():
    net, x = make_mlp()
    reference = grads(net, x)
    calls = []
    pb.install(lambda name, args: calls.append(name))
    assert pb.patched_slots() > 0
    pb.uninstall()
    assert pb.patched_slots() == 0
    pb.set_recording(True)
    try:
        assert grads(net, x) == reference
    finally:
        pb.set_recording(False)
    assert calls == []
