"""PaddlePaddle: level 0 (dialect.py; what it leaves alone and Paddle's
dtypes, names.py), its API lists (api_list.py and the YAML files), replay
(replay.py, policy.py, preconditions.py), and PaddleAPITest's config format
(paddleapitest.py); paddle itself, imported once (paddle_module)."""

import sys
from typing import Any

from .. import Export, Framework

FRAMEWORK = Framework(
    name="paddle",
    dialect="api_tracer.frameworks.paddle.dialect:PaddleDialect",
    api_lists="api_tracer.frameworks.paddle.api_list:PaddleLists",
    replay="api_tracer.frameworks.paddle.replay:PaddleReplay",
    exports={
        "paddleapitest": Export(
            "PaddleAPITest's config files (tester/api_config/config_analyzer.py reads them); Paddle APIs only",
            "api_tracer.frameworks.paddle.paddleapitest:write_paddleapitest",
            "api_tracer.frameworks.paddle.paddleapitest:apis_held",
        )
    },
)


def paddle_module() -> Any:
    """paddle, imported once (its import warns that ccache is missing:
    said to no one)."""
    if "paddle" not in sys.modules:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import paddle  # noqa: F401 - imported for sys.modules, quietly
    return sys.modules["paddle"]
