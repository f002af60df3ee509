"""What replay shows and writes of its results: `Progress`, the bar on a
terminal; `summary`, the text at the end; `JsonlReport` (-o) and
`write_junit` (--junit)."""
from __future__ import annotations

import sys
from collections import Counter
from typing import Any, List, Optional

from .configs import Result, Status


def counted(check: Optional[str]) -> List[Status]:
    """The statuses a replay counts: mismatch only when it checks."""
    return [s for s in Status if check or s != Status.MISMATCH]


class Progress:
    """A progress line on a terminal (stderr), nothing elsewhere."""

    def __init__(self, total: int, check: Optional[str] = None) -> None:
        self.total, self.done, self.counts = total, 0, dict.fromkeys(counted(check), 0)
        self.tty = sys.stderr.isatty()

    def __call__(self, r: Result) -> None:
        self.done += 1
        self.counts[r.status] += 1
        if self.tty:
            width = 30
            filled = int(width * self.done / max(1, self.total))
            counts = " ".join(f"{k} {v}" for k, v in self.counts.items())
            sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {counts}")
            sys.stderr.flush()

    def finish(self) -> None:
        if self.tty:
            sys.stderr.write("\n")


def summary(results: List[Result], allow_unsafe: bool = False, check: Optional[str] = None) -> str:
    counts = {s: sum(r.status == s for r in results) for s in counted(check)}
    against = f" (checked against {check})" if check else ""
    lines = [f"{len(results)} configs{against}: " + ", ".join(f"{v} {k}" for k, v in counts.items())]
    if allow_unsafe:
        lines.append("  --allow-unsafe: the replay policy was off; any torch callable a line names was called")
    for r in results:
        if r.status in (Status.MISMATCH, Status.FAILED, Status.INVALID):
            where = f"{r.file}:{r.line}" + (f":{r.column}" if r.status == Status.INVALID else "")
            lines.append(f"  {r.status.upper()} {where}: " + (f"{r.error}: " if r.error else "") + r.message)
    skipped = [r.message for r in results if r.status == Status.SKIPPED]
    if skipped:
        lines.append(f"  skipped: {_tally(skipped)}")
    random = [r.api for r in results if r.status == Status.OK and r.compared == "shapes"]
    if random:
        lines.append(f"  compared shapes, dtypes and devices only (random): {_tally(random)}")
    return "\n".join(lines) + "\n"


def _tally(items: List[str]) -> str:
    """'2 x a; 1 x b': each distinct item with how often, the most often first."""
    return "; ".join(f"{n} x {item}" for item, n in Counter(items).most_common())


class JsonlReport:
    """The -o report: one JSON object a line, each written and flushed as its
    result comes (so a crash loses none of the lines before it)."""

    def __init__(self, path: str) -> None:
        self.file = open(path, "w", encoding="utf-8")

    def __call__(self, r: Result) -> None:
        self.file.write(r.to_json() + "\n")
        self.file.flush()

    def __enter__(self) -> "JsonlReport":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.file.close()


def write_junit(results: List[Result], path: str) -> None:
    from xml.etree import ElementTree as ET

    suite = ET.Element("testsuite", name="api-tracer replay", tests=str(len(results)),
                       failures=str(sum(r.status in (Status.FAILED, Status.MISMATCH) for r in results)),
                       errors=str(sum(r.status == Status.INVALID for r in results)),
                       skipped=str(sum(r.status == Status.SKIPPED for r in results)),
                       time=f"{sum(r.seconds for r in results):.3f}")
    for r in results:
        case = ET.SubElement(suite, "testcase", classname=r.api or "invalid", name=r.config,
                             file=r.file, line=str(r.line), time=f"{r.seconds:.6f}")
        if r.status == Status.FAILED:
            ET.SubElement(case, "failure", type=r.error, message=r.message)
        elif r.status == Status.MISMATCH:
            ET.SubElement(case, "failure", type="Mismatch", message=f"not equal to {r.check}: {r.message}")
        elif r.status == Status.INVALID:
            ET.SubElement(case, "error", type="Invalid", message=f"{r.file}:{r.line}:{r.column}: {r.message}")
        elif r.status == Status.SKIPPED:
            ET.SubElement(case, "skipped", message=r.message)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
