"""`api-tracer repro SOURCE`: config lines, or a fuzz campaign's findings,
written as standalone scripts of plain torch (fuzz/repro.py), one a line
or a finding, in -o DIR (default SOURCE/repro for a campaign, ./repro for
a file). A campaign's findings are written with the check each was found
by, and their names and paths kept in its findings.jsonl; a file's lines
with --check's. Exit status 0 where every script was written, 1 where
some line or finding has none (each said, with why), 2 for a bad command
line or input (nothing written)."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from typing import Any, List, Tuple

from ..config import parse_call
from ..errors import PROG, UsageError
from ..flags import add_replay_flags
from ..formats.configs import Config, ranges_beside, read_config_file
from ..formats.summaries import read_value_ranges
from ..fuzz.findings import FINDINGS, Findings
from ..fuzz.repro import REPRO_DIR, About, name_of, reproducer, write_finding, written
from ..replay.results import first_line
from ..replay.run import checked_options, prepare_process
from .replay import check_readable

OPTIONS = ("device", "imports", "libraries", "max_bytes", "check", "rtol", "atol")


def add_parser(sub: Any) -> Any:
    p = sub.add_parser(
        "repro", help="write config lines, or a fuzz campaign's findings, as standalone scripts of plain torch"
    )
    p.add_argument("source", metavar="SOURCE", help="a config file (any file replay reads), or a fuzz campaign's -o")
    p.add_argument(
        "-o", "--output", help=f"the scripts' directory (default SOURCE/{REPRO_DIR} for a campaign, ./{REPRO_DIR})"
    )
    p.add_argument("--line", type=int, metavar="N", help="only the config line on line N of the file")
    p.add_argument("--seed", type=int, default=0, help="random seed of the values, as replay's (default 0)")
    add_replay_flags(p.add_argument, OPTIONS)
    return p


def main(args: Any) -> int:
    campaign = os.path.isdir(args.source)
    if campaign and not os.path.isfile(os.path.join(args.source, FINDINGS)):
        raise UsageError(f"repro: {args.source}: a directory with no {FINDINGS}: not a fuzz campaign's")
    if not campaign:
        check_readable(args.source, "repro")
    if campaign and (args.check or args.line is not None):
        raise UsageError("repro: --check and --line are for a config file: a finding is written with its own check")
    if args.line is not None and args.line < 1:
        raise UsageError("repro: --line must be at least 1")
    options = checked_options("repro", **{name: getattr(args, name) for name in OPTIONS}, seed=args.seed)
    try:
        prepare_process(options)
    except Exception as e:  # noqa: BLE001 - the user's code: whatever it raises
        raise UsageError(f"repro: loading the user's code: {type(e).__name__}: {first_line(e)}") from None
    if campaign:
        done = _campaign(args.source, args.output, options)
    else:
        done = _lines(args.source, args.output or REPRO_DIR, args.line, options)
    missing = [why for _, why in done if why]
    for path, why in done:
        print(f"wrote {path}" if not why else f"{PROG}: repro: {why}", file=sys.stderr if why else sys.stdout)
    print(f"repro: {len(done) - len(missing)} of {len(done)} written")
    return 1 if missing else 0


def _campaign(directory: str, output: Any, options: Any) -> List[Tuple[str, str]]:
    """Each finding's reproducer, in -o or the campaign's repro folder:
    there, its name is kept in findings.jsonl."""
    findings = Findings(directory)
    findings.load()
    folder = output or os.path.join(directory, REPRO_DIR)
    done = []
    for f in findings:
        try:
            name = write_finding(folder, f, options, findings.profiles.get(f.line))
            done.append((os.path.join(folder, name), ""))
            if not output:
                f.reproducer, f.no_reproducer = os.path.join(REPRO_DIR, name), ""
        except Exception as e:  # noqa: BLE001 - whatever writing it raised, said
            done.append(
                ("", f"{directory}: the finding of case {f.case} ({f.api}): {type(e).__name__}: {first_line(e)}")
            )
    if not output:
        findings.save()
    return done


def _lines(path: str, output: str, only: Any, options: Any) -> List[Tuple[str, str]]:
    ranges = read_value_ranges(ranges_beside(path))
    configs: List[Config] = [c for c in read_config_file(path) if only is None or c.line == only]
    if only is not None and not configs:
        raise UsageError(f"repro: {path}:{only}: no config line there")
    os.makedirs(output, exist_ok=True)
    done = []
    for c in configs:
        if c.error:
            done.append(("", f"{c.file}:{c.line}: {c.error}"))
            continue
        try:
            text = reproducer(c, replace(options, ranges={c.text: ranges.get(c.text, {})}), About())
            api = parse_call(c.text)[0]
            target = os.path.join(output, name_of(api, f"check-{options.check}" if options.check else "", c.text))
            done.append((written(target, text), ""))
        except Exception as e:  # noqa: BLE001 - whatever writing it raised, said with its line
            done.append(("", f"{c.file}:{c.line}: {type(e).__name__}: {first_line(e)}"))
    return done
