"""The tests' round trip: a config replayed while the tracer records it
must be traced as the very same line, by the tracer's dialect of the
config's framework (framework.py: the file's)."""

from __future__ import annotations

import os
import tempfile
from typing import Any, List, Tuple

from ..formats.configs import Config
from ..trace.tracer import APITracer
from .builder import build, parse
from .framework import file_framework, replay_framework
from .options import Job, ReplayOptions


def roundtrip(configs: List[Config], level: int, options: ReplayOptions = ReplayOptions()) -> List[Tuple[Config, str]]:
    """Replays each config while tracing `level`, recording only its API; for
    each, what went wrong ("" when the traced line is the config itself)."""
    framework = replay_framework(file_framework(configs, options.dialect))
    problems = []
    for config in configs:
        with framework.names_of_its_own():
            problems.append((config, _roundtrip_one(framework, config, level, options)))
    return problems


def _roundtrip_one(framework: Any, config: Config, level: int, options: ReplayOptions) -> str:
    """Where the tracer writes some of the arguments as the constructor
    calls level 0 saw (ReplayFramework.constructors_traced: Paddle's
    layers), they are built while it traces, their constructors wrapped
    too (their own lines are traced beside the config's); else they are
    built first, and the call alone is traced."""
    try:
        api, args, kwargs = parse(config)
    except Exception as e:  # noqa: BLE001 - Invalid, or the parser's own failure
        return f"not replayed: {type(e).__name__}: {e}"
    job = Job(config, api, args, kwargs, options, framework)
    constructors = framework.constructors_traced(args, kwargs)
    built = None
    if not constructors:
        try:
            built = build(job)
        except Exception as e:  # noqa: BLE001 - Invalid, Skip, BuildError
            return f"not replayed: {type(e).__name__}: {e}"
    with tempfile.TemporaryDirectory() as out:
        tracer = APITracer(
            dialect=framework.name,
            output_path=out,
            levels=level,
            merge_output=True,
            include_apis=[api, *constructors],
            api_list=[api, *constructors],  # (read by the levels made of patches: 0, Paddle's 0 and 1)
        )
        with framework.grad_mode_kept(), tracer:
            if built is None:
                try:
                    built = build(job)
                except Exception as e:  # noqa: BLE001 - Invalid, Skip, BuildError
                    return f"not replayed: {type(e).__name__}: {e}"
            _, built_args, built_kwargs = built
            try:
                # resolved again now: level 0 has put its wrapper there
                framework.resolve(api, config.text)(*built_args, **built_kwargs)
            except Exception as e:  # noqa: BLE001 - the call's own failure, said
                return f"the replay failed: {type(e).__name__}: {e}"
        return _traced(out, config, -1 if constructors else 0)


def _traced(out: str, config: Config, which: int = 0) -> str:
    """ "" where the trace in `out` holds the config's line, else what it
    holds (its line `which`: the last, after the constructors', where they
    are traced)."""
    with open(os.path.join(out, "api_trace.txt"), encoding="utf-8") as f:
        traced = f.read().splitlines()
    return "" if config.text in traced else f"traced as {traced[which] if traced else 'nothing'}"
