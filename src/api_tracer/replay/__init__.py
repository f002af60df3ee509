"""api-tracer replay: call the APIs of config lines and report each one.

A line is data: it is parsed by the project's parser (never evaluated), and
every name in it is resolved by walking from its framework's root module
(`torch`, `paddle`) through objects that are the framework's own (its
modules, its classes, torch.ops' namespaces; frameworks/NAME/resolve.py);
a dunder is allowed only as a tensor operator (torch.Tensor.__add__).
Unless allow_unsafe, every name replay calls or hands to the API (the API
itself, Callable(...) arguments, the constructors it calls, classes passed
as values) must also pass the framework's policy (frameworks/NAME/policy.py),
which allows only what computes: a line naming anything else is reported
"refused", with the policy's reason and file:line:column (the policy
working, not a defect of the line: it fails no replay unless strict). A
line that does not parse or is not UTF-8, or names what is not the
framework's, is reported "invalid", with file:line:column; the other lines
still run.

Arguments are made from their description (builder.py): tensors of the
recorded shape, dtype and strides, with random values (integer tensors:
zeros, or values drawn from their value profile when
api_value_ranges.yaml has one, found by its value path; bool tensors:
random), module constructor calls built, devices, dtypes, sizes as
written. Before anything is built, the names pass the policy and the
tensors' descriptions are checked: sizes of at least 0 (-1, a symbolic size,
skips the config), and no more bytes in all than max_bytes (by default half
the memory free on the device). Each config is reported "ok", "failed" (the
exception; "building ARG: ..." when an argument could not be built),
"skipped" (why it cannot be rebuilt, e.g. an Opaque argument), "refused"
or "invalid".

With a check (options.check, --check), a config is judged, not only run
(judge/): its call is made again, from the same seed, on float64 copies of
its floating inputs, on another device, compiled, again, or on other
layouts, and the outputs (and with --backward the gradients of its
floating inputs) are compared: against float64 within the error model's
bound of each element, else within torch.testing's default tolerances; a
config beyond them is reported "mismatch", with its greatest errors and
the tolerance.

In process, a fatal signal still kills the process, but first CrashNote has
it say which config died and how far the replay got, and append that
config's line to the report, whose lines are written as results come.

Each framework's configs replay the same way, through the one object it
hands replay (framework.py: `ReplayFramework`, in frameworks/NAME/replay.py):
its names, its policy, its preconditions, the call made on its side and
its outputs made torch's for the same judge. A file's framework is read
from its names, or --dialect gives it.

The parts, one module each: results.py (what came of a line), options.py
(ReplayOptions, what a run's configs share, and replay's flags),
framework.py (the framework seam), resolve.py (names to objects),
builder.py, draw.py and memory.py (a line to a call), side.py (a call
made), judge/ (--check: check.py, compare.py, error_model.py), run.py (in
process, or a pool of workers: pool.py), output.py (the reports),
user_code.py (--import, --load-library); retrace.py is the tests' round
trip. docs/design.md says more of each.
"""

from __future__ import annotations

from ..formats.configs import Config
from .builder import Builder, Perturbation, prepare
from .framework import ReplayFramework, replay_framework
from .options import ReplayOptions
from .results import BuildError, Invalid, Refused, Result, Skip, Status
from .retrace import roundtrip
from .run import replay_one, run_in_process, run_isolated

__all__ = [
    "Config",
    "ReplayOptions",
    "Result",
    "Status",
    "Invalid",
    "Refused",
    "Skip",
    "BuildError",
    "ReplayFramework",
    "replay_framework",
    "Builder",
    "Perturbation",
    "prepare",
    "replay_one",
    "run_in_process",
    "run_isolated",
    "roundtrip",
]
