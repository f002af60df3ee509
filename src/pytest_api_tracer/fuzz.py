"""--api-fuzz FILE: each config line of FILE collected as a test item that
fuzzes it (api-tracer fuzz, that line its only seed) for --api-fuzz-time
seconds, failing with the reproducers of what it found; each item's
campaign is DIR/items/NAME (DIR: --api-fuzz-out), and the session merges
them into DIR/findings.jsonl and DIR/findings.yaml (under pytest-xdist, the
controller, once the workers are done)."""

from __future__ import annotations

import hashlib
import os
import shutil
from typing import Any, Iterator

import pytest

from .items import LineItem, PluginFile, ReplayFailure
from .options import replay_options_of


class FuzzSession:
    def __init__(self, config: Any, path: str) -> None:
        from api_tracer.flags import FUZZ_MAX_BYTES
        from api_tracer.fuzz.campaign import ORACLES, RUN_ORACLES, oracles_of

        self.path = path
        self.out = os.path.abspath(config.getoption("api_fuzz_out"))
        self.time = config.getoption("api_fuzz_time")
        oracle = config.getoption("api_fuzz_oracle")
        try:
            self.oracles = oracles_of(oracle) if oracle else ORACLES
        except ValueError as e:
            raise pytest.UsageError(f"--api-fuzz-oracle: {e}") from None
        self.options = replay_options_of(
            config,
            ("imports", "libraries"),
            max_bytes=FUZZ_MAX_BYTES,
            checks=[o for o in self.oracles if o not in RUN_ORACLES],
        )
        self.worker = hasattr(config, "workerinput")  # a pytest-xdist worker: the controller merges
        config.args[:] = [path]

    def pytest_collect_file(self, file_path: Any, parent: Any) -> Any:
        if os.path.abspath(str(file_path)) == self.path:
            return FuzzFile.from_parent(parent, path=file_path, session_plugin=self)
        return None

    def pytest_sessionfinish(self, session: Any) -> None:
        if self.worker or not os.path.isdir(os.path.join(self.out, "items")):
            return
        from api_tracer.fuzz import Findings

        merged = Findings(self.out)
        for name in sorted(os.listdir(os.path.join(self.out, "items"))):
            one = Findings(os.path.join(self.out, "items", name))
            one.load()
            merged.merge(one)
        merged.save()


class FuzzFile(PluginFile):
    def collect(self) -> Iterator[Any]:
        from api_tracer.fuzz import read_seeds

        seeds, _ = read_seeds([str(self.path)])
        for seed in seeds:
            yield FuzzItem.from_parent(self, name=f"L{seed.number}:{seed.line.api}", entry=seed, lineno=seed.number)


class FuzzItem(LineItem):
    """A seed line, fuzzed for --api-fuzz-time seconds (entry: the seed)."""

    def runtest(self) -> None:
        from api_tracer.fuzz import Campaign, Settings

        plugin: FuzzSession = self.parent.session_plugin
        seed = self.entry
        digest = hashlib.sha256(seed.text.encode("utf-8", "backslashreplace")).hexdigest()[:16]
        out = os.path.join(plugin.out, "items", f"L{seed.number}-{digest}")
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        campaign = Campaign(
            [seed], Settings(out, oracles=plugin.oracles, time_limit=plugin.time, options=plugin.options)
        )
        campaign.run()
        if len(campaign.findings):
            raise ReplayFailure(
                f"{len(campaign.findings)} findings fuzzing {seed.file}:{seed.number} "
                f"({campaign.cases_run} cases; {out}):\n"
                + "\n".join(
                    f"  {f.kind}"
                    + (f" [--check {f.check}]" if f.check else "")
                    + f": {f.line}\n      {f.message[:300]}"
                    for f in campaign.findings
                )
            )
