"""The report's HTML: escaping, the few building blocks the views share
(sortable tables with their filter, switches between panes), and the page
itself, with report.css and report.js inlined.

Every string that comes from the data (API names, config lines, stacks,
module paths) goes through `esc`, in text and in attributes alike. The page
carries a Content Security Policy that lets nothing load (no network, no
file) and lets only its own script run, by the script's hash: were a string
ever left unescaped, the browser would still run none of it.
"""

from __future__ import annotations

import base64
import hashlib
import html
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, Tuple, Union

HERE = Path(__file__).resolve().parent


def esc(value: object) -> str:
    """Text for HTML, in an element or in a quoted attribute."""
    return html.escape(str(value), quote=True)


def tag(name: str, content: str = "", **attrs: object) -> str:
    """<name attrs>content</name>. `content` is markup already: escape text
    with esc() first. Attribute names: `cls` is class, `data_x` is data-x;
    a None or False value leaves the attribute out, True writes it bare."""
    parts = [name]
    for key, value in attrs.items():
        if value is None or value is False:
            continue
        key = "class" if key == "cls" else key.rstrip("_").replace("_", "-")
        parts.append(key if value is True else f'{key}="{esc(value)}"')
    return f"<{' '.join(parts)}>{content}</{name}>"


@dataclass(frozen=True)
class Column:
    title: str
    numeric: bool = False  # sorts by number, largest first on the first click
    wide: bool = False  # text to read: the column takes the width it needs (report.css: td.wide)


@dataclass(frozen=True)
class Cell:
    html: str  # markup (escaped)
    sort: Union[int, float, str, None] = None  # what the column sorts by; None: the cell's text


def text(value: object) -> Cell:
    return Cell(esc(value))


def code(value: str) -> Cell:
    """A cell of code (an API name, a config line), sorted by its text."""
    return Cell(tag("code", esc(value)), value)


def dotted(value: str) -> Cell:
    """A cell of a dotted name (an API) that may wrap after each dot, so
    that a long one leaves the width to the text beside it."""
    return Cell(tag("code", ".<wbr>".join(esc(part) for part in value.split("."))), value)


def number(value: Union[int, float], shown: Optional[str] = None) -> Cell:
    return Cell(esc(value if shown is None else shown), value)


def sortable_table(table_id: str, columns: Sequence[Column], rows: Sequence[Sequence[Cell]], noun: str = "rows") -> str:
    """A table whose headers sort it (report.js) and a box that filters its
    rows by their text, with the count of rows shown."""
    head = "".join(
        tag(
            "th",
            esc(c.title),
            data_type="num" if c.numeric else "str",
            tabindex="0",
            scope="col",
            cls="wide" if c.wide else None,
        )
        for c in columns
    )
    body = "".join(
        tag(
            "tr",
            "".join(
                tag("td", c.html, data_v=c.sort, cls="num" if col.numeric else "wide" if col.wide else None)
                for c, col in zip(row, columns)
            ),
        )
        for row in rows
    )
    box = tag(
        "input",
        type="search",
        cls="filter",
        data_table=table_id,
        placeholder=f"filter {noun}",
        aria_label=f"filter {noun}",
    )
    count = tag("span", esc(f"{len(rows)} of {len(rows)} {noun}"), cls="count", data_count=table_id, data_noun=noun)
    table = tag("table", tag("thead", tag("tr", head)) + tag("tbody", body), id=table_id, cls="sortable")
    return tag("div", box + " " + count, cls="tools") + tag("div", table, cls="scroll")


def switch(group: str, panes: Sequence[Tuple[str, str, str]], cls: str = "tabs") -> str:
    """Buttons that show one pane of `group` at a time, each (pane id, label,
    its markup). Without script every pane shows, one after the other."""
    buttons = "".join(
        tag(
            "button",
            esc(label),
            type="button",
            data_group=group,
            data_pane=pane_id,
            aria_selected="true" if i == 0 else "false",
        )
        for i, (pane_id, label, _) in enumerate(panes)
    )
    bodies = "".join(
        tag("div", markup, id=pane_id, cls="pane shown" if i == 0 else "pane", data_group=group)
        for i, (pane_id, _, markup) in enumerate(panes)
    )
    return tag("nav", buttons, cls=cls, role="tablist") + bodies


def _asset(name: str) -> str:
    return (HERE / name).read_text(encoding="utf-8")


def policy(script: str) -> str:
    """The Content Security Policy: nothing loads; inline style; one script,
    this one, by its hash."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )


def page(title: str, subtitle: str, body: str) -> str:
    """The whole document. `subtitle` and `body` are markup."""
    script = _asset("report.js")
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(policy(script))}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)}</title>\n<style>\n{_asset('report.css')}</style>\n</head>\n<body>\n"
        f"<header>{tag('h1', esc(title))}{tag('p', subtitle, cls='sub')}</header>\n<main>\n{body}\n</main>\n"
        f"<script>{script}</script>\n</body>\n</html>\n"
    )


def note(markup: str) -> str:
    return tag("p", markup, cls="note")
