"""Tracing the processes a traced program starts (--follow-children).

- Spawned processes (multiprocessing spawn, subprocess, torchrun's workers)
  inherit two environment variables: API_TRACER_CHILD_OPTIONS (the tracer's
  options, as JSON) and a PYTHONPATH that puts _child/sitecustomize.py first,
  which starts a tracer when the interpreter starts.
- Forked processes (multiprocessing fork, DataLoader workers) inherit the
  parent's tracer in memory: tracer.py's fork handler abandons it (the
  child never writes the parent's files) and, when children are followed,
  starts the child's own.

Each process writes DIR/rank-N or DIR/pid-N: no two processes ever write
one file. rank-N is for the process a torch.distributed launcher started
as rank N (the RANK variable); processes that merely inherit their parent's
RANK (a rank's DataLoader workers) take pid-N. A traced process passes its
own RANK down in API_TRACER_PARENT_RANK so that its children can tell.
multiprocessing's own helper processes (resource tracker, forkserver) run
none of the program's code and are not traced.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict

ENV_OPTIONS = "API_TRACER_CHILD_OPTIONS"
ENV_PARENT_RANK = "API_TRACER_PARENT_RANK"
CHILD_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_child")


def follow_children(options: Dict[str, Any]) -> None:
    """Makes the processes started from now on trace themselves."""
    options = dict(options, output_path=os.path.abspath(options["output_path"]))
    os.environ[ENV_OPTIONS] = json.dumps(options)
    os.environ[ENV_PARENT_RANK] = os.environ.get("RANK", "")
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = CHILD_DIR + (os.pathsep + path if path else "")


def start_tracer(tracer_class: Callable[..., Any]) -> None:
    """Starts this child's own tracer, into its own set under the parent's
    output path. tracer_class is APITracer, passed in by the caller: tracer.py
    calls this in a forked child, so this module does not import it."""
    from .signals import write_files_when_terminated

    options = json.loads(os.environ[ENV_OPTIONS])
    rank = os.environ.get("RANK", "")
    launched_as_rank = rank.isdigit() and rank != os.environ.get(ENV_PARENT_RANK)
    name = f"rank-{rank}" if launched_as_rank else f"pid-{os.getpid()}"
    os.environ[ENV_PARENT_RANK] = rank
    write_files_when_terminated()
    tracer_class(**dict(options, output_path=os.path.join(options["output_path"], name))).start()


# Helper processes multiprocessing starts for itself: they run none of the
# program's code, so they are not traced.
HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")


def is_helper() -> bool:
    """Whether this process is one of HELPERS."""
    import sys

    command = " ".join(getattr(sys, "orig_argv", sys.argv))
    return any(helper in command for helper in HELPERS)
