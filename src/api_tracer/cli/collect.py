"""`api-tracer collect REPORT... -o REPORT`: the reports of a keyed replay's
shards (replay --shard I/N, on an array job's machines) or of its runs
resumed, put together into one report, each config once, with the summary
and JUnit a single run gives (replay/keyed.py)."""

from __future__ import annotations

import argparse
import contextlib
import os
from typing import Any

from ..errors import InputError, UsageError
from ..formats.io import check_not_an_input
from ..replay.keyed import RunIdentity, check_collectable, collect_reports, identity_path, write_identity
from ..replay.output import JsonlReport, JunitReport, Tally, summary
from ..replay.results import Result
from .replay import check_readable, failing


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser("collect", help="put the reports of a replay's shards together, each config once")
    p.add_argument("reports", nargs="+", help="replay reports (-o), each with its REPORT.run.json beside it")
    p.add_argument("-o", "--report", help="the report of them all (JSON lines), its REPORT.run.json beside it")
    p.add_argument("--junit", help="a JUnit XML report of them all")
    p.add_argument("--strict", action="store_true", help="exit 1 when the policy refused a config too")
    return p


def main(args: Any) -> int:
    for path in args.reports:
        check_readable(path, "collect")
    for flag, path in (("-o", args.report), ("--junit", args.junit)):
        if path:
            check_not_an_input("collect", flag, path, args.reports + [identity_path(r) for r in args.reports])
    collected = check_collectable(args.reports)  # (before any output is opened: a report refused loses none)
    tally = Tally()
    try:
        report = JsonlReport(args.report) if args.report else None
        junit = JunitReport(args.junit) if args.junit else None
    except (InputError, OSError) as e:
        raise UsageError(f"collect: {getattr(e, 'message', None) or e}") from None

    def on_result(r: Result) -> None:
        tally(r)
        if report:
            report(r)
        if junit:
            junit.add(r)

    with report or contextlib.nullcontext():
        collect_reports(args.reports, collected, on_result)
    if junit:
        junit.write()
    first = collected.identity
    whole = not collected.missing and not collected.incomplete
    if report and os.path.isfile(args.report):
        if whole:  # the whole run: one shard of one, complete (replay --resume -o can take it on)
            write_identity(args.report, RunIdentity(first.options, first.ranges, "0/1"), complete=True)
        elif os.path.lexists(identity_path(args.report)):  # (not a run's to go on with: no identity)
            os.remove(identity_path(args.report))
    check = first.options.get("check")
    print(summary(tally, bool(first.options.get("allow_unsafe")), check, report=args.report), end="")
    print(f"  collected from {len(args.reports)} reports (shards {', '.join(collected.shards)})", end="")
    print(f"; {collected.repeats} results of a config held twice, kept once" if collected.repeats else "")
    if collected.missing:
        count = first.shard.split("/")[1]
        print(f"  MISSING shards {', '.join(f'{i}/{count}' for i in collected.missing)}: not the whole run")
    if collected.incomplete:
        print(
            f"  INCOMPLETE: {', '.join(collected.incomplete)}: their runs stopped before their end "
            "(killed, or configs lost with their nodes): replay --resume each"
        )
    if not whole:
        return 1
    return 1 if tally.failed(failing(args.strict)) else 0
