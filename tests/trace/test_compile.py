"""A function under torch.compile runs, and returns what it returns untraced, at every level."""

import pytest
import torch

from api_tracer import APITracer
from support import run_script, trace_lines


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
        2: [
            "torch.ops.aten.sin.default",
            "torch.ops.aten.mul.Tensor",
            "torch.ops.aten.sum.default",
            "torch.ops.aten.add.Tensor",
        ],
    }
    assert names == expected[level]
    # The compiler's stance is back: the function compiles again after stop.
    assert torch.equal(compiled(x, y), untraced)


def test_a_function_first_compiled_inside_the_block_runs_eagerly_there(tmp_path):
    # A fresh process where dynamo is not loaded when tracing starts: the
    # stance is set the moment the program's torch.compile loads it.
    code = """
        import sys
        import torch
        from api_tracer import APITracer

        compiled_graphs = []

        def backend(gm, inputs):
            compiled_graphs.append(gm)
            return gm.forward

        def f(x):
            return torch.sin(x) * 2

        x = torch.randn(4)
        print("torch._dynamo" in sys.modules)
        with APITracer(output_path="out", levels=1, merge_output=True):
            compiled = torch.compile(f, backend=backend)
            traced = compiled(x)
        print(len(compiled_graphs), torch.equal(traced, f(x)))
        compiled(x)
        print(len(compiled_graphs))
    """
    result = run_script(code, tmp_path)
    assert result.stdout.split() == ["False", "0", "True", "1"], result.stderr
    names = [line.split("(")[0] for line in (tmp_path / "out" / "api_trace.txt").read_text().splitlines()]
    assert names[-2:] == ["torch.sin", "torch.Tensor.mul"]


def test_tracing_leaves_torch_as_it_was_and_does_not_load_the_compiler(tmp_path):
    code = """
        import sys
        import torch
        from api_tracer import APITracer

        def block():
            x = torch.nn.Linear(3, 2)(torch.ones(4, 3))
            x.sum().backward()

        def namespaces():
            spaces = {n: m for n, m in list(sys.modules.items()) if n == "torch" or n.startswith("torch.")}
            spaces.update({"torch.Tensor": torch.Tensor, "torch.nn.Module": torch.nn.Module})
            return {n: dict(vars(m)) for n, m in spaces.items()}

        block()  # torch's own lazily filled caches, filled untraced
        before = namespaces()
        with APITracer(output_path="out", levels=[0, 1, 2, 3], merge_output=True):
            block()
        after = namespaces()
        for name, attrs in before.items():
            for attr, value in attrs.items():
                if after[name].get(attr, attrs) is not value:
                    print("changed", name, attr)
            for attr in after[name].keys() - attrs.keys():
                print("added", name, attr)
        print("new modules", sorted(after.keys() - before.keys()))
        print("dynamo", "torch._dynamo" in sys.modules)
    """
    result = run_script(code, tmp_path)
    assert result.stdout == "new modules []\ndynamo False\n", result.stderr
    assert "torch.nn.Linear" in (tmp_path / "out" / "api_apis.txt").read_text()
