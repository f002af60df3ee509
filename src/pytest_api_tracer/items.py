"""What --api-replay and --api-fuzz collect: a file of config lines, each
line an item that fails with what its run said."""

from __future__ import annotations

from typing import Any

import pytest


class ReplayFailure(Exception):
    """A config that failed, mismatched or was invalid, as its replay said."""


class PluginFile(pytest.File):
    """A file of config lines the session's plugin (replay, fuzz) collects."""

    def __init__(self, *, session_plugin: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.session_plugin = session_plugin


class LineItem(pytest.Item):
    """An item of one config line of its file (`entry`, what its run takes:
    a replay's Config, a fuzz seed; its number `lineno`), failing with what
    its run said, as text."""

    def __init__(self, *, entry: Any, lineno: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.entry, self.lineno = entry, lineno

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        if isinstance(excinfo.value, ReplayFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple:
        return self.path, self.lineno - 1, self.name
