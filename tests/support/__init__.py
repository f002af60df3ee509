"""What the tests share: the project's folders, running a small script in a
fresh interpreter, and reading an output set back. The tests import it as
`support` (tests/ is on sys.path: conftest.py is there), and its modules:
browser.py (headless Chromium), judge_sets.py (lines the judge must pass and
fail), report_inputs.py (inputs of the HTML report), workloads.py (real
models' workloads)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import yaml

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent
GOLDEN = TESTS / "golden"
PROGRAMS = TESTS / "programs"
# Modules of a user's own operators (planted defects among them), which
# tests load as `replay --import NAME` does: on sys.path (conftest.py), and
# on the PYTHONPATH of the processes tests start (user_code_env).
USER_CODE = TESTS / "usercode"

# The command line, as the tests run it in a fresh process.
CLI = [sys.executable, "-m", "api_tracer"]

FILES = (
    "api_trace.yaml",
    "api_trace.txt",
    "api_apis.txt",
    "api_configs.yaml",
    "api_statistics.yaml",
    "api_stacks.yaml",
)


def user_code_env() -> Dict[str, str]:
    """The environment of a process that imports the user code's modules."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(USER_CODE), os.environ.get("PYTHONPATH", "")])}


def run_cli(*args: str, timeout: float = 600, **kwargs: Any) -> subprocess.CompletedProcess:
    """`api-tracer ARGS` (python -m api_tracer) in a fresh interpreter, its
    output captured as text; `kwargs` as subprocess.run takes them (cwd, env)."""
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, **kwargs)


def run_script(
    code: str,
    cwd: Path,
    *args: str,
    timeout: float = 600,
    name: str = "script_under_test.py",
    env: Optional[Dict[str, str]] = None,
) -> subprocess.CompletedProcess:
    """Runs `code` (dedented) as the script `name` in `cwd`, in a fresh interpreter."""
    script = Path(cwd) / name
    script.write_text(textwrap.dedent(code))
    full_env = dict(os.environ, PYTHONUNBUFFERED="1")
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, str(script), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=full_env
    )


def read_set(directory: Path, suffix: str = "") -> Dict[str, str]:
    """The files of one output set that exist, by their suffix-less names."""
    out = {}
    for name in FILES:
        stem, ext = os.path.splitext(name)
        path = Path(directory) / f"{stem}{suffix}{ext}"
        if path.exists():
            out[name] = path.read_text()
    return out


def trace_lines(directory: Path, suffix: str = "") -> list:
    return read_set(directory, suffix)["api_trace.txt"].splitlines()


def yaml_records(directory: Path, suffix: str = "") -> list:
    return yaml.safe_load(read_set(directory, suffix)["api_trace.yaml"]) or []


def run_in_threads(work, n_threads: int) -> None:
    """Runs `work` in `n_threads` new threads at once and waits for them all."""
    threads = [threading.Thread(target=work) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def write_lines(tmp_path: Path, lines: list, name: str = "configs.txt") -> Path:
    """A file of these lines (config lines, say) in tmp_path."""
    path = Path(tmp_path) / name
    path.write_text("\n".join(lines) + "\n")
    return path


def trace_linear_backward(out: Path, level: int) -> Any:
    """One forward and backward of a Linear(3, 4) on a [2, 3] input (relu,
    sum, backward), traced at `level` into `out`, merged; the Linear."""
    import torch

    from api_tracer import APITracer

    lin, x = torch.nn.Linear(3, 4), torch.randn(2, 3)
    with APITracer(output_path=str(out), levels=level, merge_output=True):
        lin(x).relu().sum().backward()
    return lin


def export_lines(tmp_path: Path, lines: list, fmt: str, capsys: Any) -> Tuple[Path, str, List[str], str]:
    """`lines` as an api_trace.txt (written in latin-1: a line may hold
    bytes that are not UTF-8), exported with `api-tracer export --format
    FMT`: (the trace's path, what export printed, its stderr's lines, the
    text it wrote)."""
    from api_tracer.cli import main

    configs = tmp_path / "api_trace.txt"
    configs.write_bytes("\n".join(lines).encode("latin-1") + b"\n")
    out = tmp_path / f"exported-{fmt}.txt"
    assert main(["export", "--format", fmt, str(configs), "-o", str(out)]) == 0
    captured = capsys.readouterr()
    return configs, captured.out, captured.err.splitlines(), out.read_text()


def assert_counted_by_kind(left_out: Any, not_carried: List[Tuple[str, str]], some: Dict[str, List[int]]) -> None:
    """An export's LeftOut over `not_carried`'s lines ((line, kind) each,
    none carried) counts each line once, under its kind, the kinds in the
    order of their first lines; `some` kinds' [count, first line] as given."""
    assert list(left_out.kinds) == list(dict.fromkeys(kind for _, kind in not_carried))
    assert left_out.total == len(not_carried)
    assert {kind: left_out.kinds[kind] for kind in some} == some


# Numbers a config line writes, each hard to carry to another format: zero,
# a negative, one past int64, a hundred digits, floats that are not short in
# binary, a negative zero, the non-finite ones, the smallest and largest.
NUMBERS = [
    "0",
    "-1",
    "9223372036854775808",
    "-" + "7" * 100,
    "0.1",
    "1e-05",
    "2.0",
    "-0.0",
    "inf",
    "-inf",
    "nan",
    "5e-324",
    "1.7976931348623157e+308",
]
# ... and complex ones: imaginary, negative zero, non-finite parts.
COMPLEX_NUMBERS = ["1j", "-1j", "(1+2j)", "(-0-1j)", "(1-infj)", "(nan+nanj)"]
