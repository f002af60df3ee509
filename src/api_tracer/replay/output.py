"""What replay shows and writes of its results: `Progress`, the bar on a
terminal; `summary`, the text at the end; `JsonlReport` (-o) and
`JunitReport` (--junit)."""

from __future__ import annotations

import re
import sys
from collections import Counter
from typing import Any, List, Optional

from ..formats.io import open_output
from ..frameworks import FRAMEWORKS
from .results import Result, Status


def counted(check: Optional[str]) -> List[Status]:
    """The statuses a replay counts: mismatch and vacuous only when it
    checks, unmapped only when it checks against another framework (check:
    the modes, comma-separated)."""
    across = any(mode in FRAMEWORKS for mode in (check or "").split(","))
    return [
        s for s in Status if (check or s not in (Status.MISMATCH, Status.VACUOUS)) and (across or s != Status.UNMAPPED)
    ]


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


def summary(
    results: List[Result],
    allow_unsafe: bool = False,
    check: Optional[str] = None,
    loaded: str = "",
    framework: str = "torch",
) -> str:
    counts = {s: sum(r.status == s for r in results) for s in counted(check)}
    against = f" (checked against {check})" if check else ""
    lines = [f"{len(results)} configs{against}: " + ", ".join(f"{v} {k}" for k, v in counts.items())]
    if loaded:
        lines.append(f"  {loaded}")
    if allow_unsafe:
        lines.append(f"  --allow-unsafe: the replay policy was off; any {framework} callable a line names was called")
    for r in results:
        if r.status in (Status.MISMATCH, Status.FAILED, Status.INVALID):
            where = f"{r.file}:{r.line}" + (f":{r.column}" if r.status == Status.INVALID else "")
            lines.append(f"  {r.status.upper()} {where}: " + (f"{r.error}: " if r.error else "") + r.message)
    for status in (Status.SKIPPED, Status.UNMAPPED, Status.REFUSED):
        reasons = [r.message for r in results if r.status == status]
        if reasons:
            lines.append(f"  {status}: {_tally(reasons)}")
    vacuous = [r.api for r in results if r.status == Status.VACUOUS]
    if vacuous:
        lines.append(f"  vacuous (NaN or infinite on both sides everywhere: nothing was tested): {_tally(vacuous)}")
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
        self.file = open_output(path)  # (a FIFO no process reads: an InputError, not a wait)

    def __call__(self, r: Result) -> None:
        self.file.write(r.to_json() + "\n")
        self.file.flush()

    def __enter__(self) -> "JsonlReport":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.file.close()


class JunitReport:
    """--junit PATH: a JUnit XML file of the results, a test case per
    config. The file is opened, and its XML declaration written and
    flushed, when the report is made, before any config runs: a file that
    cannot take it (a full disk, /dev/full) is said first."""

    DECLARATION = "<?xml version='1.0' encoding='utf-8'?>\n"

    def __init__(self, path: str) -> None:
        self.file = open_output(path)  # (a FIFO no process reads: an InputError, not a wait)
        try:
            self.file.write(self.DECLARATION)
            self.file.flush()
        except OSError:
            self.file.close()
            raise

    def write(self, results: List[Result]) -> None:
        from xml.etree import ElementTree as ET

        suite = ET.Element(
            "testsuite",
            name="api-tracer replay",
            tests=str(len(results)),
            failures=str(sum(r.status in (Status.FAILED, Status.MISMATCH) for r in results)),
            errors=str(sum(r.status == Status.INVALID for r in results)),
            skipped=str(
                sum(r.status in (Status.SKIPPED, Status.VACUOUS, Status.UNMAPPED, Status.REFUSED) for r in results)
            ),
            time=f"{sum(r.seconds for r in results):.3f}",
        )
        for r in results:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=r.api or "invalid",
                name=r.config,
                file=r.file,
                line=str(r.line),
                time=f"{r.seconds:.6f}",
            )
            if r.status == Status.FAILED:
                ET.SubElement(case, "failure", type=r.error, message=r.message)
            elif r.status == Status.MISMATCH:
                ET.SubElement(case, "failure", type="Mismatch", message=f"not equal to {r.check}: {r.message}")
            elif r.status == Status.INVALID:
                ET.SubElement(case, "error", type="Invalid", message=f"{r.file}:{r.line}:{r.column}: {r.message}")
            elif r.status == Status.SKIPPED:
                ET.SubElement(case, "skipped", message=r.message)
            elif r.status in (Status.VACUOUS, Status.UNMAPPED, Status.REFUSED):
                ET.SubElement(case, "skipped", message=f"{r.status}: {r.message}")
        for element in suite.iter():
            element.attrib = {k: xml_safe(v) for k, v in element.attrib.items()}
        with self.file:
            ET.ElementTree(suite).write(self.file, encoding="unicode")
            self.file.write("\n")


# What XML 1.0 cannot hold: control characters but tab, newline and return;
# surrogates (a file name's undecodable bytes, as os.fsdecode keeps them);
# U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(text: str) -> str:
    """`text` with what XML cannot hold written as Python writes it in a
    string (\\x02; an undecodable byte of a file name, kept as a
    surrogate, as the byte: \\xff)."""

    def escape(m: "re.Match[str]") -> str:
        c = ord(m.group())
        if 0xDC80 <= c <= 0xDCFF:
            return f"\\x{c - 0xDC00:02x}"
        return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"

    return _NOT_XML.sub(escape, text)
