"""Running configs: `replay_one` calls one (or, with options.check, judges
it: judge/check.py) and makes its Result; many run in this process
(`run_in_process`, where `CrashNote` has a fatal signal say which config
died) or in a pool of worker processes (`run_isolated`, where a worker's
death fails the config it held). Before any runs, `checked_options` checks
what the flags of `api-tracer replay`, `api-tracer fuzz` and the pytest
plugin give, alike, and `prepare_process` readies the process."""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from .. import _C
from ..config import MAX_LINE, api_of
from ..errors import UsageError
from ..formats.configs import Config
from ..frameworks import FRAMEWORKS
from . import pool, user_code
from .behaviour import behaviour_of
from .builder import parse
from .framework import DEFAULT, line_framework, replay_framework
from .judge.across import judged_across
from .judge.check import Verdict, check, reference
from .memory import available_bytes
from .options import Job, ReplayOptions
from .results import BuildError, Invalid, Refused, Result, SideError, Skip, Status, Unmapped, first_line
from .side import Outcome, Side, run_side


def replay_one(config: Config, options: ReplayOptions = ReplayOptions()) -> Result:
    """Replays `config` in this process: what came of it, and how long it
    took; by the framework its file's (options.dialect) or its API's
    (framework.py)."""
    start = time.perf_counter()
    api, error, message, column = "", "", "", 0
    verdict: Optional[Verdict] = None
    outcome: Optional[Outcome] = None
    try:
        api, args, kwargs = parse(config)
        framework = replay_framework(line_framework(api, options))
        job = Job(config, api, args, kwargs, options, framework)
        if options.check:
            verdict = check(job, judged_across if options.check in FRAMEWORKS else None)
            status, message = verdict.status, verdict.message
        else:
            outcome = run_side(job, Side("replay", options.device))
            status = Status.OK
    except Exception as e:  # noqa: BLE001 - the API's own failure, reported
        status, error, message, column = failure_of(e, config, api, options)
    result = Result(
        config.file, config.line, config.text, api, status, error, message, column, time.perf_counter() - start
    )
    if options.watches_behaviour:
        result.behaviour = behaviour_of(outcome, status.value, error, message)
    if verdict:
        worst = verdict.worst
        result.check, result.compared, result.hashes = options.check or "", verdict.compared, verdict.hashes
        if worst:
            result.worst, result.max_abs_error, result.max_rel_error = worst.where, worst.max_abs, worst.max_rel
            result.measure, result.excess = worst.measure, worst.excess
            if worst.measure == "rtol/atol":
                result.rtol, result.atol = worst.rtol, worst.atol
    return result


def failure_of(e: Exception, config: Config, api: str, options: ReplayOptions) -> Tuple[Status, str, str, int]:
    """(status, error, message, column) of a config whose replay raised
    `e`: the line's doing (invalid, refused), replay's (skipped: its
    inputs, the framework's build on this machine, values outside the
    operator's domain), or the call's own failure."""
    status, error, message, column = Status.FAILED, "", "", 0
    if isinstance(e, Invalid):
        status, error, message, column = Status.INVALID, "Invalid", str(e), e.column
    elif isinstance(e, Refused):
        status, message, column = Status.REFUSED, str(e), e.column
    elif isinstance(e, Skip):
        status, message = Status.SKIPPED, str(e)
    elif isinstance(e, Unmapped):
        status, message = Status.UNMAPPED, str(e)
    elif isinstance(e, (BuildError, SideError)):
        status, error, message = Status.FAILED, type(e.cause).__name__, str(e)
    else:
        status, error, message = Status.FAILED, type(e).__name__, first_line(e)
        domain = outside_domain(message)
        lacking = api and replay_framework(line_framework(api, options)).no_kernel(message)
        if lacking:  # the framework's build on this machine, not the operator
            status, error, message = Status.SKIPPED, "", f"no kernel: {lacking}: {type(e).__name__}: {message}"
        elif domain:  # the values replay drew, not the operator
            profiled = any(p.floating for p in options.ranges.get(config.text, {}).values())
            status, error = Status.SKIPPED, ""
            unprofiled = any(pattern.search(message) for pattern, _ in UNPROFILED_DOMAIN_ERRORS)
            drawn = (
                "drawn at random: no value profile keeps that"
                if unprofiled
                else "drawn in the program's ranges, which do not keep that"
                if profiled
                else "drawn from N(0, 1): no floating profile (trace with float_ranges=True)"
            )
            message = f"inputs outside the operator's domain ({domain}), {drawn}: {type(e).__name__}: {message}"
    return status, error, message, column


# What an operator says when random inputs fall outside its domain: the
# config is skipped, with the domain, not failed (run.replay_one).
DOMAIN_ERRORS = (
    (re.compile(r"not positive-definite"), "a positive-definite matrix"),
    (re.compile(r"p_in >= 0 && p_in <= 1|elements of input should be between 0 and 1"), "probabilities in [0, 1]"),
    (re.compile(r"probability tensor contains either|invalid multinomial distribution"), "non-negative probabilities"),
    (re.compile(r"(distribution|probability) should be >= 0"), "non-negative probabilities"),  # (Paddle's)
    (re.compile(r"Cholesky decomposition was not successful"), "a positive-definite matrix"),  # (Paddle's)
    (re.compile(r"input must be greater than\s+or equal to 0"), "non-negative values"),  # (Paddle's)
    (re.compile(r"std >= 0"), "a non-negative standard deviation"),
    (re.compile(r"var(iance)? has negative entr"), "non-negative variances"),
    (re.compile(r"invalid Poisson rate"), "non-negative rates"),
    (re.compile(r"[af]weights\)? cannot be negative"), "non-negative weights"),
)
# ... and what no value profile can keep: the config is skipped the same way.
UNPROFILED_DOMAIN_ERRORS = (
    (re.compile(r"Invalid mt19937 state"), "a generator state torch made (get_rng_state), not any bytes"),
)


def outside_domain(message: str) -> str:
    """The domain an operator's error `message` says its inputs fell
    outside of ("" for any other error)."""
    return next((domain for pattern, domain in DOMAIN_ERRORS + UNPROFILED_DOMAIN_ERRORS if pattern.search(message)), "")


# -- a run's options, checked ------------------------------------------------------------


def checked_options(command: str, *, checks: Iterable[str] = (), **given: Any) -> ReplayOptions:
    """The ReplayOptions the flags give (`given`: fields of ReplayOptions,
    as the flags left them), each checked before any config runs, or a
    UsageError that names the flag, said as `command`'s: the device is one
    torch knows and reaches, --check a mode with a reachable device, and
    `checks` too (fuzz's oracles that are checks); --backward, --rtol and
    --atol only with --check, and at least 0; --max-bytes at least 0."""
    given["imports"] = tuple(given.get("imports") or ())
    given["libraries"] = tuple(given.get("libraries") or ())
    options = ReplayOptions(**given)
    check_device(options.device, f"--device {options.device}", command)
    if options.max_bytes is not None and options.max_bytes < 0:
        raise UsageError(f"{command}: --max-bytes must be at least 0")
    if not options.check:
        for flag, set_ in (
            ("--backward", options.backward),
            ("--rtol", options.rtol is not None),
            ("--atol", options.atol is not None),
        ):
            if set_:
                raise UsageError(f"{command}: {flag} needs --check")
    for flag, value in (("--rtol", options.rtol), ("--atol", options.atol)):
        if value is not None and not value >= 0:
            raise UsageError(f"{command}: {flag} must be at least 0")
    for mode, flag in [(options.check, "--check")] * bool(options.check) + [(c, "--oracle") for c in checks]:
        try:
            side = reference(mode, options.device)
        except ValueError as e:
            raise UsageError(f"{command}: {flag}: {e}") from None
        check_device(side.device, f"{flag} {mode}", command)
    return options


def check_device(device: str, flag: str, command: str) -> None:
    """A UsageError, naming `flag`, unless torch knows `device` and can reach it."""
    try:
        available_bytes(device)
    except Exception as e:  # noqa: BLE001 - a device torch does not know, or cannot reach
        raise UsageError(f"{command}: {flag}: {first_line(e)}") from None


def check_framework(options: ReplayOptions, command: str) -> None:
    """A UsageError where the options' framework does not take them (a
    check, --backward, a device: its ReplayFramework.unsupported)."""
    why = replay_framework(options.dialect or DEFAULT).unsupported(options)
    if why:
        raise UsageError(f"{command}: {why}")


# -- running many -------------------------------------------------------------


def prepare_process(options: ReplayOptions) -> None:
    """What a process that replays the options' framework does first (its
    ReplayFramework.prepare_process: Paddle imported, quietly), then the
    user's code (--import, --load-library) loaded."""
    replay_framework(options.dialect or DEFAULT).prepare_process()
    if options.check in FRAMEWORKS:  # (the other framework, which the check calls too)
        replay_framework(options.check).prepare_process()
    user_code.load(options.imports, options.libraries)


def preload(options: ReplayOptions, checks: Tuple[str, ...] = ()) -> Tuple[str, ...]:
    """What the server that workers fork from imports for these options
    (ReplayFramework.preload), `checks` the --check modes they run."""
    other = replay_framework(options.check).preload(options) if options.check in FRAMEWORKS else ()
    return tuple(dict.fromkeys(replay_framework(options.dialect or DEFAULT).preload(options, checks) + other))


def _worker(conn: Any, options: ReplayOptions) -> None:
    """Replays the configs sent on `conn`, one at a time (pool.py); the
    user's code (--import, --load-library) is loaded first."""
    prepare_process(options)
    crash_on = os.environ.get("API_TRACER_REPLAY_CRASH_ON")  # fault injection, for the tests
    hang_on = os.environ.get("API_TRACER_REPLAY_HANG_ON")
    for config in pool.tasks(conn):
        if crash_on and crash_on in config.text:
            os.kill(os.getpid(), 11)
        pool.started(conn)  # the config's time runs from now (the worker's own start-up is not its)
        if hang_on and hang_on in config.text:
            while True:
                time.sleep(1)
        pool.done(conn, replay_one(config, options))


# How long a config may run in a worker before it is killed (--timeout):
# what an isolated replay waits by default.
DEFAULT_TIMEOUT = 60.0


def run_isolated(
    configs: List[Config],
    jobs: int,
    options: ReplayOptions,
    on_result: Callable[[Result], None],
    timeout: Optional[float] = DEFAULT_TIMEOUT,
) -> List[Result]:
    """Each config in a worker process (`jobs` of them, pool.py): a worker
    that dies (a crashing kernel) fails the config it held, and is
    replaced; so is one that holds a config past `timeout` seconds (None:
    no limit): it is killed, and the config fails with a timeout. The
    results in the configs' order (run_stream's, keyed by index)."""
    out: Dict[int, Result] = {}

    def keep(index: Any, r: Result) -> None:
        out[index] = r
        on_result(r)

    run_stream(enumerate(configs), min(max(1, jobs), len(configs)) or 1, options, keep, timeout)
    return [out[i] for i in range(len(configs))]


def run_stream(
    tasks: Iterable[Tuple[Any, Config]],
    jobs: int,
    options: ReplayOptions,
    on_result: Callable[[Any, Result], None],
    timeout: Optional[float] = DEFAULT_TIMEOUT,
    workers: Optional[pool.WorkerPool] = None,
) -> None:
    """run_isolated's way for (key, config) pairs, taken from `tasks` as
    workers come free (a corpus streamed: only the configs in the workers
    are held); `on_result(key, result)` as each comes. On `workers`, a pool
    of `pool_for`'s, its workers kept for the next call."""
    tasks = iter(tasks)
    held: Dict[Any, Config] = {}

    def feed() -> Optional[Tuple[Any, Config]]:
        key, config = next(tasks, (None, None))
        if config is None:
            return None
        held[key] = config
        return key, config

    def on_event(key: Any, event: Any) -> None:
        c = held.pop(key)
        if isinstance(event, pool.Done):
            result = event.result
        else:  # the worker is gone, and the config failed with it
            if isinstance(event, pool.Died):
                error, message = "WorkerCrashed", f"the worker process died (exit code {event.exitcode})"
                if event.exitcode == -signal.SIGKILL:  # (replay kills a worker only at a timeout, said as one)
                    message += ": killed by SIGKILL, as the kernel's out-of-memory killer kills"
            else:
                error = "Timeout"
                message = f"timeout: no result after {event.seconds:g} s (--timeout); the worker was killed"
            result = Result(
                c.file, c.line, c.text, api=api_of(c.text), status=Status.FAILED, error=error, message=message
            )
        on_result(key, result)

    if workers is not None:
        workers.run(feed, on_event, keep=True)
    else:
        pool_for(options, jobs, timeout).run(feed, on_event)


def pool_for(options: ReplayOptions, jobs: int, timeout: Optional[float]) -> pool.WorkerPool:
    """The pool of `jobs` workers run_stream replays configs in."""
    return pool.WorkerPool(_worker, (options,), max(1, jobs), timeout, preload(options))


def run_in_process(
    configs: Iterable[Any],
    options: ReplayOptions,
    on_result: Callable[[Result], None],
    *,
    report_fd: Optional[int] = None,
    keyed: bool = False,
) -> List[Result]:
    """Each config in this process, in turn. A fatal signal (a crashing
    kernel) kills the process, but first says which config died and how far
    the replay got, and appends that config's line to the report on
    `report_fd` (CrashNote), with its key. The results; with `keyed`,
    `configs` are (key, config) pairs (a keyed run's), each result carries
    its key, and they are streamed to on_result alone."""
    prepare_process(options)
    results = []
    done = 0
    with CrashNote(report_fd) as note:
        for item in configs:
            key, c = item if keyed else ("", item)
            # (a line past MAX_LINE is refused unparsed and runs nothing: no note, which holds it per signal)
            note.running(c if len(c.text) <= MAX_LINE else None, done, key)
            r = replay_one(c, options)
            r.key = key
            note.running(None, done)
            done += 1
            if not keyed:
                results.append(r)
            on_result(r)
    return results


class CrashNote:
    """While configs run in process: what a fatal signal writes before the
    process dies by it (csrc/python/crash_note.cc), formatted here for each
    config, since the signal handler may only call write()."""

    def __init__(self, report_fd: Optional[int]) -> None:
        self.report_fd = -1 if report_fd is None else report_fd
        self.newline = "\n" if sys.stderr.isatty() else ""  # ends a progress bar

    def __enter__(self) -> "CrashNote":
        _C.replay_crash_note_install(self.report_fd)
        return self

    def __exit__(self, *exc: Any) -> None:
        _C.replay_crash_note_uninstall()

    def running(self, config: Optional[Config], done: int, key: str = "") -> None:
        """`config` runs now (None: none does), after `done` others; `key`, its key in a keyed run."""
        if config is None:
            _C.replay_crash_note_set({})
            return
        held = (
            f"the report holds the {done} configs before it" if self.report_fd >= 0 else f"{done} configs ran before it"
        )
        notes = {}
        for sig in _C.replay_crash_signals:
            died = f"the process died (signal {sig}, {signal.Signals(sig).name})"
            message = (
                f"{self.newline}api-tracer replay: {died} while replaying {config.file}:{config.line}: "
                f"{config.text}; {held}; rerun with --isolate to go on past a crash\n"
            )
            line = Result(
                config.file,
                config.line,
                config.text,
                api=api_of(config.text),
                status=Status.FAILED,
                error="Crashed",
                message=died,
                key=key,
            )
            notes[sig] = (encodable(message), encodable(line.to_json() + "\n"))
        _C.replay_crash_note_set(notes)


def encodable(text: str) -> str:
    """`text` as UTF-8 can carry it: a file name that is not UTF-8 (held by
    Python as lone surrogates) is written with backslash escapes."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
