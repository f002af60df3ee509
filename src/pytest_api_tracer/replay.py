"""--api-replay FILE: each config line of FILE collected as a test item
(its line number and API as its name), replayed and checked as
`api-tracer replay` does, so that pytest's own machinery (-k, --lf, -n,
--junitxml, sharding) runs a corpus of configs."""

from __future__ import annotations

import os
from typing import Any, Iterator

import pytest

from .items import LineItem, PluginFile, ReplayFailure
from .options import replay_options_of


class ReplaySession:
    def __init__(self, config: Any, path: str) -> None:
        self.path = path
        self.config = config
        self.base = replay_options_of(config)  # checked now: a bad option is said before any item runs
        config.args[:] = [path]  # the configs are what this session collects
        self._options: Any = None

    def pytest_collect_file(self, file_path: Any, parent: Any) -> Any:
        if os.path.abspath(str(file_path)) == self.path:
            return ConfigFile.from_parent(parent, path=file_path, session_plugin=self)
        return None

    def options(self) -> Any:
        """The replay's options: the file's value profiles, the check asked;
        the user's code loaded, once."""
        if self._options is None:
            from dataclasses import replace

            from api_tracer.formats.configs import ranges_beside
            from api_tracer.formats.summaries import read_value_ranges
            from api_tracer.replay.run import prepare_process

            self._options = replace(self.base, ranges=read_value_ranges(ranges_beside(self.path)))
            prepare_process(self._options)
        return self._options


class ConfigFile(PluginFile):
    def collect(self) -> Iterator[Any]:
        from api_tracer.config import api_of
        from api_tracer.formats.configs import read_config_file

        for config in read_config_file(str(self.path)):
            api = api_of(config.text) if not config.error else "unreadable"
            yield ConfigItem.from_parent(self, name=f"L{config.line}:{api}", entry=config, lineno=config.line)


class ConfigItem(LineItem):
    """A config line, replayed (entry: its Config)."""

    def runtest(self) -> None:
        from api_tracer.replay import Status, replay_one

        plugin: ReplaySession = self.parent.session_plugin
        result = replay_one(self.entry, plugin.options())
        if result.status in (Status.SKIPPED, Status.VACUOUS, Status.UNMAPPED, Status.REFUSED):
            pytest.skip(result.message if result.status == Status.SKIPPED else f"{result.status}: {result.message}")
        if result.status != Status.OK:
            where = f"{result.file}:{result.line}" + (f":{result.column}" if result.column else "")
            error = f"{result.error}: " if result.error else ""  # (a mismatch has none)
            raise ReplayFailure(f"{result.status} {where}: {error}{result.message}\n  {result.config}")
