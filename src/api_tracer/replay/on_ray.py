"""A keyed replay's configs on a Ray cluster (replay --ray): Ray places
batches of configs on the cluster's nodes, and on its node each batch runs
in a worker pool of its own (run.run_stream: forked processes, each config's
crash, hang or memory limit a result, as under --isolate). Ray is no crash
boundary: it retries a task whose process died, and it has no timeout of a
task; the pool is, so a crashing config costs one config and Ray never sees
it. What Ray sees die is a node (or the process a batch runs in), and then
it runs the batch again elsewhere (MAX_RETRIES); a batch still lost after
that is left to --resume, its configs said.

The driver (this process) reads the configs a line at a time, keeps at most
IN_FLIGHT batches a CPU of the cluster handed out, and hands each result to
`on_result` as its batch comes back: a report written as the run goes."""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Tuple

from ..errors import UsageError
from ..formats.configs import Config
from .options import ReplayOptions
from .results import Result

INSTALL = "pip install 'api-tracer[ray]'"
MAX_RETRIES = 3  # a batch whose node (or process) died runs again this often, elsewhere where Ray can
IN_FLIGHT = 2  # batches handed out a CPU of the cluster


def import_ray(command: str) -> Any:
    """Ray, or a UsageError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise UsageError(f"{command}: --ray: Ray is not installed here ({INSTALL})") from None
    return ray


def connect(ray: Any, address: str, command: str) -> None:
    """Connects to the cluster at `address` ("auto": the one this machine
    belongs to; "local": one started for the run, and stopped with it)."""
    kwargs: Dict[str, Any] = dict(logging_level=logging.WARNING, log_to_driver=False)
    try:
        if address == "local":
            ray.init(include_dashboard=False, **kwargs)
        else:
            ray.init(address=address, **kwargs)
    except Exception as e:  # noqa: BLE001 - whatever Ray says of an address it cannot reach
        raise UsageError(f"{command}: --ray {address}: {type(e).__name__}: {str(e).strip().splitlines()[0]}") from None


# A Ray worker process's pool, kept between the batches it runs (a worker's first call pays torch's lazy
# start-up: some 0.6 s a batch when each had a pool of its own), by the run it serves.
_POOLS: Dict[bytes, Any] = {}


def _batch(configs: List[Tuple[str, Config]], options: ReplayOptions, jobs: int, timeout: Optional[float]) -> list:
    """Runs on a node: a batch of (key, config) in a pool of `jobs`
    workers, kept for the run's next batch in this process; the results,
    each with its key."""
    import hashlib
    import pickle

    from .run import pool_for, run_stream

    out: List[Result] = []

    def keep(key: str, r: Result) -> None:
        r.key = key
        out.append(r)

    run = hashlib.sha256(pickle.dumps((options, jobs, timeout))).digest()
    if run not in _POOLS:
        for other in _POOLS.values():  # (another run's: its workers replay under other options)
            other.close(idle=True)
        _POOLS.clear()
        _POOLS[run] = pool_for(options, jobs, timeout)
    run_stream(configs, jobs, options, keep, timeout, workers=_POOLS[run])
    return out


def run_on_ray(
    tasks: Iterable[Tuple[str, Config]],
    address: str,
    options: ReplayOptions,
    on_result: Callable[[Result], None],
    *,
    jobs: int = 1,
    batch: int = 32,
    timeout: Optional[float] = None,
    command: str = "replay",
    nodes: Optional[Callable[[int], None]] = None,
) -> Tuple[List[Tuple[str, Config]], List[str]]:
    """Replays the (key, config) pairs of `tasks` on the cluster at
        `address`, `batch` configs a Ray task, each task `jobs` CPUs and a pool
        of as many workers; `on_result` for each result as its batch comes
        back, `nodes(count)` with the count of live nodes now and then. Every
    node imports api_tracer (installed there, as on the driver). The
        configs of batches lost past MAX_RETRIES (none where the run finished),
    and why each batch was lost (a node that died, or what a batch raised).
    A task asks for `jobs` CPUs, and a GPU where the device is CUDA; a
    UsageError where no node has that many."""
    ray = import_ray(command)
    started_here = not ray.is_initialized()
    if started_here:
        connect(ray, address, command)
    gpus = 1 if options.device.startswith("cuda") else 0
    lost: List[Tuple[str, Config]] = []
    why: List[str] = []
    try:
        largest = max((n.get("Resources", {}).get("CPU", 0) for n in ray.nodes() if n.get("Alive")), default=0)
        if largest < jobs:
            raise UsageError(
                f"{command}: --ray: --jobs {jobs}: no node of the cluster has that many CPUs ({largest:g})"
            )
        remote = ray.remote(num_cpus=jobs, num_gpus=gpus, max_retries=MAX_RETRIES, retry_exceptions=False)(_batch)
        options_ref = ray.put(options)
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        limit = max(2, IN_FLIGHT * cpus // max(1, jobs))
        pending: Dict[Any, List[Tuple[str, Config]]] = {}
        chunks = _chunks(iter(tasks), batch)
        for chunk in chunks:
            pending[remote.remote(chunk, options_ref, jobs, timeout)] = chunk
            while len(pending) >= limit:
                _collect(ray, pending, on_result, lost, why, nodes)
        while pending:
            _collect(ray, pending, on_result, lost, why, nodes)
    finally:
        if started_here:
            ray.shutdown()
    return lost, why


def _chunks(tasks: Iterator[Tuple[str, Config]], size: int) -> Iterator[List[Tuple[str, Config]]]:
    while True:
        chunk = [pair for _, pair in zip(range(size), tasks)]
        if not chunk:
            return
        yield chunk


def _collect(
    ray: Any, pending: Dict[Any, list], on_result: Callable, lost: list, why: list, nodes: Optional[Callable]
) -> None:
    """Waits for a batch to come back, and hands on its results (or keeps its configs as lost)."""
    done, _ = ray.wait(list(pending), num_returns=1)
    for ref in done:
        chunk = pending.pop(ref)
        try:
            results = ray.get(ref)
        except Exception as e:  # noqa: BLE001 - the batch lost: its node died past the retries, or it raised
            lost.extend(chunk)
            why.append(f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:300] if str(e).strip() else ''}")
            continue
        for r in results:
            on_result(r)
    global _LOOKED
    if nodes and time.monotonic() - _LOOKED >= 2.0:  # (a question to the cluster's control store: not each batch)
        _LOOKED = time.monotonic()
        nodes(sum(1 for n in ray.nodes() if n.get("Alive")))


_LOOKED = 0.0
