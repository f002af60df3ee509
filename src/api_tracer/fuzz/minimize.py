"""A finding made as small as it stays: the candidates a campaign runs to
shrink a new finding's case (each of its mutations left out, then its
tensors' sizes halved, then a size it grew, grown less), each kept where
the finding's signature still comes of it (campaign.Campaign.on_event)."""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from .findings import Finding
from .mutate import UNAPPLICABLE, Mutation, NotApplicable, apply, render, shrinks, smaller

MINIMIZE_TRIES = 24  # candidate cases a finding's minimization may run (a hang: HANG_TRIES, each a timeout)
HANG_TRIES = 2


class Minimizer:
    """The candidates that may shrink a finding: each of its mutations
    left out, then its tensors' sizes halved, then a size it grew, grown
    less; each kept where the finding's signature still comes of it."""

    def __init__(self, finding: Finding, seed: Any, mutations: Tuple[Mutation, ...]) -> None:
        # (seed: the campaign's Seed, whose parsed `line` the mutations apply to)
        self.finding, self.seed, self.mutations = finding, seed, mutations
        self.tries = HANG_TRIES if finding.kind == "hang" else MINIMIZE_TRIES
        self.waiting = False  # a candidate of it is running
        # the lines it ran or started from: a candidate that comes back to one (a size halved, then the
        # mutation that halved it dropped) is not run again
        self.tried = {self._line(mutations)}
        self.plan = self._plan()

    def _line(self, mutations: Tuple[Mutation, ...]) -> Optional[str]:
        try:
            return render(apply(self.seed.line, mutations))
        except UNAPPLICABLE:
            return None

    def _plan(self) -> List[Tuple[Mutation, ...]]:
        ms = self.mutations
        drops = [ms[:i] + ms[i + 1 :] for i in range(len(ms))] if len(ms) > 1 else []
        try:
            current = apply(self.seed.line, ms)
        except NotApplicable:
            return drops
        growing = [ms[:i] + (smaller(m),) + ms[i + 1 :] for i, m in enumerate(ms) if smaller(m)]
        return drops + [ms + (s,) for s in shrinks(current)] + growing  # (a shrink of the line as it is now)

    def next(self) -> Optional[Tuple[Mutation, ...]]:
        while not self.waiting and self.tries > 0 and self.plan:
            candidate = self.plan.pop(0)
            line = self._line(candidate)
            if line is None or line in self.tried:
                continue
            self.tried.add(line)
            self.tries -= 1
            self.waiting = True
            return candidate
        return None

    def result(self, mutations: Tuple[Mutation, ...], same: bool) -> None:
        self.waiting = False
        if same:
            self.mutations = mutations
            self.plan = self._plan()

    @property
    def finished(self) -> bool:
        return not self.waiting and (self.tries <= 0 or not self.plan)
