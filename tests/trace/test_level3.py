"""Level 3: the native observer (at::RecordFunction)."""

import pytest
import torch
import torch.nn as nn
import yaml

from api_tracer import _C, APITracer
from support import read_set, run_in_threads, trace_linear_backward, trace_lines, yaml_records


def test_aten_ops_with_keyword_only_arguments(out):
    with APITracer(output_path=str(out), levels=3, merge_output=True):
        torch.zeros(3, dtype=torch.float16)
        torch.add(torch.ones(2), torch.ones(2), alpha=3)
    assert trace_lines(out) == [
        'torch.ops.aten.zeros.default([3], dtype=torch.float16, device=torch.device("cpu"), pin_memory=False)',
        'torch.ops.aten.ones.default([2], device=torch.device("cpu"), pin_memory=False)',
        'torch.ops.aten.ones.default([2], device=torch.device("cpu"), pin_memory=False)',
        'torch.ops.aten.add.Tensor(Tensor([2], "float32"), Tensor([2], "float32"), alpha=3)',
    ]


def test_same_config_lines_as_level_2(out):
    """For the calls both levels see (ops with kernels of their own, not
    composites that level 2 only sees in parts), the lines are the same."""
    x = torch.randn(4, 5)
    xt = torch.randn(5, 4)
    idx = torch.tensor([0, 2])

    def work():
        torch.relu(x)
        x.sum(dim=1, keepdim=True)
        torch.cat([x, x], dim=0)
        torch.mul(x, 2)
        torch.add(x, x, alpha=0.5)
        torch.clamp(x, min=-1.0)
        torch.where(x > 0, x, -x)
        torch.zeros(2, 3, dtype=torch.int8)
        torch.empty_strided((2, 3), (1, 2))
        x.index_select(0, idx)
        torch.mm(x, xt)
        torch.mul(x, 1.5)
        torch.eq(x, True)

    with APITracer(output_path=str(out / "l2"), levels=2, merge_output=True):
        work()
    with APITracer(output_path=str(out / "l3"), levels=3, merge_output=True):
        work()
    assert len(trace_lines(out / "l2")) >= 12
    assert trace_lines(out / "l3") == trace_lines(out / "l2")


def test_the_tracers_own_operators_are_not_recorded(out):
    """Describing a module for level 0 rebuilds it on the meta device: the
    operators that runs are the tracer's, not the program's."""
    linear, x = nn.Linear(3, 4), torch.randn(2, 3)
    with APITracer(output_path=str(out), levels=[0, 3], merge_output=True):
        linear(x)
        with _C.suspended():
            torch.ones(2)
    assert trace_lines(out) == [
        'torch.nn.Linear.forward(torch.nn.Linear(3, 4), Tensor([2, 3], "float32"))',
        'torch.ops.aten.linear.default(Tensor([2, 3], "float32"), Tensor([4, 3], "float32"), Tensor([4], "float32"))',
    ]


def test_backward_records_name_their_autograd_node(out):
    trace_linear_backward(out, 3)
    records = yaml_records(out)
    forward = [r for r in records if "backward" not in r]
    backward = [r for r in records if "backward" in r]
    assert [r["api"] for r in forward][:3] == [
        "torch.ops.aten.linear.default",
        "torch.ops.aten.relu.default",
        "torch.ops.aten.sum.default",
    ]
    nodes = {r["backward"] for r in backward}
    assert {"ReluBackward0", "AddmmBackward0", "SumBackward0"} <= nodes
    relu_bwd = next(r for r in backward if r["api"] == "torch.ops.aten.threshold_backward.default")
    assert relu_bwd["backward"] == "ReluBackward0"
    # the config line is the same either way: no trace of the node in it
    assert all("Backward" not in line for line in trace_lines(out))
    assert len(trace_lines(out)) == len(records)


def test_nesting_choices(out):
    x, w, b = torch.randn(2, 3), torch.randn(4, 3), torch.randn(4)
    for nesting in ("outermost", "all", "innermost"):
        with APITracer(output_path=str(out / nesting), levels=3, merge_output=True, nesting=nesting):
            torch.nn.functional.linear(x, w, b)
    names = {n: [line.split("(")[0] for line in trace_lines(out / n)] for n in ("outermost", "all", "innermost")}
    assert names["outermost"] == ["torch.ops.aten.linear.default"]
    every = yaml_records(out / "all")
    assert [(r["api"], r["depth"]) for r in every[:5]] == [
        ("torch.ops.aten.linear.default", 0),
        ("torch.ops.aten.t.default", 1),
        ("torch.ops.aten.transpose.int", 2),
        ("torch.ops.aten.as_strided.default", 3),
        ("torch.ops.aten.addmm.default", 1),
    ]
    # innermost: exactly the calls of "all" that have no call nested in them
    depths = [r["depth"] for r in every] + [-1]
    leaves = [r["api"] for i, r in enumerate(every) if depths[i + 1] <= depths[i]]
    assert names["innermost"] == leaves
    assert "torch.ops.aten.addmm.default" not in leaves
    assert "depth" not in yaml_records(out / "outermost")[0]


def test_every_thread_is_recorded(out):
    n_threads, n_calls = 4, 25

    def work():
        for _ in range(n_calls):
            torch.ones(3).neg()

    with APITracer(output_path=str(out), levels=3, merge_output=True):
        run_in_threads(work, n_threads)
    stats = (out / "api_statistics.yaml").read_text()
    assert f"torch.ops.aten.neg.default: {n_threads * n_calls} " in stats
    assert f"torch.ops.aten.ones.default: {n_threads * n_calls} " in stats
    assert len(trace_lines(out)) == 2 * n_threads * n_calls == len(yaml_records(out))


def test_value_ranges(out):
    emb = nn.Embedding(50, 4)
    with APITracer(output_path=str(out), levels=3, merge_output=True, value_ranges=True):
        emb(torch.tensor([[3, 7], [1, 2]]))
        emb(torch.tensor([[30, 9], [4, 5]]))
        torch.where(torch.tensor([True, False]), 1.0, 0.0)
        torch.ones(0, dtype=torch.int64).neg()
    ranges = {r["config"]: r["ranges"] for r in yaml.safe_load((out / "api_value_ranges.yaml").read_text())}
    emb_line = 'torch.ops.aten.embedding.default(Tensor([50, 4], "float32"), Tensor([2, 2], "int64"))'
    assert ranges[emb_line] == {"args[1]": [1, 30]}
    where = next(k for k in ranges if k.startswith("torch.ops.aten.where"))
    assert ranges[where] == {"args[0]": [0, 1]}
    assert not any(k.startswith("torch.ops.aten.neg") for k in ranges)  # empty: no values


def test_no_value_ranges_file_by_default(out):
    with APITracer(output_path=str(out), levels=3, merge_output=True):
        torch.arange(4).neg()
    assert not (out / "api_value_ranges.yaml").exists()


def test_observer_only_while_tracing_and_twice_gives_the_same_files(out):
    def work():
        torch.ones(2, 2).mm(torch.ones(2, 2)).sum()

    for run in ("a", "b"):
        tracer = APITracer(output_path=str(out / run), levels=3, merge_output=True)
        assert not _C.observer_installed()
        with tracer:
            assert _C.observer_installed()
            work()
        assert not _C.observer_installed()
        work()  # after stop: not recorded
    assert read_set(out / "a") == read_set(out / "b")
    assert len(trace_lines(out / "a")) == 4


def test_exception_in_traced_code_loses_nothing(out):
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes"):
        with APITracer(output_path=str(out), levels=3, merge_output=True):
            torch.ones(3).neg()
            torch.ones(2, 3).mm(torch.ones(2, 3))
    lines = trace_lines(out)
    assert lines[-1] == 'torch.ops.aten.mm.default(Tensor([2, 3], "float32"), Tensor([2, 3], "float32"))'
    assert 'torch.ops.aten.neg.default(Tensor([3], "float32"))' in lines


def test_merged_with_level_2_one_record_per_op(out):
    with APITracer(output_path=str(out), levels=[2, 3], merge_output=True):
        torch.ones(2).neg()
        torch.nn.functional.linear(torch.ones(1, 2), torch.ones(3, 2))
    pairs = [(r["level"], r["api"]) for r in yaml_records(out)]
    assert pairs == [
        (3, "torch.ops.aten.ones.default"),
        (3, "torch.ops.aten.neg.default"),
        (3, "torch.ops.aten.ones.default"),
        (3, "torch.ops.aten.ones.default"),
        (3, "torch.ops.aten.linear.default"),  # composite: level 2 sees its parts
        (2, "torch.ops.aten.t.default"),
        (2, "torch.ops.aten.mm.default"),
    ]


def test_streaming_off_keeps_configs_and_statistics(out):
    with APITracer(output_path=str(out), levels=3, merge_output=True, stream_trace=False):
        for _ in range(10):
            torch.ones(2).neg()
    assert set(read_set(out)) == {"api_apis.txt", "api_configs.yaml", "api_statistics.yaml"}
    assert "torch.ops.aten.neg.default: 10 (50.00%)" in (out / "api_statistics.yaml").read_text()


def test_level_3_alone_runs_compiled_code(out):
    """Levels 0-2 run compiled functions eagerly; level 3 alone leaves them
    compiled: the compiled kernel calls none of f's aten operators."""
    torch._dynamo.reset()
    f = torch.compile(lambda x: (x.sin() * 2).sum())
    x = torch.randn(8)
    with APITracer(output_path=str(out / "compiling"), levels=3):  # not as a level 1 around the test has it
        expected = f(x)
    with APITracer(output_path=str(out / "compiled"), levels=3, merge_output=True):
        got = f(x)
    assert torch.equal(got, expected)
    assert "aten.sin" not in (out / "compiled" / "api_configs.yaml").read_text()


def test_an_operator_redefined_by_a_new_library_is_read_by_its_new_schema(tmp_path):
    # The same operator name, defined, destroyed and defined again with
    # other arguments: each session names the arguments its schema has.
    lines = []
    for i, schema in enumerate(("redef(Tensor x, int k=1) -> Tensor", "redef(Tensor x, *, float scale) -> Tensor")):
        lib = torch.library.Library("api_tracer_l3_test", "DEF")
        lib.define(schema)
        lib.impl("redef", lambda x, *a, **kw: x.clone(), "CompositeExplicitAutograd")
        out = tmp_path / str(i)
        with APITracer(output_path=str(out), levels=3, merge_output=True):
            if i == 0:
                torch.ops.api_tracer_l3_test.redef(torch.ones(2), 3)
            else:
                torch.ops.api_tracer_l3_test.redef(torch.ones(2), scale=0.5)
        lib._destroy()
        lines.append([t for t in trace_lines(out) if "api_tracer_l3_test" in t])
    assert lines[0] == ['torch.ops.api_tracer_l3_test.redef.default(Tensor([2], "float32"), 3)']
    assert lines[1] == ['torch.ops.api_tracer_l3_test.redef.default(Tensor([2], "float32"), scale=0.5)']


def test_operators_that_come_and_go_within_one_session_keep_their_own_names(tmp_path):
    with APITracer(output_path=str(tmp_path), levels=3, merge_output=True):
        for name in ("first", "other"):
            lib = torch.library.Library(f"api_tracer_l3_{name}", "DEF")
            lib.define(f"{name}(Tensor x) -> Tensor")
            lib.impl(name, lambda x: x.clone(), "CompositeExplicitAutograd")
            getattr(getattr(torch.ops, f"api_tracer_l3_{name}"), name)(torch.ones(2))
            lib._destroy()
    lines = [t for t in trace_lines(tmp_path) if "api_tracer_l3_" in t]
    assert lines == [
        'torch.ops.api_tracer_l3_first.first.default(Tensor([2], "float32"))',
        'torch.ops.api_tracer_l3_other.other.default(Tensor([2], "float32"))',
    ]


def test_the_tracers_own_work_is_not_recorded_at_level_3(out):
    from api_tracer import _C

    with APITracer(output_path=str(out), levels=3, merge_output=True):
        torch.neg(torch.ones(2))
        with _C.suspended():
            torch.abs(torch.ones(2))
        torch.exp(torch.ones(2))
    names = [line.split("(")[0] for line in trace_lines(out)]
    assert "torch.ops.aten.abs.default" not in names
    assert "torch.ops.aten.neg.default" in names and "torch.ops.aten.exp.default" in names


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_a_kernels_intra_op_threads_are_nested_in_it(tmp_path, threads):
    """conv_transpose2d's slow CPU kernel runs aten.select on torch's
    intra-op worker threads when there are several: those calls are the kernel's,
    not the program's. One call of it is one record at every number of
    threads; with nesting="all" the workers' calls say their thread."""
    import subprocess
    import sys

    script = f"""
import torch, sys
torch.set_num_threads({threads})
from api_tracer import APITracer
# float64: the slow kernel (not oneDNN's), whose parallel loop over the batch selects each sample
x, w = torch.randn(4, 8, 16, 16, dtype=torch.float64), torch.randn(8, 4, 3, 3, dtype=torch.float64)
torch.nn.functional.conv_transpose2d(x, w, dilation=2)
for nesting in ("outermost", "all"):
    with APITracer(output_path=sys.argv[1] + "/" + nesting, levels=3, merge_output=True, nesting=nesting):
        torch.nn.functional.conv_transpose2d(x, w, dilation=2)
"""
    r = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert [line.split("(")[0] for line in trace_lines(tmp_path / "outermost")] == [
        "torch.ops.aten.conv_transpose2d.input"
    ]  # 1 + 6 aten.select.int on 2 threads, before
    every = yaml_records(tmp_path / "all")
    assert every[0]["api"] == "torch.ops.aten.conv_transpose2d.input" and every[0]["depth"] == 0
    assert all(r["depth"] >= 1 for r in every[1:])
    workers = {r["thread"] for r in every if "thread" in r}
    assert workers <= set(range(1, threads)) and (workers if threads > 1 else True)
