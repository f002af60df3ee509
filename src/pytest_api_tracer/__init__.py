"""api_tracer's pytest plugin (registered through the package's pytest11
entry point; inert unless one of its options is given).

    pytest --api-trace DIR [--api-trace-levels 1,3] [--api-trace-per-test]
    pytest --api-replay FILE [--api-check MODE] [--api-allow-unsafe] [--api-replay-import MODULE]...
           [--api-replay-load-library PATH]...
    pytest --api-fuzz FILE [--api-fuzz-time S] [--api-fuzz-out DIR] [--api-fuzz-oracle LIST]
           [--api-replay-import MODULE]... [-n 4]

--api-trace traces the suite into one merged file set in DIR, labelled
"pytest ROOTDIR" (its api_config_sources.yaml). With --api-trace-per-test
each test also gets a set of its own, DIR/tests/NAME (DIR/tests-index.yaml
maps NAME to the test id), labelled by the test id, so that the session's
api_config_sources.yaml says which tests made each config, with their
calls (the calls outside any test under OUTSIDE_TESTS). Under pytest-xdist
each worker writes its own set in DIR/workers/ID and the session's set is
their merge.

--api-replay collects each config line of FILE as a test item (the line
number and the API as its name), replayed and checked as `api-tracer
replay` does, so that pytest's own machinery (-k, --lf, -n, --junitxml,
sharding) runs a corpus of configs.

--api-fuzz collects each config line of FILE as a test item that fuzzes
it (api-tracer fuzz, that line its only seed) for --api-fuzz-time seconds
(default 10), failing with the reproducers of what it found; each item's
campaign is DIR/items/NAME (DIR: --api-fuzz-out, default api_fuzz), and
the session merges them into DIR/findings.jsonl and DIR/findings.yaml
(under pytest-xdist, the controller, once the workers are done). So
pytest-xdist and CI sharding spread a corpus over processes and machines.

This module imports nothing of api_tracer (nor torch) until an option
asks for it: pytest loads it in every session.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from .options import pytest_addoption  # noqa: F401 - the hook pytest calls, defined beside the options


def pytest_configure(config: Any) -> None:
    trace = config.getoption("api_trace")
    if trace:
        from .trace import TraceSession, check_rootdir

        check_rootdir(config, trace)
        config.pluginmanager.register(TraceSession(config), "api-tracer-trace")
    replay = config.getoption("api_replay")
    if replay:
        from .replay import ReplaySession

        if not os.path.isfile(replay):
            raise pytest.UsageError(f"--api-replay: {replay}: no such file")
        config.pluginmanager.register(ReplaySession(config, os.path.abspath(replay)), "api-tracer-replay")
    fuzz = config.getoption("api_fuzz")
    if fuzz:
        from .fuzz import FuzzSession

        if not os.path.isfile(fuzz):
            raise pytest.UsageError(f"--api-fuzz: {fuzz}: no such file")
        if not config.getoption("api_fuzz_time") > 0:
            raise pytest.UsageError("--api-fuzz-time: must be more than 0")
        config.pluginmanager.register(FuzzSession(config, os.path.abspath(fuzz)), "api-tracer-fuzz")
