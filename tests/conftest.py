"""Shared helpers: run a small script in a subprocess, read an output set."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Dict, Optional

import pytest
import yaml

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"

FILES = ("api_trace.yaml", "api_trace.txt", "api_apis.txt", "api_configs.yaml", "api_statistics.yaml",
         "api_stacks.yaml")


def run_script(code: str, cwd: Path, *args: str, timeout: float = 600, name: str = "script_under_test.py",
               env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    """Runs `code` (dedented) as the script `name` in `cwd`, in a fresh interpreter."""
    script = Path(cwd) / name
    script.write_text(textwrap.dedent(code))
    full_env = dict(os.environ, PYTHONUNBUFFERED="1")
    full_env.update(env or {})
    return subprocess.run([sys.executable, str(script), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=full_env)


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


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return tmp_path / "out"
