"""Paddle's levels (frameworks/paddle/hooks.py): level 0 the outermost public
API calls, level 1 every public API call (nested ones too), level 2 every
eager operator (paddle._C_ops), in order inside the API that called it;
levels combined and merged as torch's are; every config of levels 1 and 2
replays and traces back as itself at its level."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from api_tracer import APITracer
from api_tracer.formats.configs import read_config_file
from api_tracer.frameworks.paddle.hooks import operators
from api_tracer.replay import ReplayOptions, roundtrip, run_in_process

paddle = pytest.importorskip("paddle")


def step(net, opt, x, y) -> float:
    loss = paddle.nn.functional.cross_entropy(net(x), y)
    loss.backward()
    opt.step()
    opt.clear_grad()
    return float(loss)


def model():
    paddle.seed(0)
    net = paddle.nn.Sequential(
        paddle.nn.Conv2D(3, 8, 3, padding=1),
        paddle.nn.BatchNorm2D(8),
        paddle.nn.ReLU(),
        paddle.nn.AdaptiveAvgPool2D(1),
        paddle.nn.Flatten(),
        paddle.nn.Linear(8, 4),
    )
    opt = paddle.optimizer.AdamW(parameters=net.parameters(), learning_rate=1e-3)
    return net, opt, paddle.randn([2, 3, 16, 16]), paddle.to_tensor([1, 3])


def traced(tmp_path: Path, levels, merge: bool = True) -> Path:
    out = tmp_path / f"trace_{levels}_{merge}"
    net, opt, x, y = model()
    with APITracer(dialect="paddle", output_path=str(out), levels=levels, merge_output=merge):
        step(net, opt, x, y)
    return out


def lines(path: Path) -> list:
    return path.read_text().splitlines()


def apis(path: Path) -> set:
    return {line.partition("(")[0] for line in lines(path)}


INSIDE_LAYERS = {
    "paddle.nn.functional.batch_norm",
    "paddle.nn.functional.relu",
    "paddle.nn.functional.adaptive_avg_pool2d",
    "paddle.nn.functional.linear",
    "paddle.flatten",
}
OPERATORS = {
    "paddle._C_ops.conv2d",
    "paddle._C_ops.batch_norm",
    "paddle._C_ops.relu",
    "paddle._C_ops.pool2d",
    "paddle._C_ops.linear",
    "paddle._C_ops.flatten",
    "paddle._C_ops.cross_entropy_with_softmax",
    "paddle._C_ops.adamw_",
}


def test_level_0_keeps_the_outermost_calls_level_1_every_public_call_level_2_the_operators(tmp_path):
    out = traced(tmp_path, [0, 1, 2], merge=False)
    level0 = apis(out / "api_trace_level_0.txt")
    level1 = apis(out / "api_trace_level_1.txt")
    level2 = apis(out / "api_trace_level_2.txt")
    assert level0 == {
        "paddle.nn.Sequential.forward",
        "paddle.nn.functional.cross_entropy",
        "paddle.Tensor.backward",
        "paddle.optimizer.AdamW.step",
        "paddle.optimizer.AdamW.clear_grad",
        "paddle.Tensor.__float__",
    }
    assert level0 | INSIDE_LAYERS | {"paddle.nn.Conv2D.forward", "paddle.nn.Linear.forward"} <= level1
    assert not any(api.startswith("paddle._C_ops.") for api in level1)
    assert OPERATORS <= level2
    assert all(api.startswith("paddle._C_ops.") for api in level2)


def test_each_level_records_what_it_records_alone_whichever_levels_run_beside_it(tmp_path):
    together = traced(tmp_path, [0, 1, 2], merge=False)
    for level in (0, 1, 2):
        alone = traced(tmp_path, level, merge=False)
        assert lines(alone / f"api_trace_level_{level}.txt") == lines(together / f"api_trace_level_{level}.txt")


def test_merged_a_call_two_levels_saw_is_one_record(tmp_path):
    merged = lines(traced(tmp_path, [0, 1]) / "api_trace.txt")
    level1 = lines(traced(tmp_path, 1) / "api_trace.txt")
    assert merged == level1
    assert sum(line.startswith("paddle.nn.Sequential.forward(") for line in merged) == 1


def test_an_operator_is_recorded_inside_the_api_that_called_it(tmp_path):
    trace = [line.partition("(")[0] for line in lines(traced(tmp_path, [1, 2]) / "api_trace.txt")]
    linear = trace.index("paddle.nn.functional.linear")
    assert trace[linear - 1 : linear + 2] == [
        "paddle.nn.Linear.forward",
        "paddle.nn.functional.linear",
        "paddle._C_ops.linear",
    ]
    # Conv2D.forward calls paddle's private _conv_nd: its operators follow it
    conv = trace.index("paddle.nn.Conv2D.forward")
    assert [api for api in trace[conv:] if api.startswith("paddle._C_ops.")][0] == "paddle._C_ops.conv2d"


def test_backward_operators_are_recorded_inside_the_backward_call(tmp_path):
    trace = lines(traced(tmp_path, [1, 2]) / "api_trace.txt")
    names = [line.partition("(")[0] for line in trace]
    backward = names.index("paddle.Tensor.backward")
    step = names.index("paddle.optimizer.AdamW.step")
    grads = [n for n in names[backward + 1 : step] if n.startswith("paddle._C_ops.")]
    # the engine runs the last operator's backward first
    assert grads[:2] == ["paddle._C_ops.mean_all_grad", "paddle._C_ops.cross_entropy_with_softmax_grad"]
    assert {"paddle._C_ops.matmul_grad", "paddle._C_ops.conv2d_grad", "paddle._C_ops.batch_norm_grad"} <= set(grads)
    assert all(n.endswith("_grad") for n in grads)
    # with the inputs the backward API takes: matmul_grad(x, y, out_grad, transpose_x, transpose_y)
    assert (
        'paddle._C_ops.matmul_grad(Tensor([2, 8], "float32"), Tensor([8, 4], "float32"), '
        'Tensor([2, 4], "float32"), False, False)'
    ) in trace


def test_nothing_is_recorded_inside_a_quiet_call_at_any_level(tmp_path):
    out = tmp_path / "quiet"
    x = paddle.ones([2, 2])
    with APITracer(dialect="paddle", output_path=str(out), levels=[1, 2], merge_output=True):
        text = repr(x)
        paddle.abs(x)
    assert "Tensor(shape=[2, 2]" in text
    assert apis(out / "api_trace.txt") == {"paddle.abs", "paddle._C_ops.abs"}


def test_the_apis_are_the_very_objects_they_were_and_are_restored(tmp_path):
    before = dict(operators())
    relu = paddle.nn.functional.relu
    code = relu.__code__
    traced(tmp_path, [1, 2])
    assert dict(operators()) == before
    assert paddle.nn.functional.relu is relu and relu.__code__ is code
    # after the session, nothing records any more
    out = tmp_path / "after"
    with APITracer(dialect="paddle", output_path=str(out), levels=0, merge_output=True):
        pass
    paddle.nn.functional.relu(paddle.ones([2]))
    paddle._C_ops.relu(paddle.ones([2]))
    assert lines(out / "api_trace.txt") == []


def test_every_eager_operator_is_patched_in_place_but_those_that_are_public_apis_too(tmp_path):
    ops = operators()
    assert len(ops) > 1000 and all(isinstance(fn, types.BuiltinFunctionType) for _, fn in ops)
    alone = APITracer(dialect="paddle", output_path=str(tmp_path / "a"), levels=2)
    with alone:
        assert alone._hooks[0].skipped == {}
    together = APITracer(dialect="paddle", output_path=str(tmp_path / "b"), levels=[0, 2])
    with together:
        shared = together._hooks[1].skipped
    # one builtin, patched once: paddle.linalg.matmul is paddle._C_ops.matmul
    assert "paddle._C_ops.matmul" in shared and "paddle.linalg.matmul" in shared["paddle._C_ops.matmul"]
    assert len(shared) < 10


def test_the_configs_of_levels_1_and_2_replay_pass_the_check_and_trace_back(tmp_path):
    out = traced(tmp_path, [1, 2], merge=False)
    for level in (1, 2):
        configs = read_config_file(str(out / f"api_configs_level_{level}.yaml"))
        results = run_in_process(configs, ReplayOptions(check="float64"), lambda r: None)
        failing = [(r.config.text, r.status, r.message) for r in results if r.status not in ("ok", "skipped")]
        assert failing == []
        replayable = [c for c, r in zip(configs, results) if r.status == "ok"]
        assert len(replayable) >= (10 if level == 2 else 15)
        assert [(c.text, why) for c, why in roundtrip(replayable, level) if why] == []


def test_batch_norms_saved_statistics_are_workspace_not_compared(tmp_path):
    """In evaluation (is_test) Paddle's batch_norm operator leaves its saved
    mean, saved variance and reserve space as the allocator gives them: a
    float64 check compares its three results, not those."""
    from api_tracer.formats.configs import Config

    line = (
        'paddle._C_ops.batch_norm(Tensor([2, 96, 8, 8], "float32"), Tensor([96], "float32"), '
        'Tensor([96], "float32"), Tensor([96], "float32"), Tensor([96], "float32"), True, 0.9, 1e-05, '
        '"NCHW", True, False)'
    )
    [result] = run_in_process([Config("bn.txt", 1, line)], ReplayOptions(check="float64"), lambda r: None)
    assert result.status == "ok", result.message
    assert "output[3]" in result.message and "not compared" in result.message


def test_coverage_holds_level_2_against_paddles_operators(tmp_path, capsys):
    from api_tracer.cli import main

    out = traced(tmp_path, [1, 2], merge=False)
    assert main(["coverage", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    operators = report["operators"]
    assert operators["groups"][0]["name"] == "paddle._C_ops"
    assert operators["groups"][0]["total"] == len(operators_of_paddle())
    assert set(operators["groups"][0]["touched_names"]) >= OPERATORS
    assert operators["outside"] == []
    # the sets of two frameworks: which to cover is asked for
    torch_set = tmp_path / "torch"
    import torch

    with APITracer(dialect="torch", output_path=str(torch_set), levels=0):
        torch.ones(2).add(1)
    assert main(["coverage", str(out), str(torch_set)]) == 2
    assert "the sets hold the APIs of paddle and torch: name one with --dialect" in capsys.readouterr().err
    assert main(["coverage", str(out), str(torch_set), "--dialect", "paddle", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["operators"]["groups"][0]["name"] == "paddle._C_ops"


def operators_of_paddle() -> list:
    return [name for name, _ in operators()]
