"""Many processes: children traced into their own sets, never into the parent's."""

import os

import pytest
import yaml

from support import read_set, run_cli

MP = """
import multiprocessing as mp
import sys
import torch

def work(n):
    torch.full((n,), 1.0)

if __name__ == "__main__":
    torch.zeros(1)
    ctx = mp.get_context(sys.argv[1])
    procs = [ctx.Process(target=work, args=(n,)) for n in (2, 3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    torch.zeros(2)
"""


def sets_under(out):
    return sorted(p.name for p in out.iterdir() if p.is_dir())


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_multiprocessing_children_get_their_own_sets(tmp_path, method):
    (tmp_path / "prog.py").write_text(MP)
    r = run_cli("run", "--follow-children", "--merge", "-o", "out", "prog.py", method, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "sitecustomize" not in r.stderr  # a spawned child starts it whether or not it shadows one
    out = tmp_path / "out"
    assert (out / "api_trace.txt").read_text().splitlines() == ["torch.zeros(1)", "torch.zeros(2)"]
    children = sets_under(out)
    assert len(children) == 2 and all(c.startswith("pid-") for c in children)
    lines = sorted((out / c / "api_trace.txt").read_text() for c in children)
    assert lines == ["torch.full((2,), 1.0)\n", "torch.full((3,), 1.0)\n"]


def test_a_forked_child_never_writes_the_parents_files(tmp_path):
    (tmp_path / "prog.py").write_text(MP)
    r = run_cli("run", "--merge", "-o", "out", "prog.py", "fork", cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out"
    assert (out / "api_trace.txt").read_text().splitlines() == ["torch.zeros(1)", "torch.zeros(2)"]
    assert len(yaml.safe_load((out / "api_trace.yaml").read_text())) == 2
    assert sets_under(out) == []


DATALOADER = """
import torch
from torch.utils.data import DataLoader, Dataset

class Squares(Dataset):
    def __len__(self):
        return 4
    def __getitem__(self, i):
        return torch.full((2,), float(i)) ** 2

if __name__ == "__main__":
    total = sum(batch.sum() for batch in DataLoader(Squares(), batch_size=2, num_workers=2))
    print(float(total))
"""


@pytest.mark.parametrize("rank", [None, "0"])
def test_dataloader_workers_are_followed(tmp_path, rank):
    """Also in a rank's process: its workers inherit RANK but are not the rank."""
    (tmp_path / "prog.py").write_text(DATALOADER)
    env = {k: v for k, v in os.environ.items() if k != "RANK"}
    if rank is not None:
        env["RANK"] = rank
    r = run_cli("run", "--follow-children", "--merge", "-o", "out", "prog.py", cwd=tmp_path, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "28.0\n"
    workers = sets_under(tmp_path / "out")
    assert len(workers) == 2 and all(w.startswith("pid-") for w in workers)
    calls = [line for w in workers for line in (tmp_path / "out" / w / "api_trace.txt").read_text().splitlines()]
    assert sum(line.startswith("torch.full(") for line in calls) == 4


TORCHRUN = """
import os
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
x = torch.full((2,), float(rank + 1))
dist.all_reduce(x)
torch.ones(rank + 1)
dist.destroy_process_group()
"""


def test_torchrun_ranks_each_write_their_own_complete_set_and_merge_is_their_union(tmp_path):
    (tmp_path / "train.py").write_text(TORCHRUN)
    env = dict(os.environ, MASTER_ADDR="127.0.0.1")
    r = run_cli(
        "run",
        "--follow-children",
        "--levels",
        "1",
        "-o",
        "out",
        "-m",
        "torch.distributed.run",
        "--nproc_per_node=2",
        "--standalone",
        "train.py",
        cwd=tmp_path,
        timeout=600,
        env=env,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    out = tmp_path / "out"
    assert "rank-0" in sets_under(out) and "rank-1" in sets_under(out)
    ranks = {}
    for rank in (0, 1):
        files = read_set(out / f"rank-{rank}", "_level_1")
        lines = files["api_trace.txt"].splitlines()
        assert f"torch.full((2,), {float(rank + 1)!r})" in lines
        assert f"torch.ones({rank + 1})" in lines
        assert len(yaml.safe_load(files["api_trace.yaml"])) == len(lines)  # complete
        ranks[rank] = files
    assert "torch.ones(2)" not in ranks[0]["api_trace.txt"]  # each its own
    m = run_cli("merge", "out/rank-0", "out/rank-1", "-o", "merged", cwd=tmp_path)
    assert m.returncode == 0, m.stderr
    merged = read_set(tmp_path / "merged", "_level_1")
    union = set(ranks[0]["api_configs.yaml"].splitlines()) | set(ranks[1]["api_configs.yaml"].splitlines())
    assert set(merged["api_configs.yaml"].splitlines()) == union
    total = sum(int(f["api_statistics.yaml"].split("Total API calls: ")[1].split()[0]) for f in ranks.values())
    assert f"Total API calls: {total}\n" in merged["api_statistics.yaml"]
    assert merged["api_trace.txt"] == ranks[0]["api_trace.txt"] + ranks[1]["api_trace.txt"]
