"""Steering by behaviour: what a campaign keeps of what its cases did.

Every case's plain run says what the call did (replay/behaviour.py: its
outputs' kinds and the aten operators it called inside, or the template
of what it raised). `Behaviours` keeps each signature an API reached, the
first time, in the campaign's behaviours.jsonl (one JSON object a line:
the case, the API, the signature, the campaign's seconds then), which
--resume reads back and the benchmarks count.

Unless --blind, a drawn case whose signature is new for its API joins
the `SeedPool`, under its seed line; a seed line drawn then gives half
of its cases from its entries: an entry's mutations, then one to three
more. The pool is bounded (POOL_LIMIT entries a seed line; a full one
gives up the entry whose cases found the fewest new signatures, the
oldest of those), and so is a chain (CHAIN_LIMIT mutations: a longer
case is not kept). It is kept in
campaign.json: each entry's seed line and its mutations, each
mutation's parameters written as a config line's arguments
(config.format_line) and read back by the config parser, never
evaluated."""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from ..config import format_line, parse_call
from ..errors import InputError, warn
from ..formats.json_fields import SECONDS, Kind, check_fields, integer, parse_json
from .findings import read_campaign_file
from .mutate import APPLY, KIND_OF, UNAPPLICABLE, Line, Mutation, apply

BEHAVIOURS = "behaviours.jsonl"
POOL_LIMIT = 32  # entries of the seed pool, for each seed line
TOTAL_LIMIT = 2048  # entries of the seed pool in all (what campaign.json holds of it)
CHAIN_LIMIT = 8  # mutations of a case the pool keeps
FASTEST = 0.001  # seconds: an entry's case faster than this weighs as this
LIGHTEST = 1e-9  # the least weight an entry has (a sum of weights is never 0)
POOL_SHARE = 0.5  # of a seed line's drawn cases, those drawn from its entries (once it has any)


@dataclass
class Entry:
    seed: int  # the seed line's number in the campaign (Campaign.seeds)
    mutations: Tuple[Mutation, ...]
    line: Line  # the seed line with the mutations applied
    seconds: float = 0.0  # how long its case took to run, every step
    found: int = 0  # new signatures its cases reached
    drawn: int = 0  # cases drawn from it
    order: int = 0  # when it was kept: the older, the smaller


class Behaviours:
    """The signatures each API reached in a campaign (`DIR/behaviours.jsonl`)."""

    def __init__(self, directory: str) -> None:
        self.path = os.path.join(directory, BEHAVIOURS)
        self.seen: Dict[str, Set[str]] = {}

    def __len__(self) -> int:
        return sum(len(s) for s in self.seen.values())

    def apis(self) -> int:
        return len(self.seen)

    def add(self, case: int, api: str, signature: str, seconds: float) -> bool:
        """Whether `signature` is new for `api`; a new one is written down."""
        known = self.seen.setdefault(api, set())
        if signature in known:
            return False
        known.add(signature)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"case": case, "api": api, "behaviour": signature, "seconds": round(seconds, 3)}) + "\n")
        return True

    def load(self) -> None:
        """What an earlier run wrote (--resume), each line checked."""
        self.seen = {}
        for _, record in read_behaviours(self.path):
            self.seen.setdefault(record["api"], set()).add(record["behaviour"])


BEHAVIOUR = "a behaviour"
BEHAVIOUR_FIELDS = {
    "case": integer(0),
    "api": Kind("an API's name", lambda v: isinstance(v, str) and bool(v)),
    "behaviour": Kind("a behaviour signature", lambda v: isinstance(v, str) and bool(v)),
    "seconds": SECONDS,
}


def read_behaviours(path: str) -> List[Tuple[int, Dict[str, Any]]]:
    """(line number, record) of each line of a behaviours.jsonl (none where
    there is no such file), read as a campaign's files are
    (findings.read_campaign_file: a regular file, bounded, UTF-8), each
    line checked; a last line without its newline (a kill while it was
    written) is left out, said; an InputError naming a line that is not
    one a campaign writes."""
    if not os.path.lexists(path):
        return []
    text = read_campaign_file(path)
    lines = text.split("\n")
    if lines[-1]:
        warn(f"{path}:{len(lines)}: left out: a line cut short (no newline at its end)")
    out = []
    for lineno, line in enumerate(lines[:-1], 1):
        if line.strip():
            record = parse_json(line, path, BEHAVIOUR, lineno)
            out.append((lineno, check_fields(record, BEHAVIOUR_FIELDS, path, BEHAVIOUR, lineno, **CLOSED_BEHAVIOUR)))
    return out


CLOSED_BEHAVIOUR = {"required": tuple(BEHAVIOUR_FIELDS), "closed": True}


class SeedPool:
    """The cases kept for their new behaviour, each under the seed line it
    comes from, drawn from as that seed line is."""

    def __init__(self, limit: int = POOL_LIMIT, total: int = TOTAL_LIMIT) -> None:
        self.limit, self.total = limit, total  # entries of a seed line, and in all
        self.entries: Dict[int, List[Entry]] = {}  # seed -> its entries, oldest first
        self.kept = 0  # entries kept so far (each one's order)

    def __len__(self) -> int:
        return sum(len(e) for e in self.entries.values())

    def keep(self, seed: int, mutations: Tuple[Mutation, ...], line: Line, seconds: float = 0.0) -> bool:
        """Keeps a case whose behaviour was new, unless its chain is too
        long; a seed's full share of the pool, or a full pool, first gives
        up its least fruitful entry (the fewest new signatures found, the
        oldest of those)."""
        if not mutations or len(mutations) > CHAIN_LIMIT:
            return False
        mine = self.entries.setdefault(seed, [])
        if len(mine) >= self.limit:
            self._drop(mine)
        elif len(self) >= self.total:
            self._drop([e for entries in self.entries.values() for e in entries])
        self.kept += 1
        mine.append(Entry(seed, mutations, line, seconds, order=self.kept))
        return True

    def _drop(self, among: List[Entry]) -> None:
        worst = min(among, key=lambda e: (e.found, e.order))
        self.entries[worst.seed].remove(worst)

    def draw(self, rng: random.Random, seed: int) -> Optional[Entry]:
        """An entry of `seed` to mutate further, for POOL_SHARE of the
        draws (None: mutate the seed line itself), chosen with a weight
        that grows with the new signatures its cases found, and falls with
        the cases drawn from it and with the time its case took (cases grown
        from a slow one are slow: a campaign's time goes further on fast
        ones)."""
        mine = self.entries.get(seed)
        if not mine or rng.random() >= POOL_SHARE:
            return None
        weights = [max((1 + e.found) / ((1 + e.drawn) * max(e.seconds, FASTEST)), LIGHTEST) for e in mine]
        entry = rng.choices(mine, weights)[0]
        entry.drawn += 1
        return entry

    def credit(self, entry: Optional[Entry]) -> None:
        """A case drawn from `entry` reached a new signature."""
        if entry is not None:
            entry.found += 1

    # -- campaign.json ---------------------------------------------------------
    def to_json(self) -> List[Dict[str, Any]]:
        return [
            {
                "seed": e.seed,
                "seconds": round(e.seconds, 6),
                "found": e.found,
                "drawn": e.drawn,
                "mutations": [encode(m) for m in e.mutations],
            }
            for e in sorted((e for entries in self.entries.values() for e in entries), key=lambda e: e.order)
        ]

    def restore(self, records: Sequence[Any], seeds: Sequence[Line], path: str) -> None:
        """The pool campaign.json (`path`) kept, its entries checked; one
        whose mutations no longer apply to its seed line is left out."""
        self.entries, self.kept = {}, 0
        for i, r in enumerate(records):
            where = f"{path}: pool entry {i}"
            r = check_fields(r, POOL_FIELDS, where, "a pool entry", required=tuple(POOL_FIELDS), closed=True)
            if r["seed"] >= len(seeds):
                raise InputError(path, f"pool entry {i}: seed {r['seed']}, of {len(seeds)} seed lines")
            mutations = tuple(decode(m, where) for m in r["mutations"])
            try:
                line = apply(seeds[r["seed"]], mutations)
            except UNAPPLICABLE:
                continue  # (its seed line's profiles changed: not one to grow from now)
            except Exception as e:  # noqa: BLE001 - parameters no mutation of its op has
                raise InputError(where, f"not a mutation of its seed line: {type(e).__name__}: {e}") from None
            if self.keep(r["seed"], mutations, line, r["seconds"]):
                self.entries[r["seed"]][-1].found, self.entries[r["seed"]][-1].drawn = r["found"], r["drawn"]


PARAMETERS = "parameters"  # the name of the call a mutation's parameters are written as the arguments of


def encode(m: Mutation) -> List[str]:
    """A mutation as campaign.json keeps it: kind, op, where, and its
    parameters as a config line's arguments ("parameters(3, 1, True)")."""
    return [m.kind, m.op, m.where, format_line(PARAMETERS, tuple(m.params), {})]


def decode(record: Any, where: str) -> Mutation:
    """encode's list read back; an InputError naming `where` if it is not one."""
    if not (isinstance(record, list) and len(record) == 4 and all(isinstance(x, str) for x in record)):
        raise InputError(where, f"not a mutation (four strings: kind, op, where, parameters): {record!r:.80}")
    kind, op, at, params = record
    if op not in APPLY or KIND_OF.get(op) != kind:
        known = ", ".join(f"{k} {o}" for o, k in KIND_OF.items())
        raise InputError(where, f"not a mutation: {kind!r} {op!r} (a kind and its op: {known})")
    try:
        name, values, keywords = parse_call(params)
    except ValueError as e:
        raise InputError(where, f"not a mutation: its parameters {params!r:.80}: {e}") from None
    if name != PARAMETERS or keywords:
        raise InputError(where, f"not a mutation: its parameters {params!r:.80} are not {PARAMETERS}(...)")
    return Mutation(kind, op, at, tuple(values))


POOL_FIELDS = {
    "seed": integer(0),
    "seconds": SECONDS,
    "found": integer(0),
    "drawn": integer(0),
    "mutations": Kind(
        f"a list of 1 to {CHAIN_LIMIT} mutations", lambda v: isinstance(v, list) and 1 <= len(v) <= CHAIN_LIMIT
    ),
}
