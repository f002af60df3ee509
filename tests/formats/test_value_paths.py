"""A value's path inside a call (docs/format.md, "Value paths") is one
definition: the C++ core writes a tensor's value profile under it
(csrc/core/value_path.h), and Python walks the same paths (values.py), so
that replay draws each tensor from its own profile and the fuzzer mutates
it where the profile is. Every kind of value is walked: dicts with string
keys of every quoting and int keys, nested lists and tuples, slices,
objects' constructor arguments (a namedtuple's fields, a partial's bound
arguments)."""

from __future__ import annotations

import pytest
import torch

from api_tracer import TensorSpec, parse_call
from api_tracer.formats.summaries import read_value_profiles
from api_tracer.fuzz.mutate import Line, leaves, replace_at
from api_tracer.replay import replay_framework
from api_tracer.values import FILLED, Call, argument_path, keyword_path, walk

PROGRAM = """
import collections, functools, sys, torch
from api_tracer import APITracer

Pair = collections.namedtuple("Pair", "first second")

def f(*args, **kwargs):
    return 0

with APITracer(output_path=sys.argv[1], levels=0, api_list=["__main__.f"], value_ranges=True, merge_output=True):
    f({"a": torch.full((2,), 1), 'b"c': torch.full((2,), 2), "it's": torch.full((2,), 3),
       "back\\\\slash": torch.full((2,), 4), 5: torch.full((2,), 5)},
      [(torch.full((3,), 6), [torch.full((1,), 7)])],
      slice(torch.tensor(8), torch.tensor(9), None),
      part=functools.partial(torch.add, torch.full((2,), 12), alpha=torch.full((1,), 13)),
      pair=Pair(torch.full((2,), 10), 11))
"""

# Each tensor's path, and the one value the program filled it with.
FILLED_WITH = {
    'args[0]["a"]': 1,
    'args[0]["b\\"c"]': 2,
    'args[0]["it\'s"]': 3,
    'args[0]["back\\\\slash"]': 4,
    "args[0][5]": 5,
    "args[1][0][0]": 6,
    "args[1][0][1][0]": 7,
    "args[2].args[0]": 8,
    "args[2].args[1]": 9,
    "kwargs.part.args[1]": 12,
    "kwargs.part.alpha": 13,
    "kwargs.pair.first": 10,
}


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    import subprocess
    import sys

    out = tmp_path_factory.mktemp("paths")
    script = out / "program.py"
    script.write_text(PROGRAM)
    subprocess.run(
        [sys.executable, str(script), str(out / "set")], check=True, capture_output=True, text=True, timeout=300
    )
    line = (out / "set" / "api_configs.yaml").read_text().splitlines()[0]
    profiles = read_value_profiles(str(out / "set" / "api_value_ranges.yaml"))[line]
    return line, profiles


def test_the_core_writes_each_tensors_profile_at_its_path(traced):
    """A partial's bound tensors too (a value its dialect describes once per
    object): before a later argument's, whose profile is then its own."""
    _, profiles = traced
    assert {path: (p.min, p.max) for path, p in profiles.items()} == {path: (v, v) for path, v in FILLED_WITH.items()}


def test_python_walks_the_paths_the_core_wrote(traced):
    line, profiles = traced
    _, args, kwargs = parse_call(line)
    tensors = [path for path, value in walk(args, kwargs) if isinstance(value, TensorSpec)]
    assert tensors == list(FILLED_WITH) and set(tensors) == set(profiles)


def test_replay_draws_each_tensor_from_its_own_profile(traced):
    """Built as replay builds the arguments (the dict, the list, the slice,
    the partial), each tensor holds its profile's one value: none is drawn
    as zeros for want of its profile."""
    line, profiles = traced
    _, args, kwargs = parse_call(line)
    torch_replay = replay_framework("torch")
    builder = torch_replay.builder(torch_replay, "cpu", profiles, torch.Generator().manual_seed(0), line)
    keys, nested, window = (builder.build(args[i], argument_path(i)) for i in range(3))
    part = builder.build(kwargs["part"], keyword_path("part"))
    built = {
        'args[0]["a"]': keys["a"],
        'args[0]["b\\"c"]': keys['b"c'],
        'args[0]["it\'s"]': keys["it's"],
        'args[0]["back\\\\slash"]': keys["back\\slash"],
        "args[0][5]": keys[5],
        "args[1][0][0]": nested[0][0],
        "args[1][0][1][0]": nested[0][1][0],
        "args[2].args[0]": window.start,
        "args[2].args[1]": window.stop,
        "kwargs.part.args[1]": part.args[0],
        "kwargs.part.alpha": part.keywords["alpha"],
    }
    for path, tensor in built.items():
        assert tensor.numel() and (tensor == FILLED_WITH[path]).all(), (path, tensor)


def test_the_fuzzer_reaches_each_tensor_at_its_path(traced):
    """The fuzzer's walk meets every tensor it may mutate (all but those a
    constructor call holds: fuzz/mutate.py's `mutable`) at the path of its
    profile, and a mutation there changes that tensor alone."""
    line, profiles = traced
    api, args, kwargs = parse_call(line)
    fuzzed = Line(api, list(args), dict(kwargs))
    reached = {where for where, value in leaves(fuzzed) if isinstance(value, TensorSpec)}
    assert reached == set(FILLED_WITH) - {"kwargs.pair.first", "kwargs.part.args[1]", "kwargs.part.alpha"}
    for where in reached:
        mutated = fuzzed.copy()
        replace_at(mutated, where, lambda spec: Call(FILLED, spec, -1))
        filled = [p for p, v in walk(mutated.args, mutated.kwargs) if isinstance(v, Call) and v.name == FILLED]
        assert filled == [where]
