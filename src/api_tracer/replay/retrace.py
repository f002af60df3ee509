"""The tests' round trip: a config replayed while the tracer records it
must be traced as the very same line. Paddle's configs (their file's
framework, frameworks.py) are traced by the tracer's dialect of that name
(APITracer(dialect="paddle"): level 0)."""
from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Any, List, Tuple

from ..tracer import APITracer
from .builder import prepare
from .configs import Config
from .frameworks import file_framework, resolver_for
from .options import ReplayOptions
from .side import grad_mode_kept


def roundtrip(configs: List[Config], level: int,
              options: ReplayOptions = ReplayOptions()) -> List[Tuple[Config, str]]:
    """Replays each config while tracing `level`, recording only its API; for
    each, what went wrong ("" when the traced line is the config itself)."""
    framework = file_framework(configs, options.dialect)
    resolver = resolver_for(framework)
    problems = []
    for config in configs:
        with _names(framework):
            problems.append((config, _roundtrip_one(framework, config, level, options, resolver)))
    return problems


def _roundtrip_one(framework: str, config: Config, level: int, options: ReplayOptions, resolver: Any) -> str:
    if framework == "paddle":
        return _paddle_roundtrip_one(config, level, options, resolver)
    try:
        api, func, args, kwargs = prepare(config, options, resolver)
    except Exception as e:  # noqa: BLE001 - Invalid, Skip, BuildError, or the parser's own failure
        return f"not replayed: {type(e).__name__}: {e}"
    with tempfile.TemporaryDirectory() as out:
        tracer = APITracer(output_path=out, levels=level, merge_output=True, include_apis=[api],
                           api_list=[api] if level == 0 else None)
        with grad_mode_kept(), tracer:
            try:
                # resolved again now: level 0 has put its wrapper there
                resolver.resolve(api, config.text)(*args, **kwargs)
            except Exception as e:  # noqa: BLE001
                return f"the replay failed: {type(e).__name__}: {e}"
        return _traced(out, config)


def _paddle_roundtrip_one(config: Config, level: int, options: ReplayOptions, resolver: Any) -> str:
    """Paddle's level 0 writes a layer as the constructor call it saw making
    it: the arguments are built while it traces, their constructors
    wrapped too (their own lines are traced beside the config's)."""
    from ..values import Call
    from .builder import _arguments, parse
    from .paddle_replay import build, grad_mode_kept as paddle_grad_mode_kept

    try:
        api, args, kwargs = parse(config)
    except Exception as e:  # noqa: BLE001 - Invalid, or the parser's own failure
        return f"not replayed: {type(e).__name__}: {e}"
    constructors = sorted({leaf.name for _, leaf in _arguments(args, kwargs)
                           if isinstance(leaf, Call) and leaf.name.startswith("paddle.")})
    with tempfile.TemporaryDirectory() as out:
        tracer = APITracer(dialect="paddle", output_path=out, levels=level, merge_output=True,
                           api_list=[api, *constructors] if level == 0 else None)
        with paddle_grad_mode_kept(), tracer:
            try:
                func, args, kwargs = build(config, api, args, kwargs, options, resolver)
            except Exception as e:  # noqa: BLE001 - Invalid, Skip, BuildError
                return f"not replayed: {type(e).__name__}: {e}"
            try:
                resolver.resolve(api, config.text)(*args, **kwargs)
            except Exception as e:  # noqa: BLE001
                return f"the replay failed: {type(e).__name__}: {e}"
        return _traced(out, config, -1)


def _traced(out: str, config: Config, which: int = 0) -> str:
    """"" where the trace in `out` holds the config's line, else what it
    holds (its line `which`: Paddle's last, after the constructors')."""
    with open(os.path.join(out, "api_trace.txt"), encoding="utf-8") as f:
        traced = f.read().splitlines()
    return "" if config.text in traced else f"traced as {traced[which] if traced else 'nothing'}"


def _names(framework: str) -> Any:
    """Paddle's parameter names of the config's own (paddle_replay.names_of_its_own)."""
    if framework == "paddle":
        from .paddle_replay import names_of_its_own

        return names_of_its_own()
    return contextlib.nullcontext()
