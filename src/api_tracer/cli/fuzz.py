"""`api-tracer fuzz CONFIGS...`: checks the command line (each flag's error
names it, before any case runs), reads the seeds, runs the campaign
(fuzz/campaign.py) and prints what it found. Exit status 1 where it found
anything."""

from __future__ import annotations

import argparse
import os
import signal
from typing import Any, List, Tuple

from ..errors import UsageError, warn
from ..flags import FUZZ_MAX_BYTES, add_replay_flags, seconds
from ..formats.io import unmakeable_directory
from ..fuzz.campaign import ORACLES, RUN_ORACLES, STATE, Campaign, Progress, Settings, oracles_of, read_seeds, summary
from ..fuzz.findings import FINDINGS
from ..fuzz.mutate import KINDS
from ..replay.results import first_line
from ..replay.run import checked_options, prepare_process
from .replay import check_readable

DEFAULT_TIME = 60.0  # seconds, where neither --time nor --budget is given
DEFAULT_TIMEOUT = 10.0  # seconds a step of a case may take
# The options of a replay this command takes (flags.py's REPLAY defines their flags).
OPTIONS = ("device", "imports", "libraries", "max_bytes")


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "fuzz", help="mutate config lines into cases and find crashes, hangs, unclean errors and wrong results"
    )
    p.add_argument(
        "configs",
        nargs="+",
        metavar="CONFIGS",
        help="files of seed config lines (any file replay reads), with api_value_ranges.yaml beside them",
    )
    p.add_argument("-o", "--output", default="fuzz_output", help="the campaign's directory (default fuzz_output)")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument(
        "--time", type=seconds, metavar="SECONDS", help=f"run this long (default {DEFAULT_TIME:g} s unless --budget)"
    )
    budget.add_argument("--budget", type=int, metavar="N", help="run this many cases")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--seed", type=int, default=0, help="the campaign's random seed (default 0)")
    p.add_argument("--mutate", default=",".join(KINDS), help=f"the kinds of mutation (default {','.join(KINDS)})")
    p.add_argument(
        "--oracle",
        default=",".join(ORACLES),
        help=f"what makes a finding: {','.join(ORACLES)}, device:DEVICE, compile (default {','.join(ORACLES)})",
    )
    p.add_argument(
        "--timeout",
        type=seconds,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"a case's step running longer is a hang; its worker is killed (default {DEFAULT_TIMEOUT:g})",
    )
    add_replay_flags(p.add_argument, OPTIONS, max_bytes=FUZZ_MAX_BYTES)
    p.add_argument("--resume", action="store_true", help="go on with the campaign in -o where it stopped")
    return p


def _kinds(text: str) -> Tuple[str, ...]:
    items = tuple(x.strip() for x in text.split(",") if x.strip())
    for x in items:
        if x not in KINDS:
            raise UsageError(f"fuzz: --mutate: {x!r} is not one of {', '.join(KINDS)}")
    if not items:
        raise UsageError("fuzz: --mutate: empty")
    return items


def settings_of(args: Any) -> Settings:
    for path in args.configs:
        check_readable(path, "fuzz")
    if args.jobs < 1:
        raise UsageError("fuzz: --jobs must be at least 1")
    if args.budget is not None and args.budget < 1:
        raise UsageError("fuzz: --budget must be at least 1")
    if not args.timeout > 0:
        raise UsageError("fuzz: --timeout must be more than 0")
    kinds = _kinds(args.mutate)
    try:
        oracles = oracles_of(args.oracle)
    except ValueError as e:
        raise UsageError(f"fuzz: --oracle: {e}") from None
    options = checked_options(
        "fuzz", checks=[o for o in oracles if o not in RUN_ORACLES], **{name: getattr(args, name) for name in OPTIONS}
    )
    state = os.path.join(args.output, STATE)
    if unmakeable_directory(args.output):
        raise UsageError(f"fuzz: -o {args.output}: {unmakeable_directory(args.output)}")
    if args.resume and not os.path.exists(state):
        raise UsageError(f"fuzz: --resume: {args.output} holds no campaign ({STATE})")
    if not args.resume and (os.path.exists(state) or os.path.exists(os.path.join(args.output, FINDINGS))):
        raise UsageError(f"fuzz: -o {args.output} holds a campaign: --resume to go on with it, or another -o")
    time_limit = args.time if args.time is not None else (None if args.budget is not None else DEFAULT_TIME)
    return Settings(args.output, args.seed, kinds, oracles, time_limit, args.budget, args.jobs, args.timeout, options)


def main(args: Any) -> int:
    s = settings_of(args)
    try:  # here first: a module that does not import is said before any case runs
        prepare_process(s.options)
    except Exception as e:  # noqa: BLE001 - the user's code: whatever it raises
        raise UsageError(f"fuzz: loading the user's code: {type(e).__name__}: {first_line(e)}") from None
    seeds, left_out = read_seeds(args.configs)
    for why in left_out:
        warn(f"fuzz: left out: {why}")
    if not seeds:
        raise UsageError(f"fuzz: no config line to start from in {', '.join(args.configs)}")
    try:
        os.makedirs(s.out, exist_ok=True)
    except OSError as e:
        raise UsageError(f"fuzz: -o {s.out}: {e.strerror or e}") from None
    campaign = Campaign(seeds, s)
    if args.resume:
        try:
            campaign.resume()
        except (OSError, ValueError, KeyError) as e:
            raise UsageError(f"fuzz: --resume: {e}") from None
    stop = _stop_on_signals(campaign)
    try:
        campaign.run(Progress())
    finally:
        stop()
    print(summary(campaign), end="")
    return 1 if len(campaign.findings) else 0


def _stop_on_signals(campaign: Campaign) -> Any:
    """SIGINT and SIGTERM end the campaign after the cases running (its
    state saved); a second one stops at once. Returns what puts the
    handlers back."""
    before: List[Tuple[int, Any]] = []

    def handler(signum: int, frame: Any) -> None:
        if campaign.stopping:
            raise KeyboardInterrupt
        campaign.stopping = True

    for sig in (signal.SIGINT, signal.SIGTERM):
        before.append((sig, signal.signal(sig, handler)))

    def restore() -> None:
        for sig, h in before:
            signal.signal(sig, h)

    return restore
