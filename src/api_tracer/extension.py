"""Loads the extension, api_tracer._C, under the torch it was built for.

_C links libtorch's C++ API, which has no stable ABI from one torch release
to the next: under another torch it fails to load on an undefined symbol,
or loads and misbehaves. The build records the torch it compiled against in
_build_info.py, beside _C (CMakeLists.txt writes it), and `load` compares
it with the torch this process imports before it loads _C. This module
imports nothing of the package but those two.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Optional

REBUILD = (
    "Rebuild it against the torch you run (`pip install --no-build-isolation .` in "
    'api_tracer\'s source folder; README.md, "Installing into your own environment"), or run '
    "the torch it was built for."
)


def public_version(version: str) -> str:
    """A version without its local label: 2.13.0 for 2.13.0+cpu. Builds of
    one release for different devices (+cpu, +cu126) share its C++ API."""
    return version.split("+", 1)[0]


def torch_mismatch(built: str, running: str) -> Optional[str]:
    """Why an extension built for torch `built` cannot load under torch
    `running`, or None where it can (the same release)."""
    if public_version(built) == public_version(running):
        return None
    return (
        f"api_tracer's extension was built for torch {built}, but this process imports torch "
        f"{running}; the extension runs only with the torch release it was compiled against. " + REBUILD
    )


def load() -> ModuleType:
    """api_tracer._C, once its torch is checked. torch is imported first: it
    loads the libraries _C links (_C has no path to them of its own)."""
    import torch

    try:
        from . import _build_info
    except ImportError as e:
        raise ImportError(f"api_tracer's extension is not built ({e}). " + REBUILD) from e
    problem = torch_mismatch(_build_info.TORCH_VERSION, torch.__version__)
    if problem:
        raise ImportError(problem)
    try:
        return importlib.import_module("._C", __package__)
    except ImportError as e:
        raise ImportError(
            f"{e} (api_tracer's extension was built for torch {_build_info.TORCH_VERSION}; "
            f"this process imports torch {torch.__version__} from {torch.__file__})"
        ) from e
