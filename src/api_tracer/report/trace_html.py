"""The report's pane of a trace view (trace_views.View): the APIs by calls
as a bar chart and a sortable, filterable table, and per API its configs
with their calls, the shapes and dtypes of its tensor arguments, and its
stacks."""

from __future__ import annotations

from typing import List

from .charts import bar_chart
from .page import Cell, Column, esc, note, number, sortable_table, tag, text
from .trace_views import Api, View

TOP_BARS = 30  # APIs in the bar chart; the table has them all


def counted(n: int, noun: str) -> str:
    """ "1 call", "2,048 calls"."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _share(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.2f}%" if whole else "-"


def api_table(view: View, pane: str) -> str:
    columns = [
        Column("API"),
        Column("calls", numeric=True),
        Column("share", numeric=True),
        Column("configs", numeric=True),
        Column("dtypes"),
    ]
    rows = []
    for i, api in enumerate(view.apis):
        link = tag("a", tag("code", esc(api.name)), href=f"#{pane}-api-{i}")
        share = 100.0 * api.calls / view.calls if view.calls else 0.0
        rows.append(
            [
                Cell(link, api.name),
                number(api.calls, f"{api.calls:,}"),
                number(round(share, 4), _share(api.calls, view.calls)),
                number(len(api.configs)),
                text(", ".join(api.dtypes)),
            ]
        )
    return sortable_table(f"{pane}-apis", columns, rows, noun="APIs")


def _configs(api: Api, counted: bool) -> str:
    head = tag("tr", (tag("th", "calls", cls="num") if counted else "") + tag("th", "config"))
    rows = "".join(
        tag("tr", (tag("td", esc(f"{n:,}"), cls="num") if counted else "") + tag("td", tag("code", esc(line))))
        for line, n in api.configs
    )
    return tag("table", tag("thead", head) + tag("tbody", rows))


def _tensors(api: Api, counted: bool) -> str:
    if not api.tensors:
        return ""
    head = tag(
        "tr",
        tag("th", "argument") + tag("th", "shape, dtype") + tag("th", "calls" if counted else "configs", cls="num"),
    )
    rows = []
    for path, seen in api.tensors.items():
        for k, (shape, n) in enumerate(seen.most_common()):
            rows.append(
                tag(
                    "tr",
                    tag("td", tag("code", esc(path)) if k == 0 else "")
                    + tag("td", tag("code", esc(shape)))
                    + tag("td", esc(f"{n:,}"), cls="num"),
                )
            )
    return tag("h4", "Tensor arguments") + tag("table", tag("thead", head) + tag("tbody", "".join(rows)))


def _stacks(api: Api) -> str:
    if not api.stacks:
        return ""
    items = "".join(tag("li", tag("pre", esc("\n".join(frames)))) for frames in api.stacks)
    return tag("h4", "Stacks (outermost frame first)") + tag("ol", items, cls="stacks")


def api_details(view: View, pane: str) -> str:
    out: List[str] = []
    for i, api in enumerate(view.apis):
        summary = tag(
            "summary",
            tag("code", esc(api.name))
            + " "
            + esc(f"— {counted(api.calls, 'call')}, {counted(len(api.configs), 'config')}"),
        )
        body = _configs(api, view.counted) + _tensors(api, view.counted) + _stacks(api)
        out.append(tag("details", summary + body, id=f"{pane}-api-{i}"))
    return "".join(out)


def provenance_section(view: View, pane: str) -> str:
    """Where the configs came from: the sources by calls, the configs by
    their number of sources, and the configs of the most sources."""
    p = view.provenance
    if p is None:
        return ""
    labels = sortable_table(
        f"{pane}-sources",
        [Column("source"), Column("calls", numeric=True)],
        [[text(label), number(calls, f"{calls:,}")] for label, calls in p.labels],
        noun="sources",
    )
    spread = bar_chart(
        [
            (
                f"{name} source{'' if name == '1' else 's'}",
                n,
                f"{counted(n, 'config')} made by {name} source{'' if name == '1' else 's'}",
            )
            for name, n in p.histogram
        ]
    )
    widest = ""
    if len(p.labels) > 1:
        rows = "".join(
            tag(
                "tr",
                tag("td", esc(("at most " if e.at_most else "") + f"{e.sources:,}"), cls="num")
                + tag("td", esc(f"{e.calls:,}"), cls="num")
                + tag("td", esc(", ".join(f"{label} ({n:,})" for label, n in e.top)))
                + tag("td", tag("code", esc(e.config))),
            )
            for e in p.widest
        )
        head = tag(
            "tr",
            tag("th", "sources", cls="num")
            + tag("th", "calls", cls="num")
            + tag("th", "first sources")
            + tag("th", "config"),
        )
        widest = tag("h4", f"The {len(p.widest)} configs of the most sources") + tag(
            "table", tag("thead", head) + tag("tbody", rows)
        )
    return (
        tag("h3", "Where the configs came from")
        + tag(
            "p",
            esc(
                f"{counted(len(p.labels), 'source')}; {p.only_one:,} of {counted(p.configs, 'config')} "
                "from one source only"
            ),
            cls="sub",
        )
        + labels
        + tag("h4", "Configs by their number of sources")
        + spread
        + widest
    )


def view_pane(view: View, pane: str) -> str:
    """A view's markup; `pane` is its element id, the prefix of its ids."""
    counts = f"{counted(len(view.apis), 'API')}, {counted(view.calls, 'call')}, {counted(view.configs, 'config')}" + (
        "" if view.counted else " (configs not counted)"
    )
    top = view.apis[:TOP_BARS]
    bars = bar_chart(
        [(a.name, a.calls, f"{a.name}: {counted(a.calls, 'call')}, {_share(a.calls, view.calls)}") for a in top]
    )
    chart_title = f"Top {len(top)} APIs by calls" if len(view.apis) > len(top) else "APIs by calls"
    return (
        tag("h2", esc(view.title))
        + tag("p", esc(counts), cls="sub")
        + "".join(note(esc(n)) for n in view.notes)
        + tag("h3", esc(chart_title))
        + bars
        + tag("h3", "APIs")
        + api_table(view, pane)
        + provenance_section(view, pane)
        + tag("h3", "Configs, tensor arguments and stacks per API")
        + note("Configs by calls" if view.counted else "Configs as written (api_configs.yaml)")
        + api_details(view, pane)
    )
