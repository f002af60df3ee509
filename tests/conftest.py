"""The fixtures every test folder shares; what the tests share besides is
the package `support`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

# the user code's modules (support.USER_CODE), imported by name as `--import NAME` imports them
sys.path.insert(0, str(Path(__file__).resolve().parent / "usercode"))


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return tmp_path / "out"
