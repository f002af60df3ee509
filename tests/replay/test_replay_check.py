"""api-tracer replay --check: configs judged against float64, another
device or torch.compile, by outputs and (--backward) gradients.

The deliberately wrong kernels are custom operators of the namespace
`replaycheck` (replaycheck_ops.py), registered in this process. That
namespace is not in replay's allow-list (policy.py: only namespaces of
torch that compute), so every config here is replayed with
allow_unsafe=True, the policy's documented switch for trusted files."""

import io
import json
import re
import sys
from xml.etree import ElementTree

import pytest
import replaycheck_ops  # noqa: F401 - registers the replaycheck operators
import torch

from api_tracer.replay import Config, ReplayOptions, replay_one, run_in_process
from api_tracer.replay.judge.check import upcast
from api_tracer.replay.judge.compare import Comparison, Mismatch
from api_tracer.replay.output import Progress
from api_tracer.replay.results import Result, Status
from support import USER_CODE, run_cli, write_lines
from support.judge_sets import torch_gelu
from support.workloads import LONG_SUMS, traced_configs


def judged(line, check="float64", **options):
    """The Result of `line` checked; allow_unsafe for the replaycheck operators (see the module's docstring)."""
    return replay_one(Config("x", 1, line), ReplayOptions(check=check, allow_unsafe=True, **options))


def test_a_wrong_float64_kernel_is_a_mismatch_with_its_errors_and_a_right_one_passes():
    wrong = judged('torch.ops.replaycheck.twice_wrong_in_float64.default(Tensor([8], "float32"))')
    assert (wrong.status, wrong.check, wrong.compared, wrong.worst) == ("mismatch", "float64", "values", "output")
    assert wrong.max_abs_error == pytest.approx(1e-3, rel=1e-3)
    # judged by the error model (replay/judge/error_model.py), not a tolerance pair
    assert (wrong.measure, wrong.rtol, wrong.atol) == ("error model", None, None) and wrong.excess > 100
    assert wrong.message.startswith(
        "output: 8 / 8 elements (100.0%) differ from the float64 side past the error model's bound: the worst by "
    )
    assert "greatest absolute difference 0.001, greatest relative difference " in wrong.message
    right = judged('torch.ops.replaycheck.twice.default(Tensor([8], "float32"))')
    assert (right.status, right.worst, right.message) == ("ok", "output", "")
    # the very values of float64's: judged exact, without the error model's probes
    assert right.max_abs_error == 0 and (right.measure, right.excess) == ("exact", 0.0)
    # the tolerances can be given: 1e-3 absolute (and a little) lets the wrong kernel pass
    loose = judged('torch.ops.replaycheck.twice_wrong_in_float64.default(Tensor([8], "float32"))', atol=2e-3)
    assert (loose.status, loose.rtol, loose.atol, loose.measure) == ("ok", 1.3e-6, 2e-3, "rtol/atol")


@pytest.mark.parametrize(
    "line",
    [
        'torch.add(Tensor([2, 3], "float32"), Tensor([2, 3], "float16"), alpha=2)',
        # in place: each side builds its own arguments, so the first call cannot spoil the second's
        'torch.Tensor.add_(Tensor([64], "float32"), Tensor([64], "float32"))',
        # the module's weights come from the global generator, seeded the same on both sides
        'torch.nn.Linear.forward(torch.nn.Linear(8, 4), Tensor([2, 8], "float32"))',
        # a complex result, and one whose NaNs (log of negative numbers) are where the other side has them
        'torch.fft.fft(Tensor([16], "complex64"))',
        'torch.log(Tensor([64], "float32"))',
    ],
)
def test_results_within_their_rounding_pass_and_say_how_close(line):
    r = judged(line)
    assert (r.status, r.compared, r.measure) == ("ok", "values", "error model"), r
    # (an elementwise call's closest may be on a region's draw: draw.REGIONS)
    closest = (
        rf"error model: the closest at {r.excess:.2g} of its bound \({re.escape(r.worst)}(, on the [a-z ]+ draw)?\)"
    )
    assert 0 < r.excess < 1 and re.fullmatch(closest, r.message), r.message


@pytest.mark.parametrize(
    "line",
    [
        'torch.Tensor.item(Tensor([], "float32"))',
        'torch.Tensor.size(Tensor([2, 5], "float32"))',
        "torch._C._set_grad_enabled(False)",
    ],
)
def test_equal_results_pass(line):
    r = judged(line)
    assert (r.status, r.compared, r.message) == ("ok", "values", ""), r


@pytest.mark.parametrize(
    "line",
    [
        # uninitialized memory is filled with NaN (deterministic algorithms): nothing to compare
        "torch.empty(3, 4)",
        'torch.ops.aten.empty_like.default(Tensor([5], "float32"))',
        # inputs outside the operator's domain: NaN for every input, on both sides
        'torch.ops.replaycheck.outside_domain.default(Tensor([8], "float32"))',
    ],
)
def test_nan_or_infinite_everywhere_on_both_sides_is_vacuous_not_ok(line):
    r = judged(line)
    assert (r.status, r.compared) == ("vacuous", "values"), r
    assert r.message.startswith("every value compared (output) is NaN or infinite on both sides")


def test_nan_where_the_other_side_has_nan_is_equal():
    r = judged('torch.log(Tensor([64], "float32"))')
    assert (r.status, r.worst) == ("ok", "output") and r.max_abs_error < 1e-6
    compare = Comparison("other")
    compare(torch.tensor([float("nan"), float("inf"), 1.0]), torch.tensor([float("nan"), float("inf"), 1.0]), "out")
    assert (compare.errors[0].max_abs, compare.errors[0].beyond) == (0.0, 0)
    compare(torch.tensor([float("nan"), 1.0]), torch.tensor([1.0, 1.0]), "out")  # a NaN against a number
    assert (compare.errors[1].max_abs, compare.errors[1].beyond) == (float("inf"), 1)


def test_python_floats_are_held_to_the_tolerance_of_the_inputs_dtype():
    r = judged('torch.Tensor.item(Tensor([], "float16"))')
    assert r.status == "ok" and (r.rtol, r.atol) == (1e-3, 1e-5)  # float16's, not float64's


def test_tuples_and_integer_outputs_are_compared_exactly():
    r = judged('torch.ops.replaycheck.sort_wrong_in_float64.default(Tensor([8], "float32"))')
    assert (r.status, r.worst, r.rtol, r.atol) == ("mismatch", "output[1]", 0.0, 0.0)
    assert r.message.startswith("output[1]: ") and "(up to 0 allowed)" in r.message
    assert judged('torch.sort(Tensor([8], "float32"))').status == "ok"


def test_structures_none_scalars_and_complex_are_compared():
    compare = Comparison("float64")
    compare((torch.ones(2), None, 3, [True, "a"]), (torch.ones(2), None, 3, [True, "a"]), "output")
    differences = [
        ((torch.ones(2), None), (torch.ones(2), torch.ones(1)), "output[1]: None, a Tensor on the float64 side"),
        ((1, 2), (1, 2, 3), "output: 2 items, 3 on the float64 side"),
        (3, 4, "output: 3, 4 on the float64 side"),
        (True, 1, "output: a bool, a int on the float64 side"),
        (torch.ones(2, 3), torch.ones(3, 2), "output: shape [2, 3], [3, 2] on the float64 side"),
        (torch.ones(2), torch.ones(2, dtype=torch.int64), "output: torch.float32, torch.int64 on the float64 side"),
        ({"a": torch.ones(1)}, {"b": torch.ones(1)}, "output: the keys ['a'], ['b'] on the float64 side"),
    ]
    for a, b, said in differences:
        with pytest.raises(Mismatch) as e:
            compare(a, b, "output")
        assert str(e.value) == said
    exact = Comparison("float64")
    exact(torch.tensor([1, 2, 3]), torch.tensor([1, 2, 4]), "output")
    assert (exact.errors[0].beyond, exact.errors[0].rtol, exact.errors[0].atol) == (1, 0.0, 0.0)
    close = Comparison("float64", dtype_of=upcast)  # complex64 may be complex128 on the float64 side
    close(torch.tensor([1 + 1j]), torch.tensor([1 + 1.5j], dtype=torch.complex128), "output")
    assert close.errors[0].beyond == 1 and close.errors[0].max_abs == 0.5


def test_random_calls_compare_shapes_dtypes_and_devices_only_and_say_so():
    r = judged('torch.nn.functional.dropout(Tensor([64], "float32"), 0.5, True)')
    assert (r.status, r.compared, r.max_abs_error) == ("ok", "shapes", None)
    assert r.message == "random (aten.bernoulli_.float): compared shapes, dtypes and devices only"
    assert judged("torch.randn(3, 4)").compared == "shapes"
    r = judged('torch.ops.replaycheck.noise_wrong_shape_in_float64.default(Tensor([8], "float32"))')
    assert (r.status, r.compared) == ("mismatch", "shapes")
    assert r.message == "output: shape [8], [9] on the float64 side"


def test_backward_compares_the_gradients_of_the_floating_inputs():
    line = 'torch.ops.replaycheck.cube.default(Tensor([8], "float32"))'
    assert judged(line).status == "ok"  # the forward is right
    r = judged(line, backward=True)
    assert (r.status, r.worst) == ("mismatch", "the gradient of args[0]")
    assert r.max_abs_error == pytest.approx(1e-3, rel=1e-3)
    r = judged(
        'torch.nn.functional.linear(Tensor([4, 8], "float32"), Tensor([3, 8], "float32"), Tensor([3], "float32"))',
        backward=True,
    )
    assert r.status == "ok" and r.worst.startswith(("output", "the gradient of"))
    # in place on an input (it is a view of a non-leaf), an integer input (no gradient)
    assert judged('torch.Tensor.mul_(Tensor([8], "float32"), 0.9)', backward=True).status == "ok"
    assert (
        judged('torch.nn.functional.embedding(Tensor([4], "int64"), Tensor([10, 3], "float32"))', backward=True).status
        == "ok"
    )


def test_an_argument_that_may_not_require_grad_is_held_and_has_no_gradient():
    line = (
        'torch.nn.functional.batch_norm(Tensor([4, 3, 5], "float32"), Tensor([3], "float32"), '
        'Tensor([3], "float32"), weight=Tensor([3], "float32"), bias=Tensor([3], "float32"), training=True)'
    )
    r = judged(line, backward=True)
    assert r.status == "ok", r
    assert r.message.endswith(
        "no gradient of args[1] (not differentiable); no gradient of args[2] (not differentiable)"
    )


def test_a_reference_that_cannot_run_skips_the_config_and_does_not_blame_the_operator():
    r = judged('torch.ops.replaycheck.float32_only.default(Tensor([8], "float32"))')
    assert (r.status, r.message) == (
        "skipped",
        "no float64 reference: the operator fails in float64 (no float64 "
        "kernel) and torch._decomp has no decomposition of it",
    )


def test_an_operator_without_a_float64_kernel_is_judged_against_its_decomposition(monkeypatch):
    from torch._decomp import decomposition_table

    line = 'torch.ops.replaycheck.float32_only.default(Tensor([8], "float32"))'
    monkeypatch.setitem(decomposition_table, torch.ops.replaycheck.float32_only.default, lambda x: x.clone())
    r = judged(line)
    assert (r.status, r.message) == (
        "ok",
        "the reference is its decomposition (torch._decomp) in float64: no float64 kernel",
    )
    monkeypatch.setitem(decomposition_table, torch.ops.replaycheck.float32_only.default, lambda x: x * 1.001)
    r = judged(line)  # the reference is the decomposition, so a wrong one is a mismatch: it is compared
    assert r.status == "mismatch" and "differ from the float64 decomposition side" in r.message


def test_torch_operators_without_a_float64_kernel_or_decomposition_are_skipped():
    # mkldnn's LSTM layer (what nn.LSTM runs on the CPU) has neither
    line = (
        'torch.ops.aten.mkldnn_rnn_layer.default(Tensor([5, 2, 4], "float32"), Tensor([12, 4], "float32"), '
        'Tensor([12, 3], "float32"), Tensor([12], "float32"), Tensor([12], "float32"), Tensor([2, 3], "float32"), '
        'Tensor([2, 3], "float32"), False, [5, 5], 2, 3, 1, True, False, False, False)'
    )
    assert replay_one(Config("x", 1, line), ReplayOptions()).status == "ok"  # it runs in float32
    r = judged(line)
    assert r.status == "skipped" and r.message.startswith("no float64 reference: the operator fails in float64 (")


def test_device_check_runs_the_device_path():
    lines = [
        'torch.ops.replaycheck.twice_wrong_in_float64.default(Tensor([8], "float32"))',  # right in float32
        'torch.nn.functional.gelu(Tensor([16, 8], "float32"))',
        'torch.Tensor.cpu(Tensor([4], "float32"))',
    ]
    for line in lines:
        r = judged(line, check="device:cpu")
        assert (r.status, r.check, r.compared, r.max_abs_error) == ("ok", "device:cpu", "values", 0.0), r
    # a result on the replay's device is on the other device, or the same (a device the line names)
    compare = Comparison("cuda", device_of=lambda d: torch.device("cuda", 0) if d.type == "cpu" else d)
    compare(torch.ones(2), torch.ones(2), "output")
    with pytest.raises(Mismatch, match="output: on cpu, on meta on the cuda side"):
        compare(torch.ones(2), torch.ones(2, device="meta"), "output")


def test_compile_check_compares_eager_with_the_compiled_call():
    r = judged('torch.ops.replaycheck.twice_wrong_compiled.default(Tensor([8], "float32"))', check="compile")
    assert (r.status, r.check) == ("mismatch", "compile")
    assert "differ from the compiled side" in r.message and r.max_abs_error == pytest.approx(1e-3, rel=1e-3)
    assert judged('torch.nn.functional.gelu(Tensor([16, 8], "float32"))', check="compile").status == "ok"
    r = judged('torch.Tensor.backward(Tensor([], "float32"))', check="compile")  # cannot be captured as a graph
    assert r.status == "failed" and r.message.startswith("on the compiled side: ")


@pytest.mark.parametrize("level", [1, 2, 3])
@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer"])
def test_workloads_match_float64_long_sums_included(tmp_path, name, level):
    # torch's own kernels are right: the long float32 sums that rtol/atol
    # called mismatches (workloads.LONG_SUMS) are within the error model
    configs = traced_configs(tmp_path, name, level)
    results = run_in_process(configs, ReplayOptions(check="float64", backward=True), lambda r: None)
    assert len(results) >= 10
    # but torch's own GELU, whose float32 and bfloat16 kernels lose its negative tail (judge_sets.TORCH_DEFECTS)
    assert all(r.status == "ok" or (r.status == "mismatch" and torch_gelu(r.api, r.config)) for r in results), [
        (r.config, r.status, r.message) for r in results if r.status != "ok"
    ]
    assert any(r.api in LONG_SUMS for r in results) == (name == "cnn" and level > 1)


def test_the_cli_reports_mismatches_in_the_summary_the_reports_and_the_exit_code(tmp_path):
    from support import run_script

    lines = [
        'torch.ops.replaycheck.twice.default(Tensor([8], "float32"))',
        'torch.ops.replaycheck.twice_wrong_in_float64.default(Tensor([8], "float32"))',
    ]
    path = write_lines(tmp_path, lines)
    code = f"""
        import sys
        sys.path.insert(0, {str(USER_CODE)!r})
        import replaycheck_ops  # the replaycheck operators, in this process too
        from api_tracer.cli import main
        sys.exit(main(["replay", {str(path)!r}, "--check", "float64", "--allow-unsafe",
                       "-o", "r.jsonl", "--junit", "r.xml"]))
    """
    result = run_script(code, tmp_path)
    assert result.returncode == 1, result.stderr
    assert (
        "2 configs (checked against float64): 1 ok, 1 mismatch, 0 vacuous, 0 failed, 0 skipped, 0 refused, 0 invalid"
        in result.stdout
    )
    assert f"MISMATCH {path}:2: output: 8 / 8 elements (100.0%) differ from the float64 side" in result.stdout
    report = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [(r["status"], r["check"], r["worst"], r["measure"]) for r in report] == [
        ("ok", "float64", "output", "exact"),
        ("mismatch", "float64", "output", "error model"),
    ]
    assert report[0]["excess"] == 0 and report[1]["excess"] > 100
    assert report[0]["max_abs_error"] == 0 and report[1]["max_abs_error"] == pytest.approx(1e-3, rel=1e-3)
    suite = ElementTree.parse(tmp_path / "r.xml").getroot()
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    [failure] = suite.findall("testcase/failure")
    assert failure.get("type") == "Mismatch"
    assert failure.get("message").startswith("not equal to float64: output: 8 / 8 elements")
    assert "past the error model's bound" in failure.get("message")
    assert "greatest absolute difference 0.001" in failure.get("message")
    assert "greatest relative difference" in failure.get("message")


def test_flags_that_need_check_or_a_known_mode_are_usage_errors(tmp_path):

    path = write_lines(tmp_path, ["torch.ones(2)"])
    for flags, said in (
        (["--backward"], "--backward needs --check"),
        (["--rtol", "0.1"], "--rtol needs --check"),
        (["--check", "float65"], "'float65' is not a check: one of float64, device:DEVICE, compile, repeat"),
        (["--check", "device:nonsense"], "--check device:nonsense: "),
        (["--check", "float64", "--atol", "-1"], "--atol must be at least 0"),
    ):
        result = run_cli("replay", str(path), *flags)
        assert result.returncode == 2 and said in result.stderr, (flags, result.stderr)
    result = run_cli("replay", str(path), "--check", "device:cpu", "--backward")
    assert result.returncode == 0 and "1 configs (checked against device:cpu): 1 ok, 0 mismatch" in result.stdout


def test_the_progress_bar_counts_mismatches_when_checking(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(sys, "stderr", Terminal())
    progress = Progress(2, "float64")
    progress(Result("f", 1, "c", "a", Status.OK))
    progress(Result("f", 2, "c", "a", Status.MISMATCH))
    last = sys.stderr.getvalue().rsplit("\r", 1)[-1]
    counts = "ok 1 mismatch 1 vacuous 0 failed 0 skipped 0 refused 0 invalid 0"
    assert re.fullmatch(rf"\[#{{30}}\] 2/2 [0-9.]+/s {counts}", last), last
    # A streamed corpus (its total not known): the configs done, their rate, and the cluster's nodes.
    streamed = Progress(None, where=lambda: "2 nodes")
    streamed(Result("f", 1, "c", "a", Status.OK))
    last = sys.stderr.getvalue().rsplit("\r", 1)[-1]
    assert re.fullmatch(r"1 done [0-9.]+/s ok 1 failed 0 skipped 0 refused 0 invalid 0 \[2 nodes\]", last), last


def test_an_infinite_error_is_written_as_a_string_in_the_json_report():
    r = Result("f", 1, "c", "a", Status.MISMATCH, max_abs_error=float("inf"), max_rel_error=0.5)
    line = json.loads(r.to_json())
    assert (line["max_abs_error"], line["max_rel_error"]) == ("inf", 0.5)


def test_a_float64_side_that_needs_more_bytes_than_allowed_skips_the_config_and_says_why():
    line = 'torch.neg(Tensor([100], "float32"))'  # 400 bytes in float32, 800 in float64; its output as much
    assert judged(line, max_bytes=1600).status == "ok"
    r = judged(line, max_bytes=1599)
    assert r.status == "skipped" and r.message.startswith(
        "on the float64 side: its arguments and outputs need 1600 bytes"
    )
    r = judged(line, max_bytes=799)  # the float32 side's arguments and outputs already
    assert r.status == "skipped" and r.message.startswith("its arguments and outputs need 800 bytes")


def test_repeat_makes_the_call_twice_from_one_seed_and_wants_the_same_bits():
    r = judged('torch.nn.functional.dropout(Tensor([64], "float32"), 0.5, True)', check="repeat", backward=True)
    assert (r.status, r.check, r.compared) == ("ok", "repeat", "values"), r  # random, but seeded alike
    assert set(r.hashes) == {"output", "the gradient of args[0]"} and all(len(h) == 16 for h in r.hashes.values())
    again = judged('torch.nn.functional.dropout(Tensor([64], "float32"), 0.5, True)', check="repeat", backward=True)
    assert again.hashes == r.hashes  # a hash of the output: the same call, the same bits, run after run
    other = judged('torch.nn.functional.dropout(Tensor([64], "float32"), 0.5, True)', check="repeat", seed=1)
    assert other.hashes["output"] != r.hashes["output"]
    wrong = judged('torch.ops.replaycheck.differs_each_call.default(Tensor([8], "float32"))', check="repeat")
    assert wrong.status == "mismatch" and wrong.message.startswith(
        "output: 8 / 8 elements (100.0%) differ from the repeated side"
    )
    zeros = judged('torch.ops.replaycheck.signed_zero_each_call.default(Tensor([8], "float32"))', check="repeat")
    assert (zeros.status, zeros.message) == (
        "mismatch",
        "output: equal in value, not bitwise (signed zeros or NaN payloads)",
    )
    marked = judged('torch.ops.replaycheck.atomic_adds.default(Tensor([8], "float32"))', check="repeat")
    assert (marked.status, marked.compared) == ("ok", "shapes")
    assert marked.message == (
        "nondeterministic (replaycheck.atomic_adds.default): compared shapes, dtypes and devices only"
    )
    report = json.loads(r.to_json())
    assert report["hashes"] == r.hashes


def test_a_call_that_refuses_inputs_requiring_grad_runs_without_and_has_no_gradients():
    r = judged('torch.ops.aten.detach_.default(Tensor([3], "float32"))', backward=True)  # level 3 of a real model
    assert r.status == "ok" and r.message.startswith(
        "no gradient of args[0] (the call refuses inputs that require grad: Can't detach views in-place."
    )
    r = judged('torch.mm(Tensor([2, 3], "float32"), Tensor([4, 3], "float32"))', backward=True)  # fails either way
    assert (r.status, r.error) == ("failed", "RuntimeError") and "cannot be multiplied" in r.message


def test_infinities_the_call_itself_asks_for_are_a_real_comparison():
    r = judged("torch.ops.aten.full.default([5, 5], -inf, dtype=torch.float32)")  # nn.Transformer's causal mask
    assert (r.status, r.compared, r.message) == ("ok", "values", ""), r


@pytest.mark.parametrize("level", [1, 3])
def test_floating_profiles_keep_replayed_inputs_in_the_domain_the_program_used(tmp_path, level):
    """Without a profile, replay draws floating inputs from N(0, 1), half
    of them outside log's positive numbers (NaN, which a NaN in float64 too
    makes no test); bernoulli's and binary_cross_entropy's [0, 1] it knows
    (replay/draw.py's DOMAINS), and draws inside. With float_ranges, every one is
    drawn in the range the program used, and the check tests something."""
    from api_tracer import APITracer
    from api_tracer.formats.fileset import FileSet
    from api_tracer.formats.summaries import read_value_profiles

    torch.manual_seed(0)
    p, x, target = torch.rand(64) * 0.9 + 0.05, torch.rand(8, 8) + 0.5, torch.rand(64)
    out = tmp_path / "trace"
    with APITracer(output_path=str(out), levels=level, value_ranges=True, float_ranges=True):
        torch.bernoulli(p)
        torch.nn.functional.binary_cross_entropy(p, target)
        torch.log(x)
    s = FileSet(str(out), f"_level_{level}")
    profiles = read_value_profiles(s.path("api_value_ranges.yaml"))
    log_line = next(line for line in profiles if "log" in line)
    [(path, prof)] = profiles[log_line].items()
    assert (path, prof.floating, prof.finite, prof.fmin, prof.fmax) == (
        "args[0]",
        True,
        True,
        float(x.min()),
        float(x.max()),
    )
    configs = [Config("c", i + 1, line) for i, line in enumerate(profiles)]
    results = run_in_process(configs, ReplayOptions(ranges=profiles, check="float64", backward=True), lambda r: None)
    assert [r.status for r in results] == ["ok"] * 3, [(r.config, r.message) for r in results]
    assert all(r.compared == "values" for r in results if "bernoulli" not in r.config)
    bare = run_in_process(configs, ReplayOptions(check="float64"), lambda r: None)
    assert [r.status for r in bare if "log" not in r.config] == ["ok"] * 2, [r.message for r in bare]


def test_float_ranges_need_value_ranges_and_a_merge_keeps_both_sets_ranges(tmp_path):
    from api_tracer import APITracer
    from api_tracer.cli import main
    from api_tracer.formats.fileset import FileSet
    from api_tracer.formats.summaries import read_value_profiles

    with pytest.raises(ValueError, match="float_ranges=True needs value_ranges=True"):
        APITracer(output_path=str(tmp_path / "x"), float_ranges=True)
    for i, (lo, hi) in enumerate(((1.0, 2.0), (-3.0, 0.5))):
        with APITracer(output_path=str(tmp_path / f"set{i}"), levels=1, value_ranges=True, float_ranges=True):
            torch.exp(torch.tensor([lo, hi, float("nan") if i else lo]))
    assert main(["merge", str(tmp_path / "set0"), str(tmp_path / "set1"), "-o", str(tmp_path / "m")]) == 0
    [prof] = read_value_profiles(FileSet(str(tmp_path / "m"), "_level_1").path("api_value_ranges.yaml"))[
        'torch.exp(Tensor([3], "float32"))'
    ].values()
    assert (prof.fmin, prof.fmax, prof.nan, prof.posinf) == (-3.0, 2.0, True, False)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine where the CUDA reference cannot run")
def test_a_reference_device_that_cannot_run_skips_the_config_and_says_why():
    r = judged('torch.neg(Tensor([4], "float32"))', check="device:cuda")
    assert r.status == "skipped" and r.message.startswith("no reference: the call fails on cuda ("), r


def test_the_replay_side_computes_what_plain_torch_does_though_random_operators_are_watched():
    """The watching dispatch mode made composite kernels take their
    subclass branches: linear's bias added by at::add, bfloat16 + float16
    made float32, where plain torch gives bfloat16. The side's outcome is
    now an unwatched call's."""
    import torch

    bias = torch.ones(1, dtype=torch.float16).expand(3)
    plain = torch.nn.functional.linear(
        torch.ones(2, 4, 8, dtype=torch.bfloat16), torch.ones(3, 8, dtype=torch.bfloat16), bias
    )
    assert plain.dtype == torch.bfloat16
    line = (
        'torch.nn.functional.linear(Tensor([2, 4, 8], "bfloat16"), Tensor([3, 8], "bfloat16"), '
        'Tensor([3], "float16", stride=[0]))'
    )
    for check in ("repeat", "float64"):
        r = judged(line, check=check)
        assert (r.status, r.compared) == ("ok", "values"), (check, r.message)
    assert judged(line, check="repeat", backward=True).status == "ok"
    # random operators are still seen: dropout compared by its shapes alone
    r = judged('torch.nn.functional.dropout(Tensor([4, 8], "float32"), 0.5)')
    assert (r.status, r.compared) == ("ok", "shapes") and "random" in r.message
