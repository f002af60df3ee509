"""Other tools' formats of config lines, as export writes them and replay
reads them (each framework's own: frameworks/torch/operator_inputs.py,
frameworks/paddle/paddleapitest.py): what their writers and readers share.

A writer takes config lines as (line number, text, calls) and returns its
text and the lines it left out (`LeftOut`, by kind: what a config line
holds that the format cannot carry, `NotCarried`); a reader of another
format (a framework's `Framework.reads`: sniff(data) -> bool, read(path,
data) -> [Entry]) gives each config line with the first line that gave it
and its calls.
"""

from __future__ import annotations

from typing import Callable, Dict, List, NamedTuple

# The kinds of lines left out. Writing: what a config line holds that the
# format cannot carry. The placeholders are named as written: "Opaque",
# "Callable", "Module", "Eval", "Filled".
UNREADABLE = "unreadable line"  # not UTF-8, or not a config line
OBJECT = "object"  # a constructor call: a module, an optimizer, a generator, a namedtuple, numpy
TENSOR_DEVICE = "tensor device"  # device="cuda:0": T has no device
TENSOR_GRAD = "tensor requires_grad"
TENSOR_VIEW = "tensor storage offset"  # storage_offset=, storage_size=
TENSOR_LAYOUT = "tensor layout"  # sparse: PyTorch's ST(...) needs is_coalesced, which a config line lacks
QUANTIZED = "quantized tensor"
TENSOR_DTYPE = "tensor dtype"  # a dtype the format has no name for
PLACEHOLDERS = ("Opaque", "Callable", "Module", "Eval", "Filled")


class LeftOut:
    """The lines left out, by kind, in the order the kinds were first met:
    how many, and the first one's line number."""

    def __init__(self) -> None:
        self.kinds: Dict[str, List[int]] = {}  # kind -> [lines, first line]

    def add(self, kind: str, line: int) -> None:
        seen = self.kinds.setdefault(kind, [0, line])
        seen[0] += 1

    @property
    def total(self) -> int:
        return sum(n for n, _ in self.kinds.values())

    def __bool__(self) -> bool:
        return bool(self.kinds)

    def describe(self) -> str:
        """`3 not an operator (first at line 2), 1 Opaque (line 7)`: the
        kinds in the order of their first lines."""
        kinds = sorted(self.kinds.items(), key=lambda item: item[1][1])
        parts = [f"{n} {kind} ({'first at ' if n > 1 else ''}line {first})" for kind, (n, first) in kinds]
        return ", ".join(parts)


class Entry(NamedTuple):
    """A config line read from an operator-inputs file."""

    line: int  # the first input line that gave it
    config: str
    calls: int  # the counts of every input line that gave it, added


class NotCarried(Exception):
    """A value, or a line, the format has no spelling for; `kind` says which."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class Reader(NamedTuple):
    """A reader of another tool's files of calls, as replay, fuzz and export
    read them: `sniff` tells its files by their content, `read` gives their
    config lines, each once (an InputError naming the file and line at the
    first that breaks the format)."""

    name: str
    sniff: Callable[[bytes], bool]
    read: Callable[[str, bytes], List[Entry]]
