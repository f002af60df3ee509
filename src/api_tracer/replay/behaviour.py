"""What a call did, in a few words: its behaviour signature, which fuzz's
steering steers by (fuzz/campaign.py keeps a case as a seed when its
signature is new for its API) and counts. Read from a plain run on a
stock build of the framework, no instrumented library:

- a call that returned: "ok", its outputs' kinds (each tensor's dtype,
  rank, and whether it is empty or holds NaN or an infinity; another
  value's type) and, for torch, the aten operators it called inside, each
  once (_C.NestedOps, a thread-local at::RecordFunction observer: level
  3's view of a call, with no argument read);
- a call that raised: "raised", the exception's type and its message's
  template (numbers written N, so that sizes do not make each message
  new); not where building an argument failed, which is not the API's
  doing.

The operators are a set, not counts: a loop over a batch would otherwise
make every size a new behaviour."""

from __future__ import annotations

import re
from typing import Any, Iterable, Optional, Sequence

from .results import building_failed
from .side import Outcome, tensor_leaves

TEMPLATE_LENGTH = 200  # characters of a message's template kept
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
# a number, not a digit of a name (mat1, float16); "3x4" is two numbers
_NUMBER = re.compile(r"(?<![A-Za-wyz_\d.])-?\d+(\.\d+)?(e[-+]?\d+)?")


def template(message: str) -> str:
    """A message with its numbers written N (an address 0xN), its first
    line, at most TEMPLATE_LENGTH characters."""
    first = _ADDRESS.sub("0xN", message.strip().split("\n", 1)[0])
    return _NUMBER.sub("N", first)[:TEMPLATE_LENGTH]


def behaviour_of(outcome: Optional[Outcome], status: str, error: str, message: str) -> str:
    """A plain run's signature: of its outcome where it returned, of what
    it raised where it failed; "" where it tells nothing of the API (it did
    not run: skipped, refused, invalid; or building an argument failed).
    Reading the outcome never fails the run: where it cannot be read, the
    signature says so."""
    if outcome is not None:
        try:
            return returned(outcome, outcome.operators)
        except Exception as e:  # noqa: BLE001 - an output this cannot read is still the call's
            return f"ok (unread: {type(e).__name__})"
    if status == "failed" and not building_failed(message):
        return raised(error, message)
    return ""


def raised(error: str, message: str) -> str:
    """The signature of a call that raised `error` with `message`."""
    return f"raised {error}: {template(message)}"


def returned(outcome: Outcome, operators: Optional[Sequence[str]]) -> str:
    """The signature of a call that returned `outcome`, with the operators
    it called inside (None: not seen, as for a framework without them)."""
    kinds = ", ".join(_kinds(outcome.output)) or "nothing"
    inside = "" if operators is None else " | " + " ".join(sorted(set(operators)))
    return f"ok {kinds}{inside}"


def _kinds(output: Any) -> Iterable[str]:
    import torch

    tensors = list(tensor_leaves(output, ""))
    if not tensors and output is not None:
        yield type(output).__name__
    for _, t in tensors:
        kind = f"{str(t.dtype).replace('torch.', '')}:{t.dim()}d"
        if t.numel() == 0:
            kind += ":empty"
        elif (t.is_floating_point() or t.is_complex()) and t.layout == torch.strided and t.device.type != "meta":
            if torch.isnan(t).any():
                kind += ":nan"
            if torch.isinf(t).any():
                kind += ":inf"
        yield kind
