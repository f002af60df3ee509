"""The plugin's options. Those of a replay's options (--api-check,
--api-allow-unsafe, --api-replay-import, --api-replay-load-library) are
api_tracer's own (api_tracer/flags.py: REPLAY, which `api-tracer replay` and
`api-tracer fuzz` take theirs from too), and their values are checked as
theirs are (api_tracer/replay/run.py: checked_options), once the
session asks for a replay. flags.py imports the standard library only, and
is read here without importing api_tracer (which imports torch), so that a
session that asks nothing of the plugin imports neither."""

from __future__ import annotations

import importlib.util
import os
import sys
from types import ModuleType
from typing import Any

import pytest

# The options of a replay the plugin's --api-replay takes (flags.py's REPLAY).
REPLAY_OPTIONS = ("check", "allow_unsafe", "imports", "libraries")
FLAGS_MODULE = "api_tracer._flags_for_pytest"  # where flags.py is read, apart from the package


def flags() -> ModuleType:
    """api_tracer/flags.py, read once, without importing api_tracer."""
    module = sys.modules.get(FLAGS_MODULE)
    if module is None:
        package = importlib.util.find_spec("api_tracer")
        if package is None or not package.submodule_search_locations:
            raise pytest.UsageError("api_tracer is not installed where this pytest runs")
        path = os.path.join(list(package.submodule_search_locations)[0], "flags.py")
        spec = importlib.util.spec_from_file_location(FLAGS_MODULE, path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[FLAGS_MODULE] = module
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("api-tracer", "api_tracer: trace the suite's API calls, or replay configs as tests")
    group.addoption("--api-trace", metavar="DIR", help="trace the API calls of the tests into DIR")
    group.addoption(
        "--api-trace-levels", metavar="1,3", default="1", help="the levels to trace, comma-separated (default 1)"
    )
    group.addoption(
        "--api-trace-per-test",
        action="store_true",
        help="also write one file set per test (DIR/tests/...), and which tests made each config",
    )
    group.addoption("--api-replay", metavar="FILE", help="collect each config line of FILE as a test")
    flags().add_plugin_flags(group.addoption, ("check", "allow_unsafe"), "--api-replay")
    flags().add_plugin_flags(group.addoption, ("imports", "libraries"), "--api-replay or --api-fuzz")
    group.addoption("--api-fuzz", metavar="FILE", help="collect each config line of FILE as a test that fuzzes it")
    group.addoption(
        "--api-fuzz-time",
        metavar="SECONDS",
        type=float,
        default=10.0,
        help="with --api-fuzz: how long each line is fuzzed (default 10)",
    )
    group.addoption(
        "--api-fuzz-out",
        metavar="DIR",
        default="api_fuzz",
        help="with --api-fuzz: the campaigns' directory (default api_fuzz)",
    )
    group.addoption(
        "--api-fuzz-oracle",
        metavar="LIST",
        default=None,
        help="with --api-fuzz: what makes a finding, as fuzz --oracle (default its default)",
    )


def replay_options_of(config: Any, names: Any = REPLAY_OPTIONS, **fixed: Any) -> Any:
    """The ReplayOptions the session's options give (those of `names`, and
    `fixed`), checked as replay checks its flags' (a pytest.UsageError
    naming the option where they are not)."""
    from api_tracer.errors import UsageError
    from api_tracer.replay.run import checked_options

    module = flags()
    given = {name: config.getoption(module.plugin_dest(name)) for name in names}
    try:
        return checked_options("pytest", **given, **fixed)
    except UsageError as e:
        message = str(e)
        for name in names:  # said by the plugin's name of the flag
            message = message.replace(module.REPLAY[name].flags[0], module.REPLAY[name].plugin)
        raise pytest.UsageError(message) from None
