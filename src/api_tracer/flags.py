"""The command line's shared flags, as data.

The value types flags take (byte counts, seconds, counts, levels), and the
flags of a replay's options, which `api-tracer replay`, `api-tracer fuzz`
and the pytest plugin all take theirs from: their names, help, defaults and
types are defined here once (`REPLAY`), and replay/options.py checks the
values they give, once, for all three.

This module imports the standard library only: the pytest plugin reads it
without importing api_tracer, which imports torch
(src/pytest_api_tracer/options.py), so that a test session that asks
nothing of the plugin imports neither.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

# -- value types ------------------------------------------------------------------


def level_list(text: str) -> List[int]:
    """Comma-separated levels: "1,3"."""
    try:
        levels = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"levels must be comma-separated integers, not {text!r}") from None
    if not levels:
        raise argparse.ArgumentTypeError("levels: give at least one level")
    return levels


def byte_count(text: str) -> int:
    """A number of bytes: 1048576, 512K, 64M, 1.5G, 2TiB (powers of 1024; a
    trailing B or iB is allowed)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGTP]?)(?:i?B)?", text.strip(), re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError(f"expected a number of bytes (e.g. 1048576, 512M, 1G), not {text!r}")
    number, unit = match.groups()
    return int(float(number) * 1024 ** " KMGTP".index(unit.upper() or " "))


def count(text: str) -> int:
    """A whole number, 0 or more."""
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number (0 or more), not {text!r}")
    return int(text)


def seconds(text: str) -> float:
    """A number of seconds, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds (0 or more), not {text!r}")
    return value


def shard_pair(text: str) -> Tuple[int, int]:
    """`I/N` (0 <= I < N), as --shard takes it: (I, N)."""
    index, slash, number = text.partition("/")
    if not slash or not index.strip().isdigit() or not number.strip().isdigit():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not I/N (the shard's index from 0, then their count: 0/4 ... 3/4)"
        )
    if int(number) < 1 or int(index) >= int(number):
        raise argparse.ArgumentTypeError(f"{text!r}: the index must be at least 0 and below the count")
    return int(index), int(number)


# -- a replay's flags ---------------------------------------------------------------


@dataclass(frozen=True)
class Flag:
    """A flag of a replay's option: its spellings on the command line, its
    option of the pytest plugin (None: the plugin has none), and what
    argparse's add_argument (and pytest's addoption) take."""

    flags: Tuple[str, ...]
    plugin: Optional[str]
    keywords: Dict[str, Any] = field(default_factory=dict)


# By the field of replay's ReplayOptions each one gives.
REPLAY: Dict[str, Flag] = {
    "device": Flag(("--device",), None, dict(default="cpu", help="device of the tensors made (default cpu)")),
    "imports": Flag(
        ("--import",),
        "--api-replay-import",
        dict(
            dest="imports",
            action="append",
            metavar="MODULE",
            help="import MODULE (your operators' registration) into every replaying process first (repeatable); its "
            "operator namespaces are then allowed",
        ),
    ),
    "libraries": Flag(
        ("--load-library",),
        "--api-replay-load-library",
        dict(
            dest="libraries",
            action="append",
            metavar="PATH",
            help="load the shared library PATH (torch.ops.load_library) likewise (repeatable)",
        ),
    ),
    "max_bytes": Flag(
        ("--max-bytes",),
        None,
        dict(
            type=byte_count,
            help="skip configs whose tensor arguments need more (8G, 512M, ...; default half the free "
            "memory of --device)",
        ),
    ),
    "allow_unsafe": Flag(
        ("--allow-unsafe",),
        "--api-allow-unsafe",
        dict(action="store_true", help="call any callable a line names, not only what computes (trusted files only)"),
    ),
    "check": Flag(
        ("--check",),
        "--api-check",
        dict(
            metavar="MODE",
            help="compare each config's outputs against the same call on float64 copies of its floating "
            "inputs (float64, judged by an error model), on another device (device:cuda), compiled "
            "(compile), made again from the same seed, bitwise (repeat), or on contiguous copies of "
            "its strided inputs (layout)",
        ),
    ),
    "backward": Flag(
        ("--backward",),
        None,
        dict(action="store_true", help="with --check: compare the gradients of the floating inputs too"),
    ),
    "rtol": Flag(
        ("--rtol",), None, dict(type=float, help="with --check: the relative tolerance, instead of the dtype's")
    ),
    "atol": Flag(
        ("--atol",), None, dict(type=float, help="with --check: the absolute tolerance, instead of the dtype's")
    ),
}

# The tensor arguments a fuzzed case may take, by default: replay's own
# default, half the free memory, is for one config, not for a campaign's.
FUZZ_MAX_BYTES = 1 << 30


def add_replay_flags(add: Callable[..., Any], names: Sequence[str], **defaults: Any) -> None:
    """Adds the flags of the options `names` (keys of REPLAY) through `add`
    (a parser's add_argument); `defaults` replaces their defaults (and says
    so in their help)."""
    for name in names:
        flag = REPLAY[name]
        keywords = dict(flag.keywords)
        if name in defaults:
            keywords["default"] = defaults[name]
        add(*flag.flags, **keywords)


def add_plugin_flags(add: Callable[..., Any], names: Sequence[str], asked_by: str) -> None:
    """Adds the pytest plugin's options of the options `names` through `add`
    (a group's addoption), their help saying they go with `asked_by`."""
    for name in names:
        flag = REPLAY[name]
        assert flag.plugin, f"{name}: the plugin has no option for it"
        keywords = {k: v for k, v in flag.keywords.items() if k != "dest"}
        if keywords.get("action") == "append":
            keywords["default"] = []
        keywords["help"] = f"with {asked_by}: {keywords['help']} (as replay's {flag.flags[0]})"
        add(flag.plugin, **keywords)


def plugin_dest(name: str) -> str:
    """What pytest's config.getoption calls the plugin's option of `name`."""
    return REPLAY[name].plugin.lstrip("-").replace("-", "_")  # type: ignore[union-attr]
