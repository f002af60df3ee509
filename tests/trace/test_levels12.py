"""Levels 1 (TorchFunctionMode) and 2 (TorchDispatchMode)."""

import threading

import torch
import torch.nn.functional as F

from api_tracer import APITracer
from support import trace_linear_backward, trace_lines, yaml_records


def test_level1_sees_factories_methods_and_functional(out):
    with APITracer(output_path=str(out), levels=1, merge_output=True):
        x = torch.randn(2, 3)
        w = torch.ones(4, 3)
        y = F.linear(x, w)
        y.sum()
        torch.zeros(3, dtype=torch.float16)
    assert trace_lines(out) == [
        "torch.randn(2, 3)",
        "torch.ones(4, 3)",
        'torch.nn.functional.linear(Tensor([2, 3], "float32"), Tensor([4, 3], "float32"))',
        'torch.Tensor.sum(Tensor([2, 4], "float32"))',
        "torch.zeros(3, dtype=torch.float16)",
    ]


def test_level2_sees_forward_and_backward_aten_ops(out):
    lin = trace_linear_backward(out, 2)
    lines = trace_lines(out)
    assert lines[:3] == [
        'torch.ops.aten.t.default(Tensor([4, 3], "float32"))',
        'torch.ops.aten.addmm.default(Tensor([4], "float32"), Tensor([2, 3], "float32"), '
        'Tensor([3, 4], "float32", stride=[1, 3]))',
        'torch.ops.aten.relu.default(Tensor([2, 4], "float32"))',
    ]
    # backward: relu's and addmm's gradients
    assert any(line.startswith("torch.ops.aten.threshold_backward.default(") for line in lines)
    assert any(line.startswith("torch.ops.aten.mm.default(") for line in lines)
    assert all(line.startswith("torch.ops.aten.") for line in lines)
    assert lin.weight.grad is not None


def test_level2_keyword_only_arguments_are_keywords(out):
    with APITracer(output_path=str(out), levels=2, merge_output=True):
        torch.zeros(3, dtype=torch.float16)
    assert trace_lines(out) == [
        'torch.ops.aten.zeros.default([3], dtype=torch.float16, device=torch.device("cpu"), pin_memory=False)'
    ]


def test_calls_one_tracer_sees_are_ours_only(out):
    """The tracer's own work (reading tensors, naming functions) is never recorded."""
    x = torch.randn(3, requires_grad=True)
    with APITracer(output_path=str(out), levels=[1, 2], merge_output=True):
        x.mul(2)
    assert trace_lines(out) == [
        'torch.Tensor.mul(Tensor([3], "float32"), 2)',
        'torch.ops.aten.mul.Tensor(Tensor([3], "float32"), 2)',
    ]
    assert [r["level"] for r in yaml_records(out)] == [1, 2]


def test_modes_follow_the_thread_that_started_tracing(out):
    """Levels 1 and 2 are PyTorch modes: thread-local to the starting thread."""

    def other_thread():
        for _ in range(10):
            torch.ones(1)

    with APITracer(output_path=str(out), levels=[1, 2], merge_output=False):
        t = threading.Thread(target=other_thread)
        t.start()
        for _ in range(25):
            torch.zeros(2)
        t.join()
    assert trace_lines(out, "_level_1") == ["torch.zeros(2)"] * 25
    assert (
        trace_lines(out, "_level_2")
        == ['torch.ops.aten.zeros.default([2], device=torch.device("cpu"), pin_memory=False)'] * 25
    )


def test_property_getters_are_noise_excluded_by_default(out):
    x = torch.ones(2)
    with APITracer(output_path=str(out / "default"), levels=1, merge_output=True):
        x.shape, x.requires_grad, x.grad  # noqa: B018 - the property getters level 1 sees
        x.abs()
    with APITracer(output_path=str(out / "all"), levels=1, merge_output=True, exclude_apis=[]):
        x.shape  # noqa: B018 - a property getter level 1 sees
        x.abs()
    assert trace_lines(out / "default") == ['torch.Tensor.abs(Tensor([2], "float32"))']
    assert trace_lines(out / "all") == [
        'torch.Tensor.shape.__get__(Tensor([2], "float32"))',
        'torch.Tensor.abs(Tensor([2], "float32"))',
    ]


def test_include_patterns(out):
    with APITracer(
        output_path=str(out),
        levels=[1, 2],
        merge_output=True,
        include_apis=["torch.ops.aten.*"],
        exclude_apis=["*.detach.*"],
    ):
        torch.ones(2).abs()
    assert trace_lines(out) == [
        'torch.ops.aten.ones.default([2], device=torch.device("cpu"), pin_memory=False)',
        'torch.ops.aten.abs.default(Tensor([2], "float32"))',
    ]


def test_operator_packets_are_named_under_torch_ops(out):
    with APITracer(output_path=str(out), levels=[1, 2], merge_output=True):
        torch.ops.aten.abs(torch.ones(1))
    assert trace_lines(out) == [
        "torch.ones(1)",
        'torch.ops.aten.ones.default([1], device=torch.device("cpu"), pin_memory=False)',
        'torch.ops.aten.abs(Tensor([1], "float32"))',
        'torch.ops.aten.abs.default(Tensor([1], "float32"))',
    ]


def test_module_to_is_not_recorded_as_its_argument_parsing_and_the_trace_replays(tmp_path):
    """Level 1 sees Module.to parse its arguments (torch._C._nn._parse_to),
    which computes nothing and which replay refuses: it is left out by
    default, so the trace of a model moved and run replays cleanly."""
    import subprocess
    import sys

    model = torch.nn.Linear(2, 2)
    out = tmp_path / "out"
    with APITracer(output_path=str(out), levels=1):
        model.to(torch.float64)
        model(torch.ones(1, 2, dtype=torch.float64))
    configs = (out / "api_configs_level_1.yaml").read_text()
    assert "_parse_to" not in configs and "torch.nn.functional.linear" in configs
    r = subprocess.run(
        [sys.executable, "-m", "api_tracer", "replay", str(out / "api_configs_level_1.yaml")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr


def _under_a_bare_dispatch_mode(f):
    from torch.utils._python_dispatch import TorchDispatchMode

    class PassThrough(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    with PassThrough():
        return f()


def test_torch_computes_some_operators_otherwise_under_any_dispatch_mode():
    """The torch issues README.md lists, pinned: under a bare pass-through
    TorchDispatchMode (what level 2 is) complex pinv and lstsq are wrong
    and svdvals/eigvalsh move in their last bits. When torch fixes one,
    this fails: its entry in frameworks/torch/names.py's DISPATCH_MODE_ISSUES goes."""
    from api_tracer.frameworks.torch import names

    torch.manual_seed(0)
    a = torch.randn(5, 3, dtype=torch.complex64)
    eye = torch.eye(3, dtype=torch.complex64)
    assert (torch.linalg.pinv(a) @ a - eye).abs().max() < 1e-5
    assert (_under_a_bare_dispatch_mode(lambda: torch.linalg.pinv(a)) @ a - eye).abs().max() > 0.1
    b = torch.randn(6, 2, dtype=torch.complex64)
    a6 = torch.randn(6, 3, dtype=torch.complex64)
    right = torch.linalg.lstsq(a6, b, driver="gelsd").residuals
    assert not torch.allclose(
        _under_a_bare_dispatch_mode(lambda: torch.linalg.lstsq(a6, b, driver="gelsd").residuals), right, rtol=1e-3
    )
    m = torch.randn(6, 6)
    assert not torch.equal(_under_a_bare_dispatch_mode(lambda: torch.linalg.svdvals(m)), torch.linalg.svdvals(m))
    s = m + m.T
    assert not torch.equal(_under_a_bare_dispatch_mode(lambda: torch.linalg.eigvalsh(s)), torch.linalg.eigvalsh(s))
    assert set(names.DISPATCH_MODE_ISSUES) == {
        "aten::linalg_pinv",
        "aten::linalg_lstsq",
        "aten::_linalg_svd",
        "aten::_linalg_eigh",
    }


def test_level2_warns_once_at_the_programs_call_where_torch_computes_otherwise(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "prog.py"
    script.write_text(
        "import torch\nfrom api_tracer import APITracer\n"
        "a = torch.randn(5, 3, dtype=torch.complex64)\n"
        f"with APITracer(output_path={str(tmp_path / 'o')!r}, levels=2):\n"
        "    torch.linalg.pinv(a)\n"
        "    torch.linalg.pinv(a)\n"
        f"with APITracer(output_path={str(tmp_path / 'o1')!r}, levels=1):\n"
        "    torch.linalg.pinv(a)\n"
    )
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    warnings = [line for line in r.stderr.splitlines() if "RuntimeWarning" in line]
    assert warnings == [
        f"{script}:5: RuntimeWarning: api_tracer: under level 2's dispatch mode torch computes "
        "aten::linalg_pinv otherwise: complex inputs give a wrong pseudo-inverse (pinv(A) @ A off "
        "the identity by about 1) (a torch issue: README.md, 'Known torch issues')"
    ]


def test_the_modes_name_functions_as_torch_does_and_touch_no_warning_filter(monkeypatch):
    """The modes' names are torch.overrides.resolve_name's, from a table of
    the tracer's own: torch's runs under warnings.catch_warnings, which
    empties every module's registry of the warnings it has shown
    (tests/trace/test_transparency.py shows what that did). Building the
    table and naming with it change no warning filter and warn of nothing."""
    import warnings

    from api_tracer.frameworks.torch.dialect import PyTorchDialect, torch_names

    changes = []
    monkeypatch.setattr(warnings, "_filters_mutated", lambda: changes.append(1))
    monkeypatch.setattr(warnings, "showwarning", lambda *a, **k: changes.append(a))
    torch_names.cache_clear()
    dialect = PyTorchDialect()
    named = [dialect.api_name(f) for f in (torch.add, torch.Tensor.add, F.linear, torch.Tensor.shape.__get__)]
    assert changes == []
    monkeypatch.undo()
    assert named == ["torch.add", "torch.Tensor.add", "torch.nn.functional.linear", "torch.Tensor.shape.__get__"]
    # (torch's table is cached from its first use, which another test in this process may have made
    # before torch._dynamo was imported, which replaces torch.manual_seed: both are made now)
    torch.overrides._get_overridable_functions.cache_clear()
    assert torch_names() == torch.overrides._get_overridable_functions()[1]


def _calls_level_1_never_sees(saved: bytes) -> None:
    """Operators a program reaches past torch's function modes, and two
    gradients that torch sums otherwise under a dispatch mode."""
    import io

    import numpy as np
    from torch.utils.data import DataLoader, TensorDataset

    torch.from_numpy(np.arange(3.0))  # aten.lift_fresh (torch.LongTensor([...]) too)
    torch.load(io.BytesIO(saved))  # Tensor.set_ with a storage (_rebuild_tensor: DataLoader workers' batches too)
    for batch in DataLoader(TensorDataset(torch.arange(8.0).reshape(4, 2), torch.arange(4)), batch_size=2):
        torch.stack(batch[:1])
    w = torch.ones(2, requires_grad=True)
    (w * 2 + w * 3).sum().backward()  # two gradients of w, summed in the backward
    x = torch.ones(2, requires_grad=True)
    x.exp().sum().backward()  # exp's gradient reads its saved result


def test_each_level_records_beside_the_others_what_it_records_alone(tmp_path):
    """A level records the program's calls at that level, whichever levels
    run beside it: level 2's own call of the operator it handles goes past
    torch's function modes first, and level 1 does not take it for the
    program's (the program's Tensor.set_ with a storage, and its
    torch.from_numpy's lift_fresh, reach level 2 and never level 1).
    Pinned beside (README.md, what no level can hide): under any dispatch
    mode torch's autograd sums two gradients of one tensor out of place
    (aten.add, not aten.add_) and detaches a saved result it reads back,
    so level 3 records those beside level 2 as under a bare mode."""
    import collections
    import contextlib
    import io

    from torch.utils._python_dispatch import TorchDispatchMode

    class PassThrough(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    buffer = io.BytesIO()
    torch.save(torch.ones(2, 2), buffer)

    def recorded(levels, under=None):
        out = tmp_path / f"{levels}-{under is not None}"
        with APITracer(output_path=str(out), levels=levels), under or contextlib.nullcontext():
            _calls_level_1_never_sees(buffer.getvalue())
        return {n: collections.Counter(line.split("(")[0] for line in trace_lines(out, f"_level_{n}")) for n in levels}

    together = recorded([0, 1, 2, 3])
    for level in (0, 1, 2):
        assert together[level] == recorded([level])[level], level
    alone, under_a_mode = recorded([3])[3], recorded([3], PassThrough())[3]
    torch_otherwise = collections.Counter({"torch.ops.aten.add.Tensor": 1, "torch.ops.aten.detach.default": 1})
    assert alone["torch.ops.aten.add_.Tensor"] == 1
    assert under_a_mode == alone - collections.Counter({"torch.ops.aten.add_.Tensor": 1}) + torch_otherwise
    assert together[3] == under_a_mode
