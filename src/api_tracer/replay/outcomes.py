"""Results sorted as PaddleAPITest's users sort them: each config line
into one outcome file of theirs (`api_config_pass.txt`,
`api_config_accuracy_error.txt`, ...), which their own tools read back
(their error statistics, a rerun of one file), holding the line as it
was read. `replay --outcomes DIR` writes them as results come, each line
flushed (a crash loses none before it); the outcome files an earlier run
left in DIR are replaced.

How a Result maps (`outcome`):

| outcome | results |
| --- | --- |
| pass | ok |
| accuracy_error | mismatch (with --check) |
| FRAMEWORK_error | failed: the call raised (paddle_error for a Paddle line); with --check OTHER, OTHER's call |
| FRAMEWORK_to_OTHER_failed | unmapped: with --check OTHER, no mapping makes the call in OTHER |
| crash | failed: its worker died of a signal other than SIGKILL |
| oom | failed: its worker was killed by SIGKILL (as the out-of-memory killer kills); skipped: past --max-bytes |
| timeout | failed: no result within --timeout |
| skip | skipped (another reason), vacuous, refused, invalid |
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, TextIO

from ..formats.io import open_output
from .results import ON_THE_OTHER_SIDE, Result, Status

# Their outcome names, in their order, each written to FILE_PREFIX + name + ".txt".
OUTCOMES = (
    "pass",
    "accuracy_error",
    "paddle_error",
    "torch_error",
    "paddle_to_torch_failed",
    "torch_to_paddle_failed",
    "crash",
    "oom",
    "timeout",
    "skip",
)
FILE_PREFIX = "api_config_"
KILLED = "exit code -9"  # (SIGKILL: run.run_isolated's message for a worker that died of it)
PAST_MAX_BYTES = "--max-bytes"  # (what the skip messages of builder.py, side.py and check.py name)


def outcome(result: Result, framework: str, other: str = "") -> str:
    """The outcome a result is sorted into, for a line of `framework`
    (checked against framework `other`, if any: --check torch)."""
    return outcome_of(result.status, result.error, result.message, framework, other)


def outcome_of(status: str, error: str, message: str, framework: str, other: str = "") -> str:
    """outcome, of a result's fields (as a replay report's line holds them)."""
    status = Status(status)
    if status == Status.UNMAPPED:
        return f"{framework}_to_{other}_failed"
    if status == Status.OK:
        return "pass"
    if status == Status.MISMATCH:
        return "accuracy_error"
    if status == Status.FAILED:
        if error == "Timeout":
            return "timeout"
        if error == "WorkerCrashed":
            return "oom" if KILLED in message else "crash"
        mapped = other and message.startswith(ON_THE_OTHER_SIDE.format(framework=other))
        return f"{other if mapped else framework}_error"
    if status == Status.SKIPPED and PAST_MAX_BYTES in message:
        return "oom"
    return "skip"


class OutcomeFiles:
    """--outcomes DIR: a file per outcome, made when its first line comes."""

    def __init__(self, folder: str, framework: str, other: str = "") -> None:
        os.makedirs(folder, exist_ok=True)
        self.folder, self.framework, self.other = folder, framework, other
        for name in os.listdir(folder):  # (an earlier run's: its lines are not this run's)
            if name.startswith(FILE_PREFIX) and name.endswith(".txt"):
                os.remove(os.path.join(folder, name))
        self.files: Dict[str, TextIO] = {}
        self.counts: Dict[str, int] = {}

    def path(self, name: str) -> str:
        return os.path.join(self.folder, f"{FILE_PREFIX}{name}.txt")

    def paths(self) -> List[str]:
        """The files made so far."""
        return [self.path(name) for name in self.files]

    def __call__(self, r: Result) -> None:
        name = outcome(r, self.framework, self.other)
        if name not in self.files:
            self.files[name] = open_output(self.path(name))
        self.files[name].write(r.config + "\n")
        self.files[name].flush()
        self.counts[name] = self.counts.get(name, 0) + 1

    def said(self) -> str:
        """The counts per outcome, in OUTCOMES' order, as the summary says them."""
        order = sorted(self.counts, key=lambda n: OUTCOMES.index(n) if n in OUTCOMES else len(OUTCOMES))
        return ", ".join(f"{self.counts[name]} {name}" for name in order)

    def __enter__(self) -> "OutcomeFiles":
        return self

    def __exit__(self, *exc: Any) -> None:
        for f in self.files.values():
            f.close()


def outcome_files(folder: Optional[str], framework: str, other: str = "") -> Optional[OutcomeFiles]:
    return OutcomeFiles(folder, framework, other) if folder else None
