"""A finding's life after its campaign: rechecked where it is run now
(`recheck`: another torch release, another device, a fix), and several
campaigns' findings merged into one directory (`merge`), one finding a
signature, with when and where it was first and last seen (findings.py's
`combined`).

A recheck replays each finding's reproducer line under its oracle, as the
campaign ran its cases (campaign.run_cases, in pool workers: a crash or a
hang is an event, not the end of the recheck), each allowed the
campaign's confirmed-hang time (--timeout times CONFIRM_FACTOR), and says
of each: still failing (the same signature), fixed (it runs clean),
changed (it fails another way: the new kind and message said), or not
run (its line is not replayable here, say an operator whose --import is
missing: its status is left as it was, and nothing says it was fixed)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

from ..replay import pool
from ..replay.options import ReplayOptions
from ..replay.results import Status
from ..replay.run import preload
from .campaign import CONFIRM_FACTOR, WORKER_LOG, run_cases
from .findings import CHANGED, FIXED, NOT_RUN, RUN, STILL, Finding, Findings, by_design, classify, seen_here

# a line that does not run as it is here: not a finding's end, but no recheck of it either
UNRUN = (Status.INVALID.value, Status.REFUSED.value, Status.SKIPPED.value, Status.UNMAPPED.value)


@dataclass
class Recheck:
    finding: Finding
    status: str  # findings.RECHECKED
    message: str  # what it came to where it is not still failing


def recheck(findings: Findings, options: ReplayOptions, jobs: int, timeout: float) -> List[Recheck]:
    """Each of `findings` (loaded) run again here under its oracle, its
    status, last seen and rechecks brought up to date, and saved; what
    became of each, in the findings' order."""
    here = seen_here(options.device)
    by_oracle: Dict[str, List[Finding]] = {}
    for f in findings:
        by_oracle.setdefault(f.oracle, []).append(f)
    said: Dict[str, Tuple[str, str]] = {}
    for oracle, group in by_oracle.items():
        said.update(_run(group, oracle, findings, options, jobs, timeout))
    out = []
    for f in findings:
        status, message = said[f.signature]
        f.rechecks.append({**here, "status": status, "message": message})
        if status != NOT_RUN:
            f.status = status
        if status == STILL:
            f.last_seen = dict(here)
        out.append(Recheck(f, status, message))
    findings.save()
    return out


def _run(
    group: List[Finding], oracle: str, findings: Findings, options: ReplayOptions, jobs: int, timeout: float
) -> Dict[str, Tuple[str, str]]:
    checks = () if oracle == RUN else (oracle,)
    tasks = [(f.signature, (f.line, findings.profiles.get(f.line, {}))) for f in group]
    by_signature = {f.signature: f for f in group}
    said: Dict[str, Tuple[str, str]] = {}

    def on_event(signature: str, event: object) -> None:
        f = by_signature[signature]
        said[signature] = _status(f, event, by_design(f.api, options))

    init = (options, checks, os.path.join(findings.directory, WORKER_LOG))
    limit = timeout * CONFIRM_FACTOR
    workers = pool.WorkerPool(run_cases, init, min(jobs, len(tasks)), limit, preload(options, checks), cpu_clock=True)
    workers.run(lambda: tasks.pop(0) if tasks else None, on_event)
    return said


def _status(f: Finding, event: object, designed: bool) -> Tuple[str, str]:
    if isinstance(event, pool.Done) and event.result.runs:
        run, status, error, message = event.result.runs[0]
        if status in UNRUN:
            return NOT_RUN, f"{status}: {error + ': ' if error else ''}{message}"
    outcome = classify(f.api, event, designed)
    if outcome.signature == f.signature:
        return STILL, ""
    if not outcome.kind:
        runs = event.result.runs if isinstance(event, pool.Done) else []
        return FIXED, "; ".join(f"{r}: {s}" + (f" ({e}: {m[:200]})" if s == "failed" else "") for r, s, e, m in runs)
    return CHANGED, f"{outcome.kind} [{outcome.oracle}]: {outcome.message}"


def merge(sources: Sequence[Findings], into: Findings) -> None:
    """The findings of `sources` (loaded) merged into `into` (loaded,
    where it holds some), one a signature (Findings.merge), and saved."""
    for source in sources:
        into.merge(source)
    into.save()
