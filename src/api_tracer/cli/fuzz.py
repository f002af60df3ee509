"""`api-tracer fuzz CONFIGS...`: checks the command line (each flag's error
names it), the campaign's directory (check_directory: it must not replace
an input, nor files of no campaign) and, with --resume, the campaign's
files, all before any case runs; reads the seeds, runs the campaign
(fuzz/campaign.py) and prints what it found. Exit status 1 where it found
anything, 2 for a bad command line or input (nothing ran), 130 where a
second signal stopped it before the running cases finished."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from dataclasses import asdict
from typing import Any, List, Optional, Tuple

from ..errors import PROG, UsageError, warn
from ..flags import FUZZ_MAX_BYTES, add_replay_flags, seconds, shard_pair
from ..formats.configs import ranges_beside
from ..formats.io import check_not_an_input, is_regular, unmakeable_directory
from ..fuzz.campaign import (
    CONFIRM_FACTOR,
    ORACLES,
    OUTPUTS,
    RUN_ORACLES,
    Campaign,
    Settings,
    oracles_of,
    read_seeds,
)
from ..fuzz.classes import CLASSES_FILE, group
from ..fuzz.findings import FINDINGS, FIXED, RANGES, RECHECKED, REPRODUCERS, RUN, Findings, sighting
from ..fuzz.mutate import KINDS
from ..fuzz.repro import write_reports
from ..fuzz.state import STATE, State, read_state
from ..fuzz.steer import BEHAVIOURS
from ..replay.keyed import Shard
from ..replay.results import first_line
from ..replay.run import checked_options, prepare_process
from .replay import check_readable

DEFAULT_TIME = 60.0  # seconds, where neither --time nor --budget is given
DEFAULT_TIMEOUT = 10.0  # seconds a step of a case may take
# The options of a replay this command takes (flags.py's REPLAY defines their flags).
OPTIONS = ("device", "imports", "libraries", "max_bytes")
# --jobs' bound: workers a CPU (more than one: a hanging case holds its worker idle for --timeout; many more
# only share the CPUs, each case slower, past --timeout), and each worker's memory besides its case's tensors
# (about 42 MB measured: torch imported), with --max-bytes of tensors on every worker at once within the
# memory (past it the kernel's OOM killer kills workers: false crashes).
JOBS_PER_CPU = 4
WORKER_BYTES = 64 << 20


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "fuzz", help="mutate config lines into cases and find crashes, hangs, unclean errors and wrong results"
    )
    p.add_argument(
        "configs",
        nargs="*",
        metavar="CONFIGS",
        help="files of seed config lines (any file replay reads), with api_value_ranges.yaml beside them",
    )
    p.add_argument(
        "--recheck",
        metavar="DIR",
        help="run the findings of the campaign in DIR again here, and mark each still failing, fixed or changed "
        "(with this torch's version and device); no CONFIGS",
    )
    p.add_argument(
        "--merge",
        nargs="+",
        metavar="DIR",
        help="merge the findings of these campaigns' directories into -o's, one a signature, first and last seen "
        "kept, their reproducers and classes written; no CONFIGS",
    )
    p.add_argument("-o", "--output", default="fuzz_output", help="the campaign's directory (default fuzz_output)")
    budget = p.add_mutually_exclusive_group()
    budget.add_argument(
        "--time",
        type=seconds,
        metavar="SECONDS",
        help=f"run this long (default {DEFAULT_TIME:g} s unless --budget or --cases)",
    )
    budget.add_argument("--budget", type=int, metavar="N", help="run this many cases")
    budget.add_argument(
        "--cases",
        type=int,
        metavar="N",
        help="draw the case numbers below N (the seeds' among them): the same cases with the same --seed, "
        "whether one campaign or --shard's N campaigns draw them",
    )
    p.add_argument(
        "--shard",
        type=shard_pair,
        metavar="I/N",
        help="draw only the case numbers that are I modulo N (each shard runs the seeds too): N campaigns, one an "
        "array job's task, whose findings fuzz --merge joins",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=1,
        help=f"worker processes (default 1; at most {JOBS_PER_CPU} a CPU, and as many as --max-bytes each fit in "
        "the memory)",
    )
    p.add_argument("--seed", type=int, help="the campaign's random seed (default 0)")
    p.add_argument(
        "--blind",
        action="store_true",
        help="draw every case from the seed lines as they are, not also from the cases kept for doing something new "
        "(steering by behaviour): a campaign the same case for case with the same --seed, as long as no case "
        "times out",
    )
    p.add_argument("--mutate", help=f"the kinds of mutation (default {','.join(KINDS)})")
    p.add_argument(
        "--oracle",
        help=f"what makes a finding: {','.join(ORACLES)}, device:DEVICE, compile (default {','.join(ORACLES)})",
    )
    p.add_argument(
        "--timeout",
        type=seconds,
        metavar="SECONDS",
        help=f"a case's step running longer is killed, and run again with 4 times as long: a hang if it times out "
        f"again (default {DEFAULT_TIMEOUT:g})",
    )
    add_replay_flags(p.add_argument, OPTIONS, max_bytes=FUZZ_MAX_BYTES)
    p.add_argument("--resume", action="store_true", help="go on with the campaign in -o where it stopped")
    p.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="run --shards campaigns as Ray tasks on a cluster ('auto', an address, or none: a local one), each "
        "--jobs workers on its node; their findings merged into -o's (their directories in -o/shards/)",
    )
    p.add_argument("--shards", type=int, help="with --ray: how many (default: as many as the cluster's CPUs hold)")
    return p


def _kinds(text: str) -> Tuple[str, ...]:
    items = tuple(x.strip() for x in text.split(",") if x.strip())
    for x in items:
        if x not in KINDS:
            raise UsageError(f"fuzz: --mutate: {x!r} is not one of {', '.join(KINDS)}")
    if not items:
        raise UsageError("fuzz: --mutate: empty")
    return items


def max_jobs(max_bytes: Optional[int]) -> Tuple[int, str]:
    """The most --jobs this machine takes, and why: JOBS_PER_CPU a CPU this
    process may run on, and as many workers as fit in the memory (the
    machine's, or the cgroup's where less) with WORKER_BYTES and
    `max_bytes` (--max-bytes) each."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    most, why = JOBS_PER_CPU * cpus, f"{JOBS_PER_CPU} a CPU, {cpus} CPUs"
    memory = _memory()
    if memory:
        each = WORKER_BYTES + (max_bytes or 0)
        fit = max(1, memory // each)
        if fit < most:
            most = fit
            why = (
                f"each worker's --max-bytes and {WORKER_BYTES >> 20} MiB, {each / 2**30:.2f} GiB, in "
                f"{memory / 2**30:.1f} GiB of memory; a smaller --max-bytes allows more"
            )
    return most, why


def _memory() -> int:
    """The bytes of memory this process's workers may use (0: unknown)."""
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        memory = 0
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as f:  # (cgroup v2; "max": no limit)
            limit = f.read().strip()
    except OSError:
        limit = ""
    if limit.isdigit() and (not memory or int(limit) < memory):
        memory = int(limit)
    return max(memory, 0)


def check_directory(out: str, configs: List[str], resume: bool, merging: bool = False) -> None:
    """A UsageError (or an InputError naming the file) unless the campaign
    may write its files (campaign.OUTPUTS) in `out`: `out` not a seed
    file's directory (the campaign's api_value_ranges.yaml there would be
    read as that file's value ranges); each file there a regular file, and
    none of them an input by another name (a link to a seed file, or to the
    value ranges beside one); and, for a new campaign, none there yet (a
    campaign's: --resume; another's: not its to replace)."""
    for config in configs:
        directory = os.path.dirname(config) or os.curdir
        # (realpath: `DIR/new/..` names DIR once `new` is made, and a link to DIR is DIR)
        if os.path.realpath(directory) == os.path.realpath(out):
            raise UsageError(
                f"fuzz: -o {out} is the directory of the seed file {config}: the campaign's "
                f"{os.path.join(out, RANGES)} would be read as its value ranges; another -o"
            )
    inputs = [*configs, *filter(None, map(ranges_beside, configs))]
    for name in OUTPUTS:
        path = os.path.join(out, name)
        if os.path.lexists(path):
            is_regular(path)
        check_not_an_input("fuzz", "-o", path, inputs)
    if merging:
        return
    state = os.path.join(out, STATE)
    if resume and not os.path.lexists(state):
        raise UsageError(f"fuzz: --resume: {out} holds no campaign ({STATE})")
    if resume:
        return
    if os.path.lexists(state) or os.path.lexists(os.path.join(out, FINDINGS)):
        raise UsageError(f"fuzz: -o {out} holds a campaign: --resume to go on with it, or another -o")
    for name in (REPRODUCERS, RANGES, BEHAVIOURS):
        path = os.path.join(out, name)
        if os.path.lexists(path):
            raise UsageError(
                f"fuzz: -o {out} holds {path}, of no campaign (there is no {state}): the campaign would "
                "replace it; another -o"
            )


def settings_of(args: Any, directory: bool = True) -> Settings:
    if not args.configs:
        raise UsageError("fuzz: CONFIGS: at least one file of seed config lines (or --recheck, --merge)")
    for path in args.configs:
        check_readable(path, "fuzz")
    if args.budget is not None and args.budget < 1:
        raise UsageError("fuzz: --budget must be at least 1")
    if args.cases is not None and args.cases < 1:
        raise UsageError("fuzz: --cases must be at least 1")
    shard = Shard(*args.shard) if args.shard else Shard()
    timeout = DEFAULT_TIMEOUT if args.timeout is None else args.timeout
    if not timeout > 0:
        raise UsageError("fuzz: --timeout must be more than 0")
    kinds = _kinds(",".join(KINDS) if args.mutate is None else args.mutate)
    try:
        oracles = oracles_of(",".join(ORACLES) if args.oracle is None else args.oracle)
    except ValueError as e:
        raise UsageError(f"fuzz: --oracle: {e}") from None
    options = checked_options(
        "fuzz", checks=[o for o in oracles if o not in RUN_ORACLES], **{name: getattr(args, name) for name in OPTIONS}
    )
    if args.jobs < 1:
        raise UsageError("fuzz: --jobs must be at least 1")
    most, why = max_jobs(options.max_bytes)
    if args.jobs > most:
        raise UsageError(f"fuzz: --jobs {args.jobs}: at most {most} on this machine ({why})")
    if unmakeable_directory(args.output):
        raise UsageError(f"fuzz: -o {args.output}: {unmakeable_directory(args.output)}")
    check_directory(args.output, args.configs, args.resume, merging=not directory)  # (--ray --resume: -o holds shards)
    bounded = args.budget is not None or args.cases is not None
    time_limit = args.time if args.time is not None else (None if bounded else DEFAULT_TIME)
    seed = 0 if args.seed is None else args.seed
    return Settings(
        args.output,
        seed,
        kinds,
        oracles,
        time_limit,
        args.budget,
        args.jobs,
        timeout,
        options,
        not args.blind,
        cases=args.cases,
        shard=shard,
    )


def main(args: Any) -> int:
    if args.recheck is not None or args.merge is not None:
        return _history(args)
    if args.ray is not None:
        return _on_ray(args)
    if args.shards is not None:
        raise UsageError("fuzz: --shards needs --ray (an array job's task gives each campaign its --shard)")
    s = settings_of(args)
    # (read here, checked, before the user's code loads: a damaged campaign.json is said at once; its pool
    # and behaviours.jsonl, which need the seed lines, are read back checked by Campaign.resume)
    state: Optional[State] = read_state(os.path.join(s.out, STATE)) if args.resume else None
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
    if state is not None:
        campaign.resume(state)  # (an InputError where the seeds are not the campaign's, or a finding is damaged)
    stop = _stop_on_signals(campaign)
    try:
        campaign.run(Progress())
        campaign.write_reports()
    finally:
        stop()
    print(summary(campaign), end="")
    if campaign.aborted:
        print(f"{PROG}: fuzz: stopped by a second signal: the running cases were killed", file=sys.stderr)
        return 130
    return 1 if len(campaign.findings) else 0


def _on_ray(args: Any) -> int:
    """fuzz --ray: the campaign's shards as Ray tasks (fuzz/on_ray.py),
    their findings merged into -o's, rebuilt from the shards each time."""
    from ..fuzz.history import merge
    from ..fuzz.on_ray import SHARDS, campaign_on_ray, shards_kept
    from ..replay.on_ray import import_ray

    import_ray("fuzz")  # (said before anything runs, where it is not installed)
    if args.shard:
        raise UsageError("fuzz: --ray: not with --shard (--shards says how many)")
    if args.shards is not None and args.shards < 1:
        raise UsageError("fuzz: --shards must be at least 1")
    shards_dir = os.path.join(args.output, SHARDS)
    resume = args.resume
    if resume and not os.path.isdir(shards_dir):
        raise UsageError(f"fuzz: --ray --resume: {args.output} holds no shards ({shards_dir})")
    if not resume and os.path.isdir(shards_dir):
        raise UsageError(f"fuzz: -o {args.output} holds a campaign's shards: --resume to go on, or another -o")
    # (-o holds the shards' merged findings, no campaign.json: with --resume, it is not checked as a campaign's)
    s = settings_of(args, directory=not resume)
    shards = args.shards
    if resume:  # (the shards go on as they were split: a count of their own, from their campaign.json)
        kept = shards_kept(args.output)
        if kept is not None and shards is not None and shards != kept:
            raise UsageError(f"fuzz: --ray --resume: --shards {shards}: the campaign in {args.output} has {kept}")
        shards = kept or shards
    try:
        prepare_process(s.options)
    except Exception as e:  # noqa: BLE001 - the user's code: whatever it raises
        raise UsageError(f"fuzz: loading the user's code: {type(e).__name__}: {first_line(e)}") from None
    os.makedirs(args.output, exist_ok=True)
    done, lost = campaign_on_ray(
        args.configs,
        s,
        args.ray,
        shards,
        resume,
        on_shard=lambda i, cases: print(f"fuzz: shard {i}: {cases} cases", file=sys.stderr),
    )
    into = Findings(args.output, args.device)
    merge([_findings_of(d, args) for d in done], into)
    write_reports(into, s.options)
    print(merge_summary(args.output, done, 0, into), end="")
    if lost:
        print(f"  LOST shards {', '.join(map(str, lost))} past Ray's retries: --resume runs them again")
        return 1
    return 1 if len(into) else 0


# -- a finding's life after its campaign (fuzz/history.py) -----------------------------------------------


def _history(args: Any) -> int:
    """--recheck DIR, or --merge DIR... -o OUT: each directory a campaign's
    (its findings read, checked) and the options checked before anything
    runs; a campaign's flags have no meaning here, and are refused."""
    from ..fuzz.history import merge, recheck

    flag = "--recheck" if args.recheck is not None else "--merge"
    other = [name for name, given in _campaign_flags(args) if given]
    if args.recheck is not None and args.merge is not None:
        other.insert(0, "--merge")
    if other:
        raise UsageError(f"fuzz: {flag}: not with {', '.join(other)}")
    if args.timeout is not None and not args.timeout > 0:
        raise UsageError("fuzz: --timeout must be more than 0")
    if args.jobs < 1:
        raise UsageError("fuzz: --jobs must be at least 1")
    sources = [args.recheck] if args.recheck is not None else args.merge
    for directory in sources:
        if not os.path.isfile(os.path.join(directory, FINDINGS)):
            raise UsageError(f"fuzz: {flag} {directory}: no {FINDINGS} there: not a campaign's directory")
    loaded = [_findings_of(d, args) for d in sources]
    checks = sorted({f.oracle for one in loaded for f in one if f.oracle != RUN})
    options = checked_options("fuzz", checks=checks, **{name: getattr(args, name) for name in OPTIONS})
    most, why = max_jobs(options.max_bytes)
    if args.jobs > most:
        raise UsageError(f"fuzz: --jobs {args.jobs}: at most {most} on this machine ({why})")
    try:
        prepare_process(options)
    except Exception as e:  # noqa: BLE001 - the user's code: whatever it raises
        raise UsageError(f"fuzz: loading the user's code: {type(e).__name__}: {first_line(e)}") from None
    if args.recheck is not None:
        results = recheck(loaded[0], options, args.jobs, args.timeout or DEFAULT_TIMEOUT)
        print(recheck_summary(args.recheck, results), end="")
        return 1 if any(r.status != FIXED for r in results) else 0
    out = args.output
    for directory in sources:
        if os.path.realpath(directory) == os.path.realpath(out):
            raise UsageError(f"fuzz: --merge {directory} is -o itself: its findings are merged into -o's anyway")
    if unmakeable_directory(out):
        raise UsageError(f"fuzz: -o {out}: {unmakeable_directory(out)}")
    # (a file of -o that is a source's by another name, a link, would be written over: refused)
    read = [os.path.join(d, name) for d in sources for name in OUTPUTS if os.path.lexists(os.path.join(d, name))]
    check_directory(out, read, resume=False, merging=True)
    os.makedirs(out, exist_ok=True)
    into = _findings_of(out, args)
    before = len(into)
    merge(loaded, into)
    write_reports(into, options)
    print(merge_summary(out, sources, before, into), end="")
    return 1 if len(into) else 0


def _campaign_flags(args: Any) -> List[Tuple[str, bool]]:
    return [
        ("CONFIGS", bool(args.configs)),
        ("--time", args.time is not None),
        ("--budget", args.budget is not None),
        ("--cases", args.cases is not None),
        ("--shard", args.shard is not None),
        ("--resume", args.resume),
        ("--mutate", args.mutate is not None),
        ("--oracle", args.oracle is not None),
        ("--seed", args.seed is not None),
        ("--blind", args.blind),
        ("--ray", args.ray is not None),
        ("--shards", args.shards is not None),
    ]


def _findings_of(directory: str, args: Any) -> Findings:
    findings = Findings(directory, args.device)
    findings.load()  # (an InputError naming the file and line of a damaged one)
    return findings


def recheck_summary(directory: str, results: List[Any]) -> str:
    here = results[0].finding.rechecks[-1] if results else {}
    counts = {status: sum(r.status == status for r in results) for status in RECHECKED}
    head = f"fuzz: recheck of {len(results)} findings of {directory}"
    if here:
        head += f" on torch {here['torch']}, {here['device']}"
    lines = [head + ": " + ", ".join(f"{n} {status}" for status, n in counts.items() if n)]
    for r in results:
        f = r.finding
        lines.append(f"  {r.status}: {f.kind} [{f.oracle}] {f.line}")
        if r.message:
            lines.append(f"      {r.message[:200]}")
        lines.append(f"      first seen {sighting(f.first_seen)}; last seen {sighting(f.last_seen)}")
    return "\n".join(lines) + "\n"


def merge_summary(out: str, sources: List[str], before: int, into: Findings) -> str:
    lines = [
        f"fuzz: {len(into)} findings in {out} ({before} before) from {len(sources)} campaigns: " + ", ".join(sources)
    ]
    for f in sorted(into, key=lambda f: f.first_seen.get("when", "")):
        lines.append(f"  {f.status}: {f.kind} [{f.oracle}] x{f.count}: {f.line}")
        lines.append(f"      first seen {sighting(f.first_seen)}; last seen {sighting(f.last_seen)}")
    return "\n".join(lines) + "\n"


def _stop_on_signals(campaign: Campaign) -> Any:
    """SIGINT and SIGTERM end the campaign after the cases running (its
    state saved); a second one kills those (Campaign.stop). Returns what
    puts the handlers back once the campaign is over; where a signal
    stopped it, the process is ending, and later signals (a second Ctrl-C
    that came after the last case) are ignored instead: put back, Python's
    own would raise KeyboardInterrupt while the summary is printed or the
    process exits."""
    before: List[Tuple[int, Any]] = []

    def handler(signum: int, frame: Any) -> None:
        campaign.stop()

    for sig in (signal.SIGINT, signal.SIGTERM):
        before.append((sig, signal.signal(sig, handler)))

    def restore() -> None:
        for sig, h in before:
            signal.signal(sig, signal.SIG_IGN if campaign.stopping else h)

    return restore


class Progress:
    """On a terminal: the cases run, the findings and the rate, on one line."""

    def __init__(self, stream: Any = None) -> None:
        self.stream = stream or sys.stderr
        self.shown = self.stream.isatty()

    def __call__(self, c: Campaign) -> None:
        if self.shown:
            left = "" if c.s.time_limit is None else f", {max(0.0, c.s.time_limit - c.elapsed - c.now()):.0f} s left"
            self.stream.write(
                f"\rfuzz: {c.cases_run} cases, {len(c.findings)} findings, {c.rate():.1f} cases/s{left}   "
            )
            self.stream.flush()

    def finish(self, c: Campaign) -> None:
        if self.shown:
            self.stream.write("\n")


def summary(c: Campaign) -> str:
    seconds = c.elapsed + c.now()
    lines = [
        f"fuzz: {c.cases_run} cases in {seconds:.0f} s ({c.rate():.1f} cases/s) from {len(c.seeds)} seed lines "
        f"({len(c.active)} mutated); {len(c.findings)} findings in {c.s.out}",
        f"behaviours: {len(c.behaviours)} distinct of {c.behaviours.apis()} APIs ({BEHAVIOURS})"
        + (f"; {len(c.pool)} cases kept as seeds for what they did" if c.s.feedback else "; --blind"),
    ]
    if c.slow:
        lines.append(
            f"{c.slow} cases too slow to judge: a check's step past {CONFIRM_FACTOR} x --timeout after the plain run "
            "finished (slow, not hung: no finding)"
        )
    for f in sorted(c.findings, key=lambda f: f.case):
        how = "" if f.check is None else f" [--check {f.check}]"
        lines.append(f"  {f.kind}{how} x{f.count}: {f.line}")
        lines.append(f"      {f.message[:200]}")
        if f.reproducer:
            lines.append(f"      reproducer: {os.path.join(c.s.out, f.reproducer)}")
        elif f.no_reproducer:
            lines.append(f"      no reproducer: {f.no_reproducer}")
    groups = group([asdict(f) for f in c.findings])
    if groups:
        lines.append(f"by root cause ({os.path.join(c.s.out, CLASSES_FILE)}: a report's text for each):")
        lines += [f"  {g.cause.title}: {len(g.findings)}: {', '.join(g.operators)}" for g in groups]
    return "\n".join(lines) + "\n"
