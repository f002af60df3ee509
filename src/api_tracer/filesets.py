"""Reading the file sets the tracer writes (docs/format.md): finding them
under directories, and reading their summary files back."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple

STATISTICS = re.compile(r"^api_statistics(_level_\d+)?\.yaml$")


@dataclass(frozen=True)
class FileSet:
    directory: str
    suffix: str  # "" (merged) or "_level_N"

    def path(self, stem: str, ext: str) -> str:
        return os.path.join(self.directory, f"{stem}{self.suffix}{ext}")

    def has(self, stem: str, ext: str) -> bool:
        return os.path.isfile(self.path(stem, ext))

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
    """(api, count) in the file's order."""
    counts = []
    with open(s.path("api_statistics", ".yaml"), encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if lineno <= 3:
                continue
            api, _, rest = line.rpartition(": ")
            if not api:
                raise ValueError(f"{s.path('api_statistics', '.yaml')}:{lineno}: expected 'api: count (pct%)'")
            counts.append((api, int(rest.split(" ")[0])))
    return counts


def trace_limit_note(s: FileSet) -> Optional[Tuple[int, int]]:
    """(limit, calls not written) when trace_limit cut the set's trace: its
    last line says so (docs/format.md)."""
    from . import _C

    if not s.has("api_trace", ".txt"):
        return None
    with open(s.path("api_trace", ".txt"), "rb") as f:
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
