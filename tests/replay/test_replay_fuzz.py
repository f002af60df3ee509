"""api-tracer replay on mutated config files: whatever bytes a file holds,
every line gets a result, nothing escapes, and nothing outside computation
happens (the policy is on)."""

import os
import random
import re

import torch

from api_tracer import APITracer
from api_tracer.formats.configs import read_config_file
from api_tracer.replay import ReplayOptions, run_in_process
from support.workloads import WORKLOADS

HUGE = [
    b"9" * 30,
    str(2**63).encode(),
    str(-(2**63) - 1).encode(),
    b"1" + b"0" * 400,
    b"9" * 5000,
    b"1e999",
    b"-1e999",
    b"1e308",
    b"4294967296",
    b"-5",
    b"-1",
    b"0",
]
DTYPES = [b'"int8"', b'"bool"', b'"complex64"', b'"float16"', b'"bogus"', b'"__class__"', b'"save"']


def mutate(rng: random.Random, line: bytes, seeds: list) -> bytes:
    """`line` with one to three mutations: stray bytes (not UTF-8), a lone
    surrogate written as bytes, truncation, duplicated or deleted
    characters, huge or negative numbers, another dtype or API."""
    for _ in range(rng.choice([1, 1, 1, 1, 1, 2, 2, 3])):
        i = rng.randrange(len(line) + 1)
        numbers = list(re.finditer(rb"-?\d+(\.\d+)?", line))
        dtypes = list(re.finditer(rb'"[a-z0-9]+"', line))
        kind = rng.randrange(9)
        if kind == 0:
            line = line[:i] + bytes([rng.choice([0x00, 0x80, 0xBF, 0xC3, 0xE2, 0xFF])]) + line[i:]
        elif kind == 1:
            line = line[:i] + b"\xed\xa0\x80" + line[i:]
        elif kind == 2:
            line = line[:i]
        elif kind == 3:
            line = line[:i] + line[i : i + 1] * rng.randint(1, 3) + line[i:]
        elif kind == 4:
            line = line[:i] + line[i + 1 :]
        elif kind == 5 and numbers:
            m = rng.choice(numbers)
            line = line[: m.start()] + rng.choice(HUGE) + line[m.end() :]
        elif kind == 6 and dtypes:
            m = rng.choice(dtypes)
            line = line[: m.start()] + rng.choice(DTYPES) + line[m.end() :]
        elif kind == 7 and b"(" in line:
            other = rng.choice(seeds)
            line = other[: other.index(b"(")] + line[line.index(b"(") :]
        else:
            line = line[:i] + bytes([rng.choice(b'()[]{},="\\.-0123456789 aeTx')]) + line[i:]
    return line


def test_mutated_lines_all_get_a_result_and_change_nothing_outside(tmp_path, monkeypatch):
    step = WORKLOADS["mlp"]()
    step()
    with APITracer(output_path=str(tmp_path / "trace"), levels=[0, 1, 2, 3], merge_output=True):
        step()
    seeds = (tmp_path / "trace" / "api_configs.yaml").read_bytes().splitlines()
    rng = random.Random(10)
    lines = [mutate(rng, rng.choice(seeds), seeds) for _ in range(4000)]
    path = tmp_path / "fuzz.txt"
    path.write_bytes(b"\n".join(lines) + b"\n")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    threads, dtype = torch.get_num_threads(), torch.get_default_dtype()

    configs = read_config_file(str(path))
    results = run_in_process(configs, ReplayOptions(max_bytes=64 << 20), lambda r: None)

    assert len(results) == len(configs) > 3000
    statuses = {r.status for r in results}
    assert {"ok", "failed", "skipped", "invalid"} <= statuses <= {"ok", "failed", "skipped", "refused", "invalid"}
    for r in results:
        raw = lines[r.line - 1]
        assert r.config == raw.decode("utf-8", "backslashreplace").strip()
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            assert r.status == "invalid" and r.message.startswith("the line is not UTF-8"), r
        if r.status in ("invalid", "refused"):
            assert r.column >= 1 and r.message, r
        if r.status == "refused":  # the policy's refusal names what it refused, and why
            assert " is refused: it " in r.message, r
        # A line that does not parse is invalid, never failed: a failed config has its API.
        if r.status == "failed":
            assert r.api and r.error, r
    assert os.listdir(cwd) == []
    assert torch.is_grad_enabled() and (torch.get_num_threads(), torch.get_default_dtype()) == (threads, dtype)
