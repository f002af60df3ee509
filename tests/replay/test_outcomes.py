"""replay --outcomes DIR: each line sorted into the outcome file of
PaddleAPITest's that its result says (replay/outcomes.py), the line as it
was read, every outcome reached by a real run: a user's module (--import)
whose operators fail, crash, is killed by SIGKILL as the out-of-memory killer
kills, hang, or are wrong in float32 only."""

import os
import textwrap

from api_tracer.replay.outcomes import FILE_PREFIX, OUTCOMES
from support import run_cli

MODULE = """
import os
import signal
import time

import torch


def op(fn):
    return torch.library.custom_op(f"mykernels::{fn.__name__}", mutates_args=())(fn)


@op
def fine(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@op
def raises(x: torch.Tensor) -> torch.Tensor:
    raise ValueError("no such thing")


@op
def crashes(x: torch.Tensor) -> torch.Tensor:
    os.kill(os.getpid(), signal.SIGSEGV)


@op
def killed(x: torch.Tensor) -> torch.Tensor:
    os.kill(os.getpid(), signal.SIGKILL)


@op
def hangs(x: torch.Tensor) -> torch.Tensor:
    time.sleep(60)


@op
def wrong_in_float32(x: torch.Tensor) -> torch.Tensor:
    return x * 2 if x.dtype == torch.float64 else x * 2.01
"""


def test_every_line_goes_to_the_outcome_file_its_result_says(tmp_path):
    (tmp_path / "mykernels.py").write_text(textwrap.dedent(MODULE))
    t = 'Tensor([64], "float32")'
    lines = {
        f"torch.ops.mykernels.fine.default({t})": "pass",
        f"torch.ops.mykernels.wrong_in_float32.default({t})": "accuracy_error",
        f"torch.ops.mykernels.raises.default({t})": "torch_error",
        f"torch.ops.mykernels.crashes.default({t})": "crash",
        f"torch.ops.mykernels.killed.default({t})": "oom",
        f"torch.ops.mykernels.hangs.default({t})": "timeout",
        'torch.add(Opaque("T"), 1)': "skip",  # an argument written by its type only
        f'torch.add(Tensor([{10**12}], "float32"), 1)': "oom",  # past --max-bytes: skipped
    }
    (tmp_path / "c.txt").write_text("".join(line + "\n" for line in lines))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / f"{FILE_PREFIX}pass.txt").write_text("an earlier run's line\n")
    r = run_cli(
        "replay", "c.txt", "--import", "mykernels", "--check", "float64", "--jobs", "2", "--timeout", "3",
        "--outcomes", "out", cwd=tmp_path, timeout=300,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )  # fmt: skip
    assert r.returncode == 1, r.stdout + r.stderr
    found = {}
    for name in os.listdir(tmp_path / "out"):
        assert name.startswith(FILE_PREFIX) and name.endswith(".txt")
        outcome = name[len(FILE_PREFIX) : -len(".txt")]
        assert outcome in OUTCOMES
        for line in (tmp_path / "out" / name).read_text().splitlines():
            found[line] = outcome
    assert found == lines  # (the earlier run's file replaced)
    assert (
        "sorted as PaddleAPITest sorts them, into out: 1 pass, 1 accuracy_error, 1 torch_error, 1 crash, " in r.stdout
    )
    assert "killed by SIGKILL, as the kernel's out-of-memory killer kills" in r.stdout


def test_outcomes_must_name_a_folder(tmp_path):
    (tmp_path / "c.txt").write_text('torch.add(Tensor([3], "float32"), 1)\n')
    (tmp_path / "f").write_text("")
    r = run_cli("replay", "c.txt", "--outcomes", "f", cwd=tmp_path)
    assert r.returncode == 2 and "replay: --outcomes f: not a folder" in r.stderr, r.stderr


def test_outcomes_never_replaces_an_input(tmp_path):
    (tmp_path / "out").mkdir()
    line = 'torch.add(Tensor([3], "float32"), 1)\n'
    (tmp_path / "out" / "api_config_pass.txt").write_text(line)
    r = run_cli("replay", "out/api_config_pass.txt", "--outcomes", "out", cwd=tmp_path)
    assert r.returncode == 2 and "it holds out/api_config_pass.txt, an input, which it would replace" in r.stderr
    assert (tmp_path / "out" / "api_config_pass.txt").read_text() == line
