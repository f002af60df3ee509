"""Nothing recorded is lost, and a traced program behaves as untraced."""

import signal
import warnings

import pytest
import torch
import yaml

from api_tracer import APITracer
from support import read_set, run_script, trace_lines


def test_exception_in_block_keeps_every_call_and_propagates(out):
    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with APITracer(output_path=str(out), levels=[1, 2], merge_output=True):
            for i in range(100):
                torch.full((2,), float(i))
            raise Boom()
    lines = trace_lines(out)
    assert lines[0::2] == [f"torch.full((2,), {float(i)!r})" for i in range(100)]
    assert len(yaml.safe_load(read_set(out)["api_trace.yaml"])) == len(lines) == 200
    assert "Total API calls: 200" in read_set(out)["api_statistics.yaml"]


def test_yaml_record_count_equals_text_lines_on_a_large_trace(out):
    """Past the 1 MiB buffer the trace is on disk while tracing still runs."""
    with APITracer(output_path=str(out), levels=[1, 2], merge_output=True):
        x = torch.ones(3, 3)
        for i in range(6000):
            x = x.mul(1.0).add(i % 7)
        size_while_tracing = (out / "api_trace.yaml").stat().st_size
    assert size_while_tracing > 1 << 20
    text = read_set(out)
    lines = text["api_trace.txt"].splitlines()
    assert len(lines) == 4 * 6000 + 2
    assert len(yaml.load(text["api_trace.yaml"], Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))) == len(lines)
    assert len(text["api_configs.yaml"].splitlines()) == 2 + 2 + 7 + 7


def test_no_signal_handler_and_no_warning_filter_changes(out):
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    filters = list(warnings.filters)
    with APITracer(output_path=str(out), levels=[0, 1, 2], merge_output=True):
        assert {s: signal.getsignal(s) for s in handlers} == handlers
        assert warnings.filters == filters
        torch.ones(1)
    assert {s: signal.getsignal(s) for s in handlers} == handlers
    assert warnings.filters == filters


def test_warnings_raised_by_traced_code_reach_the_program(out):
    with APITracer(output_path=str(out), levels=[0, 1, 2], merge_output=True):
        with pytest.warns(UserWarning, match="mine"):
            warnings.warn("mine", stacklevel=1)


def test_start_without_stop_still_writes_at_exit(tmp_path):
    code = """
        import torch
        from api_tracer import APITracer
        APITracer(output_path="t", levels=[0, 1], merge_output=True).start()
        torch.ones(2)
        raise SystemExit(3)
    """
    result = run_script(code, tmp_path)
    assert result.returncode == 3
    assert (tmp_path / "t" / "api_trace.txt").read_text() == "torch.ones(2)\n"
    assert "Total API calls: 1" in (tmp_path / "t" / "api_statistics.yaml").read_text()


def test_uncaught_exception_inside_block_writes_files_and_keeps_traceback(tmp_path):
    code = """
        import torch
        from api_tracer import APITracer
        with APITracer(output_path="t", levels=1, merge_output=True):
            torch.zeros(3)
            torch.add(torch.ones(2), torch.ones(3))
    """
    result = run_script(code, tmp_path)
    assert result.returncode == 1
    assert "RuntimeError: The size of tensor a (2) must match" in result.stderr
    assert (tmp_path / "t" / "api_trace.txt").read_text().splitlines()[
        -1
    ] == 'torch.add(Tensor([2], "float32"), Tensor([3], "float32"))'


def test_results_are_the_same_as_untraced(out):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    x = torch.randn(5, 4)

    def step():
        model.zero_grad()
        loss = model(x).pow(2).sum()
        loss.backward()
        return loss.detach(), [p.grad.clone() for p in model.parameters()]

    ref_loss, ref_grads = step()
    with APITracer(output_path=str(out), levels=[0, 1, 2], merge_output=True):
        loss, grads = step()
    assert torch.equal(loss, ref_loss)
    assert all(torch.equal(a, b) for a, b in zip(grads, ref_grads))
