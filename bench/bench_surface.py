"""How much of torch's operator surface comes back: on the sample inputs of
torch's own operator database (OpInfo), not on models, the share of each
level's configs that replay and that trace back to themselves, per dtype.

    python bench/bench_surface.py [--ops add,mm,nn.functional.conv2d] [--dtypes float32,int64]
                                  [--levels 0,1,2,3] [--samples 3] [--why] [--json FILE]

The corpus, per dtype: every OpInfo of torch.testing's op_db (--ops: only
those named, by name, as "nn.functional.interpolate", or by name and
variant, as "div.trunc_rounding") whose supported_dtypes('cpu') has the
dtype, and its first --samples sample inputs (requires_grad=False, made from
a fixed seed), each called as the OpInfo calls it, op.op(sample.input,
*sample.args, **sample.kwargs). The corpus is run once untraced first: that
sets up what torch sets up lazily, and decides what is measured. An OpInfo
whose samples cannot be made is left out ("no samples"), as is one whose
samples and calls take more than --op-limit seconds ("too slow"); a call
that raises untraced is the program's own error, left out too ("raised").

Then per level, the calls left are made again (on samples made again, from
the same seed, before tracing starts) while APITracer traces that level
with value_ranges and float_ranges, a call that raises only while traced
counted apart ("raised traced"). Each distinct config of the trace is

- replayed (replay.run_in_process, tensors drawn from the recorded value
  profiles, as `api-tracer replay` does): ok, skipped, failed or invalid;
- replayed while traced (replay.roundtrip, from the same profiles): the
  very same line comes back, or not.

Prints one row per dtype and level; with --why, the problems grouped into
classes by their error with numbers and shapes taken out (a round trip that
came back as another line: by the first place the lines differ), each class
with its count and two of its configs. A round-trip miss of a config that
did not replay ok is one class of its own: its cause is the replay's.
--json FILE writes every config's outcome, per dtype and level.
"""

from __future__ import annotations

import argparse
import difflib
import itertools
import json
import os
import random
import re
import signal
import sys
import tempfile
import time
import warnings
from collections import Counter, defaultdict
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy
import torch

from api_tracer import APITracer
from api_tracer.formats.configs import ranges_beside, read_config_file
from api_tracer.formats.summaries import read_value_ranges
from api_tracer.replay import ReplayOptions, roundtrip, run_in_process
from api_tracer.replay.results import first_line

DTYPES = {"float32": torch.float32, "int64": torch.int64, "complex64": torch.complex64, "bool": torch.bool}
SEED = 0


# -- the corpus: OpInfos' sample inputs -----------------------------------------


def opinfo_name(op: Any) -> str:
    """An OpInfo's name with its variant, as torch's test names spell it."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def opinfos(names: Optional[List[str]]) -> List[Any]:
    """op_db's OpInfos, or those of `names` (an OpInfo's name takes all its variants)."""
    from torch.testing._internal.common_methods_invocations import op_db

    if not names:
        return list(op_db)
    chosen = [op for op in op_db if op.name in names or opinfo_name(op) in names]
    unknown = set(names) - {op.name for op in chosen} - {opinfo_name(op) for op in chosen}
    if unknown:
        raise SystemExit(f"no OpInfo named {', '.join(sorted(unknown))}")
    return chosen


class TooSlow(BaseException):
    """An OpInfo ran past its time (a BaseException: an OpInfo's own
    `except Exception` does not swallow it)."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raises TooSlow in the code of the block once it has run `seconds`
    (a call into C++ is interrupted when it returns)."""

    def expire(signum: int, frame: Any) -> None:
        raise TooSlow()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def samples(op: Any, dtype: torch.dtype, n: int) -> List[Any]:
    """The OpInfo's first `n` sample inputs on the CPU, the same on every call."""
    torch.manual_seed(SEED)
    random.seed(SEED)
    numpy.random.seed(SEED)
    return list(itertools.islice(op.sample_inputs("cpu", dtype, requires_grad=False), n))


def call(op: Any, sample: Any) -> None:
    """The sample called as the OpInfo calls it."""
    op.op(sample.input, *sample.args, **sample.kwargs)


def select(ops: List[Any], dtype: torch.dtype, n: int, limit: float) -> Tuple[List[Tuple[Any, List[int]]], Counter]:
    """The corpus run untraced: per OpInfo with the dtype, the indices of
    the samples whose call returned; and what was left out, counted."""
    chosen, counts = [], Counter()
    for op in ops:
        if dtype not in op.supported_dtypes("cpu"):
            continue
        counts["ops"] += 1
        ok = []
        try:
            with time_limit(limit):
                try:
                    made = samples(op, dtype, n)
                except Exception:  # noqa: BLE001 - the OpInfo's own failure
                    counts["no samples"] += 1
                    continue
                for i, sample in enumerate(made):
                    counts["calls"] += 1
                    try:
                        call(op, sample)
                        ok.append(i)
                    except Exception:  # noqa: BLE001 - the program's own error, not measured
                        counts["raised"] += 1
        except TooSlow:
            counts["too slow"] += 1
            continue
        if ok:
            chosen.append((op, ok))
    return chosen, counts


def traced_run(
    chosen: List[Tuple[Any, List[int]]], dtype: torch.dtype, n: int, level: int, out: str
) -> Tuple[int, List[str]]:
    """The chosen calls made again, on samples made before tracing starts,
    while `level` traces into `out`: how many returned, and for each that
    raised, its OpInfo and exception."""
    made = []
    for op, indices in chosen:
        mine = samples(op, dtype, n)
        made += [(op, mine[i]) for i in indices]
    returned, raised = 0, []
    with APITracer(output_path=out, levels=level, merge_output=True, value_ranges=True, float_ranges=True):
        for op, sample in made:
            try:
                call(op, sample)
                returned += 1
            except Exception as e:  # noqa: BLE001 - raised only while traced: counted apart
                raised.append(f"{opinfo_name(op)}: {type(e).__name__}: {first_line(e)}")
    return returned, raised


# -- one measurement ------------------------------------------------------------


def measure(chosen: List[Tuple[Any, List[int]]], dtype: torch.dtype, n: int, level: int) -> Dict:
    """The chosen calls traced at one level: each config's replay and round trip."""
    with tempfile.TemporaryDirectory() as out:
        returned, raised = traced_run(chosen, dtype, n, level, out)
        path = os.path.join(out, "api_configs.yaml")
        configs = read_config_file(path) if os.path.exists(path) else []
        ranges = read_value_ranges(ranges_beside(path)) if configs else {}
    options = ReplayOptions(ranges=ranges)
    results = run_in_process(configs, options, lambda r: None)
    back = {c.text: why for c, why in roundtrip(configs, level, options)}
    statuses = Counter(str(r.status) for r in results)
    return {
        "traced calls": returned,
        "raised traced": raised,
        "configs": len(configs),
        **{s: statuses[s] for s in ("ok", "skipped", "failed", "invalid")},
        "same line": sum(1 for why in back.values() if not why),
        "results": [
            {
                "config": r.config,
                "api": r.api,
                "status": str(r.status),
                "error": r.error,
                "message": r.message,
                "round trip": back[r.config],
            }
            for r in results
        ],
    }


# -- failure classes ------------------------------------------------------------


def normalized(text: str, width: int = 80) -> str:
    """A message with its numbers, addresses and shapes taken out, so that
    one problem on many configs reads as one text."""
    text = re.sub(r"0x[0-9a-fA-F]+", "ADDR", text)
    text = re.sub(r"(?<![\w.])-?\d+(\.\d+)?([eE][-+]?\d+)?", "N", text)
    text = re.sub(r"\[N(, N)*\]", "[...]", text)
    text = re.sub(r"\(N(, N)*,?\)", "(...)", text)
    return " ".join(text.split())[:width]


def first_difference(config: str, traced: str) -> str:
    """Where a traced line first differs from its config: the differing
    pieces, normalized."""
    a, b = re.findall(r"\w+|[^\w\s]", config), re.findall(r"\w+|[^\w\s]", traced)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            before, removed, added = "".join(a[max(0, i1 - 3) : i1]), "".join(a[i1:i2]), "".join(b[j1:j2])
            return f"...{normalized(before, 30)} -{normalized(removed, 40)!r} +{normalized(added, 40)!r}"
    return "equal tokens, other spacing"


def problem_class(result: Dict) -> List[str]:
    """The classes of a config's problems: its replay's, unless ok (its API
    named "API" in the message), and its round trip's, unless the same line
    came back."""
    classes = []
    if result["status"] != "ok":
        message = result["message"].replace(result["api"], "API") if result["api"] else result["message"]
        classes.append(f"replay {result['status']}: {result['error']} {normalized(message)}".replace("  ", " "))
    why = result["round trip"]
    if why and result["status"] != "ok":
        classes.append("round trip: its replay was not ok")
    elif why.startswith("traced as nothing"):
        classes.append("round trip: traced as nothing")
    elif why.startswith("traced as "):
        traced = why[len("traced as ") :]
        classes.append(f"round trip: traced as another line: {first_difference(result['config'], traced)}")
    elif why:
        classes.append(f"round trip: {normalized(why)}")
    return classes


def print_classes(runs: List[Dict]) -> None:
    """The calls that raised only while traced; then every problem class
    over all runs, most configs first, with two of its configs and its
    APIs, those of most configs first."""
    for run in runs:
        for what in run["raised traced"]:
            print(f"raised only while traced, {run['dtype']} level {run['level']}: {what[:300]}")
    members: Dict[str, List[Tuple[str, Dict]]] = defaultdict(list)
    for run in runs:
        for result in run["results"]:
            for klass in problem_class(result):
                members[klass].append((f"{run['dtype']} level {run['level']}", result))
    print(f"\n{len(members)} problem classes (configs, APIs)")
    for klass, where in sorted(members.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        apis = Counter(r["api"] for _, r in where)
        print(f"\n{len(where):5} {len(apis):4}  {klass}")
        for run, result in where[:2]:
            print(f"            {run}: {result['config'][:200]}")
        print(f"            APIs: {', '.join(api for api, _ in apis.most_common())[:200]}")


# -- the table ------------------------------------------------------------------


def share(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:5.1f}%" if whole else "    -"


def main(argv: List[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", help="comma-separated OpInfo names (default: all of op_db)")
    parser.add_argument("--dtypes", default=",".join(DTYPES), help="comma-separated, of " + ",".join(DTYPES))
    parser.add_argument("--levels", default="0,1,2,3", help="comma-separated")
    parser.add_argument("--samples", type=int, default=3, help="sample inputs per OpInfo")
    parser.add_argument(
        "--op-limit", type=float, default=20.0, help="seconds an OpInfo's samples and calls may take untraced"
    )
    parser.add_argument("--why", action="store_true", help="the problems, in classes")
    parser.add_argument("--json", help="write every config's outcome to this file")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")  # deprecated operators and odd samples say so, many times
    ops = opinfos(args.ops.split(",") if args.ops else None)
    levels = [int(x) for x in args.levels.split(",")]
    print(
        f"{'dtype':9} {'level':>5} {'ops':>4} {'calls':>5} {'configs':>7} {'replay ok':>9} {'skipped':>7} "
        f"{'failed':>6} {'invalid':>7} {'same line':>9} {'raised traced':>13} {'seconds':>7}",
        flush=True,
    )
    runs, corpus, start = [], {}, time.perf_counter()
    for name in args.dtypes.split(","):
        dtype = DTYPES[name]
        chosen, counts = select(ops, dtype, args.samples, args.op_limit)
        corpus[name] = {k: counts[k] for k in ("ops", "no samples", "too slow", "calls", "raised")}
        for level in levels:
            began = time.perf_counter()
            m = {"dtype": name, "level": level, **measure(chosen, dtype, args.samples, level)}
            m["seconds"] = round(time.perf_counter() - began, 1)
            runs.append(m)
            raised = len(m["raised traced"])
            print(
                f"{name:9} {level:5} {len(chosen):4} {m['traced calls'] + raised:5} {m['configs']:7} "
                f"{share(m['ok'], m['configs']):>9} {m['skipped']:7} {m['failed']:6} {m['invalid']:7} "
                f"{share(m['same line'], m['configs']):>9} {raised:13} {m['seconds']:7.0f}",
                flush=True,
            )
    for name, counts in corpus.items():
        print(
            f"corpus {name}: {counts['ops']} OpInfos with the dtype ({counts['no samples']} no samples, "
            f"{counts['too slow']} too slow); {counts['calls']} calls, {counts['raised']} raised untraced"
        )
    print(f"({time.perf_counter() - start:.0f} s)")
    if args.why:
        print_classes(runs)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"corpus": corpus, "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
