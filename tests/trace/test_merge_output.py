"""merge_output: one set for all levels, a call several levels saw is one record."""

import torch
import yaml

from api_tracer import APITracer
from support import read_set, trace_lines, yaml_records


def test_merged_levels_record_a_shared_call_once(out):
    with APITracer(output_path=str(out), levels=[0, 1, 2], merge_output=True):
        a = torch.ones(2)
        torch.add(a, a, alpha=3)
        a.sum()
    records = yaml_records(out)
    pairs = [(r["level"], r["api"]) for r in records]
    assert pairs == [
        (0, "torch.ones"),
        (2, "torch.ops.aten.ones.default"),
        (0, "torch.add"),
        (2, "torch.ops.aten.add.Tensor"),
        (0, "torch.Tensor.sum"),
        (2, "torch.ops.aten.sum.default"),
    ]
    assert len(trace_lines(out)) == len(records)


def test_separate_sets_per_level(out):
    with APITracer(output_path=str(out), levels=[0, 1, 2], merge_output=False):
        a = torch.ones(2)
        torch.add(a, a, alpha=3)
    assert trace_lines(out, "_level_0") == [
        "torch.ones(2)",
        'torch.add(Tensor([2], "float32"), Tensor([2], "float32"), alpha=3)',
    ]
    assert trace_lines(out, "_level_1") == trace_lines(out, "_level_0")
    assert [line.split("(")[0] for line in trace_lines(out, "_level_2")] == [
        "torch.ops.aten.ones.default",
        "torch.ops.aten.add.Tensor",
    ]
    for level in (0, 1, 2):
        files = read_set(out, f"_level_{level}")
        assert set(files) == {
            "api_trace.yaml",
            "api_trace.txt",
            "api_apis.txt",
            "api_configs.yaml",
            "api_statistics.yaml",
        }
        assert "level:" not in files["api_trace.yaml"]
    assert not (out / "api_trace.txt").exists()


def test_merge_without_direct_nesting_keeps_both(out):
    """Level 1 sees F.linear inside nn.Linear.forward (level 0): two APIs, two records."""
    lin = torch.nn.Linear(2, 2)
    with APITracer(output_path=str(out), levels=[0, 1], merge_output=True):
        lin(torch.ones(1, 2))
    apis = [(r["level"], r["api"]) for r in yaml_records(out)]
    assert apis == [(0, "torch.ones"), (0, "torch.nn.Linear.forward"), (1, "torch.nn.functional.linear")]


def test_single_level_merged_output_has_no_level_field(out):
    with APITracer(output_path=str(out), levels=2, merge_output=True):
        torch.ones(1)
    assert "level" not in yaml.safe_load(read_set(out)["api_trace.yaml"])[0]
