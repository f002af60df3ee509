"""Reading the file sets the tracer writes (docs/format.md): finding them
under directories, and reading their summary files back."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Tuple

import yaml

from . import _C


class OutputFile(NamedTuple):
    stem: str
    ext: str
    option: Optional[str]  # the option that asks for the file; None: always written
    summary: bool  # a summary file (a snapshot), else a trace

    def name(self, suffix: str = "") -> str:
        return f"{self.stem}{suffix}{self.ext}"


# The files of a set by name ("api_trace.txt"), from the C++ recorder's table.
OUTPUT_FILES: Dict[str, OutputFile] = {f.name(): f for f in map(OutputFile._make, _C.output_files())}
_STATS = OUTPUT_FILES["api_statistics.yaml"]
STATISTICS = re.compile(rf"^{re.escape(_STATS.stem)}(_level_\d+)?{re.escape(_STATS.ext)}$")


@dataclass(frozen=True)
class FileSet:
    directory: str
    suffix: str  # "" (merged) or "_level_N"

    def path(self, name: str) -> str:
        """The set's file `name` (a name of OUTPUT_FILES, "api_trace.txt")."""
        return os.path.join(self.directory, OUTPUT_FILES[name].name(self.suffix))

    def has(self, name: str) -> bool:
        return os.path.isfile(self.path(name))

    @property
    def level(self) -> Optional[int]:
        return int(self.suffix[len("_level_"):]) if self.suffix else None


def find_sets(dirs: List[str], exclude: Optional[str] = None) -> List[FileSet]:
    """Every file set under `dirs` (recursively, sorted), but under `exclude`."""
    sets = []
    skip = os.path.abspath(exclude) if exclude else None
    for top in dirs:
        for root, subdirs, files in os.walk(top):
            subdirs.sort()
            if skip and (os.path.abspath(root) + os.sep).startswith(skip + os.sep):
                continue
            for name in sorted(files):
                m = STATISTICS.match(name)
                if m:
                    sets.append(FileSet(root, m.group(1) or ""))
    return sets


def read_statistics(s: FileSet) -> List[Tuple[str, int]]:
    """(api, count) in the file's order: a YAML mapping of the two totals,
    then each API to "count (pp.pp%)"."""
    path = s.path("api_statistics.yaml")
    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping, as the tracer writes it")
    counts = []
    for api, value in list(data.items())[2:]:
        count = str(value).split(" ")[0]
        if not count.isdigit():
            raise ValueError(f"{path}: {api}: expected 'count (pct%)', not {value!r}")
        counts.append((str(api), int(count)))
    return counts


def read_value_profiles(path: str) -> Dict[str, Dict[str, Any]]:
    """api_value_ranges.yaml as the tracer wrote it (docs/format.md): per
    config line, per argument path, its _C.ValueProfile. A file of ranges
    only (older) gives profiles of a range, many values, no order."""
    with open(path, encoding="utf-8") as f:
        entries = yaml.safe_load(f) or []
    if not isinstance(entries, list):
        raise ValueError(f"{path}: expected a list of config entries")
    out: Dict[str, Dict[str, Any]] = {}
    for entry in entries:
        values, sentinels, in_order = entry.get("values", {}), entry.get("sentinels", {}), entry.get("sorted", [])
        paths = out.setdefault(entry["config"], {})
        for arg, (lo, hi) in entry["ranges"].items():
            p = _C.ValueProfile()
            p.valid, p.min, p.max, p.sorted = True, int(lo), int(hi), arg in in_order
            if arg in values:
                p.distinct = [int(v) for v in values[arg]]
                p.negatives = [v for v in p.distinct if v < 0]
                p.nonneg_min = min((v for v in p.distinct if v >= 0), default=p.nonneg_min)
            else:
                p.many = True
                if arg in sentinels:
                    p.negatives = [int(v) for v in sentinels[arg]["values"]]
                    p.nonneg_min = int(sentinels[arg]["rest"][0])
                else:  # the negatives and where the rest starts were not kept
                    p.many_negatives = p.min < 0
                    p.nonneg_min = p.min if p.min >= 0 else p.nonneg_min
            if arg in paths:
                paths[arg].merge(p)
            else:
                paths[arg] = p
    return out


def trace_limit_note(s: FileSet) -> Optional[Tuple[int, int]]:
    """(limit, calls not written) when trace_limit cut the set's trace: its
    last line says so (docs/format.md)."""
    if not s.has("api_trace.txt"):
        return None
    with open(s.path("api_trace.txt"), "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - 256))
        last = f.read().rstrip(b"\n").rpartition(b"\n")[2]
    return _C.parse_trace_limit_note(last.decode("utf-8", "replace"))


def read_lines(path: str) -> Iterator[str]:
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                yield line


def api_of(line: str) -> str:
    """The API name a config line starts with."""
    return line[:line.index("(")] if "(" in line else line


def group_by_suffix(sets: List[FileSet]) -> Dict[str, List[FileSet]]:
    groups: Dict[str, List[FileSet]] = {}
    for s in sets:
        groups.setdefault(s.suffix, []).append(s)
    return groups
