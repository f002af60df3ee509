"""A campaign's findings grouped into root-cause classes a maintainer
recognises (`CLASSES`), for an umbrella report that asks for one fix of a
class, not one check per operator: each finding goes to the first class
whose rule holds of it (`class_of`: its kind, its oracle, its message and
what its minimized line holds: a 0-size tensor, a low-precision dtype,
NaN, a huge number, a negative or out-of-range value). `group` gives the
classes a campaign's findings fall in, each with its operators and a
representative (the finding with the shortest line that has a
reproducer), and `umbrella` the text of a report of one class, ready to
paste: what goes wrong, the operators, the representative's script and
that a fuzzer found them. The campaign writes every class's text to
DIR/classes.md (CLASSES_FILE); `api-tracer report` shows the classes."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from ..config import parse_call
from ..values import FILLED, Call, TensorSpec, walk

CLASSES_FILE = "classes.md"
LOW_PRECISION = (
    "float16",
    "bfloat16",
    "complex32",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
)
INT32_MAX = 2**31 - 1
MAX_QUOTED = 20_000  # the longest representative's script quoted in a report's text


@dataclass(frozen=True)
class RootCause:
    key: str
    title: str
    what: str  # what goes wrong, as an umbrella report says it
    fix: str  # the class-wide fix it asks for


CLASSES = (
    RootCause(
        "nondeterministic",
        "A nondeterministic result",
        "the same call on the same inputs gives results that differ bit for bit between two runs, with "
        "deterministic algorithms on",
        "a deterministic kernel, or the operator marked nondeterministic so that "
        "torch.use_deterministic_algorithms warns of it",
    ),
    RootCause(
        "strided-as-contiguous",
        "Strided input read as contiguous",
        "a transposed, strided or offset input gives another result than a contiguous copy of it: the kernel "
        "reads the storage as if the input were contiguous",
        "a layout check at the kernel's entry (or a .contiguous() where it assumes one)",
    ),
    RootCause(
        "unclean-exception",
        "An unclean exception",
        "the call raises an exception that is not a clean error for the user (an internal assert, a "
        "ZeroDivisionError, a SystemError) where it should raise a RuntimeError or ValueError that says what is wrong",
        "the argument checked before the computation, with a TORCH_CHECK that names it",
    ),
    RootCause(
        "zero-size",
        "A 0-size input unchecked",
        "an input with a dimension of size 0 crashes the process, hangs or computes garbage, where it should give "
        "an empty result or a clean error",
        "a numel() == 0 early return or check at the kernel's entry",
    ),
    RootCause(
        "nan-inf",
        "NaN or infinity lost or made",
        "a NaN or an infinity in the inputs is dropped from the result, or one appears that the float64 "
        "computation does not have",
        "NaN propagation through the kernel's comparisons and reductions (as the float64 path does)",
    ),
    RootCause(
        "integer-overflow",
        "Integer overflow",
        "a size or a value past the range of a 32-bit integer (2**31 - 1) wraps around in the kernel's "
        "index arithmetic",
        "64-bit index arithmetic, or a check that refuses sizes past what the kernel indexes",
    ),
    RootCause(
        "low-precision",
        "Low-precision arithmetic or accumulation",
        "in float16 or bfloat16 the result is further from the float64 one than the dtype's rounding of "
        "correct arithmetic allows: an accumulation or an intermediate kept in the low-precision dtype",
        "accumulation (and intermediates) in float32, as the float32 path does",
    ),
    RootCause(
        "unchecked-argument",
        "An argument's size or index unchecked",
        "an argument's size, an index or a count outside what the kernel assumes crashes the process "
        "(out-of-bounds memory, an abort, an allocation past a size) or never returns, where it should "
        "raise a clean error",
        "the sizes and indices checked against each other at the kernel's entry (TORCH_CHECK), for every "
        "operator of the class at once",
    ),
    RootCause(
        "wrong-result",
        "A wrong result",
        "the result differs from the float64 computation (or the other device's, the compiled one's) past "
        "what correct arithmetic allows",
        "the kernel's arithmetic, against the float64 reference",
    ),
)
BY_KEY = {c.key: c for c in CLASSES}


def _tensors(line: str) -> List[TensorSpec]:
    try:
        _, args, kwargs = parse_call(line)
    except ValueError:
        return []
    return [v for _, v in walk(args, kwargs) if isinstance(v, TensorSpec)]


def _numbers(line: str) -> List[float]:
    """The numbers of a line's scalars and fills (not its tensors' shapes)."""
    try:
        _, args, kwargs = parse_call(line)
    except ValueError:
        return []
    found: List[float] = []
    for _, v in walk(args, kwargs, into=lambda v: not isinstance(v, TensorSpec)):
        if isinstance(v, Call) and v.name == FILLED and len(v.args) > 1 and isinstance(v.args[1], (int, float)):
            found.append(float(v.args[1]))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            found.append(float(v))
    return found


def _sizes(line: str) -> List[int]:
    """The element counts a line's size lists give ([46341, 46341]: 2**31 + ...)."""
    try:
        _, args, kwargs = parse_call(line)
    except ValueError:
        return []
    return [
        math.prod(v)
        for _, v in walk(args, kwargs, into=lambda v: not isinstance(v, TensorSpec))
        if isinstance(v, (list, tuple)) and v and all(type(x) is int and x >= 0 for x in v)
    ]


def class_of(kind: str, oracle: str, message: str, line: str, mutation: Sequence[str] = ()) -> RootCause:
    """The root-cause class of a finding: the first of CLASSES whose rule
    holds of it."""
    tensors = _tensors(line)
    numbers = _numbers(line)
    if oracle == "repeat":
        return BY_KEY["nondeterministic"]
    if oracle == "layout":
        return BY_KEY["strided-as-contiguous"]
    if kind == "error":
        return BY_KEY["unclean-exception"]
    if any(0 in t.shape for t in tensors):
        return BY_KEY["zero-size"]
    non_finite = any(not math.isfinite(x) for x in numbers)
    if kind == "mismatch" and (non_finite or "NaN or an infinity on one side" in message):
        return BY_KEY["nan-inf"]
    huge = (
        any(abs(x) > INT32_MAX for x in numbers if math.isfinite(x))
        or any(math.prod(t.shape) > INT32_MAX for t in tensors)
        or any(n > INT32_MAX for n in _sizes(line))
    )
    if huge:
        return BY_KEY["integer-overflow"]
    if kind == "mismatch" and oracle == "float64" and any(t.dtype in LOW_PRECISION for t in tensors):
        return BY_KEY["low-precision"]
    if kind in ("crash", "hang"):
        return BY_KEY["unchecked-argument"]
    return BY_KEY["wrong-result"]


def operator_of(api: str) -> str:
    """An API as a maintainer names the operator: aten::add.Tensor for
    torch.ops.aten.add.Tensor, the API itself otherwise."""
    if api.startswith("torch.ops."):
        parts = api[len("torch.ops.") :].split(".")
        return f"{parts[0]}::{'.'.join(parts[1:])}".removesuffix(".default")
    return api


@dataclass
class Group:
    """A class's findings in a campaign."""

    cause: RootCause
    findings: List[Dict[str, Any]] = field(default_factory=list)  # findings.jsonl's records

    @property
    def operators(self) -> List[str]:
        return sorted({operator_of(f["api"]) for f in self.findings})

    @property
    def representative(self) -> Dict[str, Any]:
        """The finding with a reproducer and the shortest line (then the first found)."""
        return min(self.findings, key=lambda f: (not f.get("reproducer"), len(f["line"]), f.get("case", 0)))


def group(findings: Sequence[Dict[str, Any]]) -> List[Group]:
    """The classes of `findings` (findings.jsonl's records), in CLASSES'
    order, each with its findings."""
    groups: Dict[str, Group] = {}
    for f in findings:
        cause = class_of(f["kind"], f.get("oracle", "run"), f.get("message", ""), f["line"], f.get("mutation", ()))
        groups.setdefault(cause.key, Group(cause)).findings.append(f)
    return [groups[c.key] for c in CLASSES if c.key in groups]


def umbrella(g: Group, directory: str, torch_version: str, device: str = "cpu") -> str:
    """The text of an umbrella report of one class (Markdown, as GitHub
    takes it): what goes wrong, the fix it asks for, each finding, and the
    representative's script read from the campaign's `directory`."""
    rep = g.representative
    rows = "".join(
        f"| `{operator_of(f['api'])}` | {f['kind']} | {f['message'][:160].replace('|', '/')} | "
        f"{('`' + f['reproducer'] + '`') if f.get('reproducer') else '-'} |\n"
        for f in sorted(g.findings, key=lambda f: (operator_of(f["api"]), f.get("case", 0)))
    )
    script = _script(directory, rep)
    if len(script) > MAX_QUOTED:
        script = ""  # (its values packed: too long to quote; the table names its file)
    return (
        f"## {g.cause.title}: {len(g.operators)} operator{'s' * (len(g.operators) != 1)}\n\n"
        f"On torch {torch_version} ({device}), {g.cause.what}. The operators below do so; a fix for the class "
        f"would be {g.cause.fix}.\n\n"
        f"These were found by a fuzzer (api-tracer fuzz), from the real arguments of traced programs, mutated. "
        f"Each finding has a standalone script of plain torch that shows it.\n\n"
        f"| operator | kind | what happens | reproducer |\n|---|---|---|---|\n{rows}\n"
        + (
            f"The script of `{operator_of(rep['api'])}` ({rep['reproducer']}):\n\n```python\n{script}```\n"
            if script
            else ""
        )
    )


def _script(directory: str, f: Dict[str, Any]) -> str:
    """A finding's reproducer as written ("" where it has none, or it is gone)."""
    if not f.get("reproducer"):
        return ""
    try:
        with open(os.path.join(directory, f["reproducer"]), encoding="utf-8") as file:
            text = file.read()
    except OSError:
        return ""
    return text if text.endswith("\n") else text + "\n"


def write_classes(directory: str, findings: Sequence[Dict[str, Any]], torch_version: str, device: str) -> Optional[str]:
    """DIRECTORY/classes.md: every class's umbrella text (None where there
    is no finding, and no file)."""
    from ..formats.io import replace_atomically

    path = os.path.join(directory, CLASSES_FILE)
    groups = group(findings)
    if not groups:
        if os.path.exists(path):
            os.unlink(path)
        return None
    head = "".join(
        f"- {g.cause.title}: {len(g.findings)} finding{'s' * (len(g.findings) != 1)}, {', '.join(g.operators)}\n"
        for g in groups
    )
    body = "\n".join(umbrella(g, directory, torch_version, device) for g in groups)
    replace_atomically(path, f"# Findings by root cause\n\n{head}\n{body}")
    return path
