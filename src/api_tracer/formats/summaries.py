"""A set's YAML summaries, read back checked: api_stacks.yaml and
api_value_ranges.yaml (docs/format.md). Each is read as YAML nodes, so
that what is wrong is said with its line."""

from __future__ import annotations

import math
import os
from typing import Any, Dict, List, Optional, Tuple

import yaml

from .. import _C
from ..errors import InputError
from .configs import parse_config
from .fileset import FileSet
from .io import read_summary_text, shown

_INT64 = (-(2**63), 2**63 - 1)  # value profiles' bounds

YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Yaml:
    """A YAML document read as nodes, so that what is wrong is said with its
    line; anchors and aliases (which the tracer never writes) are refused,
    so no walk repeats or loops."""

    def __init__(self, path: str, empty: str) -> None:
        self.path = path
        text = read_summary_text(path, empty)
        try:
            self.root = yaml.compose(text, Loader=YAML_LOADER)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            line = mark.line + 1 if mark else None
            if isinstance(e, yaml.reader.ReaderError):  # a character YAML does not allow: where it is
                line = text.count("\n", 0, e.position) + 1
                problem = f"the character {e.character!r} ({e.reason})"
            else:
                problem = getattr(e, "problem", None) or str(e).splitlines()[0]
            raise InputError(path, f"not YAML: {problem}", line) from None
        if self.root is None:
            raise InputError(path, f"holds no YAML value: the tracer writes at least {empty!r} here")
        self.seen: set = set()
        self.constructor = yaml.constructor.SafeConstructor()

    def fail(self, node: yaml.Node, message: str) -> InputError:
        return InputError(self.path, message, node.start_mark.line + 1)

    def _visit(self, node: yaml.Node) -> None:
        if id(node) in self.seen:
            raise self.fail(node, "a YAML alias: not a file the tracer wrote")
        self.seen.add(id(node))

    def mapping(self, node: yaml.Node, what: str) -> List[Tuple[str, yaml.Node]]:
        """(key, value node) of a mapping whose keys are strings, each once."""
        self._visit(node)
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, f"expected {what}, a mapping")
        out, keys = [], set()
        for knode, vnode in node.value:
            key = self.string(knode, f"a key of {what}")
            if key in keys:
                raise self.fail(knode, f"{shown(key)} twice in {what}")
            keys.add(key)
            out.append((key, vnode))
        return out

    def sequence(self, node: yaml.Node, what: str) -> List[yaml.Node]:
        self._visit(node)
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, f"expected {what}, a list")
        return list(node.value)

    def scalar(self, node: yaml.Node, what: str) -> Any:
        self._visit(node)
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, f"expected {what}, a scalar")
        try:
            return self.constructor.construct_object(node)
        except Exception as e:  # noqa: BLE001 - a tag or a value YAML's constructors refuse, each its own way
            raise self.fail(node, f"{what}: {shown(str(getattr(e, 'problem', None) or e))[:100]}") from None

    def string(self, node: yaml.Node, what: str) -> str:
        value = self.scalar(node, what)
        if not isinstance(value, str):
            raise self.fail(node, f"expected {what}, a string, not {value!r}")
        return value

    def integer(self, node: yaml.Node, what: str) -> int:
        value = self.scalar(node, what)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.fail(node, f"expected {what}, an integer, not {value!r}")
        if not _INT64[0] <= value <= _INT64[1]:
            raise self.fail(node, f"{what}: {value} is out of the range of a 64-bit integer")
        return value

    def real(self, node: yaml.Node, what: str) -> float:
        """A float as the writer writes one (Python's repr: 0.5, 1e-05,
        inf, nan), read from the node's text."""
        self._visit(node)
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, f"expected {what}, a number")
        try:
            return float(node.value)
        except ValueError:
            raise self.fail(node, f"expected {what}, a number, not {shown(node.value)[:40]}") from None

    def integers(self, node: yaml.Node, what: str, n: Optional[int] = None) -> List[int]:
        items = self.sequence(node, what)
        if n is not None and len(items) != n:
            raise self.fail(node, f"expected {what}, a list of {n} integers, not of {len(items)}")
        return [self.integer(item, f"an integer of {what}") for item in items]


def read_stacks(s: FileSet) -> Optional[Dict[str, List[List[str]]]]:
    """api_stacks.yaml, checked: per API (a mapping) its `3stacks`, a list
    of stacks, each a list of frames (strings). None without the file."""
    if not s.has("api_stacks.yaml"):
        return None
    doc = _Yaml(s.path("api_stacks.yaml"), "{}\n")
    out: Dict[str, List[List[str]]] = {}
    for api, entry in doc.mapping(doc.root, "APIs and their stacks"):
        fields = dict(doc.mapping(entry, f"the entry of {api}"))
        if set(fields) != {"3stacks"}:
            raise doc.fail(entry, f"the entry of {api}: expected its '3stacks' alone, not {sorted(fields)}")
        out[api] = [
            [
                doc.string(frame, f"a frame of a stack of {api}")
                for frame in doc.sequence(stack, f"a stack of {api} (its frames)")
            ]
            for stack in doc.sequence(fields["3stacks"], f"the stacks of {api}")
        ]
    return out


_PROFILE_FIELDS = {"config", "ranges", "values", "sentinels", "sorted", "sums", "floats", "nonfinite"}
_NONFINITE = {"nan": "nan", "inf": "posinf", "-inf": "neginf"}  # as written -> the ValueProfile field


def read_value_profiles(path: str) -> Dict[str, Dict[str, Any]]:
    """api_value_ranges.yaml as the tracer wrote it (docs/format.md), checked:
    per config line, per argument path, its _C.ValueProfile (of an integer
    argument: `ranges` and the rest; of a floating one: `floats`,
    `nonfinite`). A file of ranges only (older) gives profiles of a range,
    many values, no order."""
    doc = _Yaml(path, "[]\n")
    out: Dict[str, Dict[str, Any]] = {}
    for node in doc.sequence(doc.root, "the list of config entries"):
        entry = dict(doc.mapping(node, "a config entry"))
        unknown = set(entry) - _PROFILE_FIELDS
        if unknown or "config" not in entry or not {"ranges", "floats", "nonfinite"} & set(entry):
            raise doc.fail(
                node,
                "a config entry has 'config', 'ranges' "
                "(with 'values', 'sentinels', 'sorted', 'sums') "
                f"or 'floats' and 'nonfinite'; not {sorted(entry)}",
            )
        line = doc.string(entry["config"], "the config line")
        parse_config(line, path, entry["config"].start_mark.line + 1)
        ranges = {
            arg: (doc.integers(n, f"the range of {arg}", 2), n)
            for arg, n in (doc.mapping(entry["ranges"], "the ranges") if "ranges" in entry else [])
        }
        for arg, ((lo, hi), n) in ranges.items():
            if lo > hi:
                raise doc.fail(n, f"the range of {arg}: {lo} above {hi}")

        def of_ranges(
            what: str, entry: Dict[str, yaml.Node] = entry, ranges: Dict[str, Any] = ranges
        ) -> List[Tuple[str, yaml.Node]]:
            if what not in entry:
                return []
            items = doc.mapping(entry[what], f"the {what}")
            for arg, n in items:
                if arg not in ranges:
                    raise doc.fail(n, f"{what} of {arg}, which has no range")
            return items

        values = {arg: doc.integers(n, f"the values of {arg}") for arg, n in of_ranges("values")}
        sentinels = {}
        for arg, n in of_ranges("sentinels"):
            fields = dict(doc.mapping(n, f"the sentinels of {arg}"))
            if set(fields) != {"values", "rest"}:
                raise doc.fail(n, f"the sentinels of {arg}: expected 'values' and 'rest', not {sorted(fields)}")
            sentinels[arg] = (
                doc.integers(fields["values"], f"the sentinels of {arg}"),
                doc.integers(fields["rest"], f"the rest of {arg}", 2),
            )
        in_order = (
            [doc.string(n, "an argument path") for n in doc.sequence(entry["sorted"], "the sorted")]
            if "sorted" in entry
            else []
        )
        sums = {arg: doc.integer(n, f"the sum of {arg}") for arg, n in of_ranges("sums")}
        for arg, (lo, hi) in ((a, r) for a, (r, _) in ranges.items()):
            outside = [v for v in values.get(arg, []) + sentinels.get(arg, ([], []))[0] if not lo <= v <= hi]
            if outside:
                raise doc.fail(ranges[arg][1], f"{arg}: the value {outside[0]} is outside its range [{lo}, {hi}]")
        paths = out.setdefault(line, {})
        for arg, ((lo, hi), _) in ranges.items():
            p = _C.ValueProfile()
            p.valid, p.min, p.max, p.sorted = True, lo, hi, arg in in_order
            p.same_sum, p.sum = arg in sums, sums.get(arg, 0)
            if arg in values:
                p.distinct = values[arg]
                p.negatives = [v for v in p.distinct if v < 0]
                p.nonneg_min = min((v for v in p.distinct if v >= 0), default=p.nonneg_min)
            else:
                p.many = True
                if arg in sentinels:
                    p.negatives = sentinels[arg][0]
                    p.nonneg_min = sentinels[arg][1][0]
                else:  # the negatives and where the rest starts were not kept
                    p.many_negatives = p.min < 0
                    p.nonneg_min = p.min if p.min >= 0 else p.nonneg_min
            _add(paths, arg, p)
        for arg, p in _float_profiles(doc, entry, ranges).items():
            _add(paths, arg, p)
    return out


def _add(paths: Dict[str, Any], arg: str, p: Any) -> None:
    """p as the profile of `arg`, merged into one already there (a line
    listed twice: merged sets)."""
    if arg in paths:
        paths[arg].merge(p)
    else:
        paths[arg] = p


def _float_profiles(doc: "_Yaml", entry: Dict[str, yaml.Node], ranges: Dict[str, Any]) -> Dict[str, Any]:
    """The floating arguments' profiles of an entry: `floats` (the finite
    values' [min, max]) and `nonfinite` (the others held: nan, inf, -inf)."""
    out: Dict[str, Any] = {}

    def profile(arg: str, n: yaml.Node) -> Any:
        if arg in ranges:
            raise doc.fail(n, f"{arg} has a range of integers and a profile of floats")
        if arg not in out:
            out[arg] = _C.ValueProfile()
            out[arg].valid = out[arg].floating = True
        return out[arg]

    for arg, n in doc.mapping(entry["floats"], "the floats") if "floats" in entry else []:
        bounds = doc.sequence(n, f"the range of {arg}")
        lo, hi = (doc.real(b, f"the range of {arg}") for b in bounds) if len(bounds) == 2 else (None, None)
        if lo is None or not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
            raise doc.fail(n, f"the range of {arg}: expected [min, max] of finite numbers, min at most max")
        p = profile(arg, n)
        p.finite, p.fmin, p.fmax = True, lo, hi
    for arg, n in doc.mapping(entry["nonfinite"], "the non-finite values") if "nonfinite" in entry else []:
        p = profile(arg, n)
        for item in doc.sequence(n, f"the non-finite values of {arg}"):
            doc.scalar(item, f"a non-finite value of {arg}")
            field = _NONFINITE.get(item.value)
            if field is None or getattr(p, field):
                raise doc.fail(
                    item, f"a non-finite value of {arg}: nan, inf or -inf, each once, not {shown(item.value)[:40]}"
                )
            setattr(p, field, True)
    return out


def read_value_ranges(path: Optional[str]) -> Dict[str, Dict[str, Any]]:
    """read_value_profiles of the file at `path`; {} where there is none (no
    path, or no file there)."""
    if not path or not os.path.isfile(path):
        return {}
    return read_value_profiles(path)
