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

import hashlib
import os
import re
import shutil
import threading
from typing import Any, Dict, Iterator, List, Optional

import pytest

OUTSIDE_TESTS = "(outside tests)"  # the label of the calls between tests, with --api-trace-per-test


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("api-tracer", "api_tracer: trace the suite's API calls, or replay configs as tests")
    group.addoption("--api-trace", metavar="DIR", help="trace the API calls of the tests into DIR")
    group.addoption("--api-trace-levels", metavar="1,3", default="1",
                    help="the levels to trace, comma-separated (default 1)")
    group.addoption("--api-trace-per-test", action="store_true",
                    help="also write one file set per test (DIR/tests/...), and which tests made each config")
    group.addoption("--api-replay", metavar="FILE", help="collect each config line of FILE as a test")
    group.addoption("--api-check", metavar="MODE", help="with --api-replay: check each result (as replay --check)")
    group.addoption("--api-replay-import", action="append", metavar="MODULE", default=[],
                    help="with --api-replay: import MODULE (your operators) first, as replay --import (repeatable)")
    group.addoption("--api-replay-load-library", action="append", metavar="PATH", default=[],
                    help="with --api-replay: load the shared library PATH first, as replay --load-library")
    group.addoption("--api-fuzz", metavar="FILE", help="collect each config line of FILE as a test that fuzzes it")
    group.addoption("--api-fuzz-time", metavar="SECONDS", type=float, default=10.0,
                    help="with --api-fuzz: how long each line is fuzzed (default 10)")
    group.addoption("--api-fuzz-out", metavar="DIR", default="api_fuzz",
                    help="with --api-fuzz: the campaigns' directory (default api_fuzz)")
    group.addoption("--api-fuzz-oracle", metavar="LIST", default=None,
                    help="with --api-fuzz: what makes a finding, as fuzz --oracle (default its default)")
    group.addoption("--api-allow-unsafe", action="store_true",
                    help="with --api-replay: call any torch API a line names (your own, trusted files)")


def pytest_configure(config: Any) -> None:
    trace = config.getoption("api_trace")
    if trace:
        _check_rootdir(config, trace)
        config.pluginmanager.register(TraceSession(config), "api-tracer-trace")
    replay = config.getoption("api_replay")
    if replay:
        if not os.path.isfile(replay):
            raise pytest.UsageError(f"--api-replay: {replay}: no such file")
        config.pluginmanager.register(ReplaySession(config, os.path.abspath(replay)), "api-tracer-replay")
    fuzz = config.getoption("api_fuzz")
    if fuzz:
        if not os.path.isfile(fuzz):
            raise pytest.UsageError(f"--api-fuzz: {fuzz}: no such file")
        if not config.getoption("api_fuzz_time") > 0:
            raise pytest.UsageError("--api-fuzz-time: must be more than 0")
        config.pluginmanager.register(FuzzSession(config, os.path.abspath(fuzz)), "api-tracer-fuzz")


# -- tracing a suite ------------------------------------------------------------


def _check_rootdir(config: Any, trace: str) -> None:
    """pytest chooses its rootdir before it reads a plugin's options, so it
    takes the DIR of `--api-trace DIR`, where DIR exists, for a test path.
    Outside the directory pytest runs in, that moves the root away from the
    project's: the session names its tests from there and can lose the
    project's config file (testpaths, markers). `--api-trace=DIR` is safe."""
    args = [str(a) for a in config.invocation_params.args]
    given_apart = any(a == "--api-trace" and b == trace for a, b in zip(args, args[1:]))
    here = os.path.realpath(str(config.invocation_params.dir))
    inside = os.path.realpath(trace).startswith(here + os.sep)
    if given_apart and os.path.isdir(trace) and not inside:
        raise pytest.UsageError(
            f"--api-trace {trace}: pytest reads an existing directory given apart from its option as a test "
            f"path when it chooses its rootdir (here {config.rootpath}); write --api-trace={trace}")


def _levels(text: str) -> List[int]:
    try:
        levels = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        levels = []
    if not levels:
        raise pytest.UsageError(f"--api-trace-levels: expected comma-separated levels, not {text!r}")
    return levels


def test_dir_name(nodeid: str) -> str:
    """A directory name for a test id: readable, and unique by a short hash."""
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[:80]
    return f"{readable}-{hashlib.sha1(nodeid.encode()).hexdigest()[:8]}"


class Trace:
    """The plugin's trace into one set: `target`, or with target None the
    set's pieces, left in the session's pieces directory for its merge. It gives way
    to a tracer that a test runs of its own (which then records those
    calls), and goes on as a new piece once that one stops; close() makes
    the pieces one set in `target`."""

    def __init__(self, session: "TraceSession", target: Optional[str], label: str) -> None:
        self.session = session
        self.target = target
        self.label = label
        self.pieces: List[str] = []
        self.tracer: Any = None
        self.closed = False
        self.pending = False  # gave way; resumes at the next test boundary
        self._start_piece()

    def _start_piece(self) -> None:
        if self.closed:  # a test's tracer that stopped after its test
            return
        from api_tracer import APITracer

        piece = self.session.new_piece()
        self.pieces.append(piece)
        self.thread, self.modes_below = threading.get_ident(), _mode_stacks()
        self.tracer = APITracer(output_path=piece, levels=self.session.levels, merge_output=True, label=self.label)
        self.tracer.give_way(self._resume).start()

    def _resume(self) -> None:
        """The test's tracer stopped: go on now if that is on our thread with
        the torch modes as they were below ours, else at the next test
        boundary (our modes are per thread, and pushed inside a `with` of
        the test's they would be what its exit pops)."""
        if threading.get_ident() == self.thread and _mode_stacks() == self.modes_below:
            self._start_piece()
        else:
            self.pending = True

    def at_test_boundary(self) -> None:
        if self.pending:
            self.pending = False
            self._start_piece()

    def close(self) -> None:
        self.closed = True
        self.tracer.stop()  # nothing if it gave way: its files are written
        if self.target is None:
            return
        from api_tracer.merge import merge_found

        os.makedirs(self.target, exist_ok=True)
        if len(self.pieces) == 1:
            for name in os.listdir(self.pieces[0]):
                os.replace(os.path.join(self.pieces[0], name), os.path.join(self.target, name))
        else:
            merge_found(_sets_in(self.pieces), self.target)
        for piece in self.pieces:
            shutil.rmtree(piece, ignore_errors=True)


class TraceSession:
    """Traces this process's part of the session into its set: DIR itself,
    or DIR/workers/ID in an xdist worker; with per_test, each test into
    DIR/tests/NAME and the calls between tests into pieces merged at the
    end. An xdist controller runs no test: it merges the workers' sets."""

    def __init__(self, config: Any) -> None:
        self.root = os.path.abspath(config.getoption("api_trace"))
        self.levels = _levels(config.getoption("api_trace_levels"))
        self.per_test = config.getoption("api_trace_per_test")
        worker = getattr(config, "workerinput", None)
        self.controller = worker is None and getattr(config.option, "dist", "no") != "no"
        self.workers = os.path.join(self.root, "workers")
        self.dir = os.path.join(self.workers, worker["workerid"]) if worker else self.root
        self.pieces = os.path.join(self.dir, "pieces")
        # the session's label, without --api-trace-per-test
        self.label = f"pytest {os.path.basename(str(config.rootpath))}"[:256]
        self.trace: Any = None
        self.tests: Dict[str, str] = {}  # directory name -> test id
        self._pieces_made = 0

    def new_piece(self) -> str:
        self._pieces_made += 1
        return os.path.join(self.pieces, str(self._pieces_made))

    def _trace(self, target: Optional[str], label: str) -> None:
        self._close()
        self.trace = Trace(self, target, label)

    def _close(self) -> None:
        trace, self.trace = self.trace, None
        if trace is not None:
            trace.close()

    def pytest_sessionstart(self, session: Any) -> None:
        if self.controller or getattr(session.config, "workerinput", None) is None:
            shutil.rmtree(self.root, ignore_errors=True)  # the run's own directory, made anew
        if self.controller:
            return
        self._trace(None, OUTSIDE_TESTS) if self.per_test else self._trace(self.dir, self.label)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: Any, nextitem: Any) -> Iterator[None]:
        if self.controller:
            yield
            return
        if not self.per_test:
            self.trace.at_test_boundary()
            try:
                yield
            finally:
                self.trace.at_test_boundary()
            return
        name = test_dir_name(item.nodeid)
        self.tests[name] = item.nodeid
        from api_tracer.options import as_label

        self._trace(os.path.join(self.root, "tests", name), as_label(item.nodeid))
        try:
            yield
        finally:
            self._trace(None, OUTSIDE_TESTS)  # the calls between tests

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: Any, call: Any) -> Iterator[None]:
        """pytest's own work (a failure's report shows the test's locals, a
        tensor's repr calls torch): not the suite's calls."""
        from api_tracer import _C

        with _C.suspended():
            yield

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: Any) -> None:
        from api_tracer.merge import merge_found

        if self.controller:
            if os.path.isdir(self.workers):
                workers = [os.path.join(self.workers, w) for w in sorted(os.listdir(self.workers))]
                merge_found(_sets_in(workers), self.root)
                tests = {name: nodeid for w in workers for name, nodeid in read_index(w).items()}
                write_index(self.root, tests)
            return
        self._close()
        if not self.per_test:
            shutil.rmtree(self.pieces, ignore_errors=True)
            return
        tests_dirs = [os.path.join(self.root, "tests", name) for name in self.tests]
        between = [os.path.join(self.pieces, p) for p in os.listdir(self.pieces)]
        merge_found(_sets_in(between + tests_dirs), self.dir)
        shutil.rmtree(self.pieces, ignore_errors=True)
        write_index(self.dir, self.tests)


def _mode_stacks() -> tuple:
    """The torch function and dispatch modes entered on this thread."""
    from torch.overrides import _get_current_function_mode_stack
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    return _get_current_function_mode_stack(), _get_current_dispatch_mode_stack()


def _sets_in(directories: List[str]) -> List[Any]:
    """The file sets right in these directories (not below them)."""
    from api_tracer.filesets import find_sets

    wanted = set(directories)
    return [s for s in find_sets(directories) if s.directory in wanted]


INDEX = "tests-index.yaml"  # in a process's set: its tests' directory names -> ids


def read_index(directory: str) -> Dict[str, str]:
    import yaml

    path = os.path.join(directory, INDEX)
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f) or {}


def write_index(directory: str, tests: Dict[str, str]) -> None:
    import yaml

    if tests:
        with open(os.path.join(directory, INDEX), "w", encoding="utf-8") as f:
            yaml.safe_dump(dict(sorted(tests.items())), f, width=1 << 20)


# -- configs as tests -------------------------------------------------------------


class ReplayFailure(Exception):
    """A config that failed, mismatched or was invalid, as its replay said."""


class ReplaySession:
    def __init__(self, config: Any, path: str) -> None:
        self.path = path
        self.check = config.getoption("api_check")
        self.allow_unsafe = config.getoption("api_allow_unsafe")
        self.imports = tuple(config.getoption("api_replay_import"))
        self.libraries = tuple(config.getoption("api_replay_load_library"))
        if self.check:
            from api_tracer.replay.check import reference

            try:
                reference(self.check, "cpu")
            except ValueError as e:
                raise pytest.UsageError(f"--api-check: {e}") from None
        config.args[:] = [path]  # the configs are what this session collects
        self._options: Any = None
        self._resolver: Any = None

    def pytest_collect_file(self, file_path: Any, parent: Any) -> Any:
        if os.path.abspath(str(file_path)) == self.path:
            return ConfigFile.from_parent(parent, path=file_path, session_plugin=self)
        return None

    def options(self) -> Any:
        """The replay's options: the file's value profiles, the check asked."""
        if self._options is None:
            from api_tracer.replay import ReplayOptions, ranges_beside, read_value_ranges

            from api_tracer.replay import user_code

            self._options = ReplayOptions(ranges=read_value_ranges(ranges_beside(self.path)), check=self.check,
                                          allow_unsafe=self.allow_unsafe, imports=self.imports,
                                          libraries=self.libraries)
            user_code.load(self.imports, self.libraries)
        return self._options

    def resolver(self) -> Any:
        if self._resolver is None:
            from api_tracer.replay import Resolver

            self._resolver = Resolver()
        return self._resolver


class PluginFile(pytest.File):
    """A file of config lines the session's plugin (replay, fuzz) collects."""

    def __init__(self, *, session_plugin: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.session_plugin = session_plugin


class LineItem(pytest.Item):
    """An item of one config line (its number: `lineno`), failing with
    what its run said, as text."""

    lineno = 0

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        if isinstance(excinfo.value, ReplayFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple:
        return self.path, self.lineno - 1, self.name


class ConfigFile(PluginFile):
    def collect(self) -> Iterator[Any]:
        from api_tracer.filesets import api_of
        from api_tracer.replay import read_configs

        for config in read_configs(str(self.path)):
            api = api_of(config.text) if not config.error else "unreadable"
            yield ConfigItem.from_parent(self, name=f"L{config.line}:{api}", replay_config=config)


class ConfigItem(LineItem):
    def __init__(self, *, replay_config: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.replay_config = replay_config
        self.lineno = replay_config.line

    def runtest(self) -> None:
        from api_tracer.replay import Status, replay_one

        plugin: ReplaySession = self.parent.session_plugin
        result = replay_one(self.replay_config, plugin.options(), plugin.resolver())
        if result.status in (Status.SKIPPED, Status.VACUOUS):
            pytest.skip(f"{result.status}: {result.message}" if result.status == Status.VACUOUS else result.message)
        if result.status != Status.OK:
            where = f"{result.file}:{result.line}" + (f":{result.column}" if result.column else "")
            error = f"{result.error}: " if result.error else ""  # (a mismatch has none)
            raise ReplayFailure(f"{result.status} {where}: {error}{result.message}\n  {result.config}")


# -- fuzzing a corpus -------------------------------------------------------------


class FuzzSession:
    def __init__(self, config: Any, path: str) -> None:
        from api_tracer.fuzz.campaign import ORACLES

        self.path = path
        self.out = os.path.abspath(config.getoption("api_fuzz_out"))
        self.time = config.getoption("api_fuzz_time")
        oracle = config.getoption("api_fuzz_oracle")
        self.oracles = tuple(x.strip() for x in oracle.split(",") if x.strip()) if oracle else ORACLES
        unknown = [o for o in self.oracles if o not in ORACLES + ("compile",) and not o.startswith("device:")]
        if unknown:
            raise pytest.UsageError(f"--api-fuzz-oracle: {unknown[0]!r} is not one of {', '.join(ORACLES)}, "
                                    "compile, device:DEVICE")
        self.imports = tuple(config.getoption("api_replay_import"))
        self.libraries = tuple(config.getoption("api_replay_load_library"))
        self.worker = hasattr(config, "workerinput")  # a pytest-xdist worker: the controller merges
        config.args[:] = [path]

    def pytest_collect_file(self, file_path: Any, parent: Any) -> Any:
        if os.path.abspath(str(file_path)) == self.path:
            return FuzzFile.from_parent(parent, path=file_path, session_plugin=self)
        return None

    def pytest_sessionfinish(self, session: Any) -> None:
        if self.worker or not os.path.isdir(os.path.join(self.out, "items")):
            return
        from api_tracer.fuzz import Findings

        merged = Findings(self.out)
        for name in sorted(os.listdir(os.path.join(self.out, "items"))):
            one = Findings(os.path.join(self.out, "items", name))
            one.load()
            merged.merge(one)
        merged.save()


class FuzzFile(PluginFile):
    def collect(self) -> Iterator[Any]:
        from api_tracer.fuzz import read_seeds

        seeds, _ = read_seeds([str(self.path)])
        for seed in seeds:
            yield FuzzItem.from_parent(self, name=f"L{seed.number}:{seed.line.api}", seed=seed)


class FuzzItem(LineItem):
    def __init__(self, *, seed: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seed = seed
        self.lineno = seed.number

    def runtest(self) -> None:
        from api_tracer.fuzz import Campaign, Settings
        from api_tracer.replay import ReplayOptions

        plugin: FuzzSession = self.parent.session_plugin
        digest = hashlib.sha256(self.seed.text.encode("utf-8", "backslashreplace")).hexdigest()[:16]
        out = os.path.join(plugin.out, "items", f"L{self.seed.number}-{digest}")
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        options = ReplayOptions(max_bytes=1 << 30, imports=plugin.imports, libraries=plugin.libraries)
        campaign = Campaign([self.seed], Settings(out, oracles=plugin.oracles, time_limit=plugin.time,
                                                  options=options))
        campaign.run()
        if len(campaign.findings):
            raise ReplayFailure(f"{len(campaign.findings)} findings fuzzing {self.seed.file}:{self.seed.number} "
                                f"({campaign.cases_run} cases; {out}):\n" + "\n".join(
                                    f"  {f.kind}" + (f" [--check {f.check}]" if f.check else "") +
                                    f": {f.line}\n      {f.message[:300]}" for f in campaign.findings))
