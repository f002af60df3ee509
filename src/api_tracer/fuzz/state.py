"""A campaign's state, campaign.json (`State`): where --resume goes on
from, written by campaign.py as the campaign runs, read back checked
(`read_state`) by --resume and by the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional

from ..errors import InputError
from ..formats.json_fields import BOOLEAN, INT64, Kind, check_fields, finite, integer, parse_json
from ..replay.keyed import is_shard
from .findings import read_campaign_file

STATE = "campaign.json"


@dataclass
class State:
    """A campaign's campaign.json: where --resume goes on from."""

    seed: int  # --seed
    seeds: int  # how many seed lines
    next_case: int  # every drawn case below it has finished
    cases_run: int  # all runs together
    seconds: float  # all runs together
    inactive_seeds: List[int]  # the seeds not mutated: they do not run as they are
    findings: int
    seed_lines: Optional[str] = None  # seeds_digest of the seed lines; None: written before it was kept
    behaviours: int = 0  # distinct (API, behaviour signature) pairs reached (steer.py)
    feedback: Optional[bool] = None  # steered (not --blind); None: written before it was kept
    pool: List[Any] = field(default_factory=list)  # the seed pool (SeedPool.to_json; empty with --blind)
    shard: str = "0/1"  # --shard I/N: which case numbers it draws


CAMPAIGN_STATE = "a campaign's state"
STATE_FIELDS = {
    "seed": integer(-INT64 - 1),
    "seeds": integer(1),
    "next_case": integer(0),
    "cases_run": integer(0),
    "seconds": finite(0),
    "inactive_seeds": Kind(
        "a list of distinct seed numbers",
        lambda v: isinstance(v, list) and all(type(i) is int and i >= 0 for i in v) and len(set(v)) == len(v),
    ),
    "findings": integer(0),
    "seed_lines": Kind(
        "a SHA-256 digest in hex",
        lambda v: isinstance(v, str) and len(v) == 64 and all(c in "0123456789abcdef" for c in v),
    ),
    "behaviours": integer(0),
    "feedback": BOOLEAN,
    "pool": Kind("a list of pool entries", lambda v: isinstance(v, list)),
    "shard": Kind("I/N, a shard", is_shard),
}


STATE_REQUIRED = ("seed", "seeds", "next_case", "cases_run", "seconds", "inactive_seeds", "findings")


def read_state(path: str) -> State:
    """The campaign.json at `path`, each field checked (STATE_FIELDS: its
    type and range; the inactive seeds among the seeds); an InputError
    naming it where it is not as a campaign writes it."""
    text = read_campaign_file(path)
    record = check_fields(
        parse_json(text, path, CAMPAIGN_STATE), STATE_FIELDS, path, CAMPAIGN_STATE, required=STATE_REQUIRED, closed=True
    )
    past = [i for i in record["inactive_seeds"] if i >= record["seeds"]]
    if past:
        raise InputError(
            path,
            f"not {CAMPAIGN_STATE}: an inactive seed {past[0]}, of {record['seeds']} seed lines (0 to "
            f"{record['seeds'] - 1})",
        )
    return State(**record)
