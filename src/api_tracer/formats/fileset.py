"""File sets (docs/format.md): the files a set has, by the C++ recorder's
table of them, and the sets found under directories, each named by its
statistics file (a set without one is not read, and said)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Dict, List, NamedTuple, Optional

from .. import _C
from ..errors import InputError, warn
from .io import is_regular


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
STATISTICS = re.compile(rf"^{re.escape(_STATS.stem)}(_level_\d+)?{re.escape(_STATS.ext)}$", re.ASCII)

COUNT_MAX = 2**64 - 1  # the largest count the writers hold (uint64)


# -- finding sets ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FileSet:
    directory: str
    suffix: str  # "" (merged) or "_level_N"

    def path(self, name: str) -> str:
        """The set's file `name` (a name of OUTPUT_FILES, "api_trace.txt")."""
        return os.path.join(self.directory, OUTPUT_FILES[name].name(self.suffix))

    def has(self, name: str) -> bool:
        """Whether the set has its file `name`: a regular file. Anything
        else of that name is an InputError (see is_regular)."""
        return is_regular(self.path(name))

    @property
    def level(self) -> Optional[int]:
        return int(self.suffix[len("_level_") :]) if self.suffix else None


def _walk_error(e: OSError) -> None:
    raise InputError(e.filename or "?", f"cannot list: {e.strerror or e}")


def find_sets(dirs: List[str], exclude: Optional[str] = None) -> List[FileSet]:
    """Every file set under `dirs` (recursively, sorted), but under `exclude`;
    a link to a directory is followed, and a directory reached twice is read
    once, said. A directory that cannot be listed, or a directory named as
    a statistics file, is an InputError: its sets would be left out without
    a word."""
    sets = []
    skip = os.path.realpath(exclude) if exclude else None  # (by any name it has)
    seen: Dict[str, str] = {}  # real path -> the path it was read by
    for top in dirs:
        seen.setdefault(os.path.realpath(top), top)
        for root, subdirs, files in os.walk(top, onerror=_walk_error, followlinks=True):
            subdirs.sort()
            for name in list(subdirs):  # a link to a directory is followed, once: no loop, no set twice
                real = os.path.realpath(os.path.join(root, name))
                if real in seen:
                    warn(f"{os.path.join(root, name)}: the directory {seen[real]} again (a link): read once")
                    subdirs.remove(name)
                else:
                    seen[real] = os.path.join(root, name)
            if skip and (os.path.realpath(root) + os.sep).startswith(skip + os.sep):
                continue
            for name in subdirs:
                if STATISTICS.match(name):
                    raise InputError(
                        os.path.join(root, name), "a directory, not a regular file: only regular files are read"
                    )
            found = []
            for name in sorted(files):
                m = STATISTICS.match(name)
                if m:
                    found.append(m.group(1) or "")
            sets += [FileSet(root, suffix) for suffix in found]
            _say_orphans(root, files, set(found))
    return sets


# Any file of a set, by its level suffix (group 1).
_SET_FILE = re.compile(
    "^(?:"
    + "|".join(rf"{re.escape(f.stem)}(_level_\d+)?{re.escape(f.ext)}" for f in OUTPUT_FILES.values() if f is not _STATS)
    + ")$"
)


def _say_orphans(root: str, files: List[str], suffixes: set) -> None:
    """A warning for each set of files in `root` without its statistics file
    (which is what makes a set): it is not read."""
    orphans: Dict[str, List[str]] = {}
    for name in sorted(files):
        m = _SET_FILE.match(name)
        if m:
            suffix = next((g for g in m.groups() if g), "")
            if suffix not in suffixes:
                orphans.setdefault(suffix, []).append(name)
    for suffix, names in orphans.items():
        more = f" and {len(names) - 1} more" if len(names) > 1 else ""
        warn(
            f"{os.path.join(root, _STATS.name(suffix))}: missing beside {names[0]}{more}: without it the files "
            "are not a file set, and are not read"
        )


def group_by_suffix(sets: List[FileSet]) -> Dict[str, List[FileSet]]:
    groups: Dict[str, List[FileSet]] = {}
    for s in sets:
        groups.setdefault(s.suffix, []).append(s)
    return groups


def set_file_beside(config_file: str, name: str) -> Optional[str]:
    """The file `name` (a name of the set's table: "api_value_ranges.yaml")
    of the set `config_file` belongs to, if it is there: in its directory,
    with its _level_N suffix (none: the merged set's)."""
    directory, base = os.path.split(config_file)
    stem = os.path.splitext(base)[0]
    fileset = FileSet(directory, stem[stem.index("_level_") :] if "_level_" in stem else "")
    return fileset.path(name) if fileset.has(name) else None
