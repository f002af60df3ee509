"""Bad options fail early and clearly; the lifecycle rules hold."""

import os

import pytest
import torch

from api_tracer import APITracer, TracingHook

BAD = [
    (dict(dialect="jax"), "dialect"),
    (dict(dialect=3), "dialect"),
    (dict(output_path=""), "output_path"),
    (dict(output_path=7), "output_path"),
    (dict(levels=5), "levels"),
    (dict(levels=[]), "levels"),
    (dict(levels=[1, 1]), "levels"),
    (dict(levels="1"), "levels"),
    (dict(levels=True), "levels"),
    (dict(merge_output="yes"), "merge_output"),
    (dict(record_stack=1), "record_stack"),
    (dict(stack_format="long"), "stack_format"),
    (dict(disable_torch_api_list=None), "disable_torch_api_list"),
    (dict(include_apis="torch.*"), "include_apis"),
    (dict(exclude_apis=[1]), "exclude_apis"),
    (dict(snapshot_interval=-1), "snapshot_interval"),
    (dict(snapshot_interval="30"), "snapshot_interval"),
    (dict(snapshot_interval=float("nan")), "snapshot_interval"),
    (dict(snapshot_interval=float("inf")), "snapshot_interval"),
    (dict(trace_limit=-1), "trace_limit"),
    (dict(trace_limit=1.5), "trace_limit"),
    (dict(trace_limit=True), "trace_limit"),
    (dict(include_apis=[]), "include_apis=[] would record no API"),  # not "all": an empty list keeps none
]


@pytest.mark.parametrize("kwargs,name", BAD)
def test_bad_value_names_the_parameter(out, kwargs, name):
    kwargs.setdefault("output_path", str(out))
    with pytest.raises(ValueError) as e:
        APITracer(**kwargs)
    assert name in str(e.value)
    assert not out.exists()  # nothing was done


def test_a_nul_in_the_output_path_is_refused_before_anything_is_made(tmp_path):
    with pytest.raises(ValueError, match="output_path must not contain a NUL"):
        APITracer(output_path=str(tmp_path / "a\0b"), levels=1).start()
    assert list(tmp_path.iterdir()) == []


def test_levels_error_lists_what_is_allowed(out):
    with pytest.raises(ValueError, match=r"0 \(SetattrHook\), 1 \(TorchFunctionHook\), 2 \(TorchDispatchHook\)"):
        APITracer(output_path=str(out), levels=[9])


def test_unwritable_output_fails_at_start_not_after(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    tracer = APITracer(output_path=str(blocker / "sub"), levels=1)
    modes = [type(m) for m in torch.overrides._get_current_function_mode_stack()]  # (a pytest plugin's)
    with pytest.raises(OSError, match="a_file"):
        tracer.start()
    assert not tracer.running
    # Nothing is hooked: a new tracer can start, and torch is untouched.
    assert [type(m) for m in torch.overrides._get_current_function_mode_stack()] == modes
    with APITracer(output_path=str(tmp_path / "ok"), levels=1):
        torch.ones(1)
    assert (tmp_path / "ok" / "api_trace_level_1.txt").read_text() == "torch.ones(1)\n"


def test_second_start_raises_runtime_error(out):
    first = APITracer(output_path=str(out / "a"), levels=1)
    second = APITracer(output_path=str(out / "b"), levels=2)
    with first:
        with pytest.raises(RuntimeError, match="already running"):
            second.start()
        with pytest.raises(RuntimeError, match="already running"):
            first.start()
        torch.zeros(2)
    assert (out / "a" / "api_trace_level_1.txt").read_text() == "torch.zeros(2)\n"
    assert not (out / "b").exists()


def test_a_tracer_that_gives_way_stops_for_another_and_resumes_after(out):
    pieces = []

    def resume():
        pieces.append(APITracer(output_path=str(out / f"resumed{len(pieces)}"), levels=1).give_way(resume).start())

    background = APITracer(output_path=str(out / "background"), levels=1).give_way(resume).start()
    torch.ones(1)
    with APITracer(output_path=str(out / "own"), levels=[1, 2]) as own:
        assert not background.running and pieces == []
        torch.ones(2)
        for again in (APITracer(output_path=str(out / "third"), levels=1), own):  # own does not give way
            with pytest.raises(RuntimeError, match="already running"):
                again.start()
        assert own.running and pieces == []  # a refused start resumes nothing
    assert [p.running for p in pieces] == [True]
    with pytest.raises(RuntimeError, match="already running"):  # it gives way, but not to itself
        pieces[0].start()
    assert [p.running for p in pieces] == [True]
    torch.ones(3)
    # a start that fails resumes the one that gave way, too
    blocker = out / "a_file"
    blocker.write_text("x")
    with pytest.raises(OSError, match="a_file"):
        APITracer(output_path=str(blocker / "sub"), levels=1).start()
    assert [p.running for p in pieces] == [False, True]
    torch.ones(4)
    pieces[-1].stop()
    assert (out / "background" / "api_trace_level_1.txt").read_text() == "torch.ones(1)\n"
    assert (out / "own" / "api_trace_level_1.txt").read_text() == "torch.ones(2)\n"
    assert (out / "resumed0" / "api_trace_level_1.txt").read_text() == "torch.ones(3)\n"
    assert (out / "resumed1" / "api_trace_level_1.txt").read_text() == "torch.ones(4)\n"
    assert not (out / "third").exists()


def test_start_stop_methods_and_idempotent_stop(out):
    tracer = APITracer(output_path=str(out), levels=1, merge_output=True)
    tracer.stop()  # not running: nothing happens
    tracer.start()
    assert tracer.running
    torch.ones(3)
    tracer.stop()
    tracer.stop()
    assert not tracer.running
    assert (out / "api_trace.txt").read_text() == "torch.ones(3)\n"
    assert set(tracer.files()) == {
        "api_trace.yaml",
        "api_trace.txt",
        "api_apis.txt",
        "api_configs.yaml",
        "api_statistics.yaml",
    }


def test_a_tracer_can_run_twice(out):
    tracer = APITracer(output_path=str(out), levels=1, merge_output=True)
    for n in (1, 2):
        with tracer:
            torch.ones(n)
        assert (out / "api_trace.txt").read_text() == f"torch.ones({n})\n"


def test_hook_class_with_bad_level_is_rejected(out):
    class Bad(TracingHook):
        level = 99

        def install(self): ...

        def uninstall(self): ...

    with pytest.raises(ValueError, match="levels"):
        APITracer(output_path=str(out), levels=[Bad])


def test_the_options_are_defined_once_and_reach_cpp_whole():
    """TracerOptions is the one definition: every C++ field it fills exists,
    every C++ field is filled, and the defaults are the C++ fields' own."""
    import dataclasses

    from api_tracer import _C
    from api_tracer.trace.options import TracerOptions, fields, spec

    bound = {name for name, v in vars(_C.TraceOptions).items() if isinstance(v, property)}
    native = {f.name for f in fields() if spec(f).native is not None}
    assert native | {"levels", "exclude_apis"} == bound  # to_native() sets these two itself
    cpp, ours = _C.TraceOptions(), TracerOptions()
    for f in fields():
        if spec(f).native is not None and f.name not in ("include_apis", "output_path"):
            assert spec(f).native(getattr(ours, f.name)) == getattr(cpp, f.name), f.name
    # the output path: the same one, taken from the working directory when the tracer starts
    assert spec(fields()[0]).native(ours.output_path) == os.path.abspath(cpp.output_path)
    made = ours.to_native([0, 3], ["x.*"])
    assert (made.levels, made.exclude_apis, made.include_apis) == ([0, 3], ["x.*"], [])
    assert TracerOptions(stack_format="api", nesting="all").to_native([1], []).stack_format == _C.StackFormat.api
    assert dataclasses.asdict(ours) == ours.asdict()


def test_every_option_of_the_command_line_is_the_tracer_s():
    import argparse

    from api_tracer.trace.options import TracerOptions, add_run_flags, from_run_flags

    parser = argparse.ArgumentParser()
    add_run_flags(parser.add_argument)
    # run labels its set by default, with the program's name; --levels not
    # given is not given (run takes the dialect's: PyTorchDialect.run_levels)
    assert parser.parse_args([]).levels is None
    assert from_run_flags(parser.parse_args([])) == TracerOptions(label=True)
    given = from_run_flags(
        parser.parse_args(
            [
                "--label",
                "bert base",
                "-o",
                "d",
                "--levels",
                "0,3",
                "--merge",
                "--stack",
                "full",
                "--include",
                "a.*",
                "--include",
                "b",
                "--no-stream-trace",
                "--show-device",
                "--nesting",
                "all",
                "--value-ranges",
                "--snapshot-interval",
                "0.5",
                "--trace-limit",
                "64M",
                "--disable-torch-api-list",
            ]
        )
    )
    assert given == TracerOptions(
        "d",
        [0, 3],
        True,
        True,
        "full",
        True,
        label="bert base",
        include_apis=["a.*", "b"],
        stream_trace=False,
        show_device=True,
        nesting="all",
        value_ranges=True,
        snapshot_interval=0.5,
        trace_limit=64 << 20,
    )
    with pytest.raises(SystemExit):
        parser.parse_args(["--trace-limit", "lots"])
