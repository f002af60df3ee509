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
import sys
import tarfile
import tempfile
from dataclasses import replace
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..errors import InputError
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
    """A _packed directory written at `directory`, what was there replaced
    once the new one is whole (a full disk leaves the old one)."""
    parent = os.path.dirname(os.path.abspath(directory))
    os.makedirs(parent, exist_ok=True)
    new = tempfile.mkdtemp(prefix=".unpacking-", dir=parent)
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            tar.extractall(new, filter="data")
        old = None
        if os.path.isdir(directory):
            old = tempfile.mkdtemp(prefix=".replaced-", dir=parent)
            os.rename(directory, os.path.join(old, "dir"))
        os.rename(new, directory)
        if old:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        raise


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
    (each seed file in a folder of its own, the findings naming it as the
    driver does), resumed from `previous` where given. Its directory packed, and the cases it ran."""
    from ..replay.run import prepare_process

    work = tempfile.mkdtemp(prefix="api-tracer-shard-")
    try:
        # Each seed file in a folder of its own (with the value ranges beside it), read there, then named
        # as the driver names it: its findings say where their seeds came from as one campaign's would.
        local: Dict[str, str] = {}
        for i, (path, data, beside) in enumerate(files):
            folder = os.path.join(work, "seeds", str(i))
            os.makedirs(folder)
            local[os.path.join(folder, os.path.basename(path))] = path
            with open(os.path.join(folder, os.path.basename(path)), "wb") as f:
                f.write(data)
            if beside:
                with open(os.path.join(folder, beside[0]), "wb") as f:
                    f.write(beside[1])
        seeds, _ = read_seeds(list(local))
        for seed in seeds:
            seed.file = local[seed.file]
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
    every shard there (those of an earlier run too, --resume), and the
    shards lost past the retries this time."""
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
                except Exception as e:  # noqa: BLE001 - lost: its node died past the retries, or it raised
                    lost.append(index)
                    last = str(e).strip().splitlines()[-1][:300] if str(e).strip() else ""
                    print(f"fuzz: shard {index} lost: {type(e).__name__}: {last}", file=sys.stderr)
                    continue
                _unpacked(packed, os.path.join(root, str(index)))
                on_shard(index, cases)
    finally:
        if started_here:
            ray.shutdown()
    kept = [os.path.join(root, name) for name in sorted(os.listdir(root), key=lambda n: (len(n), n))]
    return [d for d in kept if os.path.isfile(os.path.join(d, STATE))], sorted(lost)


def shards_kept(out: str) -> Optional[int]:
    """How many shards the campaign in -o was split into (the shard each
    kept directory's campaign.json names), None where it keeps none; an
    InputError where two name different counts."""
    root = os.path.join(out, SHARDS)
    counts = set()
    for name in os.listdir(root) if os.path.isdir(root) else ():
        state = os.path.join(root, name, STATE)
        if os.path.isfile(state):
            counts.add(read_state(state).shard.split("/")[1])
    if len(counts) > 1:
        raise InputError(root, f"shards of campaigns split in different counts ({', '.join(sorted(counts))})")
    return int(counts.pop()) if counts else None
