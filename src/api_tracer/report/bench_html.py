"""The report's panes of benchmark runs (the results `api-tracer bench -o`
writes): per run, its configs by what they cost a program (time times
calls) and its APIs by share, as charts and a sortable table; per
comparison of a run against a baseline, each config's speedup as a chart
centred on 1x, its verdict coloured, and a table of them all."""

from __future__ import annotations

import math
from typing import List

from ..timing.compare import FALSE_DISCOVERIES, Change, Comparison
from ..timing.output import seconds_text, total_of, untimed_configs, weighted
from ..timing.results import Run
from .charts import bar_chart, speedup_chart
from .page import Cell, Column, code, dotted, esc, note, number, sortable_table, tag, text

CHARTED = 40  # configs a chart shows (the tables hold all)


def _environment(run: Run) -> str:
    env = run.header.environment
    said = ", ".join(f"{k} {env[k]}" for k in ("torch", "device", "device_name", "cpu", "host") if env.get(k))
    s = run.header.settings
    threads = s.get("threads")
    how = f"{s.get('rounds')} rounds of each config, {threads} thread{'' if threads == 1 else 's'}, " + (
        f"the {s.get('clock')} clock" + (", backward too" if s.get("backward") else "")
    )
    return f"{esc(said)}; {esc(how)}."


def _time_cell(seconds: float) -> Cell:
    return number(seconds, seconds_text(seconds)) if not math.isnan(seconds) else text("")


def bench_pane(run: Run, pane: str) -> str:
    w = weighted(run)
    weights = "its time times its calls" if any(s.calls for s in w.configs) else "its time (no calls known)"
    parts = [note(f"{len(w.configs)} configs timed: {_environment(run)} Each config costs {esc(weights)}.")]
    if w.configs:
        parts.append(tag("h3", "Configs by what they cost"))
        parts.append(
            bar_chart(
                [
                    (s.config, total_of(s), f"{s.config}\n{seconds_text(s.seconds)} x {s.calls or 1}")
                    for s in w.configs[:CHARTED]
                ],
                shown=seconds_text,
            )
        )
        parts.append(tag("h3", "APIs by share"))
        parts.append(
            bar_chart(
                [
                    (api, t, f"{api}: {configs} configs, {share * 100:.1f}%")
                    for api, t, share, configs in w.apis[:CHARTED]
                ],
                shown=seconds_text,
            )
        )
    columns = [
        Column("config", wide=True),
        Column("API"),
        Column("time", numeric=True),
        Column("spread", numeric=True),
        Column("backward", numeric=True),
        Column("calls", numeric=True),
        Column("total", numeric=True),
        Column("share", numeric=True),
        Column("GFLOP/s", numeric=True),
        Column("GB/s", numeric=True),
    ]
    rows = []
    for s in w.configs:
        share = total_of(s) / w.total if w.total else 0.0
        rows.append(
            [
                code(s.config),
                dotted(s.api),
                _time_cell(s.seconds),
                number(s.spread, f"{s.spread * 100:.0f}%") if not math.isnan(s.spread) else text(""),
                _time_cell(s.backward_seconds),
                number(s.calls or 1),
                _time_cell(total_of(s)),
                number(share, f"{share * 100:.1f}%"),
                _rate(s.rate(s.flops)),
                _rate(s.rate(s.bytes)),
            ]
        )
    parts.append(tag("h3", "Every config timed"))
    parts.append(sortable_table(f"{pane}-configs", columns, rows, "configs"))
    failed = untimed_configs(run)
    if failed:
        parts.append(tag("h3", "Not timed"))
        parts.append(
            sortable_table(
                f"{pane}-untimed",
                [Column("config", wide=True), Column("status"), Column("why", wide=True)],
                [
                    [code(s.config), text(s.status.value), text(f"{s.error}: {s.message}" if s.error else s.message)]
                    for s in failed
                ],
                "configs",
            )
        )
    return "".join(parts)


def _rate(rate: object) -> Cell:
    return number(rate / 1e9, f"{rate / 1e9:.2f}") if isinstance(rate, float) else text("")  # type: ignore[operator]


def comparison_pane(cmp: Comparison, pane: str) -> str:
    counts = {v: len(cmp.flagged(v)) for v in ("slower", "faster", "same", "untested")}
    said = ", ".join(f"{n} {v}" for v, n in counts.items())
    shift = "" if math.isnan(cmp.shift) else f" The median config takes {cmp.shift:.3f}x its baseline's time."
    parts = [
        note(
            f"{esc(cmp.new.path)} against the baseline {esc(cmp.base.path)}: {len(cmp.changes)} configs timed in both: "
            f"{esc(said)}.{esc(shift)} Slower or faster: a t-test of each config's log ratio, less the median "
            f"config's, against the spread of its rounds and the noise between the two runs (tau {cmp.tau:.3f}, "
            f"from every config's ratio), the false discoveries held to {FALSE_DISCOVERIES:.0%} of the configs "
            "flagged (Benjamini-Hochberg; docs/bench.md)."
        ),
        note(f"Baseline: {_environment(cmp.base)} New: {_environment(cmp.new)}"),
    ]
    shown: List[Change] = sorted(
        cmp.changes, key=lambda c: (c.verdict in ("same", "untested"), -abs(math.log(c.ratio)))
    )[:CHARTED]
    shown.sort(key=lambda c: -c.speedup)
    if shown:
        parts.append(tag("h3", "Speedup of each config (right: faster; left: slower; grey: within the noise)"))
        parts.append(
            speedup_chart(
                [
                    (
                        c.config,
                        c.speedup,
                        c.verdict,
                        f"{c.config}\n{seconds_text(c.base_seconds)} -> {seconds_text(c.new_seconds)}: "
                        f"{c.speedup:.3f}x, {c.verdict}" + (f" (p = {c.p:.2g})" if c.p is not None else ""),
                    )
                    for c in shown
                ]
            )
        )
    columns = [
        Column("config", wide=True),
        Column("API"),
        Column("verdict"),
        Column("speedup", numeric=True),
        Column("baseline", numeric=True),
        Column("new", numeric=True),
        Column("p", numeric=True),
    ]
    rows = [
        [
            code(c.config),
            dotted(c.api),
            text(c.verdict),
            number(c.speedup, f"{c.speedup:.3f}x"),
            _time_cell(c.base_seconds),
            _time_cell(c.new_seconds),
            number(c.p, f"{c.p:.2g}") if c.p is not None else text(""),
        ]
        for c in sorted(cmp.changes, key=lambda c: c.speedup)
    ]
    parts.append(tag("h3", "Every config compared"))
    parts.append(sortable_table(f"{pane}-changes", columns, rows, "configs"))
    return "".join(parts)
