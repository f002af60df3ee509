"""What replay shows and writes of its results: `Progress`, the bar on a
terminal; `summary`, the text at the end; `JsonlReport` (-o) and
`JunitReport` (--junit)."""

from __future__ import annotations

import re
import sys
import tempfile
import time
from collections import Counter
from typing import Any, Callable, Dict, List, Optional

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
    """A progress line on a terminal (stderr), nothing elsewhere: the
    configs done of `total` (None: not known, a streamed corpus), their
    rate, the count of each status, and `where`'s text (a cluster's nodes)."""

    def __init__(self, total: Optional[int], check: Optional[str] = None, where: Callable[[], str] = str) -> None:
        self.total, self.done, self.counts = total, 0, dict.fromkeys(counted(check), 0)
        self.tty, self.where, self.start, self.shown = sys.stderr.isatty(), where, time.monotonic(), 0.0

    def __call__(self, r: Result) -> None:
        self.done += 1
        self.counts[r.status] += 1
        now = time.monotonic()
        if self.tty and (now - self.shown >= 0.1 or self.done == self.total):
            self.shown = now
            counts = " ".join(f"{k} {v}" for k, v in self.counts.items())
            rate = f" {self.done / max(now - self.start, 1e-9):.1f}/s"
            where = self.where()
            where = f" [{where}]" if where else ""
            if self.total is None:
                sys.stderr.write(f"\r{self.done} done{rate} {counts}{where}")
            else:
                width = 30
                filled = int(width * self.done / max(1, self.total))
                bar = f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total}"
                sys.stderr.write(f"\r{bar}{rate} {counts}{where}")
            sys.stderr.flush()

    def finish(self) -> None:
        if self.tty:
            sys.stderr.write("\n")


# How many failed, mismatched and invalid configs a summary lists, each with its line (a report holds all).
LISTED = 200


class Tally:
    """What a summary says of a run, counted as its results come, in
    memory that does not grow with the count of configs that pass: each
    status's count, the first LISTED failures, the reasons of the others."""

    def __init__(self) -> None:
        self.counts: Counter = Counter()
        self.failures: List[Result] = []
        self.unlisted = 0
        self.reasons: Dict[Status, Counter] = {s: Counter() for s in (Status.SKIPPED, Status.UNMAPPED, Status.REFUSED)}
        self.vacuous: Counter = Counter()
        self.random: Counter = Counter()

    def __call__(self, r: Result) -> None:
        self.counts[r.status] += 1
        if r.status in (Status.MISMATCH, Status.FAILED, Status.INVALID):
            if len(self.failures) < LISTED:
                self.failures.append(r)
            else:
                self.unlisted += 1
        elif r.status in self.reasons:
            self.reasons[r.status][r.message] += 1
        elif r.status == Status.VACUOUS:
            self.vacuous[r.api] += 1
        elif r.status == Status.OK and r.compared == "shapes":
            self.random[r.api] += 1

    def total(self) -> int:
        return sum(self.counts.values())

    def failed(self, statuses: tuple) -> bool:
        return any(self.counts[s] for s in statuses)


def summary(
    tally: Tally,
    allow_unsafe: bool = False,
    check: Optional[str] = None,
    loaded: str = "",
    framework: str = "torch",
    report: Optional[str] = None,
) -> str:
    counts = {s: tally.counts[s] for s in counted(check)}
    against = f" (checked against {check})" if check else ""
    lines = [f"{tally.total()} configs{against}: " + ", ".join(f"{v} {k}" for k, v in counts.items())]
    if loaded:
        lines.append(f"  {loaded}")
    if allow_unsafe:
        lines.append(f"  --allow-unsafe: the replay policy was off; any {framework} callable a line names was called")
    for r in sorted(tally.failures, key=lambda r: (r.file, r.line)):
        where = f"{r.file}:{r.line}" + (f":{r.column}" if r.status == Status.INVALID else "")
        lines.append(f"  {r.status.upper()} {where}: " + (f"{r.error}: " if r.error else "") + r.message)
    if tally.unlisted:
        held = f"-o {report} holds them" if report else "-o REPORT would hold them"
        lines.append(f"  ... and {tally.unlisted} more failed, mismatched or invalid ({held})")
    for status, reasons in tally.reasons.items():
        if reasons:
            lines.append(f"  {status}: {_tally(reasons)}")
    if tally.vacuous:
        lines.append(
            f"  vacuous (NaN or infinite on both sides everywhere: nothing was tested): {_tally(tally.vacuous)}"
        )
    if tally.random:
        lines.append(f"  compared shapes, dtypes and devices only (random): {_tally(tally.random)}")
    return "\n".join(lines) + "\n"


def _tally(items: Counter) -> str:
    """'2 x a; 1 x b': each distinct item with how often, the most often first."""
    return "; ".join(f"{n} x {item}" for item, n in items.most_common())


class JsonlReport:
    """The -o report: one JSON object a line, each written and flushed as its
    result comes (so a crash loses none of the lines before it)."""

    def __init__(self, path: str, append: bool = False) -> None:
        self.file = open_output(path, append)  # (a FIFO no process reads: an InputError, not a wait)

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
    cannot take it (a full disk, /dev/full) is said first. Each result's
    test case is spooled to a temporary file as it comes (`add`), and
    `write` puts the suite, with its counts, around them: memory that does
    not grow with the count of configs."""

    DECLARATION = "<?xml version='1.0' encoding='utf-8'?>\n"

    def __init__(self, path: str) -> None:
        self.file = open_output(path)  # (a FIFO no process reads: an InputError, not a wait)
        try:
            self.file.write(self.DECLARATION)
            self.file.flush()
        except OSError:
            self.file.close()
            raise
        self.spool = tempfile.TemporaryFile("w+", encoding="utf-8")
        self.counts: Counter = Counter()
        self.seconds = 0.0

    def add(self, r: Result) -> None:
        from xml.etree import ElementTree as ET

        self.counts[r.status] += 1
        self.seconds += r.seconds
        case = ET.Element(
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
        for element in case.iter():
            element.attrib = {k: xml_safe(v) for k, v in element.attrib.items()}
        self.spool.write(ET.tostring(case, encoding="unicode") + "\n")

    def write(self) -> None:
        """The suite, its counts and every test case added, written and closed."""
        from xml.etree import ElementTree as ET

        c = self.counts
        suite = ET.Element(
            "testsuite",
            name="api-tracer replay",
            tests=str(sum(c.values())),
            failures=str(c[Status.FAILED] + c[Status.MISMATCH]),
            errors=str(c[Status.INVALID]),
            skipped=str(sum(c[s] for s in (Status.SKIPPED, Status.VACUOUS, Status.UNMAPPED, Status.REFUSED))),
            time=f"{self.seconds:.3f}",
        )
        empty = ET.tostring(suite, encoding="unicode")  # <testsuite ... />: opened below, closed at the end
        with self.file, self.spool:
            self.file.write(empty[: -len(" />")] + ">")
            self.spool.seek(0)
            for block in iter(lambda: self.spool.read(1 << 20), ""):
                self.file.write(block)
            self.file.write("</testsuite>\n")


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
