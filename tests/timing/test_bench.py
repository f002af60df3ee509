"""api-tracer bench: configs timed in rounds, crash-safe and resumable,
weighed by their calls, and two runs compared by a statistical test
(timing/). The rates on a few hundred real configs are bench/bench_timing.py's."""

from __future__ import annotations

import json
import math
import os
import signal
import stat
import subprocess
import time
from pathlib import Path
from typing import Dict, List

import pytest

from api_tracer.timing.stats import discoveries, t_two_sided, welch
from support import CLI, run_cli, user_code_env

WORK = 'torch.ops.benchops.work(Tensor([{}, 1024], "float32"))'
SIZES = (16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136)


def _timings(path: Path) -> List[Dict]:
    lines = path.read_text().splitlines()
    assert "bench" in json.loads(lines[0])  # (the header)
    return [json.loads(line) for line in lines[1:]]


def _bench(*args: str, env: Dict[str, str] = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return run_cli("bench", *args, env={**user_code_env(), **(env or {})}, timeout=timeout)


# -- the statistics, against values tabulated elsewhere ----------------------------------------


def test_the_t_distribution_gives_the_tabulated_tails() -> None:
    # Student's t table: the two-sided 5% points of 1, 8 and (nearly) infinite degrees of freedom
    for t, df in ((12.706, 1), (2.306, 8), (1.960, 1e7)):
        assert t_two_sided(t, df) == pytest.approx(0.05, abs=2e-5)
    assert t_two_sided(3.355, 8) == pytest.approx(0.01, abs=2e-5)
    assert t_two_sided(0.0, 5) == 1.0 and t_two_sided(math.inf, 5) == 0.0
    assert t_two_sided(1.959964, math.inf) == pytest.approx(0.05, abs=1e-6)  # (the normal's, where neither varies)
    assert math.isnan(t_two_sided(math.nan, 4)) is False and t_two_sided(math.nan, 4) == 1.0


def test_welch_and_benjamini_hochberg() -> None:
    diff, p = welch([1, 2, 3], [4, 5, 6])
    assert diff == 3 and p == pytest.approx(0.021311641, rel=1e-6)  # (R: t.test(c(1,2,3), c(4,5,6)))
    assert welch([1.0, 1.0], [1.0, 1.0])[1] == 1.0 and welch([1.0, 1.0], [2.0, 2.0])[1] == 0.0
    # 10 tests at q = 0.05: p_(k) <= k q / m holds up to the 2nd smallest (0.008 <= 0.01), not the 3rd
    p = [0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205, 0.212, 0.216]
    assert discoveries(p, 0.05) == [True, True] + [False] * 8
    assert discoveries([0.5, 0.001], 0.01) == [False, True]


# -- a run ---------------------------------------------------------------------------------------


def test_a_run_times_each_config_and_goes_past_a_crash_and_a_hang(tmp_path: Path) -> None:
    configs = tmp_path / "configs.txt"
    lines = [WORK.format(16), 'torch.ops.benchops.crash(Tensor([4], "float32"))', WORK.format(64)]
    lines += ['torch.ops.benchops.hang(Tensor([4], "float32"))', WORK.format(16), 'os.system("true")']
    configs.write_text("\n".join(lines) + "\n")
    results = tmp_path / "results.jsonl"
    done = _bench(str(configs), "--import", "bench_ops", "--rounds", "2", "--timeout", "5", "-o", str(results))
    assert done.returncode == 1, done.stderr  # (two configs failed)
    timings = _timings(results)
    by_line: Dict[int, List[Dict]] = {}
    for t in timings:
        by_line.setdefault(t["line"], []).append(t)
    assert sorted(by_line) == [1, 2, 3, 4, 6]  # (line 5 repeats line 1: timed once)
    assert [t["round"] for t in by_line[1]] == [0, 1] and [t["round"] for t in by_line[3]] == [0, 1]
    for t in by_line[1] + by_line[3]:
        assert t["status"] == "ok" and t["number"] >= 1 and all(x > 0 for x in t["times"])
        assert t["bytes"] == 2 * int(t["config"].split("[")[1].split(",")[0]) * 1024 * 4  # (the input and output)
    assert by_line[3][0]["times"] != by_line[3][1]["times"]  # (two rounds, each timed on its own)
    assert by_line[1][0]["lines"] == 2  # (the config is two lines of the file: its calls)
    # a crash and a hang each fail their config once (not timed again), and the run goes on
    assert [(t["status"], t["error"]) for t in by_line[2]] == [("failed", "WorkerCrashed")]
    assert [(t["status"], t["error"]) for t in by_line[4]] == [("failed", "Timeout")]
    assert by_line[6][0]["status"] == "refused"
    assert f"FAILED {configs}:2: WorkerCrashed" in done.stdout and f"FAILED {configs}:4: Timeout" in done.stdout
    assert "2 configs timed" in done.stdout and "not timed: 2 failed, 1 refused" in done.stdout
    # weighed by its calls: the config of two lines (a trace's two calls) costs twice its time
    shown = _bench("--compare", str(results), str(results), "--json")
    assert shown.returncode == 0, shown.stderr  # (a comparison times nothing: its runs' failures are not its own)
    summaries = {s["config"]: s for s in map(json.loads, shown.stdout.splitlines()) if "status" in s}
    twice, once = summaries[WORK.format(16)], summaries[WORK.format(64)]
    assert twice["calls"] == 2 and twice["total"] == pytest.approx(2 * twice["seconds"])
    assert once["calls"] == 1 and once["total"] == pytest.approx(once["seconds"])
    assert {s["status"] for s in summaries.values()} == {"ok", "failed", "refused"} and len(summaries) == 5


def test_a_run_killed_is_resumed_without_timing_a_round_twice(tmp_path: Path) -> None:
    configs = tmp_path / "configs.txt"
    hang = 'torch.ops.benchops.hang(Tensor([4], "float32"))'
    configs.write_text("\n".join([WORK.format(n) for n in SIZES[:4]] + [hang]) + "\n")  # (the hang last)
    results = tmp_path / "results.jsonl"
    argv = [*CLI, "bench", str(configs), "--import", "bench_ops", "--rounds", "3", "--timeout", "0", "-o", str(results)]
    process = subprocess.Popen(
        argv, env=user_code_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (results.exists() and len(results.read_text().splitlines()) >= 5):
        time.sleep(0.2)
    time.sleep(2)  # (the hang holds the run in its first round)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    before = _timings(results)
    assert len(before) == 4 and {t["round"] for t in before} == {0}
    with open(results, "a") as f:
        f.write('{"key": "0123", "round')  # (a line cut short, as a kill while writing leaves it)
    held = results.read_text()
    other = _bench(str(configs), "--import", "bench_ops", "--rounds", "2", "--resume", "-o", str(results))
    assert other.returncode == 2 and "rounds 3 there, 2 here" in other.stderr
    assert results.read_text() == held  # (refused, the file is left as it was)
    resumed = _bench(
        str(configs), "--import", "bench_ops", "--rounds", "3", "--timeout", "3", "--resume", "-o", str(results)
    )
    assert resumed.returncode == 1, resumed.stderr  # (the hang, failed now by its timeout)
    after = _timings(results)
    pairs = [(t["key"], t["round"]) for t in after]
    assert len(pairs) == len(set(pairs)) == 4 * 3 + 1
    assert after[:4] == before  # (kept, the half line cut off)
    assert "4 configs timed" in resumed.stdout


def test_a_damaged_results_file_is_named_at_its_line(tmp_path: Path) -> None:
    configs = tmp_path / "configs.txt"
    configs.write_text(WORK.format(16) + "\n")
    results = tmp_path / "results.jsonl"
    assert _bench(str(configs), "--import", "bench_ops", "--rounds", "2", "-o", str(results)).returncode == 0
    lines = results.read_text().splitlines()
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text(lines[0] + "\n" + lines[1].replace('"times": [', '"times": ["x", ') + "\n")
    shown = _bench("--compare", str(results), str(damaged))
    assert shown.returncode == 2 and "damaged.jsonl:2" in shown.stderr and '"times"' in shown.stderr
    not_results = _bench("--compare", str(configs), str(results))
    assert not_results.returncode == 2 and "configs.txt:1" in not_results.stderr
    into_input = _bench(str(configs), "--import", "bench_ops", "-o", str(configs))
    assert into_input.returncode == 2 and "-o" in into_input.stderr
    twice = tmp_path / "twice.jsonl"  # (a round of a config twice: two runs' lines mixed)
    twice.write_text("\n".join([lines[0], lines[1], lines[2], lines[1]]) + "\n")
    mixed = _bench("--compare", str(results), str(twice))
    assert mixed.returncode == 2 and "twice.jsonl:4" in mixed.stderr and "twice" in mixed.stderr
    cut = tmp_path / "cut.jsonl"  # (read, not resumed: a last line without its newline is said, not dropped)
    cut.write_text("\n".join(lines))
    said = _bench("--compare", str(results), str(cut))
    assert said.returncode == 2 and f"cut.jsonl:{len(lines)}" in said.stderr
    header = tmp_path / "header.jsonl"  # (a results file whose header is damaged is not timed as configs)
    header.write_text('{"bench": 1, "settings": []}\n' + "\n".join(lines[1:]) + "\n")
    bad = _bench("--compare", str(results), str(header))
    assert bad.returncode == 2 and "header.jsonl:1" in bad.stderr
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    piped = _bench(str(configs), "--import", "bench_ops", "-o", str(fifo), timeout=60)
    assert piped.returncode == 2 and "a regular file" in piped.stderr
    no_time = _bench(str(configs), "--max-time", "0")
    assert no_time.returncode == 2 and "--max-time" in no_time.stderr
    past_timeout = _bench(str(configs), "--max-time", "30", "--backward")  # (a round may take 180 s; timeout 60)
    assert past_timeout.returncode == 2 and "--timeout 60 is too short" in past_timeout.stderr
    # what FILE's set holds beside it is checked before any timing: a damaged sources file is named, and -o
    # never replaces the value ranges or the sources a run reads
    (tmp_path / "api_value_ranges.yaml").write_text("[]\n")
    sources = tmp_path / "api_config_sources.yaml"
    sources.write_text("not: [a sources file\n")
    damaged_sources = _bench(str(configs), "--import", "bench_ops", "-o", str(tmp_path / "new.jsonl"))
    assert damaged_sources.returncode == 2 and str(sources) in damaged_sources.stderr
    assert not (tmp_path / "new.jsonl").exists()
    sources.unlink()
    for kept, text in (("api_value_ranges.yaml", "[]\n"), ("api_config_sources.yaml", "")):
        (tmp_path / kept).write_text(text)
        into_set = _bench(str(configs), "--import", "bench_ops", "-o", str(tmp_path / kept))
        assert into_set.returncode == 2 and "-o" in into_set.stderr and (tmp_path / kept).read_text() == text


def test_a_call_past_max_bytes_on_its_way_is_skipped_as_replay_says(tmp_path: Path) -> None:
    """What a call allocates on its way is bounded as in replay (its
    within_memory): past it, the config is skipped, saying the bound."""
    from api_tracer.replay.memory import WORKING_FACTOR

    configs = tmp_path / "configs.txt"
    configs.write_text('torch.combinations(Tensor([100], "float32"), 4)\n')
    results = tmp_path / "results.jsonl"
    done = _bench(str(configs), "--rounds", "2", "--max-bytes", "100M", "-o", str(results))
    assert done.returncode == 0, done.stderr
    (timing,) = _timings(results)  # (skipped in its first round: not timed again)
    assert timing["status"] == "skipped"
    assert f": {WORKING_FACTOR} x the limit of 100.0 MiB, --max-bytes" in timing["message"], timing


def test_an_output_through_a_link_is_its_target_and_a_device_is_refused(tmp_path: Path) -> None:
    """-o is read back at the end: a link to a regular file writes its
    target and stays a link; a link to nothing and a character device (a
    terminal of the test's own, never the machine's) are refused, exit 2,
    and stay what they were."""
    configs = tmp_path / "configs.txt"
    configs.write_text(WORK.format(16) + "\n")
    target, link = tmp_path / "target.jsonl", tmp_path / "link.jsonl"
    target.write_text("")
    link.symlink_to(target)
    done = _bench(str(configs), "--import", "bench_ops", "--rounds", "1", "--max-time", "0.05", "-o", str(link))
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and [t["status"] for t in _timings(target)] == ["ok"]
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to(tmp_path / "nowhere" / "results.jsonl")
    refused = _bench(str(configs), "--import", "bench_ops", "-o", str(dangling))
    assert refused.returncode == 2 and "link to nothing" in refused.stderr and str(dangling) in refused.stderr
    assert dangling.is_symlink() and not (tmp_path / "nowhere").exists()
    master, slave = os.openpty()
    try:
        terminal = os.ttyname(slave)
        refused = _bench(str(configs), "--import", "bench_ops", "-o", terminal)
        assert refused.returncode == 2 and "not a regular file" in refused.stderr and terminal in refused.stderr
        assert stat.S_ISCHR(os.stat(terminal).st_mode)
    finally:
        os.close(slave)
        os.close(master)


def test_a_call_that_writes_into_its_arguments_gets_them_back_before_each_block() -> None:
    """restorer: an in-place operator (mul_, __imul__, __setitem__, one
    that changes the shape: unsqueeze_, resize_) finds its arguments as
    they were built, values, shape, strides and storage; a call that
    writes nothing has nothing put back."""
    import torch

    from api_tracer.replay.side import TimedCall
    from api_tracer.timing.measure import restorer

    calls = {
        "torch.Tensor.mul_": (torch.Tensor.mul_, 0.5),
        "torch.Tensor.__imul__": (torch.Tensor.__imul__, 0.5),
        "torch.Tensor.__setitem__": (torch.Tensor.__setitem__, 0, 9.0),
        "torch.Tensor.unsqueeze_": (torch.Tensor.unsqueeze_, 0),
        "torch.Tensor.resize_": (torch.Tensor.resize_, [40]),
    }
    for api, (func, *rest) in calls.items():
        x = torch.arange(12.0).reshape(3, 4)[:, 1:]  # (a view: an offset and strides to keep)
        built = (x.clone(), x.shape, x.stride(), x.storage_offset(), x.untyped_storage()._cdata)
        restore = restorer(api, TimedCall(func, [x, *rest], {}))
        for _ in range(3):
            func(x, *rest)
        restore()
        assert (x.shape, x.stride(), x.storage_offset(), x.untyped_storage()._cdata) == built[1:], api
        assert torch.equal(x, built[0]), api
    y = torch.ones(3)
    restorer("torch.add", TimedCall(torch.add, [y, 1], {}))()
    torch.add(y, 1, out=y)
    restorer("torch.add", TimedCall(torch.add, [y, 1], {}))()
    assert torch.equal(y, torch.full((3,), 2.0))  # (no out=, nothing written: nothing put back)


def test_the_backward_is_timed_where_there_is_one(tmp_path: Path) -> None:
    configs = tmp_path / "configs.txt"
    mm = 'torch.matmul(Tensor([32, 32], "float32"), Tensor([32, 32], "float32"))'
    in_place = 'torch.Tensor.mul_(Tensor([32, 32], "float32"), 3.0)'  # (writes into what it takes)
    configs.write_text(mm + '\ntorch.argmax(Tensor([8, 8], "float32"))\n' + in_place + "\n")
    results = tmp_path / "results.jsonl"
    done = _bench(str(configs), "--rounds", "2", "--backward", "-o", str(results))
    assert done.returncode == 0, done.stderr
    timed, argmax = [t for t in _timings(results) if t["line"] == 1], [t for t in _timings(results) if t["line"] == 2]
    assert len(timed) == 2 and all(t["backward_times"] and t["backward_number"] >= 1 for t in timed)
    assert timed[0]["flops"] == 2 * 32**3 and timed[0]["backward_flops"] == 2 * 2 * 32**3  # (torch's counter)
    # (no backward to time: its forward is, and the message says why)
    assert argmax[0]["status"] == "ok" and argmax[0]["times"] and argmax[0].get("backward_times") is None
    assert "no backward" in argmax[0]["message"] and "forward timed alone" in argmax[0]["message"]
    mul_ = [t for t in _timings(results) if t["line"] == 3]
    assert [t["status"] for t in mul_] == ["ok", "ok"] and all(t["backward_times"] for t in mul_)


# -- two runs compared ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Path]:
    """Three runs of the same configs: two of one environment, one with
    the operator made three times as slow on the configs of first size 64
    and 128 (on a loaded machine a run's configs differ by tens of percent:
    bench/bench_timing.py measures what a comparison finds there)."""
    folder = tmp_path_factory.mktemp("runs")
    configs = folder / "configs.txt"
    configs.write_text("\n".join(WORK.format(n) for n in SIZES) + "\n")
    out = {}
    for name, env in (("base", {}), ("again", {}), ("slower", {"BENCHOPS_SLOWER": "64,128", "BENCHOPS_FACTOR": "3"})):
        out[name] = folder / f"{name}.jsonl"
        flags = ["--rounds", "5", "--max-time", "0.2"]
        done = _bench(str(configs), "--import", "bench_ops", *flags, "-o", str(out[name]), env=env)
        assert done.returncode == 0, done.stderr
    return out


def _verdicts(base: Path, new: Path) -> Dict[str, str]:
    done = _bench("--compare", str(base), str(new), "--json")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    return {c["config"]: c["verdict"] for c in lines if "verdict" in c}


def test_a_planted_slowdown_is_flagged_on_exactly_its_configs(runs: Dict[str, Path]) -> None:
    verdicts = _verdicts(runs["base"], runs["slower"])
    assert len(verdicts) == len(SIZES)
    assert {c for c, v in verdicts.items() if v != "same"} == {WORK.format(64), WORK.format(128)}
    assert {verdicts[WORK.format(64)], verdicts[WORK.format(128)]} == {"slower"}


def test_two_runs_of_one_environment_differ_in_nothing(runs: Dict[str, Path]) -> None:
    verdicts = _verdicts(runs["base"], runs["again"])
    assert list(verdicts.values()) == ["same"] * len(SIZES)


def test_a_comparison_shows_the_times_its_ratio_is_of_and_says_what_it_cannot_know(tmp_path: Path) -> None:
    """The times beside a speedup are what it divides (each run's geometric
    mean of its rounds, not their median); with fewer than 3 configs the
    noise between runs cannot be estimated, and the table says so."""
    header = {"bench": 1, "settings": {"rounds": 5}, "environment": {}}
    config = 'torch.relu(Tensor([4], "float32"))'

    def results(name: str, rounds: List[float]) -> Path:
        path = tmp_path / name
        lines = [json.dumps(header)] + [
            json.dumps(
                {
                    "key": "k1",
                    "file": "c",
                    "line": 1,
                    "config": config,
                    "api": "torch.relu",
                    "round": r,
                    "status": "ok",
                    "times": [t],
                    "number": 1,
                }
            )  # fmt: skip
            for r, t in enumerate(rounds)
        ]
        path.write_text("\n".join(lines) + "\n")
        return path

    base, new = results("base.jsonl", [1e-6] * 5), results("new.jsonl", [1e-6] * 4 + [5e-6])
    (change,) = [json.loads(x) for x in _bench("--compare", str(base), str(new), "--json").stdout.splitlines()
                 if "verdict" in x]  # fmt: skip
    assert change["new_seconds"] == pytest.approx(5 ** (1 / 5) * 1e-6) and change["base_seconds"] == pytest.approx(1e-6)
    assert change["speedup"] == pytest.approx(change["base_seconds"] / change["new_seconds"])
    table = _bench("--compare", str(base), str(new)).stdout
    assert "the noise between two runs is unknown (1 configs tested, 3 needed" in table


def test_the_report_charts_each_configs_speedup(runs: Dict[str, Path], tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    done = run_cli("report", str(runs["base"]), str(runs["slower"]), "-o", str(page))
    assert done.returncode == 0, done.stderr
    html = page.read_text()
    assert "bench: slower.jsonl against base.jsonl" in html and 'aria-label="speedup chart"' in html
    assert html.count('class="slower"') == 2  # (the two configs made slower, drawn red)
    assert f"2 slower, 0 faster, {len(SIZES) - 2} same" in html


def test_each_config_is_weighed_by_the_calls_its_program_made(tmp_path: Path) -> None:
    import torch

    from api_tracer import APITracer

    a, b = torch.ones(64, 64), torch.ones(64, 64)
    with APITracer(output_path=str(tmp_path / "trace"), levels=[1], merge_output=True, label="model"):
        for _ in range(3):
            torch.add(a, b)
        torch.mm(a, b)
    configs = tmp_path / "trace" / "api_configs.yaml"
    assert (tmp_path / "trace" / "api_config_sources.yaml").exists()
    done = _bench(str(configs), "--rounds", "2", "--json")
    assert done.returncode == 0, done.stderr
    by_api = {s["api"]: s for s in map(json.loads, done.stdout.splitlines())}
    by_api["mm"] = next(s for api, s in by_api.items() if api != "torch.add")  # (torch.mm is torch.spmm too)
    assert by_api["torch.add"]["calls"] == 3 and by_api["mm"]["calls"] == 1
    add = by_api["torch.add"]
    assert (
        add["total"] == pytest.approx(3 * add["seconds"])
        and add["seconds"] == sorted(add["rounds"])[0] + (sorted(add["rounds"])[1] - sorted(add["rounds"])[0]) / 2
    )  # (the median of its two rounds)
    assert by_api["mm"]["flops"] == 2 * 64**3 and by_api["mm"]["flop_rate"] > 0
    table = _bench(str(configs), "--rounds", "1")
    assert "each config's time times its calls" in table.stdout
