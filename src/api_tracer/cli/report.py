"""`api-tracer report INPUT... -o report.html`: one self-contained HTML file
of traces, profiles, replay reports, fuzz campaigns and diffs (report/)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..errors import InputError, UsageError
from ..formats.fileset import find_sets
from ..formats.io import check_not_an_input
from ..fuzz.findings import FINDINGS
from ..fuzz.state import STATE as CAMPAIGN_STATE  # (a directory holding it, or FINDINGS, is a fuzz campaign's)
from ..report import check_output, files_read, read_campaign, read_file, read_profile, write_report
from ..report.diff_html import is_diff, read_diff
from ..report.fuzz_html import is_findings, read_findings
from ..report.replay_html import is_replay_report, read_replay_report
from ..timing.results import is_results_header, read_summaries


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser("report", help="one self-contained HTML file of traces, profiles and replay reports")
    p.add_argument(
        "inputs",
        nargs="+",
        metavar="INPUT",
        help="a trace directory (its file sets, searched recursively), a profile's JSON "
        "(Profile.export_json), a replay report (replay -o REPORT.jsonl), a fuzz campaign "
        "a diff (diff --json > DIFF.jsonl) or a benchmark run's results (bench -o RESULTS.jsonl: each after the "
        "first compared against the first)",
    )
    p.add_argument("-o", "--output", required=True, help="the HTML file to write")
    return p


def main(args: Any) -> int:
    """Each input is a trace directory, a profile's JSON file, a replay
    report, a fuzz campaign (its directory, or its findings), a diff
    (JSON lines) or a benchmark run's results, told by what it is and its
    first line. -o is checked
    first: that it can be written, and that it is none of the files read."""
    inputs, output = args.inputs, args.output
    check_output(output)
    campaign_dirs = [
        d
        for d in inputs
        if os.path.isdir(d) and any(os.path.isfile(os.path.join(d, name)) for name in (CAMPAIGN_STATE, FINDINGS))
    ]
    trace_dirs = [d for d in inputs if os.path.isdir(d) and d not in campaign_dirs]
    files = [f for f in inputs if not os.path.isdir(f)]
    for item in files:
        if not os.path.isfile(item):
            raise UsageError(f"report: {item} is neither a directory nor a file")
    found = {d: find_sets([d]) for d in trace_dirs}
    check_not_an_input("report", "-o", output, files_read(found, campaign_dirs, files))
    profiles, replays, campaigns, diffs, benches = [], [], [], [], []
    for item in inputs:
        if item in found:
            continue  # a trace directory: its sets, found above, are read as the page is made
        if item in campaign_dirs:
            campaigns.append(read_campaign(item))
            continue
        raw = read_file(item)
        first = raw.split(b"\n", 1)[0]
        if is_results_header(first):
            try:
                benches.append(read_summaries(item))
            except InputError as e:
                raise UsageError(f"report: {e}") from None
        elif is_replay_report(first):
            replays.append((item, read_replay_report(item, raw)))
        elif is_findings(first):
            campaigns.append((item, read_findings(item, raw), {}))
        elif is_diff(first):
            diffs.append((item, read_diff(item, raw)))
        else:
            profiles.append((item, read_profile(item, raw)))
    size = write_report(output, trace_dirs, profiles, replays, campaigns, diffs, found_sets=found, benches=benches)
    print(f"wrote {output} ({size:,} bytes)")
    return 0
