"""--api-trace DIR: the suite traced into one merged file set in DIR,
labelled "pytest ROOTDIR" (its api_config_sources.yaml); with
--api-trace-per-test each test into a set of its own too, DIR/tests/NAME
(DIR/tests-index.yaml maps NAME to the test id), labelled by the test id;
under pytest-xdist each worker into DIR/workers/ID, the session's set their
merge. api_tracer is imported only once the session starts tracing."""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import threading
from typing import Any, Dict, Iterator, List, Optional

import pytest

from .options import flags

OUTSIDE_TESTS = "(outside tests)"  # the label of the calls between tests, with --api-trace-per-test


def check_rootdir(config: Any, trace: str) -> None:
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
            f"path when it chooses its rootdir (here {config.rootpath}); write --api-trace={trace}"
        )


def _levels(text: str) -> List[int]:
    try:
        return flags().level_list(text)
    except argparse.ArgumentTypeError as e:
        raise pytest.UsageError(f"--api-trace-levels: {e}") from None


def dir_name(nodeid: str) -> str:
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
        from api_tracer.corpus.merge import merge_found

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
        name = dir_name(item.nodeid)
        self.tests[name] = item.nodeid
        from api_tracer.trace.options import as_label

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
        from api_tracer.corpus.merge import merge_found

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
    from api_tracer.formats.fileset import find_sets

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
