"""--check FRAMEWORK: a config's call judged against the same call made in
another framework (`--check torch` for Paddle's lines, `--check paddle`
for torch's), through the mapping between their APIs
(frameworks/torch_paddle.py; the job's framework's `counterpart`).

The other framework's call on float64 copies of the inputs is the
reference, and the config's own call (in its dtypes) is held to it within
the error model's bound of each element, as --check float64 holds it to
its own framework's (error_model.py; both sides build the same values:
the counterpart keeps the line's layout). Where they differ, the config's
own call is made on float64 copies too, and set against the other's, to
tell which side the difference is on:

- its own float64 agrees with the other's: its result in its dtype is
  wrong ("Paddle's float32 result is wrong: its own float64 agrees with
  torch's");
- it does not: the two frameworks' calls do not compute the same (the
  mapping pairs APIs of different meaning, or one is wrong in float64
  too), and float64 cannot tell which ("the float64 results of Paddle and
  torch differ too").

With --backward, the gradients too: the other framework's keyed by the
line's inputs (the counterpart's `adapt` tells which of its arguments
each of the line's became), and an input that either side gives no
gradient of (a call that refuses inputs that require grad, an argument
the other call does not take, a backward that does not reach it where
the other's does: Paddle's binary_cross_entropy gives none of its label)
not compared, said.

A call with no counterpart is `unmapped` (results.Unmapped, with why), as
is one whose mapped call the other framework refuses as a call (a
TypeError: an argument of a type it does not take); one the other
framework's policy refuses is refused; one it fails otherwise is failed,
on its side ("on the torch side: ...").
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Dict, List, Optional, Tuple

from ...values import argument_path, keyword_path
from ..options import Job
from ..results import ON_THE_OTHER_SIDE, Invalid, Refused, SideError, Skip, Status, Unmapped, first_line
from ..side import NoGradient, Outcome, Side, run_side
from .check import EXACT, Verdict, deterministic, exactly_equal, judge, judged_exact, upcast, workspace_outputs

# What a mismatch says of the side to blame (`blamed` reads it back).
WRONG_HERE = "{mine}'s {dtype} result is wrong: its own float64 agrees with {other}'s"
DIFFER_TOO = "the float64 results of {mine} and {other} differ too"


def blamed(message: str) -> str:
    """The framework's title a mismatch's message blames ("Paddle"), or ""
    where float64 cannot tell."""
    found = re.search(WRONG_HERE.format(mine="(\\w+)", dtype="\\w+", other="\\w+"), message)
    return found[1] if found else ""


def judged_across(job: Job) -> Tuple[Verdict, Optional[Dict[str, Any]]]:
    """The verdict on one draw of the job's call against its counterpart in
    the framework job.options.check names (see the module), and the error
    model's bounds it was judged within (None: none): check.check judges
    an elementwise call's regions by it too."""
    options = job.options
    other_job = job.framework.counterpart(job, options.check)  # (Unmapped where none)
    title = other_job.framework.title
    reference = Side(f"{title} float64", options.device, cast=upcast)
    where = ON_THE_OTHER_SIDE.format(framework=other_job.framework.name)
    line_path = _line_paths(job, other_job)

    def run_other(side: Side) -> Outcome:
        outcome = run_side(other_job, side)
        outcome.grads = {line_path(path): g for path, g in outcome.grads.items()}
        return outcome

    with deterministic():
        mine = run_side(job, Side("replay", options.device), watch=True)
        try:
            theirs = run_other(reference)
        except Skip as e:
            raise Skip(f"{where}: {e}") from e
        except (Invalid, Refused) as e:  # (the counterpart's policy, say)
            raise type(e)(f"{where}: {e}", e.column) from e
        except TypeError as e:  # its arguments are not the other function's: the mapping's, not a kernel's
            raise Unmapped(f"the mapped call is not one {title} takes: {where}: {first_line(e)}") from e
        except Exception as e:
            raise SideError(where, e) from e
        unpaired = _unpaired(mine, theirs, job.framework.title, title)
        bounds = None
        modelled = options.rtol is None and options.atol is None and not mine.random
        if modelled and exactly_equal(mine, theirs):
            bounds, note = EXACT, ""
        elif modelled:
            from .error_model import bounds as error_bounds

            def rerun(perturb: Any) -> Any:
                return run_other(replace(reference, perturb=perturb))

            try:
                accumulated = job.framework.accumulations(job.api, mine.inputs)
                bounds = error_bounds(rerun, mine, theirs, options.seed, job.api, accumulated)
            except Exception as e:  # noqa: BLE001 - a probe past --max-bytes, say: the tolerance holds
                bounds = None
                note = f"no error model ({type(e).__name__}): judged within rtol/atol"
            else:
                note = ""
        else:
            note = ""
    verdict = judge(mine, theirs, options, reference, None if bounds is EXACT else bounds, workspace_outputs(job))
    if bounds is EXACT:
        verdict = judged_exact(verdict)
    said = [f"against {other_job.api} in {title}", note, verdict.message, *unpaired]
    verdict.message = "; ".join(filter(None, said))
    if verdict.status != Status.MISMATCH:
        return verdict, bounds
    with deterministic():
        own = run_side(job, Side("float64", options.device, cast=upcast))
    own.grads = {path: g for path, g in own.grads.items() if path in mine.grads}
    agrees = judge(own, theirs, options, reference, bounds, workspace_outputs(job)).status == Status.OK
    mine_title, dtype = job.framework.title, str(mine.precision).replace("torch.", "")
    blame = (
        WRONG_HERE.format(mine=mine_title, dtype=dtype, other=title)
        if agrees
        else DIFFER_TOO.format(mine=mine_title, other=title)
        + ": the two calls do not compute the same (the mapping), or one is wrong in float64"
    )
    verdict.message = f"{blame}; {verdict.message}"
    return verdict, bounds


class _At:
    """A marker standing for one of the line's arguments, which a
    counterpart's `adapt` moves as it moves the value built for it."""

    def __init__(self, path: str) -> None:
        self.path = path


def _line_paths(job: Job, other_job: Job) -> Any:
    """A function from a path in the other framework's call (its
    "kwargs.input[1]") to the path of the same value in the line's
    ("args[0][1]")."""
    marked = [_At(argument_path(i)) for i in range(len(job.args))]
    keyed = {k: _At(keyword_path(k)) for k in job.kwargs}
    args, kwargs = other_job.adapt(marked, keyed) if other_job.adapt else (marked, keyed)
    back = {argument_path(i): m.path for i, m in enumerate(args) if isinstance(m, _At)}
    back.update((keyword_path(k), m.path) for k, m in kwargs.items() if isinstance(m, _At))

    def line_path(path: str) -> str:
        for there, here in back.items():
            if path == there or path.startswith(there) and path[len(there)] in "[.":
                return here + path[len(there) :]
        return path

    return line_path


def _unpaired(mine: Outcome, theirs: Outcome, mine_title: str, title: str) -> List[str]:
    """Each input whose gradient one side does not give (NoGradient, None,
    or an argument the other call has no place for) taken out of both
    sides' gradients, and why, for the verdict to say."""
    notes = []
    for path in sorted(set(mine.grads) | set(theirs.grads)):
        here, there = mine.grads.get(path, _NONE), theirs.grads.get(path, _NONE)
        if isinstance(here, NoGradient):
            why = f"on the {mine_title} side: {here.why}"
        elif isinstance(there, NoGradient):
            why = f"on the {title} side: {there.why}"
        elif there is _NONE:
            why = f"the {title} call takes no such input"
        elif here is _NONE:
            why = f"no input of the {mine_title} call"
        elif (here is None) != (there is None):  # (paddle's binary_cross_entropy: none of its label)
            why = f"{mine_title if here is None else title}'s backward does not reach it; the other's does"
        else:
            continue
        mine.grads.pop(path, None)
        theirs.grads.pop(path, None)
        notes.append(f"the gradient of {path} not compared ({why})")
    return notes


_NONE = object()
