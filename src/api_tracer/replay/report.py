"""What replay shows and writes of its results: `Progress`, the bar on a
terminal; `summary`, the text at the end; `JsonlReport` (-o) and
`write_junit` (--junit)."""
from __future__ import annotations

import json
import sys
from dataclasses import asdict
from typing import Any, Dict, List

from .configs import Result, Status


class Progress:
    """A progress line on a terminal (stderr), nothing elsewhere."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.counts = total, 0, dict.fromkeys(Status, 0)
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


def summary(results: List[Result], allow_unsafe: bool = False) -> str:
    counts = {s: sum(r.status == s for r in results) for s in Status}
    lines = [f"{len(results)} configs: " + ", ".join(f"{v} {k}" for k, v in counts.items())]
    if allow_unsafe:
        lines.append("  --allow-unsafe: the replay policy was off; any torch callable a line names was called")
    for r in results:
        if r.status in (Status.FAILED, Status.INVALID):
            where = f"{r.file}:{r.line}" + (f":{r.column}" if r.status == Status.INVALID else "")
            lines.append(f"  {r.status.upper()} {where}: {r.error}: {r.message}")
    skipped = [r for r in results if r.status == Status.SKIPPED]
    if skipped:
        reasons: Dict[str, int] = {}
        for r in skipped:
            reasons[r.message] = reasons.get(r.message, 0) + 1
        lines.append("  skipped: " + "; ".join(f"{n} x {why}" for why, n in sorted(reasons.items(), key=lambda x: -x[1])))
    return "\n".join(lines) + "\n"


class JsonlReport:
    """The -o report: one JSON object a line, each written and flushed as its
    result comes (so a crash loses none of the lines before it)."""

    def __init__(self, path: str) -> None:
        self.file = open(path, "w", encoding="utf-8")

    def __call__(self, r: Result) -> None:
        self.file.write(json.dumps(asdict(r)) + "\n")
        self.file.flush()

    def __enter__(self) -> "JsonlReport":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.file.close()


def write_junit(results: List[Result], path: str) -> None:
    from xml.etree import ElementTree as ET

    suite = ET.Element("testsuite", name="api-tracer replay", tests=str(len(results)),
                       failures=str(sum(r.status == Status.FAILED for r in results)),
                       errors=str(sum(r.status == Status.INVALID for r in results)),
                       skipped=str(sum(r.status == Status.SKIPPED for r in results)),
                       time=f"{sum(r.seconds for r in results):.3f}")
    for r in results:
        case = ET.SubElement(suite, "testcase", classname=r.api or "invalid", name=r.config,
                             file=r.file, line=str(r.line), time=f"{r.seconds:.6f}")
        if r.status == Status.FAILED:
            ET.SubElement(case, "failure", type=r.error, message=r.message)
        elif r.status == Status.INVALID:
            ET.SubElement(case, "error", type="Invalid", message=f"{r.file}:{r.line}:{r.column}: {r.message}")
        elif r.status == Status.SKIPPED:
            ET.SubElement(case, "skipped", message=r.message)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
