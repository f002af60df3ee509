"""What api-tracer bench shows of its runs: a run's configs by the time they
cost a program (each config's time times its calls: `weighted`), the share
of each API, and a comparison of two runs; as text tables, or as JSON
lines (`summary_json`, `change_json`) for other tools."""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from ..formats.sources import calls_of, config_calls
from ..replay.results import Status
from ..util.text_table import format_table
from ..util.units import fmt_time
from .compare import BETWEEN_RUNS_FROM, Comparison
from .results import Run, Summary

CONFIG_SHOWN = 72  # characters of a config line a table shows


@dataclass
class Weighted:
    """A run's timed configs by what they cost a program: each config's
    total (its time times its calls; a config of unknown calls counts
    once), most first, and per API its total and share."""

    configs: List[Summary]
    total: float
    apis: List[tuple]  # (api, total seconds, share, configs)


def weigh(run: Run, sources: Optional[str] = None) -> None:
    """Each config's calls: those of the api_config_sources.yaml `sources`
    names, or of the one beside the run's configs file, else the lines of
    that file that are it (a trace's calls), else unknown (None). An
    InputError where a sources file cannot be read."""
    calls: Optional[Dict[str, int]] = None
    configs = run.header.settings.get("configs")
    if sources:
        calls = calls_of(sources)
    elif isinstance(configs, str) and os.path.isfile(configs):
        calls = config_calls(configs)
    for s in run.configs.values():
        s.calls = (calls or {}).get(s.config) or s.lines or None


def untimed_configs(run: Run) -> List[Summary]:
    """The configs a run did not time to the end: failed in a round, or never timed."""
    return [s for s in run.configs.values() if s.status != Status.OK or not s.rounds]


def weighted(run: Run) -> Weighted:
    timed = [s for s in run.configs.values() if s.status == Status.OK and s.rounds]
    timed.sort(key=lambda s: -total_of(s))
    total = sum(total_of(s) for s in timed)
    per_api: Dict[str, List[float]] = defaultdict(lambda: [0.0, 0])
    for s in timed:
        per_api[s.api][0] += total_of(s)
        per_api[s.api][1] += 1
    apis = sorted(
        ((api, t, t / total if total else 0.0, int(n)) for api, (t, n) in per_api.items()), key=lambda x: -x[1]
    )
    return Weighted(timed, total, apis)


def total_of(s: Summary) -> float:
    """What a config costs its program: its time (forward and backward) times its calls."""
    each = s.seconds + (s.backward_seconds if s.backward_rounds else 0.0)
    return each * (s.calls or 1)


def seconds_text(seconds: Optional[float]) -> str:
    return "" if seconds is None or math.isnan(seconds) else fmt_time(int(round(seconds * 1e9)))


def rate_text(rate: Optional[float], unit: str) -> str:
    """A rate, FLOP/s or B/s, in G units."""
    return "" if rate is None else f"{rate / 1e9:.2f} G{unit}/s"


def shown_config(text: str, width: int = CONFIG_SHOWN) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def run_table(run: Run, top: int) -> str:
    """The run's top configs by total, then the APIs by share, then what
    was not timed."""
    w = weighted(run)
    known = any(s.calls for s in w.configs)
    rows = []
    for rank, s in enumerate(w.configs[:top], 1):
        spread = "" if math.isnan(s.spread) else f"{s.spread * 100:.0f}%"
        rows.append(
            [
                f"{rank:>3}  {shown_config(s.config)}",
                seconds_text(s.seconds),
                spread,
                seconds_text(s.backward_seconds) if s.backward_rounds else "",
                str(s.calls) if s.calls else "",
                seconds_text(total_of(s)),
                f"{total_of(s) / w.total * 100:.1f}%" if w.total else "",
                rate_text(s.rate(s.flops), "FLOP"),
                rate_text(s.rate(s.bytes), "B"),
            ]
        )
    headers = ["config (by total)", "time", "spread", "backward", "calls", "total", "share", "compute", "memory"]
    keep = [i for i, h in enumerate(headers) if i == 0 or any(r[i] for r in rows)]
    text = format_table([headers[i] for i in keep], [[r[i] for i in keep] for r in rows]) if rows else ""
    weights = "each config's time times its calls" if known else "each config once (no calls known)"
    head = f"{len(w.configs)} configs timed in {run.path}; total {seconds_text(w.total)} ({weights})\n"
    apis = format_table(
        ["API", "total", "share", "configs"],
        [[api, seconds_text(t), f"{share * 100:.1f}%", str(n)] for api, t, share, n in w.apis[:top]],
    )
    return head + text + "\n" + apis + untimed(run)


def untimed(run: Run) -> str:
    """The configs a run could not time, counted by status, the failures listed."""
    lines = []
    counts: Dict[str, int] = defaultdict(int)
    for s in run.configs.values():
        if s.status != Status.OK:
            counts[s.status.value] += 1
            if s.status in (Status.FAILED, Status.INVALID) and len(lines) < 20:
                lines.append(f"  {s.status.upper()} {s.file}:{s.line}: {s.error + ': ' if s.error else ''}{s.message}")
    if not counts:
        return ""
    said = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    return f"\nnot timed: {said}\n" + "".join(f"{line}\n" for line in lines)


def comparison_table(cmp: Comparison, top: int) -> str:
    """The configs found slower and faster, most changed first; then the
    counts, and the run as a whole."""
    said = []
    for b, n in (
        (cmp.base.header.environment, cmp.new.header.environment),
        (cmp.base.header.settings, cmp.new.header.settings),
    ):
        said += [f"{k} {b.get(k)} -> {n.get(k)}" for k in sorted(set(b) | set(n)) if b.get(k) != n.get(k)]
    where = "; ".join(said) or "the same environment and settings"
    out = [f"{cmp.new.path} against {cmp.base.path} ({where})"]
    for verdict in ("slower", "faster"):
        flagged = sorted(cmp.flagged(verdict), key=lambda c: -abs(math.log(c.ratio)))
        if not flagged:
            continue
        rows = [
            [
                shown_config(c.config),
                seconds_text(c.base_seconds),
                seconds_text(c.new_seconds),
                f"{c.speedup:.2f}x",
                f"{c.p:.1e}" if c.p is not None else "",
            ]
            for c in flagged[:top]
        ]
        out.append(f"\n{len(flagged)} {verdict}:\n" + format_table(["config", "base", "new", "speedup", "p"], rows))
    counts = {v: len(cmp.flagged(v)) for v in ("slower", "faster", "same", "untested")}
    said = ", ".join(f"{n} {v}" for v, n in counts.items() if n or v in ("slower", "faster"))
    shift = "" if math.isnan(cmp.shift) else f"; the median config takes {cmp.shift:.3f}x its base's time"
    out.append(f"\n{len(cmp.changes)} configs compared: {said}{shift}")
    tested = len(cmp.changes) - counts["untested"]
    if 0 < tested < BETWEEN_RUNS_FROM:
        out.append(
            f"  the noise between two runs is unknown ({tested} configs tested, {BETWEEN_RUNS_FROM} needed to "
            "estimate it): tested on their rounds alone, which overstates how sure the test is"
        )
    for side, summaries in cmp.unpaired.items():
        if summaries:
            out.append(f"  {len(summaries)} configs timed only in the {side} run")
    return "\n".join(out) + "\n"


def summary_json(s: Summary) -> str:
    fields: Dict[str, Any] = {
        "config": s.config,
        "api": s.api,
        "status": s.status.value,
        "seconds": None if math.isnan(s.seconds) else s.seconds,
        "rounds": s.rounds,
        "spread": None if math.isnan(s.spread) else s.spread,
        "calls": s.calls,
        "total": total_of(s) if s.rounds else None,
        "flops": s.flops,
        "bytes": s.bytes,
        "flop_rate": s.rate(s.flops),
        "byte_rate": s.rate(s.bytes),
    }
    if s.backward_rounds:
        fields.update(backward_seconds=s.backward_seconds, backward_rounds=s.backward_rounds)
    if s.status != Status.OK:
        fields.update(error=s.error, message=s.message)
    return json.dumps(fields)


def change_json(c: Any) -> str:
    return json.dumps(
        {
            "config": c.config,
            "api": c.api,
            "verdict": c.verdict,
            "base_seconds": c.base_seconds,
            "new_seconds": c.new_seconds,
            "speedup": c.speedup,
            "p": c.p,
        }
    )
