"""`api-tracer fuzz CONFIGS...`: checks the command line (each flag's
error names it, before any case runs), reads the seeds, runs the campaign
and prints what it found. Exit status 1 where it found anything."""
from __future__ import annotations

import os
import signal
from typing import Any, List, Tuple

from ..errors import UsageError
from ..replay import user_code
from ..replay.check import reference
from ..replay.command import check_device, check_readable
from ..replay.configs import first_line
from ..replay.options import ReplayOptions
from .campaign import ORACLES, STATE, Campaign, Progress, Settings, read_seeds, summary
from .findings import FINDINGS
from .mutate import KINDS

DEFAULT_TIME = 60.0  # seconds, where neither --time nor --budget is given
DEFAULT_MAX_BYTES = 1 << 30  # a case's tensor arguments (replay's own default, half the free memory, is for one config)
DEFAULT_TIMEOUT = 10.0  # seconds a step of a case may take
RUN_ORACLES = ("crash", "hang", "error")  # found by replaying the case as it is


def add_flags(p: Any) -> None:
    from ..options import byte_count, seconds

    p.add_argument("configs", nargs="+", metavar="CONFIGS",
                   help="files of seed config lines (any file replay reads), with api_value_ranges.yaml beside them")
    p.add_argument("-o", "--output", default="fuzz_output", help="the campaign's directory (default fuzz_output)")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument("--time", type=seconds, metavar="SECONDS",
                        help=f"run this long (default {DEFAULT_TIME:g} s unless --budget)")
    budget.add_argument("--budget", type=int, metavar="N", help="run this many cases")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--seed", type=int, default=0, help="the campaign's random seed (default 0)")
    p.add_argument("--mutate", default=",".join(KINDS), help=f"the kinds of mutation (default {','.join(KINDS)})")
    p.add_argument("--oracle", default=",".join(ORACLES),
                   help=f"what makes a finding: {','.join(ORACLES)}, device:DEVICE, compile (default "
                        f"{','.join(ORACLES)})")
    p.add_argument("--device", default="cpu", help="device of the tensors made (default cpu)")
    p.add_argument("--import", dest="imports", action="append", metavar="MODULE",
                   help="import MODULE (your operators' registration) into every worker first (repeatable)")
    p.add_argument("--load-library", dest="libraries", action="append", metavar="PATH",
                   help="load the shared library PATH (torch.ops.load_library) likewise (repeatable)")
    p.add_argument("--timeout", type=seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"a case's step running longer is a hang; its worker is killed (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--max-bytes", type=byte_count, default=DEFAULT_MAX_BYTES,
                   help="cases whose tensor arguments need more are skipped; mutations never lift it (default 1G)")
    p.add_argument("--resume", action="store_true", help="go on with the campaign in -o where it stopped")


def _list(flag: str, text: str, allowed: Tuple[str, ...], prefixed: Tuple[str, ...] = ()) -> Tuple[str, ...]:
    items = tuple(x.strip() for x in text.split(",") if x.strip())
    for x in items:
        if x not in allowed and not any(x.startswith(p) and len(x) > len(p) for p in prefixed):
            raise UsageError(f"fuzz: {flag}: {x!r} is not one of {', '.join(allowed + prefixed)}")
    if not items:
        raise UsageError(f"fuzz: {flag}: empty")
    return items


def settings_of(args: Any) -> Settings:
    for path in args.configs:
        try:
            check_readable(path)
        except UsageError as e:
            raise UsageError(str(e).replace("replay:", "fuzz:", 1)) from None
    if args.jobs < 1:
        raise UsageError("fuzz: --jobs must be at least 1")
    if args.budget is not None and args.budget < 1:
        raise UsageError("fuzz: --budget must be at least 1")
    if not args.timeout > 0:
        raise UsageError("fuzz: --timeout must be more than 0")
    kinds = _list("--mutate", args.mutate, KINDS)
    oracles = _list("--oracle", args.oracle, ORACLES + ("compile",), ("device:",))
    check_device(args.device, f"--device {args.device}")
    for o in oracles:
        if o not in RUN_ORACLES:
            check_device(reference(o, args.device).device, f"--oracle {o}")
    state = os.path.join(args.output, STATE)
    if os.path.exists(args.output) and not os.path.isdir(args.output):
        raise UsageError(f"fuzz: -o {args.output}: not a directory")
    if args.resume and not os.path.exists(state):
        raise UsageError(f"fuzz: --resume: {args.output} holds no campaign ({STATE})")
    if not args.resume and (os.path.exists(state) or os.path.exists(os.path.join(args.output, FINDINGS))):
        raise UsageError(f"fuzz: -o {args.output} holds a campaign: --resume to go on with it, or another -o")
    options = ReplayOptions(device=args.device, max_bytes=args.max_bytes, imports=tuple(args.imports or ()),
                            libraries=tuple(args.libraries or ()))
    time_limit = args.time if args.time is not None else (None if args.budget is not None else DEFAULT_TIME)
    return Settings(args.output, args.seed, kinds, oracles, time_limit, args.budget, args.jobs, args.timeout, options)


def fuzz_command(args: Any) -> int:
    s = settings_of(args)
    try:  # here first: a module that does not import is said before any case runs
        user_code.load(s.options.imports, s.options.libraries)
    except Exception as e:  # noqa: BLE001 - the user's code: whatever it raises
        raise UsageError(f"fuzz: loading the user's code: {type(e).__name__}: {first_line(e)}") from None
    seeds, left_out = read_seeds(args.configs)
    for why in left_out:
        print(f"api-tracer: warning: fuzz: left out: {why}")
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
