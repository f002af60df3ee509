"""A fuzz campaign: seed config lines, mutated (mutate.py) into cases that
worker processes replay under the oracles (replay.pool: a crash, an abort,
an OOM kill or a hang is an event, the worker is replaced, and the
campaign goes on); each finding deduplicated, minimized and kept
(findings.py) in the campaign's directory, with the campaign's state
(campaign.json, `State`), so that --resume goes on where it stopped: with
the same seed lines (their digest is kept), the state read back checked
(read_state), as the findings are.

--budget bounds the cases run, those running counted: no more are drawn
than it leaves, so no more workers start than there are cases. A stop
(SIGINT, SIGTERM: `stop`) draws no more cases; what a worker comes to
while the campaign stops, a death or a timeout (a signal to the process
group kills workers), is not a finding, and its case is left to --resume.
Workers ignore SIGINT: a terminal's Ctrl-C reaches the whole process
group, and the campaign stops them itself.

Cases 0 .. seeds-1 are the seeds themselves, unmutated; a seed that does
not run as it is (invalid, skipped) is left out after that. Then come the
edge cases of every seed (mutate.edges: sizes 0 and 1, a size past a power
of two, each floating dtype, transposed and offset tensors, NaN, -1, ...),
the first of each seed, then the second of each, and so on: a fixed list,
so what they find does not depend on chance or on the order results come
back in. After them case N is drawn from its own generator, seeded by (the
campaign's seed, N), and resuming draws the cases not yet run; the seed line
it mutates is drawn with a weight that falls with the timeouts its cases had
(each holds a worker for --timeout), so only a campaign without timeouts
draws the very same drawn cases again.

Each case's plain run also says what the call did (its behaviour
signature: steer.py), and the first case to reach each of an API's
signatures is written down. Unless --blind (Settings.feedback), such a
case joins a bounded pool that half of the later draws start from, its
mutations then more: which case is drawn then depends on what came
back before, so such a campaign is not the same case for case twice;
a --blind one is, as long as no case times out.

A case whose plain run finished within --timeout and whose check's step
then timed out, twice, is slow to judge (the judge's float64 copies and
draws of a large case), not hung: it is counted, not a finding.

--cases N draws the case numbers below N, and --shard I/N only those that
are I modulo N, past the seeds, which every shard runs (which of them run
as they are decides the draws): N --blind campaigns of one --seed and
--cases run the cases one campaign runs, and fuzz --merge joins their
findings into its findings.

Steering is the default: bench/bench_steer.py measured it against blind
drawing, side by side (docs/fuzz.md has the figures)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..config import parse_call
from ..errors import InputError, warn
from ..formats.configs import Config, ranges_beside, read_config_file
from ..formats.io import replace_atomically
from ..formats.summaries import read_value_ranges
from ..replay import pool
from ..replay.keyed import Shard
from ..replay.options import ReplayOptions
from ..replay.results import Status
from ..replay.run import preload, prepare_process
from .classes import CLASSES_FILE
from .findings import (
    CHECKS,
    DEVICE_ORACLE,
    FINDINGS,
    RANGES,
    REPRODUCERS,
    RUN,
    Findings,
    Outcome,
    Ran,
    by_design,
    classify,
)
from .minimize import Minimizer
from .mutate import KINDS, UNAPPLICABLE, Line, Mutation, NotApplicable, apply, edges, propose, render
from .state import STATE, State
from .steer import BEHAVIOURS, Behaviours, Entry, SeedPool

WORKER_LOG = "workers.log"  # what the workers print
# the files a campaign writes in its directory (and its repro/ folder: repro.py)
OUTPUTS = (STATE, FINDINGS, REPRODUCERS, RANGES, WORKER_LOG, CLASSES_FILE, BEHAVIOURS)
# What a worker replays under each check before its first case: a replacement worker's first step would
# otherwise pay for lazy imports and initialization, and on a loaded machine pass --timeout.
WARM_UP = 'torch.add(Tensor([2, 3], "float32", stride=[1, 2]), Tensor([2, 3], "float32"))'
ORACLES = ("crash", "hang", "error", "float64", "layout", "repeat")  # the default --oracle
RUN_ORACLES = ("crash", "hang", "error")  # found by replaying the case as it is


def oracles_of(text: str) -> Tuple[str, ...]:
    """The oracles a comma-separated list names (fuzz --oracle, the plugin's
    --api-fuzz-oracle); ValueError naming the first that is none."""
    oracles = tuple(x.strip() for x in text.split(",") if x.strip())
    known = ORACLES + ("compile",)
    for o in oracles:
        if o not in known and not (o.startswith(DEVICE_ORACLE) and len(o) > len(DEVICE_ORACLE)):
            raise ValueError(f"{o!r} is not one of {', '.join(known)}, {DEVICE_ORACLE}DEVICE")
    if not oracles:
        raise ValueError("empty")
    return oracles


# A case past --timeout runs again with this many times it: a hang only if it times out again (a large
# case under the float64 check's probes is slow, not hung). Once a hang of its API is known, another
# drawn case's timeout counts as that one; a minimization candidate's is always run again.
CONFIRM_FACTOR = 4


@dataclass
class Seed:
    file: str
    number: int  # its line in the file
    text: str
    line: Line
    profiles: Dict[str, Any]  # argument -> _C.ValueProfile (api_value_ranges.yaml beside the file)


@dataclass
class Case:
    id: int
    seed: Seed
    mutations: Tuple[Mutation, ...]
    text: str
    minimizing: Optional[str] = None  # the signature of the finding it tries to shrink
    confirming: bool = False  # it timed out once, and runs again with CONFIRM_FACTOR times the timeout
    parent: Optional[Entry] = None  # the pool entry it was drawn from (steer.py)


@dataclass
class Settings:
    out: str
    seed: int = 0
    kinds: Tuple[str, ...] = KINDS
    oracles: Tuple[str, ...] = ORACLES
    time_limit: Optional[float] = None  # seconds
    budget: Optional[int] = None  # cases
    jobs: int = 1
    timeout: float = 10.0  # per step of a case
    options: ReplayOptions = field(default_factory=ReplayOptions)
    feedback: bool = True  # a case whose behaviour is new for its API becomes a seed (steer.py; not --blind)
    cases: Optional[int] = None  # --cases: the case numbers below it are drawn, none past it
    shard: Shard = Shard()  # --shard: the drawn case numbers this campaign takes (every shard runs the seeds)


def seeds_digest(seeds: Sequence["Seed"]) -> str:
    """What tells a campaign's seed lines from others (campaign.json's
    seed_lines): the SHA-256 of the lines, in order."""
    return hashlib.sha256("".join(s.text + "\n" for s in seeds).encode("utf-8", "backslashreplace")).hexdigest()


def read_seeds(paths: Sequence[str]) -> Tuple[List[Seed], List[str]]:
    """The seed lines of the files (each with the value profiles beside
    it), and what was left out and why."""
    seeds, left_out, seen = [], [], set()
    for path in paths:
        ranges = read_value_ranges(ranges_beside(path))
        for c in read_config_file(path):
            if c.error or c.text in seen:
                if c.error:
                    left_out.append(f"{c.file}:{c.line}: {c.error}")
                continue
            try:
                api, args, kwargs = parse_call(c.text, path=c.file, lineno=c.line)
            except ValueError as e:
                left_out.append(str(e))
                continue
            seen.add(c.text)
            seeds.append(Seed(c.file, c.line, c.text, Line(api, list(args), dict(kwargs)), ranges.get(c.text, {})))
    return seeds, left_out


def run_cases(conn: Any, options: ReplayOptions, checks: Tuple[str, ...], log: str) -> None:
    """Runs cases: each replayed as it is, then, if it ran, under each
    check; says which (pool.started) as it goes. SIGINT is ignored: the
    campaign stops its workers itself. What the cases print
    (torch's warnings, the C library's last words before an abort) goes
    to `log`, not to the campaign's terminal."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # (Ctrl-C reaches the process group: the campaign stops it)
    from ..replay import replay_one

    with open(log, "ab") as f:
        os.dup2(f.fileno(), 1)
        os.dup2(f.fileno(), 2)

    prepare_process(options)
    for check in (None, *checks):  # torch's and the judges' lazy start-up, before any case's step is timed
        replay_one(Config("<warm-up>", 0, WARM_UP), replace(options, check=check))
    for text, profiles in pool.tasks(conn):
        config = Config("<fuzz case>", 0, text)
        mine = replace(options, ranges={text: profiles})
        runs, behaviour, seconds = [], "", 0.0
        for check in (None, *checks):
            pool.started(conn, check or RUN)
            r = replay_one(config, replace(mine, check=check))
            runs.append((check or RUN, r.status.value, r.error, r.message))
            behaviour, seconds = behaviour or r.behaviour, seconds + r.seconds
            if (check is None and r.status != Status.OK) or r.status == Status.MISMATCH:
                break  # (a case that does not run is judged by no check; one mismatch is the finding)
        pool.done(conn, Ran(runs, behaviour, seconds))


class Campaign:
    def __init__(self, seeds: List[Seed], settings: Settings) -> None:
        self.seeds, self.s = seeds, settings
        self.findings = Findings(settings.out, settings.options.device)
        self.next_id = 0  # the next case to draw
        self.done_below = 0  # every case below it has finished
        self.finished: set = set()  # cases finished above done_below
        self.cases_run = 0
        self.elapsed = 0.0  # seconds of earlier runs (--resume)
        self.active = list(range(len(seeds)))  # the seeds mutated (those that ran as they are)
        self.seen: set = set()  # the lines run
        self.slow = 0  # cases of this run too slow to judge: a check's step timed out, twice (no finding)
        self.behaviours = Behaviours(settings.out)
        self.pool = SeedPool()
        self.minimizers: Dict[str, Minimizer] = {}
        self.running: Dict[int, Case] = {}
        self.candidates = 0  # minimization candidates sent
        self.confirm: List[Case] = []  # cases that timed out once, to run again with a longer timeout
        self.timeouts: Dict[int, int] = {}  # seed -> how many of its cases timed out
        self.seed_index = {id(seed): i for i, seed in enumerate(seeds)}
        self.edges = self._edge_plan()  # (seed, mutation) of cases seeds .. seeds + len(edges) - 1
        self.started = time.monotonic()
        self.saved = 0.0
        self.stopping = False  # stop(): no case more is sent
        self.aborted = False  # stop() again: the running cases are killed

    # -- state --------------------------------------------------------------
    def state(self) -> State:
        return State(
            seed=self.s.seed,
            seeds=len(self.seeds),
            next_case=self.done_below,
            cases_run=self.cases_run,
            seconds=round(self.elapsed + self.now(), 3),
            inactive_seeds=sorted(set(range(len(self.seeds))) - set(self.active)),
            findings=len(self.findings),
            seed_lines=seeds_digest(self.seeds),
            behaviours=len(self.behaviours),
            pool=self.pool.to_json(),
            feedback=self.s.feedback,
            shard=str(self.s.shard),
        )

    def resume(self, state: State) -> None:
        """Goes on from `state` (read_state of the directory's
        campaign.json) with the findings kept there (read checked). An
        InputError naming campaign.json where the campaign ran other seed
        lines, or another --seed: its case numbers would name other cases."""
        path = os.path.join(self.s.out, STATE)
        digest = seeds_digest(self.seeds)
        if state.seed != self.s.seed:
            raise InputError(path, f"the campaign ran with --seed {state.seed}, not {self.s.seed}")
        if state.shard != str(self.s.shard):
            raise InputError(
                path, f"the campaign ran --shard {state.shard}: --resume goes on with it, not {self.s.shard}"
            )
        if state.feedback is not None and state.feedback != self.s.feedback:
            ran, now = ("steered", "--blind") if state.feedback else ("--blind", "steered (without --blind)")
            raise InputError(path, f"the campaign ran {ran}: --resume goes on as it began, not {now}")
        if state.seeds != len(self.seeds) or state.seed_lines not in (None, digest):
            raise InputError(
                path,
                f"the campaign ran other seed lines ({state.seeds}, sha256 {(state.seed_lines or '?')[:16]}) than "
                f"these ({len(self.seeds)}, sha256 {digest[:16]}): --resume goes on with the seed lines it began with",
            )
        if state.seed_lines is None:
            warn(f"{path}: no digest of the seed lines (written by an earlier version): the seed lines are not checked")
        self.next_id = self.done_below = state.next_case
        self.cases_run, self.elapsed = state.cases_run, state.seconds
        inactive = set(state.inactive_seeds)
        self.active = [i for i in range(len(self.seeds)) if i not in inactive]
        self.findings.load()
        self.behaviours.load()
        self.pool.restore(state.pool, [s.line for s in self.seeds], path)

    def save(self) -> None:
        self.findings.save()
        replace_atomically(os.path.join(self.s.out, STATE), json.dumps(asdict(self.state()), indent=1) + "\n")
        self.saved = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self.started

    # -- drawing ------------------------------------------------------------
    def stop(self) -> None:
        """The first call: no case more is sent, and the running ones
        finish; a second: those are killed too. Either way the state is
        saved, and a case that did not finish is left to --resume."""
        self.aborted = self.stopping
        self.stopping = True

    def out_of_time(self) -> bool:
        """Whether no case more is to be drawn: a stop, --time spent, or
        --budget's cases run or running."""
        if self.stopping:
            return True
        if self.s.budget is not None and self.cases_run + self._drawn_in_flight() >= self.s.budget:
            return True
        if self.s.cases is not None and self._mine(self.next_id) >= self.s.cases:
            return True
        return self.s.time_limit is not None and self.elapsed + self.now() >= self.s.time_limit

    def _drawn_in_flight(self) -> int:
        """The drawn cases sent and not finished: running, or to run again (confirm)."""
        return sum(1 for c in (*self.running.values(), *self.confirm) if c.minimizing is None)

    def feed(self) -> Optional[Tuple[Any, ...]]:
        """The next task for a free worker: a timed-out case to confirm, a
        minimization candidate, or the next drawn case; None once stopping,
        or when no case is left to draw."""
        if self.stopping:
            return None
        if self.confirm:
            return self._send(self.confirm.pop(0))
        for signature, m in list(self.minimizers.items()):
            if m.finished:
                del self.minimizers[signature]
                m.finding.minimized = True
                self.save()
                continue
            mutations = m.next()
            if mutations is not None:
                case = self._case(-1, m.seed, mutations, signature)
                if case is not None:
                    return self._send(case)
                m.result(mutations, False)
        if self.out_of_time() or not self.active:
            return None
        for _ in range(1000):  # (a line already run is drawn again; so many: the seeds are exhausted)
            self.next_id = self._mine(self.next_id)
            if self.s.cases is not None and self.next_id >= self.s.cases:
                return None
            case = self._draw(self.next_id)
            self.next_id += 1
            if case is not None:
                return self._send(case)
            self._finish(self.next_id - 1)
        return None

    def _mine(self, n: int) -> int:
        """The first case number from `n` on this campaign draws: every
        seed's (each shard runs them: which are active decides the draws),
        then those of its shard."""
        shard = self.s.shard
        if n < len(self.seeds) or shard.count == 1:
            return n
        return n + (shard.index - n) % shard.count

    def _send(self, case: Case) -> Tuple[Any, ...]:
        self.running[case.id] = case
        return case.id, (case.text, case.seed.profiles), self.s.timeout * (CONFIRM_FACTOR if case.confirming else 1)

    def _edge_plan(self) -> List[Tuple[int, Mutation]]:
        per_seed = [edges(s.line, self.s.kinds, s.profiles, self._max_elements()) for s in self.seeds]
        rounds = max((len(e) for e in per_seed), default=0)
        return [(i, e[r]) for r in range(rounds) for i, e in enumerate(per_seed) if r < len(e)]

    def _draw(self, n: int) -> Optional[Case]:
        if n < len(self.seeds):
            return self._case(n, self.seeds[n], ())
        if n < len(self.seeds) + len(self.edges):
            i, mutation = self.edges[n - len(self.seeds)]
            return self._case(n, self.seeds[i], (mutation,)) if i in self.active else None
        rng = random.Random(f"{self.s.seed}:{n}")
        # a seed is drawn less often the more of its cases timed out: each one holds a worker --timeout long
        weights = [1.0 / (1 + 2 * self.timeouts.get(i, 0)) for i in self.active]
        index = rng.choices(self.active, weights)[0]
        seed = self.seeds[index]
        entry = self.pool.draw(rng, index) if self.s.feedback else None
        line, base = (seed.line, ()) if entry is None else (entry.line, entry.mutations)
        mutations: List[Mutation] = []
        budget = self._max_elements()
        for _ in range(rng.choice((1, 1, 1, 2, 2, 3))):
            m = propose(rng, line, self.s.kinds, seed.profiles, budget)
            if m is None:
                break
            try:
                line = apply(line, [m])
            except NotApplicable:
                continue
            mutations.append(m)
        return self._case(n, seed, base + tuple(mutations), parent=entry) if mutations else None

    def _max_elements(self) -> Optional[int]:
        limit = self.s.options.max_bytes
        return None if limit is None else limit // 8

    def _case(
        self,
        n: int,
        seed: Seed,
        mutations: Tuple[Mutation, ...],
        minimizing: Optional[str] = None,
        parent: Optional[Entry] = None,
    ) -> Optional[Case]:
        try:
            text = render(apply(seed.line, mutations))
        except UNAPPLICABLE:
            return None
        if minimizing is None and text in self.seen:
            return None
        self.seen.add(text)
        if minimizing is not None:
            self.candidates += 1
            n = -self.candidates  # (a key of its own, apart from the drawn cases')
        return Case(n, seed, mutations, text, minimizing, parent=parent)

    def _finish(self, n: int) -> None:
        if n < 0:
            return
        self.finished.add(n)
        while self.done_below in self.finished or self._mine(self.done_below) != self.done_below:
            self.finished.discard(self.done_below)  # (a case number of another shard: not this campaign's)
            self.done_below += 1

    # -- results ------------------------------------------------------------
    def on_event(self, key: int, event: Any) -> None:
        """What a case came to (pool.Done, Died, TimedOut): counted, and a
        finding added (and minimized) or counted once more."""
        case = self.running.pop(key)
        if self.stopping and not isinstance(event, pool.Done):
            return  # (killed with the campaign, say by a signal to the process group: no finding; not run)
        if isinstance(event, pool.TimedOut):
            index = self.seed_index[id(case.seed)]
            self.timeouts[index] = self.timeouts.get(index, 0) + 1
        outcome = classify(case.seed.line.api, event, by_design(case.seed.line.api, self.s.options))
        # A timeout counts once the case times out again, CONFIRM_FACTOR times as long: a new hang's, and
        # any minimization candidate's (on a loaded machine a candidate can be slow: it would shrink a
        # hang to a line that does not hang, or keep a crash from shrinking).
        unconfirmed = (
            isinstance(event, pool.TimedOut)
            and not case.confirming
            and (case.minimizing is not None or outcome.signature not in self.findings.by_signature)
        )
        if unconfirmed:
            self.confirm.append(replace(case, confirming=True))  # (same key: it finishes when that does)
            return
        if isinstance(event, pool.TimedOut) and (event.note or RUN) != RUN:
            # A check's step past CONFIRM_FACTOR x --timeout, where the plain run had finished within --timeout:
            # the judge's work on a large case (float64 copies, its draws), slow, not hung.
            outcome = Outcome()
            self.slow += case.minimizing is None
        if case.minimizing is not None:
            m = self.minimizers.get(case.minimizing)
            same = outcome.signature == case.minimizing
            if m is not None:
                m.result(case.mutations, same)
            if same:
                self.findings.shrunk(
                    self.findings.by_signature[case.minimizing],
                    case.text,
                    [x.describe() for x in case.mutations],
                    outcome.message,
                    case.seed.profiles,
                )
                self.save()
            return
        self.cases_run += 1
        self._finish(case.id)
        if isinstance(event, pool.Done):
            self._behaved(case, event.result.behaviour, event.result.seconds)
        if case.id < len(self.seeds) and isinstance(event, pool.Done):
            last = event.result.runs[-1] if event.result.runs else None
            if last is None or (
                last[0] == RUN and last[1] in (Status.INVALID.value, Status.REFUSED.value, Status.SKIPPED.value)
            ):
                self.active = [i for i in self.active if i != case.id]
        if outcome.kind:
            finding, new = self.findings.add(
                outcome,
                case.text,
                case.seed.text,
                f"{case.seed.file}:{case.seed.number}",
                [m.describe() for m in case.mutations],
                case.id,
                case.seed.profiles,
            )
            if new:
                self.minimizers[finding.signature] = Minimizer(finding, case.seed, case.mutations)
                self.save()
        if time.monotonic() - self.saved > 2.0:
            self.save()

    def _behaved(self, case: Case, behaviour: str, seconds: float) -> None:
        """A drawn case's behaviour noted; unless --blind, a new one for its
        API keeps the case in the pool, and credits the entry it came from."""
        line = case.seed.line
        if not behaviour or not self.behaviours.add(case.id, line.api, behaviour, self.elapsed + self.now()):
            return
        if self.s.feedback:
            self.pool.credit(case.parent)
            self.pool.keep(self.seed_index[id(case.seed)], case.mutations, apply(line, case.mutations), seconds)

    def tick(self) -> None:
        if time.monotonic() - self.saved > 2.0:
            self.save()

    # -- running ------------------------------------------------------------
    def run(self, progress: Any = None) -> None:
        checks = tuple(o for o in self.s.oracles if o in CHECKS or o.startswith("device:"))
        init = (replace(self.s.options, behaviour=True), checks, os.path.join(self.s.out, WORKER_LOG))
        workers = pool.WorkerPool(
            run_cases, init, self.s.jobs, self.s.timeout, preload(self.s.options, checks), cpu_clock=True
        )

        def tick() -> None:
            self.tick()
            if progress:
                progress(self)

        try:
            workers.run(self.feed, self.on_event, stop=lambda: self.aborted, tick=tick)
        finally:
            for m in self.minimizers.values():  # (a stop before they finished: they are as far as they got)
                m.finding.minimized = m.finished
            self.elapsed += self.now()
            self.started = time.monotonic()
            self.save()
            if progress:
                progress.finish(self)

    def write_reports(self) -> None:
        """Each finding's reproducer and the findings' classes (repro.py's write_reports)."""
        from .repro import write_reports

        write_reports(self.findings, self.s.options)

    def rate(self) -> float:
        seconds = self.elapsed + self.now()
        return self.cases_run / seconds if seconds > 0 else 0.0
