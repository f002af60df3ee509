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

The formats are each framework's (frameworks/NAME/__init__.py:
`Framework.exports`): PyTorch's operator inputs
(frameworks/torch/operator_inputs.py) and PaddleAPITest's config lines
(frameworks/paddle/paddleapitest.py).
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Dict, Iterable, List, NamedTuple, Tuple

from ..errors import UsageError, warn
from ..formats.configs import Config, config_lines, foreign_reader
from ..formats.fileset import set_file_beside
from ..formats.foreign import UNREADABLE, LeftOut
from ..formats.io import check_not_an_input, open_regular, read_all, replace_atomically, unwritable
from ..formats.sources import SOURCES, config_calls
from ..frameworks import exports, load


class Format(NamedTuple):
    write: Callable[[Iterable[Tuple[int, str, int]], LeftOut], Tuple[str, LeftOut]]
    holds: Callable[[str], str]  # what a written text holds: "3 operators"
    help: str


def formats() -> Dict[str, Format]:
    """Every framework's export formats, by --format name (frameworks'
    `Framework.exports`), loaded."""
    return {name: Format(load(e.write), load(e.holds), e.help) for name, e in exports().items()}


def export(configs_path: str, form: str, output: str) -> str:
    """Writes the file; returns what was written, as a line to print."""
    known = exports()
    if form not in known:
        raise UsageError(f"export: --format {form}: one of {', '.join(known)}")
    chosen = formats()[form]
    _check_paths(configs_path, output)
    configs, left_out = counted_configs(configs_path)
    total = len(configs) + left_out.total
    text, left_out = chosen.write(configs, left_out)
    replace_atomically(output, text)
    if left_out:
        warn(
            f"export: {configs_path}: left out {left_out.total} of {total} config lines, which the "
            f"{form} format cannot carry: {left_out.describe()}"
        )
    return f"export: {total - left_out.total} config lines of {chosen.holds(text)} written to {output}"


def _check_paths(configs: str, output: str) -> None:
    """That CONFIGS can be read and FILE written, and is none of the files
    export reads (CONFIGS, and the api_config_sources.yaml beside it)."""
    open_regular(configs).close()  # an InputError where it is missing or not a regular file
    check_not_an_input("export", "-o", output, [p for p in (configs, set_file_beside(configs, SOURCES)) if p])
    why = unwritable(output)
    if why:
        raise UsageError(f"export: -o {output}: {why}")


def counted_configs(path: str) -> Tuple[List[Tuple[int, str, int]], LeftOut]:
    """Each distinct config line of the file with its line and its calls,
    and the lines that cannot be read (not UTF-8), left out."""
    with open_regular(path) as f:
        data = read_all(path, f)
    left_out = LeftOut()
    reader = foreign_reader(data)
    if reader is not None:
        return [(e.line, e.config, e.calls) for e in reader.read(path, data)], left_out
    configs: List[Config] = config_lines(path, data)
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
