"""A replay keyed by config (replay/keyed.py): --shard I/N partitions by
config, --resume goes on after a kill, `api-tracer collect` puts the shards
together, and --ray runs on a Ray cluster that loses a node on the way:
each time every config is reported exactly once, with the status a
single run gives it. And a fuzz campaign split likewise (--shard, --ray)
finds what one campaign of the same case numbers finds."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Iterator, Tuple

import pytest

from api_tracer.replay.keyed import KeySet, Shard, key_of, parse_shard
from support import CLI, run_cli, user_code_env


def corpus(path: Path, n: int = 48) -> Path:
    """n distinct configs of ok, failing and invalid lines, with repeats among them."""
    lines = []
    for i in range(n):
        kind = i % 6
        if kind == 0:
            lines.append(f'torch.mm(Tensor([{i + 2}, 3], "float32"), Tensor([3, 4], "float32"))')
        elif kind == 1:
            lines.append(f'torch.mm(Tensor([{i + 2}, 3], "float32"), Tensor([2, 4], "float32"))')  # fails
        elif kind == 2:
            lines.append(f'torch.add(Tensor([{i}, 3], "float64"), {i}.5)')
        elif kind == 3:
            lines.append(f'torch.linalg.svd(Tensor([{8 + i}, 8], "float32"))')
        elif kind == 4:
            lines.append(f'torch.relu(Tensor([{i}], "float16")')  # invalid: no closing parenthesis
        else:
            lines.append(f'torch.nn.functional.softmax(Tensor([3, {i}], "float32"), dim=-1)')
    path.write_text("\n".join(lines + lines[:5]) + "\n")  # (5 repeats, each replayed once)
    return path


def statuses(report: Path) -> Dict[str, str]:
    """key -> status of a report, asserting each key is there once."""
    out: Dict[str, str] = {}
    for line in report.read_text().splitlines():
        r = json.loads(line)
        assert r["key"] not in out, f"{r['config']} reported twice"
        out[r["key"]] = r["status"]
    return out


@pytest.fixture(scope="module")
def single_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The report of one plain, isolated run of the corpus."""
    d = tmp_path_factory.mktemp("single")
    configs = corpus(d / "configs.txt")
    done = run_cli("replay", str(configs), "--isolate", "-o", str(d / "all.jsonl"))
    assert done.returncode == 1, done.stderr
    out = statuses(d / "all.jsonl")
    assert len(out) == 48 and set(out.values()) == {"ok", "failed", "invalid"}
    return d / "all.jsonl"


@pytest.fixture(scope="module")
def single(single_report: Path) -> Dict[str, str]:
    """key -> status of the single run."""
    return statuses(single_report)


def test_a_shard_holds_the_same_configs_whatever_the_order_of_the_lines() -> None:
    digest = b"\x01" * 32
    texts = [f"torch.relu(Tensor([{i}]))" for i in range(300)]
    shards = [Shard(i, 4) for i in range(4)]
    owner = {t: [s.holds(key_of(digest, t)) for s in shards].index(True) for t in texts}
    shuffled = texts[:]
    random.Random(1).shuffle(shuffled)
    assert {t: [s.holds(key_of(digest, t)) for s in shards].index(True) for t in shuffled} == owner
    sizes = [list(owner.values()).count(i) for i in range(4)]
    assert min(sizes) > 40, sizes  # (each shard a fair share)
    assert parse_shard("3/4") == Shard(3, 4)
    for bad in ("4/4", "-1/4", "1", "a/b", "0/0"):
        with pytest.raises(ValueError):
            parse_shard(bad)


def test_a_key_set_holds_what_was_added_across_its_folds() -> None:
    keys = KeySet()
    keys.FOLD = 64
    rng = random.Random(2)
    added = [rng.getrandbits(64) for _ in range(1000)]
    for k in added:
        keys.add(k)
    assert len(keys) == 1000 and all(k in keys for k in added)
    assert not any(rng.getrandbits(64) in keys for _ in range(1000))


def test_three_shards_one_killed_and_resumed_collect_to_the_single_run(
    tmp_path: Path, single: Dict[str, str], single_report: Path
) -> None:
    configs = corpus(tmp_path / "configs.txt")
    reports = [tmp_path / f"shard{i}.jsonl" for i in range(3)]
    for i in (0, 2):
        done = run_cli("replay", str(configs), "--shard", f"{i}/3", "--isolate", "-o", str(reports[i]))
        assert done.returncode in (0, 1), done.stderr
    # Shard 1 is killed mid-run: one of its configs hangs its worker (no --timeout), and once the report
    # holds results the whole process group is killed, as a lost machine would be.
    mine = [k for k in single if Shard(1, 3).holds(int(k, 16))]
    texts = {r["key"]: r["config"] for r in map(json.loads, _lines(single_report))}
    hung = texts[mine[len(mine) // 2]]
    env = {**os.environ, "API_TRACER_REPLAY_HANG_ON": hung}
    argv = [*CLI, "replay", str(configs), "--shard", "1/3", "--isolate", "--timeout", "0", "-o", str(reports[1])]
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and len(_lines(reports[1])) < 3:
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    before = len(_lines(reports[1]))
    assert 3 <= before < len(mine), "the kill came mid-run"
    unfinished = run_cli("collect", *map(str, reports))
    assert unfinished.returncode == 1 and f"INCOMPLETE: {reports[1]}" in unfinished.stdout, unfinished.stdout
    with open(reports[1], "a") as f:  # (a line cut short, as a kill while writing leaves it)
        f.write('{"file": "configs.txt", "line": 9')
    refused = run_cli("collect", *map(str, reports), "-o", str(tmp_path / "x.jsonl"))
    assert refused.returncode == 2 and "shard1.jsonl:" in refused.stderr and "--resume" in refused.stderr
    resumed = run_cli("replay", str(configs), "--shard", "1/3", "--isolate", "--resume", "-o", str(reports[1]))
    assert resumed.returncode == 1, resumed.stderr
    assert f"{before} configs the report held already, {len(mine) - before} replayed now" in resumed.stdout
    merged = tmp_path / "merged.jsonl"
    collected = run_cli("collect", *map(str, reports), "-o", str(merged), "--junit", str(tmp_path / "merged.xml"))
    assert collected.returncode == 1, collected.stderr  # (the corpus has failing lines, as the single run)
    assert statuses(merged) == single
    assert f"{len(single)} configs:" in collected.stdout and "MISSING" not in collected.stdout
    assert f'tests="{len(single)}"' in (tmp_path / "merged.xml").read_text()
    # Two shards of three are not the whole run, and say so.
    partial = run_cli("collect", str(reports[0]), str(reports[2]))
    assert partial.returncode == 1 and "MISSING shards 1/3" in partial.stdout
    # A report is resumed only by the run that wrote it.
    other = run_cli("replay", str(configs), "--shard", "1/3", "--seed", "3", "--resume", "-o", str(reports[1]))
    assert other.returncode == 2 and "seed 0 there, 3 here" in other.stderr


def _shards_back(out: Path) -> bool:
    """Whether a shard of a fuzz --ray campaign has come back (its directory kept in -o/shards/)."""
    return (out / "shards").is_dir() and bool(os.listdir(out / "shards"))


def _lines(path: Path) -> list:
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    """A local Ray cluster: a head with no CPU and two nodes of one CPU
    each. The nodes listen on addresses of their own (127.0.0.2, .3): a
    driver attaches to a raylet of its own machine's address, which must
    be the head's, as on a real cluster, where the driver runs on the
    head. They import the user's code of the tests (fuzz_planted)."""
    from ray.cluster_utils import Cluster

    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = user_code_env()["PYTHONPATH"]  # (what the nodes' processes inherit)
    made = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    try:
        made.nodes_added = [made.add_node(num_cpus=1, node_ip_address=f"127.0.0.{2 + i}") for i in range(2)]
        made.wait_for_nodes()
        yield made
    finally:
        made.shutdown()
        if before is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = before


def test_a_ray_cluster_that_loses_a_node_reports_every_config_once(
    tmp_path: Path, single: Dict[str, str], cluster: Any
) -> None:
    """Once results come back one node is removed (its raylet killed), and
    the run finishes on the other with the single run's statuses."""
    configs = corpus(tmp_path / "configs.txt")
    report = tmp_path / "ray.jsonl"
    argv = [*CLI, "replay", str(configs), "--ray", cluster.address, "--batch", "2", "-o", str(report)]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and len(_lines(report)) < 4 and process.poll() is None:
        time.sleep(0.1)
    at_kill = len(_lines(report))
    cluster.remove_node(cluster.nodes_added[0], allow_graceful=False)
    out, err = process.communicate(timeout=900)
    assert process.returncode == 1, err  # (the corpus has failing lines)
    assert at_kill < len(single), "the node was lost mid-run"
    assert statuses(report) == single
    assert "LOST" not in out
    cluster.nodes_added[0] = cluster.add_node(num_cpus=1, node_ip_address="127.0.0.2")  # (for the next test)
    cluster.wait_for_nodes()


# One --blind campaign's cases, by number: the planted seeds but the hang's and the out-of-memory crash's,
# whose timeouts and kills would steer the draws by the machine's load.
CAMPAIGN = ["--blind", "--cases", "150", "--jobs", "1", "--timeout", "3", "--import", "fuzz_planted"]


@pytest.fixture(scope="module")
def one_campaign(tmp_path_factory: pytest.TempPathFactory) -> Tuple[Path, Path]:
    """The seeds, and the directory of one campaign of CAMPAIGN over them."""
    import fuzz_planted

    d = tmp_path_factory.mktemp("campaign")
    seeds = d / "seeds.yaml"
    left = [line for name, line in fuzz_planted.SEEDS.items() if name not in ("repeat_rows", "outer_table")]
    seeds.write_text("".join(f"{line}\n" for line in [*left, *fuzz_planted.TORCH_SEEDS]))
    one = run_cli("fuzz", str(seeds), "-o", str(d / "one"), *CAMPAIGN, env=user_code_env())
    assert one.returncode == 1, one.stdout + one.stderr
    assert json.loads((d / "one" / "campaign.json").read_text())["next_case"] == 150
    return seeds, d / "one"


def signatures(directory: Path) -> list:
    return sorted(json.loads(line)["signature"] for line in _lines(directory / "findings.jsonl"))


def test_three_fuzz_shards_one_killed_and_resumed_find_what_one_campaign_finds(
    tmp_path: Path, one_campaign: Tuple[Path, Path]
) -> None:
    """Three --shard campaigns of CAMPAIGN, the second killed mid-run and
    resumed, whose findings fuzz --merge joins: one campaign's. One worker
    each, so that which seeds run as they are is known before any case is
    drawn from them."""
    seeds, one = one_campaign
    env = user_code_env()
    for i in (0, 2):
        r = run_cli("fuzz", str(seeds), "-o", str(tmp_path / f"shard{i}"), "--shard", f"{i}/3", *CAMPAIGN, env=env)
        assert r.returncode == 1, r.stdout + r.stderr
    argv = [*CLI, "fuzz", str(seeds), "-o", str(tmp_path / "shard1"), "--shard", "1/3", *CAMPAIGN]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, env=env)
    state = tmp_path / "shard1" / "campaign.json"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and (not state.exists() or json.loads(state.read_text())["next_case"] < 40):
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    killed_at = json.loads(state.read_text())["next_case"]
    assert 40 <= killed_at < 150, killed_at
    shard1 = ["fuzz", str(seeds), "-o", str(tmp_path / "shard1"), "--resume", *CAMPAIGN]
    wrong = run_cli(*shard1, "--shard", "0/3", env=env)
    assert wrong.returncode == 2 and "--shard 1/3" in wrong.stderr, wrong.stderr
    resumed = run_cli(*shard1, "--shard", "1/3", env=env)
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    shards = [tmp_path / f"shard{i}" for i in range(3)]
    m = run_cli("fuzz", "--merge", *map(str, shards), "-o", str(tmp_path / "merged"), env=env)
    assert m.returncode == 1, m.stdout + m.stderr
    assert signatures(tmp_path / "merged") == signatures(one) and len(signatures(one)) >= 5
    for shard in shards:  # (each drew its case numbers up to 150, and stopped at its first past it)
        assert 150 <= json.loads((shard / "campaign.json").read_text())["next_case"] < 153


def test_a_fuzz_campaign_on_ray_finds_what_one_campaign_finds(
    tmp_path: Path, cluster: Any, one_campaign: Tuple[Path, Path]
) -> None:
    """fuzz --ray --shards 3 of CAMPAIGN: the shards' findings, merged
    into -o's, are those of one campaign of the same seed and case
    numbers; a node removed once the first shard is back costs nothing."""
    seeds, one = one_campaign
    flags = CAMPAIGN
    env = user_code_env()
    out = tmp_path / "on_ray"
    argv = [*CLI, "fuzz", str(seeds), "-o", str(out), "--ray", cluster.address, "--shards", "3", *flags]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    # (bounded by the work, not by the clock: under pytest-xdist and a wheel's build, the CPUs are shared)
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline and not _shards_back(out) and process.poll() is None:
        time.sleep(0.2)
    lost_node = process.poll() is None
    if lost_node:
        cluster.remove_node(cluster.nodes_added[1], allow_graceful=False)
    stdout, stderr = process.communicate(timeout=1200)
    assert process.returncode == 1, stdout + stderr
    # Resumed, each shard goes on from its directory (each has drawn its cases: it ends at once).
    again = run_cli("fuzz", str(seeds), "-o", str(out), "--ray", cluster.address, "--resume", *flags, env=env)
    assert again.returncode == 1, again.stdout + again.stderr
    other = run_cli("fuzz", str(seeds), "-o", str(out), "--ray", cluster.address, "--resume", "--shards", "2", *flags)
    assert other.returncode == 2 and "has 3" in other.stderr, other.stderr

    assert signatures(out) == signatures(one) and len(signatures(out)) >= 5
    assert sorted(os.listdir(out / "shards")) == ["0", "1", "2"] and "LOST" not in stdout
    assert lost_node, "the node was removed while shards ran"


def test_a_line_that_is_not_utf8_has_a_key_of_its_own() -> None:
    from api_tracer.formats.configs import Config
    from api_tracer.replay.keyed import config_key

    escaped = Config("c.txt", 1, "torch.relu(\\xff)", "the line is not UTF-8", 12)
    literal = Config("c.txt", 2, "torch.relu(\\xff)")
    assert config_key(b"d", escaped) != config_key(b"d", literal)


def test_ray_with_user_code_that_does_not_import_is_refused_before_any_config(tmp_path: Path) -> None:
    configs = corpus(tmp_path / "configs.txt", 6)
    done = run_cli("replay", str(configs), "--ray", "--import", "no_such_module_here", "-o", str(tmp_path / "r"))
    assert done.returncode == 2 and "no_such_module_here" in done.stderr, done.stderr
    assert not (tmp_path / "r").exists()  # (refused before any output was opened)


def test_ray_missing_is_said_with_how_to_install_it(tmp_path: Path) -> None:
    configs = corpus(tmp_path / "configs.txt", 6)
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "ray.py").write_text("raise ImportError('no ray here')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([*CLI, "replay", str(configs), "--ray"], capture_output=True, text=True, env=env)
    assert done.returncode == 2 and "pip install 'api-tracer[ray]'" in done.stderr, done.stderr
    assert sys.executable  # (the same interpreter, with Ray hidden)
