"""The command line: run, merge, stats."""

import shutil
import signal
import subprocess
import sys

import pytest

from support import GOLDEN, read_set, run_cli, run_script

PROGRAM = """
import sys
import torch
x = torch.ones(2, 3)
print("argv", sys.argv, __name__, __file__.endswith("prog.py"))
y = torch.add(x, x, alpha=2)
if "exit" in sys.argv:
    sys.exit(3)
if "raise" in sys.argv:
    raise ValueError("boom")
if "interrupt" in sys.argv:
    raise KeyboardInterrupt
print(y.sum().item())
"""


def cli(*args, cwd=None, env=None, timeout=300):
    return run_cli(*args, cwd=cwd, env=env, timeout=timeout)


def test_run_leaves_the_same_files_as_the_with_form(tmp_path):
    example = tmp_path / "ex"
    shutil.copytree(GOLDEN / "seed_example", example)
    body = (example / "example_stack.py").read_text()
    # the same program without its own tracer, traced by the command line
    plain = body.replace("with tracer:", "if True:")
    (example / "plain.py").write_text(plain)
    with_form = run_script(body, example, name="example_stack.py")
    assert with_form.returncode == 0, with_form.stderr
    result = cli("run", "--levels", "1", "--merge", "--stack", "short", "-o", "cli_out", "plain.py", cwd=example)
    assert result.returncode == 0, result.stderr
    a, b = read_set(example / "trace_output_stack"), read_set(example / "cli_out")
    assert a.keys() == b.keys()
    for name in a:  # stacks too: plain.py's lines are example_stack.py's
        assert b[name] == a[name].replace("example_stack.py", "plain.py"), name


@pytest.mark.parametrize("how,code", [("plain", 0), ("exit", 3), ("raise", 1)])
def test_program_output_and_exit_code_are_untouched(tmp_path, how, code):
    (tmp_path / "prog.py").write_text(PROGRAM)
    untraced = subprocess.run([sys.executable, "prog.py", how], cwd=tmp_path, capture_output=True, text=True)
    traced = cli("run", "-o", "out", "prog.py", how, cwd=tmp_path)
    assert (traced.returncode, traced.stdout, traced.stderr) == (untraced.returncode, untraced.stdout, untraced.stderr)
    assert traced.returncode == code
    lines = (tmp_path / "out" / "api_trace_level_1.txt").read_text().splitlines()
    assert lines[:2] == ["torch.ones(2, 3)", 'torch.add(Tensor([2, 3], "float32"), Tensor([2, 3], "float32"), alpha=2)']


def test_ctrl_c_ends_as_untraced_and_files_are_complete(tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM)
    untraced = subprocess.run([sys.executable, "prog.py", "interrupt"], cwd=tmp_path, capture_output=True)
    traced = cli("run", "-o", "out", "prog.py", "interrupt", cwd=tmp_path)
    assert traced.returncode == untraced.returncode == -signal.SIGINT
    assert "KeyboardInterrupt" in traced.stderr
    assert "Total API calls: 2" in (tmp_path / "out" / "api_statistics_level_1.yaml").read_text()


def test_run_a_module(tmp_path):
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "job.py").write_text("import sys, torch\nprint(sys.argv[1:])\ntorch.zeros(5)\n")
    result = cli("run", "-o", "out", "--levels", "1,3", "--merge", "-m", "mypkg.job", "--flag", "x", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "['--flag', 'x']\n"
    lines = (tmp_path / "out" / "api_trace.txt").read_text().splitlines()
    assert lines == [
        "torch.zeros(5)",
        'torch.ops.aten.zeros.default([5], device=torch.device("cpu"), pin_memory=False)',
    ]


def test_run_traces_the_dialect_s_levels_when_not_told(tmp_path):
    (tmp_path / "prog.py").write_text(PROGRAM)
    assert cli("run", "-o", "out", "prog.py", cwd=tmp_path).returncode == 0
    # torch: level 1 (torch.add seen by the function mode, written as level 1's files)
    assert (tmp_path / "out" / "api_configs_level_1.yaml").exists()
    assert not (tmp_path / "out" / "api_configs_level_0.yaml").exists()


def test_bad_options_name_what_is_wrong(tmp_path):
    (tmp_path / "prog.py").write_text("pass\n")
    r = cli("run", "--levels", "7", "prog.py", cwd=tmp_path)
    assert r.returncode == 2 and "api-tracer: run: levels: 7 is not a level" in r.stderr
    r = cli("run", "nope.py", cwd=tmp_path)
    assert r.returncode == 2 and "can't open file 'nope.py'" in r.stderr
    (tmp_path / "blocker").write_text("")
    r = cli("run", "-o", "blocker/out", "prog.py", cwd=tmp_path)
    assert r.returncode == 2 and "blocker/out" in r.stderr
    r = cli("merge", str(tmp_path), "-o", str(tmp_path / "m"))
    assert r.returncode == 2 and "no file set" in r.stderr


def test_merge_adds_counts_and_unites_configs(tmp_path):
    (tmp_path / "prog.py").write_text(
        "import sys, torch\nn = int(sys.argv[1])\nfor i in range(n):\n    torch.ones(n)\ntorch.zeros(1)\n"
    )
    for run, n in (("a", 2), ("b", 3)):
        assert (
            cli(
                "run", "-o", f"runs/{run}", "--levels", "1,2", "--stack", "short", "prog.py", str(n), cwd=tmp_path
            ).returncode
            == 0
        )
    r = cli("merge", "runs", "-o", "merged", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    merged = read_set(tmp_path / "merged", "_level_1")
    assert merged["api_statistics.yaml"] == (
        "Total APIs: 2\nTotal API calls: 7\n\ntorch.ones: 5 (71.43%)\ntorch.zeros: 2 (28.57%)\n"
    )
    assert merged["api_configs.yaml"] == "torch.ones(2)\ntorch.ones(3)\ntorch.zeros(1)\n"
    assert merged["api_trace.txt"].splitlines() == (
        ["torch.ones(2)"] * 2 + ["torch.zeros(1)"] + ["torch.ones(3)"] * 3 + ["torch.zeros(1)"]
    )
    import yaml

    assert len(yaml.safe_load(merged["api_trace.yaml"])) == 7
    assert yaml.safe_load(merged["api_stacks.yaml"])["torch.ones"]["3stacks"] == [["prog.py:4 in <module>"]]
    assert (tmp_path / "merged" / "api_statistics_level_2.yaml").exists()


def test_stats_table(tmp_path):
    (tmp_path / "prog.py").write_text("import torch\nfor i in range(3):\n    torch.ones(i)\ntorch.zeros(1)\n")
    assert cli("run", "-o", "out", "--levels", "1,2", "--merge", "prog.py", cwd=tmp_path).returncode == 0
    r = cli("stats", "out", cwd=tmp_path)
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0] == "== out: 4 APIs, 8 calls, 8 configs"  # the set named as the user named it
    row = next(line for line in lines if line.startswith("torch.ones "))
    assert row.split() == ["torch.ones", "3", "37.50%", "3"]
    assert any(line.split() == ["1", "4"] for line in lines) and any(line.split() == ["2", "4"] for line in lines)
