"""The committed API lists are what the generator makes for the pinned torch."""

import subprocess
import sys

from api_tracer.frameworks.torch.dialect import PyTorchDialect


def test_api_lists_are_current():
    result = subprocess.run(
        [sys.executable, "-W", "ignore", "-m", "api_tracer.api_list", "--check"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr


def test_every_listed_api_is_wrappable():
    dialect = PyTorchDialect()
    for full in (False, True):
        names = dialect.api_list(full=full)
        targets, skipped = dialect.setattr_targets(names)
        assert not skipped, dict(list(skipped.items())[:5])
        assert len(targets) == len(names)
    assert len(dialect.api_list(full=True)) > len(dialect.api_list())
