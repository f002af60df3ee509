"""A fuzz campaign on a Ray cluster (fuzz --ray): `--shards N` campaigns,
each `--shard I/N` of one (campaign.py), each a Ray task that runs a whole
campaign on its node, with its own worker pool (so a crashing case is a
finding, never a lost task). A task gets the seed files and, where its
shard ran before, that shard's directory as it was last saved; it gives
back its directory, kept under -o's shards/I/ and then merged, by
signature, into -o's findings (history.merge), as fuzz --merge does.

Ray runs a task whose node died again elsewhere (MAX_RETRIES), from the
directory it was given: a shard lost mid-run starts over from its last
save, and with --blind and --cases draws the same cases again. A shard
lost past the retries is said; fuzz --ray --resume runs it again."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
from dataclasses import replace
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..formats.configs import ranges_beside
from ..replay.keyed import Shard
from ..replay.on_ray import MAX_RETRIES, connect, import_ray
from .campaign import Campaign, Settings, read_seeds
from .state import STATE, read_state

SHARDS = "shards"  # under -o: each shard's directory, by its index


def _packed(directory: str) -> bytes:
    """A directory as a gzipped tar, its files at the top."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name in sorted(os.listdir(directory)):
            tar.add(os.path.join(directory, name), arcname=name)
    return buffer.getvalue()


def _unpacked(data: bytes, directory: str) -> None:
    """A _packed directory written at `directory` (what was there replaced)."""
    if os.path.isdir(directory):
        shutil.rmtree(directory)
    os.makedirs(directory)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(directory, filter="data")


def seed_files(paths: List[str]) -> List[Tuple[str, bytes, Optional[Tuple[str, bytes]]]]:
    """Each seed file's path (as given), bytes, and its value ranges' file (name, bytes) where it has one."""
    out = []
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        ranges = ranges_beside(path)
        beside = None
        if ranges:
            with open(ranges, "rb") as f:
                beside = (os.path.basename(ranges), f.read())
        out.append((path, data, beside))
    return out


def _run_shard(files: list, settings: Settings, shard: Shard, previous: Optional[bytes]) -> Tuple[bytes, int]:
    """On a node: shard `shard` of the campaign, in a directory of its own
    (the seed files written under their own relative paths, so that the
    findings name the seeds as the driver does), resumed from `previous`
    where given. Its directory packed, and the cases it ran."""
    from ..replay.run import prepare_process

    work = tempfile.mkdtemp(prefix="api-tracer-shard-")
    here = os.getcwd()
    try:
        os.chdir(work)  # (only while the seeds are written and read: the worker pool forks elsewhere)
        try:
            paths = []
            for path, data, beside in files:
                local = path.lstrip(os.sep)
                os.makedirs(os.path.dirname(local) or ".", exist_ok=True)
                with open(local, "wb") as f:
                    f.write(data)
                if beside:
                    with open(os.path.join(os.path.dirname(local), beside[0]), "wb") as f:
                        f.write(beside[1])
                paths.append(local)
            seeds, _ = read_seeds(paths)
        finally:
            os.chdir(here)
        out = os.path.join(work, "out")
        if previous is not None:
            _unpacked(previous, out)
        else:
            os.makedirs(out)
        prepare_process(settings.options)
        campaign = Campaign(seeds, replace(settings, out=out, shard=shard))
        if previous is not None:
            campaign.resume(read_state(os.path.join(out, STATE)))
        campaign.run()
        campaign.write_reports()
        return _packed(out), campaign.cases_run
    finally:
        shutil.rmtree(work, ignore_errors=True)


def campaign_on_ray(
    paths: List[str],
    settings: Settings,
    address: str,
    shards: Optional[int],
    resume: bool,
    on_shard: Callable[[int, int], None] = lambda index, cases: None,
) -> Tuple[List[str], List[int]]:
    """The campaign's `shards` shards as Ray tasks on the cluster at
    `address` (None: as many as the cluster's CPUs hold, `settings.jobs`
    CPUs each), each `settings.jobs` CPUs; each shard's directory kept as
    -o/shards/I as it comes back (`on_shard(I, cases)`). The directories of
    the shards that came back, and the shards lost past the retries."""
    ray = import_ray("fuzz")
    started_here = not ray.is_initialized()
    if started_here:
        connect(ray, address, "fuzz")
    remote = ray.remote(num_cpus=settings.jobs, max_retries=MAX_RETRIES, retry_exceptions=False)(_run_shard)
    files = seed_files(paths)
    if shards is None:
        shards = max(1, int(ray.cluster_resources().get("CPU", 1)) // settings.jobs)
    root = os.path.join(settings.out, SHARDS)
    os.makedirs(root, exist_ok=True)
    pending: Dict[Any, int] = {}
    done: List[str] = []
    lost: List[int] = []
    try:
        files_ref = ray.put(files)
        for index in range(shards):
            directory = os.path.join(root, str(index))
            previous = _packed(directory) if resume and os.path.isfile(os.path.join(directory, STATE)) else None
            pending[remote.remote(files_ref, settings, Shard(index, shards), previous)] = index
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                index = pending.pop(ref)
                try:
                    packed, cases = ray.get(ref)
                except Exception:  # noqa: BLE001 - the shard lost past its retries (its node died, again and again)
                    lost.append(index)
                    continue
                directory = os.path.join(root, str(index))
                _unpacked(packed, directory)
                done.append(directory)
                on_shard(index, cases)
    finally:
        if started_here:
            ray.shutdown()
    return sorted(done), sorted(lost)
