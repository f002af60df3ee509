"""api-tracer fuzz: real config lines as the seeds of a fuzzer of
operators. mutate.py draws a case's mutations (shape, dtype, layout,
value, scalar), campaign.py runs cases in worker processes under the
oracles (crash, hang, error; replay --check's float64, layout, repeat,
device:D, compile), findings.py deduplicates and keeps what they find,
minimize.py shrinks it, steer.py keeps what the cases did (and with
steering (unless --blind) the cases that did something new, as seeds), classes.py
groups the findings by root cause, repro.py writes their reproducers,
history.py rechecks and merges them; cli/fuzz.py is the command line.
docs/fuzz.md says more."""

from __future__ import annotations

from .campaign import ORACLES, Campaign, Settings, read_seeds
from .findings import FINDINGS, REPRODUCERS, Finding, Findings
from .mutate import KINDS, Line, Mutation, apply, propose, render

__all__ = [
    "Campaign",
    "Settings",
    "read_seeds",
    "render",
    "ORACLES",
    "KINDS",
    "Finding",
    "Findings",
    "FINDINGS",
    "REPRODUCERS",
    "Line",
    "Mutation",
    "apply",
    "propose",
]
