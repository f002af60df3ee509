"""The report's charts, drawn here as static SVG: a horizontal bar chart
(APIs by calls) and an icicle (a module tree by time or memory). Hovering
a bar or a cell shows its <title>; nothing needs script."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from .page import esc, tag

WIDTH = 1180  # px: the charts fit a 1280 px window
CHAR = 7.2  # px: a character of the 12 px font, wide ones too, to cut labels to fit


def clip(label: str, width: float) -> str:
    """`label` cut to about `width` px, an ellipsis where it was cut."""
    room = int(width / CHAR)
    if len(label) <= room:
        return label
    return label[: max(room - 1, 0)] + "…" if room > 1 else ""


def bar_chart(
    items: Sequence[Tuple[str, float, str]], row: int = 18, shown: Callable[[float], str] = "{:,}".format
) -> str:
    """One bar per (label, value, tooltip), in the order given, each value
    written beside its bar as `shown` writes it; the labels take what room
    they need, up to 480 px."""
    top = max((v for _, v, _ in items), default=0) or 1
    label_width = int(min(max((len(label) for label, _, _ in items), default=0) * CHAR + 16, 480))
    room = WIDTH - label_width - 90
    bars = []
    for i, (label, value, tooltip) in enumerate(items):
        y = i * row
        w = max(room * value / top, 1.0)
        bars.append(
            tag(
                "g",
                tag("title", esc(tooltip))
                + tag("text", esc(clip(label, label_width - 10)), x=label_width - 8, y=y + 13, text_anchor="end")
                + tag("rect", cls="bar", x=label_width, y=y + 3, width=f"{w:.1f}", height=row - 5)
                + tag("text", esc(shown(value)), x=f"{label_width + w + 6:.1f}", y=y + 13),
            )
        )
    height = len(items) * row + 4
    return _svg("".join(bars), height, "bar chart")


def speedup_chart(items: Sequence[Tuple[str, float, str, str]], row: int = 18) -> str:
    """One bar per (label, speedup, verdict, tooltip), in the order given,
    from the line of 1x on a log scale: to the right a config that got
    faster, to the left one that got slower, each coloured by its verdict
    (report.css: .faster, .slower, .same), its speedup written at its end."""
    label_width = int(min(max((len(label) for label, _, _, _ in items), default=0) * CHAR + 16, 480))
    room = (WIDTH - label_width - 120) / 2
    reach = max((abs(math.log(max(s, 1e-12))) for _, s, _, _ in items), default=0.0) or math.log(2)
    middle = label_width + 60 + room
    bars = []
    for i, (label, speedup, verdict, tooltip) in enumerate(items):
        y = i * row
        length = room * math.log(max(speedup, 1e-12)) / reach
        x, w = (middle, max(length, 1.0)) if length >= 0 else (middle + length, max(-length, 1.0))
        end = f"{x + w + 6:.1f}" if length >= 0 else f"{x - 6:.1f}"
        bars.append(
            tag(
                "g",
                tag("title", esc(tooltip))
                + tag("text", esc(clip(label, label_width - 10)), x=label_width - 8, y=y + 13, text_anchor="end")
                + tag("rect", cls=verdict, x=f"{x:.1f}", y=y + 3, width=f"{w:.1f}", height=row - 5)
                + tag("text", esc(f"{speedup:.2f}x"), x=end, y=y + 13, text_anchor=None if length >= 0 else "end"),
            )
        )
    height = len(items) * row + 4
    axis = tag("line", x1=f"{middle:.1f}", x2=f"{middle:.1f}", y1=0, y2=height, cls="axis")
    return _svg(axis + "".join(bars), height, "speedup chart")


def _svg(body: str, height: int, label: str) -> str:
    """A chart: `body` in an SVG image WIDTH wide, `height` high, named `label`."""
    return tag("svg", body, width=WIDTH, height=height, viewBox=f"0 0 {WIDTH} {height}", role="img", aria_label=label)


@dataclass
class Node:
    """One cell of an icicle: its parent (an index into the list, -1 for a
    root), its size (negative counts as 0), and how dark to shade it (0..1:
    the share of its size that is its own)."""

    label: str
    parent: int
    value: float
    shade: float
    tooltip: str


def _extents(nodes: Sequence[Node]) -> List[float]:
    """Each node's width in value units: its own value, or its children's
    together when they are more (a container that was never called itself,
    such as an nn.ModuleList, is as wide as what ran inside it). Parents
    come before their children in `nodes`."""
    extent = [max(n.value, 0.0) for n in nodes]
    inner = [0.0] * len(nodes)
    for i in range(len(nodes) - 1, -1, -1):
        extent[i] = max(extent[i], inner[i])
        if nodes[i].parent >= 0:
            inner[nodes[i].parent] += extent[i]
    return extent


def _colour(shade: float) -> str:
    """Blue for a cell whose size is its children's, to red for one whose
    size is all its own."""
    s = min(max(shade, 0.0), 1.0)
    return f"hsl({210 - 200 * s:.0f}, 65%, {78 - 14 * s:.0f}%)"


def icicle(nodes: Sequence[Node], row: int = 22) -> str:
    """The tree as rows of cells, a root's cell on top, each child under its
    parent as wide as its share. Empty cells (width under a pixel) are left
    out."""
    extent = _extents(nodes)
    children: Dict[int, List[int]] = {}
    for i, n in enumerate(nodes):
        children.setdefault(n.parent, []).append(i)
    total = sum(extent[i] for i in children.get(-1, [])) or 1.0
    scale = WIDTH / total
    cells, depth_max = [], 0
    place: List[Tuple[int, float, int]] = []
    x = 0.0
    for i in children.get(-1, []):
        place.append((i, x, 0))
        x += extent[i] * scale
    while place:
        i, x, depth = place.pop()
        w = extent[i] * scale
        if w < 1:
            continue
        depth_max = max(depth_max, depth)
        n = nodes[i]
        label = clip(n.label, w - 8) if w > 24 else ""
        cells.append(
            tag(
                "g",
                tag("title", esc(n.tooltip))
                + tag(
                    "rect", cls="node", x=f"{x:.1f}", y=depth * row, width=f"{w:.1f}", height=row, fill=_colour(n.shade)
                )
                + (tag("text", esc(label), x=f"{x + 4:.1f}", y=depth * row + 15) if label else ""),
                cls="node",
            )
        )
        cx = x
        for c in children.get(i, []):
            place.append((c, cx, depth + 1))
            cx += extent[c] * scale
    height = (depth_max + 1) * row if cells else row
    return _svg("".join(cells), height, "icicle chart")


def legend_icicle(what: Optional[str] = None) -> str:
    swatches = "".join(tag("span", "&#9632;", style=f"color:{_colour(s)}") for s in (0, 0.25, 0.5, 0.75, 1))
    return tag(
        "p",
        f"Width: {esc(what or 'size')}. Colour {swatches}: from blue (its children's) to red "
        "(its own, self). Hover a cell for its numbers.",
        cls="legend",
    )
