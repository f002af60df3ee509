"""Two benchmark runs side by side (api-tracer bench --compare): each config
both timed, matched by its line, and called slower or faster only where a
statistical test says its difference is beyond the noise.

A config is tested against the run as a whole: the centre is the median
log ratio of all configs tested (the shift: a machine slower or busier
through one run than the other, as a shared machine is, moves every
config alike, by up to 20% on this project's). Two noises are in a
config's difference from it. One is within a run: each config's rounds
were spread over its run (timing/run.py), so their spread holds what the
machine did meanwhile. The other is between runs: a process's placement
in memory, a load one run had and not the other that met configs
unevenly; no run's rounds can see it. It is estimated from the configs
themselves, most of which two runs leave as they were: tau^2, the
variance of a config's log ratio beyond what its rounds explain, from
the median absolute deviation of the log ratios from the centre (a
robust scale, about 1.4826 x the median for normal noise).

Per config, on the logs of its rounds' medians (a ratio of times is a
difference of logs): d, the difference of the two runs' means less the
centre, and se^2, its variance as Welch's test has it; its statistic is
d / sqrt(se^2 + tau^2), two-sided against Student's t with the degrees
of freedom of the two variances together (Satterthwaite's: se^2's
Welch's, tau^2's those of a median absolute deviation of all the
configs). Over the many configs of a comparison the false discoveries
are held to a share of `q` (Benjamini-Hochberg). A config with fewer
than two rounds on a side cannot be tested, and is said as untested.
With fewer than BETWEEN_RUNS_FROM configs tested there is neither a
centre nor tau: each is tested on its rounds alone, and the table says
so. What this cannot tell: a change to every config alike (a slower
machine, or a torch slower everywhere) is the shift, not a config's
change; the comparison says the shift, and leaves that to the reader."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional

from ..replay.results import Status
from .results import Run, Summary
from .stats import discoveries, mean_var, median, t_two_sided, welch_terms

# The share of false discoveries a comparison allows among the configs it flags.
FALSE_DISCOVERIES = 0.01


@dataclass
class Change:
    """One config of both runs: `ratio` the new time over the base's (the
    geometric means of their rounds), `p` the test's p-value (None:
    untested), and the verdict: "slower", "faster", "same" or "untested"."""

    config: str
    api: str
    base: Summary
    new: Summary
    ratio: float
    p: Optional[float]
    verdict: str = "same"
    variance: float = 0.0  # se^2 of its log ratio, from the rounds (see the module's text)
    df: float = math.inf  # Welch's degrees of freedom

    @property
    def speedup(self) -> float:
        """The base's time over the new one's: above 1, faster."""
        return 1.0 / self.ratio

    @property
    def base_seconds(self) -> float:
        """The base's time as the ratio takes it: the geometric mean of its rounds."""
        return geometric_mean(self.base.rounds)

    @property
    def new_seconds(self) -> float:
        return geometric_mean(self.new.rounds)


def geometric_mean(xs: List[float]) -> float:
    return math.exp(mean_var([math.log(x) for x in xs])[0])


@dataclass
class Comparison:
    base: Run
    new: Run
    changes: List[Change]
    shift: float  # the median ratio over every config compared: the run as a whole (NaN: none compared)
    tau: float  # the between-run noise of a config's log ratio (see the module's text)
    unpaired: Dict[str, List[Summary]]  # "base", "new": configs only one run timed ok

    def flagged(self, verdict: str) -> List[Change]:
        return [c for c in self.changes if c.verdict == verdict]


def compare(base: Run, new: Run, q: float = FALSE_DISCOVERIES) -> Comparison:
    """The configs both runs timed, each tested (see the module's text)."""
    by_text = {s.config: s for s in base.configs.values() if s.status == Status.OK}
    changes: List[Change] = []
    matched = set()
    for s in new.configs.values():
        b = by_text.get(s.config)
        if b is None or s.status != Status.OK or not s.rounds or not b.rounds:
            continue
        matched.add(s.config)
        logs_b, logs_n = [math.log(x) for x in b.rounds], [math.log(x) for x in s.rounds]
        change = Change(s.config, s.api, b, s, geometric_mean(s.rounds) / geometric_mean(b.rounds), None, "untested")
        if len(logs_b) > 1 and len(logs_n) > 1:
            _, change.variance, change.df = welch_terms(logs_b, logs_n)
            change.verdict = "same"
        changes.append(change)
    tested = [c for c in changes if c.verdict != "untested"]
    centre = median([math.log(c.ratio) for c in tested]) if len(tested) >= BETWEEN_RUNS_FROM else 0.0
    tau = between_runs(tested, centre)
    df_tau = MAD_EFFICIENCY * (len(tested) - 1)
    for c in tested:
        d, variance = math.log(c.ratio) - centre, c.variance + tau**2
        if variance == 0:
            c.p = 1.0 if d == 0 else 0.0
            continue
        # (the degrees of freedom of the two variances together, Satterthwaite's: tau's from the configs)
        df = variance**2 / ((c.variance**2 / c.df if c.variance else 0.0) + (tau**4 / df_tau if tau else 0.0))
        c.p = t_two_sided(d / math.sqrt(variance), df)
    for c, rejected in zip(tested, discoveries([c.p for c in tested], q)):  # type: ignore[misc]
        if rejected:
            c.verdict = "slower" if math.log(c.ratio) > centre else "faster"
    unpaired = {
        "base": [s for s in base.configs.values() if s.status == Status.OK and s.config not in matched],
        "new": [s for s in new.configs.values() if s.status == Status.OK and s.config not in matched],
    }
    shift = math.exp(centre) if centre else median([c.ratio for c in changes]) if changes else math.nan
    return Comparison(base, new, changes, shift, tau, unpaired)


MAD_SCALE = 1.4826  # the standard deviation of normal noise over its median absolute deviation
# The median absolute deviation's efficiency against the standard deviation on normal noise: tau from
# m configs is worth as many degrees of freedom as a variance from MAD_EFFICIENCY * (m - 1).
MAD_EFFICIENCY = 0.37


# The configs tested that tau needs: with fewer, it is taken as 0, and the table says the test is overconfident.
BETWEEN_RUNS_FROM = 3


def between_runs(changes: List[Change], centre: float) -> float:
    """tau: the between-run noise of a config's log ratio, beyond what its
    rounds explain (see the module's text): from the median absolute
    deviation of the log ratios from `centre`, less the median variance the
    rounds explain (0 if they explain it all, or with fewer than
    BETWEEN_RUNS_FROM configs, unknown)."""
    if len(changes) < BETWEEN_RUNS_FROM:
        return 0.0
    scale = MAD_SCALE * median([abs(math.log(c.ratio) - centre) for c in changes])
    return math.sqrt(max(0.0, scale**2 - median([c.variance for c in changes])))
