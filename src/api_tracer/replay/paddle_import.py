"""paddle, imported by replay: a module of its own, below every other of
Paddle's replay (paddle_replay.py, paddle_policy.py,
paddle_preconditions.py) and frameworks.py, which all need it."""
from __future__ import annotations

import sys
from typing import Any


def paddle_module() -> Any:
    """paddle, imported once (its import warns that ccache is missing:
    said to no one)."""
    if "paddle" not in sys.modules:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import paddle  # noqa: F401
    return sys.modules["paddle"]
