"""Reproducers: a config line's call written as a standalone Python script
(`reproducer`) that anyone can run with the framework alone, as a report
of a defect to its maintainers needs; the framework writes it
(ReplayFramework.reproducer: frameworks/torch/repro.py says what torch's
scripts do). Under a check, the call is judged here first, and the script
compares as the judge compared. A campaign's findings each get one
(`write_finding`), in the campaign's repro/ folder, named by the API, the
kind and the signature (`name_of`)."""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, replace
from typing import Any, Optional

from ..formats.configs import Config
from ..formats.io import replace_atomically
from ..replay.builder import parse
from ..replay.framework import line_framework, replay_framework
from ..replay.judge.check import Verdict, check, upcast
from ..replay.options import Job, ReplayOptions
from ..replay.results import NotWritable, first_line

__all__ = ["About", "NotWritable", "REPRO_DIR", "name_of", "reproducer", "write_finding", "write_reports", "written"]


@dataclass
class About:
    """What a reproducer shows: a finding's kind (crash, hang, error,
    mismatch; "" for a line with no finding) and its oracle (run, or the
    check whose verdict it is), and what the script's docstring says of
    where it came from."""

    kind: str = ""
    oracle: str = "run"
    message: str = ""
    found: str = ""  # e.g. "api-tracer fuzz, a fuzzer: seed line F:N, mutated by ..."


def name_of(api: str, kind: str, signature: str) -> str:
    """A reproducer's file name: the API's last parts, the kind, and a
    digest of the signature that tells findings of one API apart."""
    import hashlib

    stem = api.removeprefix("torch.ops.").removeprefix("torch.").removesuffix(".default")
    stem = re.sub(r"[^A-Za-z0-9_.]+", "_", stem)[-60:].strip("._") or "call"
    digest = hashlib.sha256(signature.encode("utf-8", "backslashreplace")).hexdigest()[:8]
    return f"{stem}-{re.sub(r'[^A-Za-z0-9_]+', '_', kind or 'call')}-{digest}.py"


def reproducer(config: Config, options: ReplayOptions, about: About) -> str:
    """The script of `config`'s call (its text), showing what `about` says:
    with options.check, the check made and judged as api-tracer judges it
    here (a finding that crashed, hung or raised under a check is not
    judged again: its script shows that). Raises NotWritable, or what
    replay raises for a line it cannot build (Invalid, Refused, Skip,
    BuildError)."""
    api, args, kwargs = parse(config)
    framework = replay_framework(line_framework(api, options))
    if options.backward:
        raise NotWritable("--backward: a reproducer makes the call's forward only")
    job = Job(config, api, args, kwargs, options, framework)
    verdict: Optional[Verdict] = check(job) if options.check and about.kind in ("", "mismatch") else None
    return framework.reproducer(job, verdict, upcast if options.check == "float64" else None, about)


# -- a campaign's findings ------------------------------------------------------------------------

REPRO_DIR = "repro"  # the campaign directory's folder of reproducers


def finding_about(f: Any) -> About:
    """What a reproducer of finding `f` (findings.Finding) says of it."""
    how = "; ".join(f.mutation) or "none: the seed line itself"
    return About(
        f.kind,
        f.oracle,
        f.message,
        f"Found by a fuzzer (api-tracer fuzz): case {f.case} of a campaign, from the seed line at {f.file}, "
        f"mutated by: {how}. Seen {f.count} time{'s' * (f.count != 1)}.",
    )


def write_finding(folder: str, f: Any, options: ReplayOptions, profiles: Any) -> str:
    """Writes finding `f`'s reproducer in `folder` (made where it is not),
    and returns its file's name; raises what `reproducer` raises. The
    script makes the finding's check (its oracle) where it is one."""
    mine = replace(options, check=f.check, ranges={f.line: profiles or {}})
    text = reproducer(Config(f.file, 0, f.line), mine, finding_about(f))
    os.makedirs(folder, exist_ok=True)
    name = name_of(f.api, f.kind, f.signature)
    written(os.path.join(folder, name), text)
    return name


def write_reports(findings: Any, options: ReplayOptions) -> None:
    """Each of `findings`' (findings.Findings) reproducer, a script of
    plain torch, in their directory's REPRO_DIR, or why it has none; the
    findings saved; then their classes (classes.py) in classes.md."""
    import torch

    from .classes import write_classes

    folder = os.path.join(findings.directory, REPRO_DIR)
    for f in findings:
        try:
            name = write_finding(folder, f, options, findings.profiles.get(f.line))
            f.reproducer, f.no_reproducer = os.path.join(REPRO_DIR, name), ""
        except Exception as e:  # noqa: BLE001 - whatever writing it raised: said, the findings kept
            f.reproducer, f.no_reproducer = "", f"{type(e).__name__}: {first_line(e)}"
    findings.save()
    write_classes(findings.directory, [asdict(f) for f in findings], torch.__version__, options.device)


def written(path: str, text: str) -> str:
    """Writes a reproducer's text to `path` (replaced whole), executable."""
    replace_atomically(path, text)
    os.chmod(path, 0o755)
    return path
