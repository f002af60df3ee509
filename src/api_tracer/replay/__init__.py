"""api-tracer replay: call the APIs of config lines and report each one.

A line is data: it is parsed by the project's parser (never evaluated), and
every name in it is resolved by walking from `torch` through objects that
are torch's own (its modules, its classes, torch.ops' namespaces); a dunder
is allowed only as a Tensor operator (torch.Tensor.__add__). Unless
allow_unsafe, every name replay calls or hands to the API (the API itself,
Callable(...) arguments, the constructors it calls, classes passed as
values) must also pass the policy (policy.py), which allows only what
computes. Anything else is reported invalid, with file:line:column, as
is a line that does not parse or is not UTF-8, and the other lines still run.

Arguments are made from their description: tensors of the recorded shape,
dtype and strides, with random values (integer tensors: zeros, or values
drawn from their value profile when api_value_ranges.yaml has one; bool
tensors: random), module constructor calls built, devices, dtypes, sizes as
written. Before anything is built, the names pass the policy and the
tensors' descriptions are checked: sizes of at least 0 (-1, a symbolic size,
skips the config), and no more bytes in all than max_bytes (by default half
the memory free on the device). Each config is reported "ok", "failed" (the
exception; "building ARG: ..." when an argument could not be built),
"skipped" (why it cannot be rebuilt, e.g. an Opaque argument) or "invalid".

With a check (options.check, --check), a config is judged, not only run:
its call is made again, from the same seed, on float64 copies of its
floating inputs, on another device or compiled, and the outputs (and with
--backward the gradients of its floating inputs) are compared within
torch.testing's default tolerances; a config beyond them is reported
"mismatch", with its greatest errors and the tolerance (check.py).

In process, a fatal signal still kills the process, but first CrashNote has
it say which config died and how far the replay got, and append that
config's line to the report, whose lines are written as results come.

Paddle's config files replay the same way, by Paddle (frameworks.py reads
a file's framework from its names, or --dialect gives it): names walked
from `paddle`, Paddle's own policy, the arguments drawn as torch's are and
made Paddle's, the outputs made torch's again for the same judge
(paddle_replay.py, paddle_policy.py, paddle_preconditions.py).

The parts, one module each: configs.py (a line and its Result), options.py
(ReplayOptions, what a run's configs share), policy.py, resolve.py (names
to torch's objects), builder.py and memory.py (a line to a call), side.py
(a call made, and its gradients), check.py and compare.py (--check), run.py
(in process, or a pool of workers), report.py, command.py; frameworks.py
and the paddle_*.py modules for Paddle's files; retrace.py is the tests'
round trip. docs/design.md says more of each.
"""
from __future__ import annotations

from .builder import Builder, prepare
from .command import replay_command
from .configs import (BuildError, Config, Invalid, Result, Skip, Status, ranges_beside, read_configs,
                      read_value_ranges)
from .options import ReplayOptions
from .resolve import Resolver
from .retrace import roundtrip
from .run import replay_one, run_in_process, run_isolated

__all__ = [
    "Config", "ReplayOptions", "Result", "Status", "Invalid", "Skip", "BuildError",
    "read_configs", "read_value_ranges", "ranges_beside",
    "Resolver", "Builder", "prepare", "replay_one", "run_in_process", "run_isolated", "roundtrip",
    "replay_command",
]
