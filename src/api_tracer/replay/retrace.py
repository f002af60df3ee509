"""The tests' round trip: a config replayed while the tracer records it
must be traced as the very same line."""
from __future__ import annotations

import os
import tempfile
from typing import List, Tuple

from ..tracer import APITracer
from .builder import prepare
from .configs import Config
from .options import ReplayOptions
from .resolve import Resolver
from .side import grad_mode_kept


def roundtrip(configs: List[Config], level: int,
              options: ReplayOptions = ReplayOptions()) -> List[Tuple[Config, str]]:
    """Replays each config while tracing `level`, recording only its API; for
    each, what went wrong ("" when the traced line is the config itself)."""
    resolver = Resolver()
    problems = []
    for config in configs:
        try:
            api, func, args, kwargs = prepare(config, options, resolver)
        except Exception as e:  # noqa: BLE001 - Invalid, Skip, BuildError, or the parser's own failure
            problems.append((config, f"not replayed: {type(e).__name__}: {e}"))
            continue
        with tempfile.TemporaryDirectory() as out:
            tracer = APITracer(output_path=out, levels=level, merge_output=True, include_apis=[api], api_list=[api]
                               if level == 0 else None)
            with grad_mode_kept(), tracer:
                try:
                    # resolved again now: level 0 has put its wrapper there
                    resolver.resolve(api, config.text)(*args, **kwargs)
                except Exception as e:  # noqa: BLE001
                    problems.append((config, f"the replay failed: {type(e).__name__}: {e}"))
                    continue
            with open(os.path.join(out, "api_trace.txt"), encoding="utf-8") as f:
                traced = f.read().splitlines()
        if config.text not in traced:
            problems.append((config, f"traced as {traced[0] if traced else 'nothing'}"))
        else:
            problems.append((config, ""))
    return problems
