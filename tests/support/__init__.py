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
from typing import Dict, Optional

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
