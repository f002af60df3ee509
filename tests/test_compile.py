"""A function under torch.compile runs, and returns what it returns untraced, at every level."""
import pytest
import torch

from api_tracer import APITracer
from conftest import trace_lines


def f(x, y):
    return torch.sin(x) * y + x.sum()


@pytest.mark.parametrize("level", [0, 1, 2])
def test_compiled_function_runs_and_agrees(out, level):
    torch._dynamo.reset()
    compiled = torch.compile(f)
    x, y = torch.randn(16), torch.randn(16)
    untraced = compiled(x, y)
    with APITracer(output_path=str(out), levels=level, merge_output=True):
        traced = compiled(x, y)
    # While tracing, the function runs eagerly (so each call is seen):
    # its result agrees with the compiled one up to kernel fusion rounding.
    torch.testing.assert_close(traced, untraced)
    assert torch.equal(traced, f(x, y))
    names = [line.split("(")[0] for line in trace_lines(out)]
    expected = {
        0: ["torch.sin", "torch.Tensor.__mul__", "torch.Tensor.sum", "torch.Tensor.__add__"],
        1: ["torch.sin", "torch.Tensor.mul", "torch.Tensor.sum", "torch.Tensor.add"],
        2: ["torch.ops.aten.sin.default", "torch.ops.aten.mul.Tensor", "torch.ops.aten.sum.default",
            "torch.ops.aten.add.Tensor"],
    }
    assert names == expected[level]
    # The compiler's stance is back: the function compiles again after stop.
    assert torch.equal(compiled(x, y), untraced)
