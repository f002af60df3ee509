"""The pytest plugin: --api-trace traces a suite (per test, under xdist),
--api-replay runs a config file as tests."""

import os

import pytest
import yaml

from support import read_set

SUITE = """
import pytest
import torch


@pytest.fixture(scope="session")
def eye():
    return torch.eye(3)


def test_passes(eye):
    torch.add(eye, 1)


def test_fails(eye):
    torch.mul(eye, 2)
    assert False, "on purpose"


@pytest.mark.parametrize("n", [2, 5])
def test_param(n):
    torch.ones(n)


def test_skipped():
    torch.zeros(4)
    pytest.skip("on purpose")


@pytest.fixture
def broken():
    torch.full((2,), 7.0)
    raise RuntimeError("fixture broke")


def test_errors(broken):
    pass
"""

CALLS = {
    "torch.eye(3)": 1,
    'torch.add(Tensor([3, 3], "float32"), 1)': 1,
    'torch.mul(Tensor([3, 3], "float32"), 2)': 1,
    "torch.ones(2)": 1,
    "torch.ones(5)": 1,
    "torch.zeros(4)": 1,
    "torch.full((2,), 7.0)": 1,
}


def run_suite(pytester, *args):
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_subprocess("--api-trace", "out", "-p", "no:cacheprovider", *args)
    result.assert_outcomes(passed=3, failed=1, skipped=1, errors=1)
    return pytester.path / "out"


def config_counts(out):
    """config line -> calls, from the merged trace."""
    counts = {}
    for line in read_set(out)["api_trace.txt"].splitlines():
        counts[line] = counts.get(line, 0) + 1
    return counts


def made_by(out):
    """config line -> the tests that made it, from the session's api_config_sources.yaml
    (the calls outside tests left out)."""
    data = yaml.safe_load((out / "api_config_sources.yaml").read_text())
    return {e["config"]: sorted(set(e["from"]) - {"(outside tests)"}) for e in data["configs"]}


def test_a_suite_is_traced_into_one_set_whatever_its_tests_do(pytester):
    out = run_suite(pytester)
    assert config_counts(out) == CALLS  # the session fixture once; failing, skipped, erroring tests too
    assert set(read_set(out)["api_configs.yaml"].splitlines()) == set(CALLS)
    assert not (out / "tests").exists()
    sources = yaml.safe_load((out / "api_config_sources.yaml").read_text())
    assert sources["labels"] == [{"label": f"pytest {pytester.path.name}", "calls": sum(CALLS.values())}]


def test_per_test_sets_say_which_tests_made_each_config(pytester):
    out = run_suite(pytester, "--api-trace-per-test")
    assert config_counts(out) == CALLS
    index = yaml.safe_load((out / "tests-index.yaml").read_text())
    assert sorted(index.values()) == sorted(
        f"test_suite.py::{t}"
        for t in ("test_passes", "test_fails", "test_param[2]", "test_param[5]", "test_skipped", "test_errors")
    )
    by_test = {
        nodeid: read_set(out / "tests" / name).get("api_trace.txt", "").splitlines() for name, nodeid in index.items()
    }
    assert by_test["test_suite.py::test_param[5]"] == ["torch.ones(5)"]
    assert by_test["test_suite.py::test_passes"] == ["torch.eye(3)", 'torch.add(Tensor([3, 3], "float32"), 1)']
    assert by_test["test_suite.py::test_errors"] == ["torch.full((2,), 7.0)"]
    made = made_by(out)
    assert made["torch.ones(2)"] == ["test_suite.py::test_param[2]"]
    assert made["torch.zeros(4)"] == ["test_suite.py::test_skipped"]
    # with the calls of each, which add up to the trace's
    entries = yaml.safe_load((out / "api_config_sources.yaml").read_text())["configs"]
    assert {e["config"]: e["calls"] for e in entries} == config_counts(out)
    assert not (out / "pieces").exists()


@pytest.mark.parametrize("per_test", [False, True])
def test_xdist_workers_write_their_own_sets_and_the_session_merges_them(pytester, per_test):
    out = run_suite(pytester, "-n", "2", *(["--api-trace-per-test"] if per_test else []))
    workers = sorted(p.name for p in (out / "workers").iterdir())
    assert workers == ["gw0", "gw1"]
    assert sum(config_counts(out / "workers" / w).get("torch.ones(2)", 0) for w in workers) == 1
    # the session fixture runs once per worker that needs it
    counts = config_counts(out)
    assert counts.pop("torch.eye(3)") in (1, 2) and counts == {k: v for k, v in CALLS.items() if k != "torch.eye(3)"}
    if per_test:
        made = made_by(out)
        assert made["torch.ones(5)"] == ["test_suite.py::test_param[5]"]


OWN_TRACER = """
import threading

import torch
from api_tracer import APITracer


def test_runs_a_tracer_of_its_own(tmp_path):
    torch.ones(1)
    with APITracer(output_path=str(tmp_path), levels=[1, 2], merge_output=True):
        torch.ones(2)
    torch.ones(3)
    assert (tmp_path / "api_trace.txt").read_text().splitlines()[0] == "torch.ones(2)"


def test_stops_a_level_3_tracer_inside_a_mode_of_its_own(tmp_path):
    tracer = APITracer(output_path=str(tmp_path), levels=3).start()
    with torch.device("meta"):
        tracer.stop()
        assert torch.zeros(2).device.type == "meta"
    assert torch.zeros(3).device.type == "cpu"  # its exit popped its own mode


def test_stops_its_tracer_on_another_thread(tmp_path):
    tracer = APITracer(output_path=str(tmp_path), levels=0).start()
    stopper = threading.Thread(target=tracer.stop)
    stopper.start()
    stopper.join()
    torch.zeros(4)


def test_after_them():
    torch.ones(4)
"""


@pytest.mark.parametrize("per_test", [False, True])
def test_a_test_that_runs_its_own_tracer_passes_and_the_plugin_resumes_after(pytester, per_test):
    """The plugin's tracer gives way to the test's: that one records what
    runs inside it, the plugin what runs before and after, or from the next
    test on where the test's tracer stopped on another thread or inside a
    mode of the test's."""
    pytester.makepyfile(test_own=OWN_TRACER)
    result = pytester.runpytest_subprocess(
        "--api-trace", "out", "-p", "no:cacheprovider", *(["--api-trace-per-test"] if per_test else [])
    )
    result.assert_outcomes(passed=4)
    out = pytester.path / "out"
    assert config_counts(out) == {"torch.ones(1)": 1, "torch.ones(3)": 1, "torch.ones(4)": 1}
    if per_test:
        made = made_by(out)
        assert made == {
            "torch.ones(1)": ["test_own.py::test_runs_a_tracer_of_its_own"],
            "torch.ones(3)": ["test_own.py::test_runs_a_tracer_of_its_own"],
            "torch.ones(4)": ["test_own.py::test_after_them"],
        }
    assert not (out / "pieces").exists()


def test_an_existing_trace_dir_outside_given_apart_is_a_usage_error(pytester):
    """pytest takes an existing DIR of `--api-trace DIR` for a test path when
    it chooses its rootdir: outside the run's directory that moves the root."""
    pytester.makepyfile(test_one="import torch\n\ndef test_one():\n    torch.ones(1)\n")
    elsewhere = pytester.path.parent / f"{pytester.path.name}-traces"
    elsewhere.mkdir()
    apart = pytester.runpytest_subprocess("--api-trace", str(elsewhere), "-p", "no:cacheprovider")
    assert apart.ret == pytest.ExitCode.USAGE_ERROR
    apart.stderr.fnmatch_lines(
        [f"*--api-trace {elsewhere}: pytest reads an existing directory*write --api-trace={elsewhere}"]
    )
    joined = pytester.runpytest_subprocess(f"--api-trace={elsewhere}", "-p", "no:cacheprovider")
    joined.assert_outcomes(passed=1)
    assert config_counts(elsewhere) == {"torch.ones(1)": 1}
    (pytester.path / "out").mkdir()  # inside: the root stays
    pytester.runpytest_subprocess("--api-trace", "out", "-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_a_config_file_runs_as_tests(pytester):
    configs = pytester.path / "configs.txt"
    configs.write_text(
        "\n".join(
            [
                'torch.add(Tensor([2, 3], "float32"), Tensor([2, 3], "float32"))',
                'torch.add(Tensor([2, 3], "float32"), Tensor([4], "float32"))',  # fails: shapes
                'torch.neg(Opaque("mypkg.Thing"))',  # skipped: cannot be rebuilt
                'torch.save(Tensor([2], "float32"), "PWNED")',  # refused by replay's policy
                "torch.ones(3)",
            ]
        )
        + "\n"
    )
    result = pytester.runpytest_subprocess(
        "--api-replay", str(configs), "-p", "no:cacheprovider", "-rA", "--junitxml", "r.xml"
    )
    result.assert_outcomes(passed=2, failed=1, skipped=2)  # (a refused line is the policy working: skipped)
    result.stdout.fnmatch_lines(
        [
            "SKIPPED*refused: torch.save is refused: it reads or writes files*",
            "FAILED configs.txt::L2:torch.add - failed *",
        ]
    )
    assert not (pytester.path / "PWNED").exists()
    assert (pytester.path / "r.xml").read_text().count("<testcase") == 5
    only = pytester.runpytest_subprocess("--api-replay", str(configs), "-p", "no:cacheprovider", "-k", "ones")
    only.assert_outcomes(passed=1, deselected=4)


def test_config_items_are_checked_as_replay_checks_them(pytester):
    configs = pytester.path / "configs.txt"
    configs.write_text('torch.matmul(Tensor([4, 8], "float32"), Tensor([8, 3], "float32"))\ntorch.ones(3)\n')
    result = pytester.runpytest_subprocess(
        "--api-replay", str(configs), "--api-check", "float64", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=2)
    bad = pytester.runpytest_subprocess(
        "--api-replay", str(configs), "--api-check", "float63", "-p", "no:cacheprovider"
    )
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--api-check:*float63*"])


def test_a_users_operators_are_loaded_by_the_option_and_judged(pytester):
    """--api-replay-import loads the user's operators (as replay --import),
    whose namespace is then allowed; without it they are refused."""
    pytester.makepyfile(
        my_ops="""
        import torch

        @torch.library.custom_op("myops::twice", mutates_args=())
        def twice(x: torch.Tensor) -> torch.Tensor:
            return x * 2 if x.dtype == torch.float64 else x * 2.001  # wrong in float32
    """
    )
    configs = pytester.path / "configs.txt"
    configs.write_text('torch.ops.myops.twice.default(Tensor([8], "float32"))\ntorch.ones(3)\n')
    env_path = f"{pytester.path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    pytester._monkeypatch.setenv("PYTHONPATH", env_path)
    refused = pytester.runpytest_subprocess("--api-replay", str(configs), "-p", "no:cacheprovider", "-rA")
    refused.assert_outcomes(passed=1, skipped=1)
    refused.stdout.fnmatch_lines(["SKIPPED*refused: *it is an operator of myops, not of a computing namespace*"])
    judged = pytester.runpytest_subprocess(
        "--api-replay",
        str(configs),
        "--api-check",
        "float64",
        "--api-replay-import",
        "my_ops",
        "-p",
        "no:cacheprovider",
        "-rA",
    )
    judged.assert_outcomes(passed=1, failed=1)
    judged.stdout.fnmatch_lines(["*mismatch *configs.txt:1: output: 8 / 8 elements*past the error model?s bound*"])


def test_the_plugin_is_inert_without_its_options(pytester):
    pytester.makepyfile(test_plain="def test_x():\n    import sys\n    assert 'torch' not in sys.modules\n")
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_a_test_id_too_long_for_a_label_is_shortened_not_an_error(pytester):
    pytester.makepyfile(
        test_long="import pytest, torch\n\n"
        '@pytest.mark.parametrize("v", [1, 2], ids=["x" * 3000, "x" * 2999 + "y"])\n'
        "def test_p(v):\n    torch.ones(v)\n"
    )
    result = pytester.runpytest_subprocess("--api-trace", "out", "--api-trace-per-test", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    labels = [
        entry["label"]
        for entry in yaml.safe_load((pytester.path / "out" / "api_config_sources.yaml").read_text())["labels"]
    ]
    tests = [label for label in labels if label.startswith("test_long.py::test_p[")]
    assert len(tests) == 2 and all(len(label) == 256 for label in tests)
