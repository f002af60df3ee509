"""`api-tracer export --format FORMAT CONFIGS -o FILE`: config lines written
in another tool's format.

CONFIGS is any file replay reads (a set's api_configs.yaml or
api_trace.txt, an operator-inputs file); each distinct config line is
written once with its calls: from the set's api_config_sources.yaml where
it has one, else as often as the line is in CONFIGS (api_trace.txt repeats
them), or the counts an operator-inputs file gives (a format without
counts, PaddleAPITest's, writes each line once). The lines the format
cannot carry are left out and said in one warning, by kind. FILE is
written beside its place and renamed into it, so it is never half written.

The formats (FORMATS): PyTorch's operator inputs (operator_inputs.py) and
PaddleAPITest's config lines (paddleapitest.py).
"""
from __future__ import annotations

import os
from collections import Counter
from typing import Any, Callable, Dict, Iterable, List, NamedTuple, Tuple

from .errors import InputError, UsageError, warn
from .filesets import open_regular
from .operator_inputs import OPERATOR, UNREADABLE, LeftOut, is_operator_inputs, read_said, write_operator_inputs
from .paddleapitest import apis, write_paddleapitest
from .replay.configs import Config, read_configs
from .sources import config_calls


class Format(NamedTuple):
    write: Callable[[Iterable[Tuple[int, str, int]], LeftOut], Tuple[str, LeftOut]]
    holds: Callable[[str], str]  # what a written text holds: "3 operators"
    help: str


def _operators(text: str) -> str:
    return f"{sum(1 for line in text.splitlines() if line.startswith(OPERATOR))} operators"


def _apis(text: str) -> str:
    return f"{len(apis(text))} APIs"


FORMATS: Dict[str, Format] = {
    "operator-inputs": Format(  # PyTorch's operator benchmarks' (operator_inputs.py)
        write_operator_inputs, _operators,
        "the operator benchmarks' files of PyTorch (operator_inp_utils.py), tritonbench's and BackendBench's; "
        "aten operators only"),
    "paddleapitest": Format(  # PaddleAPITest's config files (paddleapitest.py)
        write_paddleapitest, _apis,
        "PaddleAPITest's config files (tester/api_config/config_analyzer.py reads them); Paddle APIs only"),
}


def add_flags(p: Any) -> None:
    p.add_argument("configs", metavar="CONFIGS", help="a file of config lines (any file replay reads)")
    p.add_argument("--format", required=True, choices=list(FORMATS),
                   help="; ".join(f"{name}: {f.help}" for name, f in FORMATS.items()))
    p.add_argument("-o", "--output", required=True, help="the file to write")


def export_command(args: Any) -> str:
    """Writes the file; returns what was written, as a line to print."""
    form = FORMATS[args.format]
    _check_paths(args.configs, args.output)
    configs, left_out = counted_configs(args.configs)
    total = len(configs) + left_out.total
    text, left_out = form.write(configs, left_out)
    write_atomically(args.output, text)
    if left_out:
        warn(f"export: {args.configs}: left out {left_out.total} of {total} config lines, which the "
             f"{args.format} format cannot carry: {left_out.describe()}")
    return f"export: {total - left_out.total} config lines of {form.holds(text)} written to {args.output}"


def _check_paths(configs: str, output: str) -> None:
    open_regular(configs).close()  # an InputError where it is missing or not a regular file
    if os.path.exists(output) and os.path.samefile(configs, output):
        raise UsageError(f"export: -o {output}: it is {configs}, which export reads")
    if os.path.isdir(output):
        raise UsageError(f"export: -o {output}: is a directory")


def counted_configs(path: str) -> Tuple[List[Tuple[int, str, int]], LeftOut]:
    """Each distinct config line of the file with its line and its calls,
    and the lines that cannot be read (not UTF-8), left out."""
    with open_regular(path) as f:
        data = f.read()
    left_out = LeftOut()
    if is_operator_inputs(data):
        return [(e.line, e.config, e.calls) for e in read_said(path, data)], left_out
    configs: List[Config] = read_configs(path)
    calls = calls_per_config(path, data)
    for c in configs:
        if c.error:
            left_out.add(UNREADABLE, c.line)
    return [(c.line, c.text, calls.get(c.text, 1)) for c in configs if not c.error], left_out


def calls_per_config(path: str, data: bytes) -> Dict[str, int]:
    """Per config line, its calls: from the set's api_config_sources.yaml
    (sources.config_calls) where there is one, else how often the line is
    in the file."""
    calls = config_calls(path)
    if calls is not None:
        return calls
    lines = (raw.decode("utf-8", "backslashreplace").strip() for raw in data.splitlines())
    return Counter(line for line in lines if line and not line.startswith("#"))


def write_atomically(path: str, text: str) -> None:
    """`text` into `path`, through a temporary file beside it renamed over
    it: a reader never sees it half written."""
    directory, name = os.path.split(os.path.abspath(path))
    temporary = os.path.join(directory, f".{name}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(temporary, path)
    except OSError as e:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise InputError(path, e.strerror or str(e)) from None
