"""A benchmark run: each distinct config of a file timed in rounds, each
round in a worker process (replay's pool: a config that crashes or hangs
fails alone, and the run goes on), one round of every config before the
next round of any, so that each config's rounds are spread over the run
and a change of the machine's load on the way shows as their spread, not
as a difference between configs. Each round's Timing is written as it
comes (results.py); --resume reads them back and times only what is
missing."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterator, Optional, Set, Tuple

from ..config import api_of
from ..formats.configs import Config, stream_config_file
from ..replay import pool
from ..replay.keyed import Counts, Shard, config_key, key_text, keyed_configs
from ..replay.options import ReplayOptions
from ..replay.results import Status
from ..replay.run import preload, prepare_process
from .measure import BenchOptions, measure
from .results import Header, Timing

# What the server that workers fork from imports besides replay's: the timer and the FLOP counter.
PRELOADED = ("torch.utils.benchmark", "torch.utils.flop_counter")


def digest_of(header: Header) -> bytes:
    """What each config's key hashes besides its line: the run's settings."""
    return hashlib.sha256(json.dumps(header.settings, sort_keys=True).encode()).digest()


@dataclass
class Plan:
    """What a run times: its configs (by key, with how many lines of the
    file each is: a trace's calls), what its results file held already
    (--resume: the rounds done, the configs that failed)."""

    configs: int = 0
    lines: Counter = field(default_factory=Counter)
    done: Set[Tuple[str, int]] = field(default_factory=set)
    failed: Set[str] = field(default_factory=set)

    def kept(self, t: Timing) -> None:
        """A timing its results file held already."""
        self.done.add((t.key, t.round))
        if t.status != Status.OK:
            self.failed.add(t.key)

    def left(self, rounds: int) -> int:
        """The rounds still to time."""
        timed = {(k, r) for k, r in self.done if r < rounds and k not in self.failed}
        return max(0, (self.configs - len(self.failed)) * rounds - len(timed))


def plan(path: str, header: Header, plan_: Plan) -> None:
    """Reads the file once: how many lines of it each distinct config's key
    is (a trace's repeats: its weight), counted into `plan_`."""
    digest = digest_of(header)
    for c in stream_config_file(path):
        plan_.lines[key_text(config_key(digest, c))] += 1
    plan_.configs = len(plan_.lines)


def time_configs(
    path: str,
    header: Header,
    options: ReplayOptions,
    bench: BenchOptions,
    plan_: Plan,
    on_timing: Callable[[Timing], None],
    jobs: int = 1,
    timeout: Optional[float] = None,
) -> None:
    """Each config of the file at `path` timed, round after round, in a
    pool of `jobs` workers; `on_timing` for each timing as it comes. A
    config that fails (in any round) is not timed again."""
    digest = digest_of(header)
    workers = pool.WorkerPool(_worker, (options, bench), max(1, jobs), timeout, preload(options) + PRELOADED)
    held: Dict[Tuple[str, int], Config] = {}

    def on_event(task: Tuple[str, int], event: object) -> None:
        config = held.pop(task)
        if isinstance(event, pool.Done):
            timing = event.result
        else:
            key, round_ = task
            timing = Timing(
                key, config.file, config.line, config.text, api_of(config.text) or "", round_, Status.FAILED
            )
            if isinstance(event, pool.Died):
                timing.error, timing.message = "WorkerCrashed", f"the worker process died (exit code {event.exitcode})"
            else:
                timing.error = "Timeout"
                timing.message = f"timeout: no result after {event.seconds:g} s (--timeout); the worker was killed"  # type: ignore[attr-defined]
        if timing.status != Status.OK:
            plan_.failed.add(timing.key)
        timing.lines = plan_.lines[timing.key]
        on_timing(timing)

    try:
        for round_ in range(bench.rounds):
            todo = (
                (key_text(k), c)
                for k, c in keyed_configs(path, digest, Shard(), Counts())
                if key_text(k) not in plan_.failed and (key_text(k), round_) not in plan_.done
            )

            def feed(todo: Iterator[Tuple[str, Config]] = todo, round_: int = round_) -> Optional[tuple]:
                for key, c in todo:
                    if key in plan_.failed:  # (it failed since this round began)
                        continue
                    held[(key, round_)] = c
                    return (key, round_), (key, round_, c)
                return None

            workers.run(feed, on_event, keep=True)
    finally:
        workers.close(idle=True)


def _worker(conn: object, options: ReplayOptions, bench: BenchOptions) -> None:
    """Times the (key, round, config) sent on `conn`, one at a time (pool.py)."""
    prepare_process(options)
    for key, round_, config in pool.tasks(conn):
        pool.started(conn)
        pool.done(conn, measure(config, key, round_, options, bench))
