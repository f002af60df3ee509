"""A seeded fuzz of parse_call (issue 10): real config lines, mutated, either
parse or raise ConfigSyntaxError with a column inside the line. Any other
exception (TypeError, SystemError, RecursionError, another ValueError) or a
crash is a bug. What parses, format_call writes as a line that reads back
to the same values (so formats to the same text)."""

import random

import pytest
import torch

from api_tracer import APITracer, ConfigSyntaxError, format_call, parse_call
from support import GOLDEN, trace_lines
from support.workloads import cnn_forward_backward, mlp_training_step

SEED = 10
MUTANTS = 5000

BRACKETS = "()[]{}"
QUOTES = "\"'"
CHARS = BRACKETS + QUOTES + ",:=.-+ej0123456789 \\xuUnaif_Tt" + "é😀\x00\t"
SPLICES = [
    "\ud800",
    "\udfff",
    "\\ud800",
    "\\U0000dc00",
    "\\x",
    "\\u12",
    "9" * 4301,
    "-" + "9" * 20000,
    "1e309",
    "-1e309j",
    "1e-400",
    "e999999",
    "e" + "9" * 40,
    "." + "0" * 400 + "1",
    "inf",
    "nanj",
    "[" * 300,
    "(" * 300 + "1",
    "{[1]: 2}",
    "{(1, {}): 2}",
    "slice(1, [2], 3)",
    "Tensor(",
    "name=",
    "self=",
    "api=",
    "x=1",
    "...",
    "(1+2j)",
    "(1e309-1e309j)",
    "torch.Size([2])",
    "None",
    "True",
]


def _source_lines(tmp_path):
    """Config lines as the tracer writes them: a small workload at levels 1
    and 2, the golden lines, and one line of every kind of value."""
    out = tmp_path / "trace"
    step = mlp_training_step()
    cnn = cnn_forward_backward()
    with APITracer(output_path=str(out), levels=[1, 2], merge_output=True):
        step()
        cnn()
    lines = trace_lines(out)
    lines += (GOLDEN / "seed_example" / "expected" / "api_trace.txt").read_text().splitlines()
    lines.append(
        format_call(
            "torch.f",
            torch.zeros(2, 3).t(),
            None,
            True,
            -7,
            2**80,
            0.1,
            -0.0,
            float("inf"),
            float("nan"),
            1 + 2j,
            complex(0, -float("inf")),
            'a "q" \\ é\n\x01',
            ...,
            [1, (2,)],
            (),
            {"k": 1, 2: [3]},
            slice(None, 2, None),
            torch.float16,
            torch.device("cpu"),
            torch.Size([2, 3]),
            x=torch.channels_last,
        )
    )
    return sorted(set(lines))


def _mutate(line: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(line) + 1)
        kind = rng.randrange(7)
        if kind == 0:  # delete a run
            line = line[:i] + line[i + rng.randint(1, 3) :]
        elif kind == 1:  # duplicate a run
            line = line[:i] + line[i : i + rng.randint(1, 8)] + line[i:]
        elif kind == 2:  # insert a character
            line = line[:i] + rng.choice(CHARS) + line[i:]
        elif kind == 3:  # swap a bracket or a quote for another
            spots = [j for j, c in enumerate(line) if c in BRACKETS + QUOTES]
            if spots:
                j = rng.choice(spots)
                line = line[:j] + rng.choice(QUOTES if line[j] in QUOTES else BRACKETS) + line[j + 1 :]
        elif kind == 4:  # insert a troublesome token
            line = line[:i] + rng.choice(SPLICES) + line[i:]
        elif kind == 5:  # a number's digits or exponent grown huge
            grown = rng.choice(["9" * rng.choice([30, 4301, 10000]), "e" + str(10 ** rng.randint(3, 30))])
            line = line[:i] + grown + line[i:]
        else:  # truncate
            line = line[:i]
    return line


def test_mutated_lines_parse_or_raise_config_syntax_error(tmp_path):
    lines = _source_lines(tmp_path)
    for line in lines:
        parse_call(line)  # the sources are well-formed
    rng = random.Random(SEED)
    outcomes = {"parsed": 0, "refused": 0}
    for _ in range(MUTANTS):
        line = _mutate(rng.choice(lines), rng)
        try:
            api, args, kwargs = parse_call(line)
        except ConfigSyntaxError as e:
            assert 1 <= e.column <= len(line) + 1, (line, e)
            outcomes["refused"] += 1
        except Exception as e:  # noqa: BLE001 - anything else is the bug
            pytest.fail(f"{type(e).__name__}: {e} for the line {line!r}")
        else:
            assert (type(api), type(args), type(kwargs)) == (str, list, dict), line
            written = format_call(api, *args, **kwargs)
            api, args, kwargs = parse_call(written)
            assert format_call(api, *args, **kwargs) == written, line
            outcomes["parsed"] += 1
    assert min(outcomes.values()) > MUTANTS // 10, outcomes  # the mutants reach both sides
