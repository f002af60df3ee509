"""api-tracer coverage DIR...: which APIs of an API list, and which
operators of those the framework registers, the traces under DIR touch.

The names touched are every file set's api_apis.txt under DIR (each
level's set, and merged sets), read a chunk at a time and checked
(formats/statistics.py: read_api_names): what is held is the distinct names, not the
files. A name api_apis.txt lacks that its set's statistics count (a file
cut between two lines) is said, and counted touched.

They are held against two sets of names, each grouped, per group the
names touched and those never touched:

- the API list: the dialect's (for torch, the public API level 0 records,
  api_list/torch_api_list.yaml) or one given (`--list FILE`), grouped by
  module (FrameworkDialect.api_group: torch, torch.Tensor,
  torch.nn.functional, torch.linalg, ...; a class's constructor and
  methods under the module that holds it, `torch.nn.Linear.forward` under
  torch.nn). Operators' names are not held against it unless it lists
  them: they have the second.
- the operators the framework registers in this process
  (FrameworkDialect.operators: for torch, every operator overload
  `torch._C._dispatch_get_all_op_names()` lists, named as levels 2 and 3
  name them, `torch.ops.aten.add.Tensor`), grouped by namespace (aten,
  prims, quantized, ...).

A name touched that the list (or the registry) does not hold is counted
apart, "outside", not dropped: a private function level 1 saw, an operator
of a library not loaded here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Set

from ..errors import InputError, UsageError, warn
from ..formats.fileset import FileSet, find_sets
from ..formats.io import read_text, shown
from ..formats.statistics import checked_api_name, read_api_names, statistics_of
from ..frameworks import dialect_named, framework_of
from ..frameworks.dialect import FrameworkDialect
from ..util.text_table import format_table


@dataclass
class Group:
    """One module's (or namespace's) names: all of them, and those touched."""

    name: str
    names: List[str]  # sorted
    touched: List[str]  # of `names`, sorted

    @property
    def untouched(self) -> List[str]:
        seen = set(self.touched)
        return [n for n in self.names if n not in seen]

    @property
    def percent(self) -> Optional[float]:
        return 100.0 * len(self.touched) / len(self.names) if self.names else None


@dataclass
class Coverage:
    """Names touched against one set of names (an API list, an operator
    registry), by group, largest first; and the names touched it does not
    hold."""

    what: str  # what holds the names: "API list", "operator registry"
    source: str  # where the names come from, for people: "the torch dialect's API list"
    unit: str  # what a group is: "module", "namespace"
    groups: List[Group]
    outside: List[str] = field(default_factory=list)  # touched, not held: sorted

    @property
    def total(self) -> int:
        return sum(len(g.names) for g in self.groups)

    @property
    def touched(self) -> int:
        return sum(len(g.touched) for g in self.groups)

    @property
    def percent(self) -> Optional[float]:
        return 100.0 * self.touched / self.total if self.total else None


@dataclass
class CoverageReport:
    sets: List[FileSet]
    touched: List[str]  # every distinct name of the sets, sorted
    apis: Coverage
    operators: Coverage


# -- reading --------------------------------------------------------------------------------


def read_list(path: str) -> List[str]:
    """The API names of a list file, one a line (`- name` too: the form of
    the dialect's API lists), blank lines and `#` comments left out, a name
    listed twice counted once; each checked (an API name, no white space
    inside), else an InputError naming path:line."""
    names: List[str] = []
    for lineno, line in enumerate(read_text(path).split("\n"), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("- "):
            line = line[2:].strip()
        if any(c.isspace() for c in line):
            raise InputError(
                path,
                f"{shown(line[:80])}: not an API name (white space inside; a '#' comment goes on a line of its own)",
                lineno,
            )
        names.append(checked_api_name(path, line, lineno))
    if not names:
        raise InputError(path, "no API name in the file (one a line)")
    return sorted(set(names))


def set_names(s: FileSet) -> Set[str]:
    """The names of the set's api_apis.txt, and the names its statistics
    count that the file lacks (said: the file was cut)."""
    names = set(read_api_names(s))
    stats = statistics_of(s)
    missing = [api for api, _ in stats.counts if api not in names]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        warn(
            f"{s.path('api_apis.txt')}: no line of {shown(missing[0])}{more}, which "
            f"{stats.path}:{stats.lines[missing[0]]} counts: the file is cut; counted touched"
        )
        names.update(missing)
    return names


def touched_names(sets: Iterable[FileSet]) -> List[str]:
    """Every distinct name the sets touch, sorted."""
    touched: Set[str] = set()
    for s in sets:
        touched |= set_names(s)
    return sorted(touched)


# -- counting -------------------------------------------------------------------------------


def sets_framework(touched: Iterable[str]) -> str:
    """The framework the names touched belong to (frameworks.framework_of:
    their first part); UsageError where they belong to two."""
    found = sorted({f for f in map(framework_of, touched) if f is not None})
    if len(found) > 1:
        raise UsageError(f"coverage: the sets hold the APIs of {' and '.join(found)}: name one with --dialect")
    return found[0] if found else "torch"


def cover(
    names: Iterable[str], touched: Iterable[str], group_of: Callable[[str], str], what: str, source: str, unit: str
) -> Coverage:
    """`touched` held against `names`, grouped by `group_of`."""
    held = set(names)
    hit = set(touched)
    by_group: Dict[str, List[str]] = {}
    for name in sorted(held):
        by_group.setdefault(group_of(name), []).append(name)
    groups = [Group(g, members, [n for n in members if n in hit]) for g, members in by_group.items()]
    groups.sort(key=lambda g: (-len(g.names), g.name))
    return Coverage(what, source, unit, groups, sorted(hit - held))


def coverage_of(
    sets: List[FileSet],
    dialect: Optional[FrameworkDialect] = None,
    api_list: Optional[List[str]] = None,
    list_source: Optional[str] = None,
) -> CoverageReport:
    """The coverage of the dialect's API list (or `api_list`, read from
    `list_source`) and of its operators by the names the sets touch; the
    dialect, where not given, the framework the names touched belong to
    (torch's where they name none)."""
    touched = touched_names(sets)
    dialect = dialect or dialect_named(sets_framework(touched))
    listed = api_list if api_list is not None else dialect.api_list()
    source = f"the list {list_source}" if list_source else f"the {dialect.name} dialect's API list"
    namespace_of = dialect.operator_namespace  # None: not an operator's name
    held = set(listed)
    apis = cover(
        held,
        [n for n in touched if namespace_of(n) is None or n in held],
        dialect.api_group,
        "API list",
        source,
        "module",
    )
    operators = cover(
        dialect.operators(),
        [n for n in touched if namespace_of(n) is not None],
        lambda n: namespace_of(n) or "",
        "operator registry",
        f"the operators {dialect.name} registers",
        "namespace",
    )
    return CoverageReport(sets, touched, apis, operators)


def coverage_of_dirs(
    dirs: List[str], dialect: Optional[FrameworkDialect] = None, list_path: Optional[str] = None
) -> CoverageReport:
    """coverage_of the file sets under `dirs` (every level's), against the
    list file `list_path` where given."""
    for d in dirs:
        if not os.path.isdir(d):
            raise UsageError(f"coverage: {d} is not a directory")
    api_list = read_list(list_path) if list_path else None
    sets = find_sets(dirs)
    if not sets:
        raise UsageError(f"coverage: no file set (api_statistics*.yaml) under {', '.join(dirs)}")
    return coverage_of(sets, dialect, api_list, list_path)


# -- writing --------------------------------------------------------------------------------


def percent_text(p: Optional[float]) -> str:
    return "-" if p is None else f"{p:.2f}%"


def _row(name: str, touched: int, total: int) -> List[str]:
    return [name, f"{touched:,}", f"{total:,}", percent_text(100.0 * touched / total if total else None)]


def _names(title: str, names: List[str], top: Optional[int]) -> str:
    shown_names = names if not top else names[:top]
    more = f"  ... and {len(names) - len(shown_names):,} more\n" if len(shown_names) < len(names) else ""
    return f"{title}\n" + "".join(f"  {n}\n" for n in shown_names) + more


def coverage_text(c: Coverage, untouched: bool = False, top: Optional[int] = None) -> str:
    """One coverage as a table of its groups (the `top` largest, the rest
    added up in one row), a line of the names touched outside it, and with
    `untouched` the names never touched, per group."""
    head = (
        f"== {c.source}: {c.touched:,} of {c.total:,} touched ({percent_text(c.percent)}); "
        f"{len(c.outside):,} touched outside the {c.what}\n"
    )
    shown_groups = c.groups if not top else c.groups[:top]
    rows = [_row(g.name, len(g.touched), len(g.names)) for g in shown_groups]
    rest = c.groups[len(shown_groups) :]
    if rest:
        rows.append(_row(f"({len(rest)} more)", sum(len(g.touched) for g in rest), sum(len(g.names) for g in rest)))
    rows.append(_row("all", c.touched, c.total))
    out = [head, format_table([c.unit, "touched", "total", "percent"], rows)]
    if c.outside:
        out.append(_names(f"touched outside the {c.what} ({len(c.outside):,}):", c.outside, top))
    if untouched:
        for g in shown_groups:
            if g.untouched:
                out.append(
                    _names(f"never touched in {g.name} ({len(g.untouched):,} of {len(g.names):,}):", g.untouched, top)
                )
    return "".join(out)


def sets_summary(report: CoverageReport) -> str:
    """ "4 file sets (levels 0, 1, 2, 3): 29 distinct names touched"."""
    levels = sorted({s.level for s in report.sets if s.level is not None})
    return (
        f"{len(report.sets):,} file set{'' if len(report.sets) == 1 else 's'}"
        + (f" (levels {', '.join(map(str, levels))})" if levels else "")
        + f": {len(report.touched):,} distinct names touched"
    )


def report_text(report: CoverageReport, untouched: bool = False, top: Optional[int] = None) -> str:
    return (
        sets_summary(report)
        + "\n\n"
        + "\n".join(coverage_text(c, untouched, top) for c in (report.apis, report.operators))
    )


def coverage_json(c: Coverage) -> Dict[str, Any]:
    def rounded(p: Optional[float]) -> Optional[float]:
        return None if p is None else round(p, 2)

    return {
        "source": c.source,
        "total": c.total,
        "touched": c.touched,
        "percent": rounded(c.percent),
        "groups": [
            {
                "name": g.name,
                "total": len(g.names),
                "touched": len(g.touched),
                "percent": rounded(g.percent),
                "touched_names": g.touched,
                "untouched": g.untouched,
            }
            for g in c.groups
        ],
        "outside": c.outside,
    }


def report_json(report: CoverageReport) -> Dict[str, Any]:
    """Everything the text says, and every name: the sets read, the names
    touched, each coverage's groups with their names touched and never."""
    return {
        "sets": [{"directory": s.directory, "level": s.level} for s in report.sets],
        "touched": report.touched,
        "apis": coverage_json(report.apis),
        "operators": coverage_json(report.operators),
    }
