"""Operators decided by family: the shape of the two reviews replay keeps
of operators whose kernels may trust their arguments (private_operators.py:
every private aten operator; indexing_operators.py: every public one that
takes indices, lengths, offsets or saved statistics).

A family names operators by pattern and decides them one way:

- checked: replay checks the built arguments first (operator_checks.py,
  fused_checks.py), and a config that fails is invalid, with what is wrong;
- kernel checks: the kernel checks what it reads (each such family was
  probed with wrong arguments, which raise: tests/replay);
- refused: with the family's reason.

A `Review` is one such table over a list of operators: which family
decides each, which none (or two) decide, and the listing its module
prints (`python -m api_tracer.frameworks.torch.private_operators`, ...),
which exits 1 naming the undecided ones: a torch upgrade's new operators,
which replay refuses until a family takes them.
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import sys
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from .operator_checks import Check

CHECKED, KERNEL, REFUSED = "checked", "kernel checks", "refused"


@dataclass(frozen=True)
class Family:
    name: str
    decision: str  # CHECKED, KERNEL or REFUSED
    why: str
    patterns: Tuple[str, ...]  # fnmatch patterns of operator names (aten's, without the namespace)
    check: Optional[Check] = None  # CHECKED: what replay checks of the built arguments

    def matches(self, op: str) -> bool:
        return any(fnmatch.fnmatchcase(op, p) for p in self.patterns)


def checked(name: str, check: Check, why: str, patterns: str) -> Family:
    return Family(name, CHECKED, why, tuple(patterns.split()), check)


def kernel(name: str, why: str, patterns: str) -> Family:
    return Family(name, KERNEL, why, tuple(patterns.split()))


def refused(name: str, why: str, patterns: str) -> Family:
    return Family(name, REFUSED, why, tuple(patterns.split()))


class Review:
    """`families` deciding the operators `operators()` lists (`what` says
    which, in messages)."""

    def __init__(self, what: str, families: Tuple[Family, ...], operators: Callable[[], Tuple[str, ...]]) -> None:
        self.what, self.families, self.operators = what, families, operators
        self.decision = functools.lru_cache(maxsize=None)(self._decision)

    def families_of(self, op: str) -> List[Family]:
        """The families whose patterns match `op` (an aten name)."""
        return [f for f in self.families if f.matches(op)]

    def _decision(self, op: str) -> Optional[Family]:
        """The family that decides `op`; None where none does, or two do."""
        found = self.families_of(op)
        return found[0] if len(found) == 1 else None

    def undecided(self, ops: Sequence[str] = ()) -> Dict[str, List[str]]:
        """Per operator of `ops` (default: all of them) that no family or
        more than one decides, the names of those that match."""
        ops = ops or self.operators()
        return {op: [f.name for f in self.families_of(op)] for op in ops if self.decision(op) is None}

    def main(self, prog: str, argv: Optional[List[str]] = None) -> int:
        parser = argparse.ArgumentParser(
            prog=prog, description=f"Every one of the {self.what} of the installed torch, with its family."
        )
        parser.add_argument("--undecided", action="store_true", help="print only the operators no family decides")
        args = parser.parse_args(argv)
        import torch

        ops = self.operators()
        if not args.undecided:
            for op in ops:
                f = self.decision(op)
                if f is not None:
                    print(f"{op}\t{f.decision}\t{f.name}")
            decided = [getattr(self.decision(op), "decision", "") for op in ops]
            counts = {d: decided.count(d) for d in (CHECKED, KERNEL, REFUSED)}
            print(
                f"torch {torch.__version__}: {len(ops)} {self.what} in {len(self.families)} families: "
                + ", ".join(f"{n} {d}" for d, n in counts.items()),
                file=sys.stderr,
            )
        left = self.undecided(ops)
        for op, names in left.items():
            print(f"{op}\tundecided\t{' and '.join(names) or 'no family'}")
        if left:
            print(f"{len(left)} {self.what} undecided: add each to one family", file=sys.stderr)
        return 1 if left else 0
