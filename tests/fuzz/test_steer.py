"""Steering by behaviour: what a call did read from a stock torch (the aten
operators it ran inside, its outputs' kinds, what it raised), each
API's signatures written down by a campaign, and unless --blind the
cases that did something new kept, bounded, as seeds that later cases
grow from, in campaign.json and back with --resume."""

import json
import math
import os
import random
import threading

import fuzz_staged
import pytest
import torch

from api_tracer import _C
from api_tracer.config import parse_call
from api_tracer.errors import InputError
from api_tracer.fuzz.mutate import APPLY, KIND_OF, Line, Mutation, apply, edges
from api_tracer.fuzz.steer import CHAIN_LIMIT, POOL_LIMIT, SeedPool, decode, encode, read_behaviours
from api_tracer.replay import Config, ReplayOptions, replay_one
from api_tracer.replay.behaviour import template
from support import run_cli, user_code_env

ENV = user_code_env()
FLAGS = ("--jobs", "1", "--timeout", "1.5", "--import", "fuzz_staged")


def test_nested_ops_are_the_operators_a_call_runs_inside():
    x, w = torch.randn(2, 3, 4), torch.randn(5, 4)
    with _C.NestedOps() as batched:
        torch.nn.functional.linear(x, w)
    with _C.NestedOps() as flat:
        torch.nn.functional.linear(x[0], w)
        with pytest.raises(RuntimeError, match="already on"):
            with _C.NestedOps():
                pass
    torch.add(x, x)  # (after the exit: not seen)
    assert batched.names()[0] == "aten::linear" and "aten::_unsafe_view" in batched.names()
    assert "aten::select.int" in flat.names() and "aten::_unsafe_view" not in flat.names()
    assert "aten::add.Tensor" not in flat.names() and len(set(flat.names())) == len(flat.names())
    # one stops on the thread it started on (a thread-local callback is removed by its own thread)
    ops, said = _C.NestedOps(), []
    ops.__enter__()

    def stop_elsewhere():
        try:
            ops.__exit__(None, None, None)
        except RuntimeError as e:
            said.append(str(e))

    thread = threading.Thread(target=stop_elsewhere)
    thread.start()
    thread.join()
    torch.neg(x)
    ops.__exit__(None, None, None)
    assert said == ["a NestedOps stops on the thread it started on"] and "aten::neg" in ops.names()
    with pytest.raises(RuntimeError, match="already on"):
        with ops:
            ops.__enter__()


def behaviour(line):
    r = replay_one(Config("<test>", 1, line), ReplayOptions(behaviour=True))
    assert "behaviour" in json.loads(r.to_json())
    return r.behaviour


def test_a_plain_replay_says_what_the_call_did():
    contiguous = behaviour('torch.mm(Tensor([3, 4], "float32"), Tensor([4, 5], "float32"))')
    strided = behaviour('torch.mm(Tensor([3, 4], "float32", stride=[8, 2]), Tensor([4, 5], "float32"))')  # (copied)
    empty = behaviour('torch.mm(Tensor([0, 4], "float32"), Tensor([4, 5], "float32"))')
    nan = behaviour('torch.mm(Filled(Tensor([3, 4], "float64"), nan), Tensor([4, 5], "float64"))')
    raised = behaviour('torch.mm(Tensor([3, 4], "float32"), Tensor([5, 4], "float32"))')
    assert contiguous.startswith("ok float32:2d |") and "aten::mm" in contiguous
    assert len({contiguous, strided, empty, nan, raised}) == 5
    assert "float32:2d:empty" in empty and "float64:2d:nan" in nan
    # sizes are not behaviour: numbers are N in a message's template, a name's digits kept
    assert raised == "raised RuntimeError: mat1 and mat2 shapes cannot be multiplied (NxN and NxN)"
    assert raised == behaviour('torch.mm(Tensor([7, 9], "float32"), Tensor([3, 4], "float32"))')
    assert template("float16 at -1.5e-3, sizes [2, 3]") == "float16 at N, sizes [N, N]"
    # a report's line says nothing of it where it was not asked for, nor a check
    plain = replay_one(Config("<test>", 1, 'torch.add(Tensor([2], "float32"), 1)'))
    checked = replay_one(Config("<test>", 1, 'torch.add(Tensor([2], "float32"), 1)'), ReplayOptions(check="float64"))
    assert "behaviour" not in json.loads(plain.to_json()) and checked.behaviour == ""


def test_mutations_go_through_campaign_json_as_data():
    api, args, kwargs = parse_call('f(Tensor([4, 6], "float32"), Tensor([6], "float16"), 0.5, True, dim=[0, -1])')
    line = Line(api, list(args), dict(kwargs))
    ms = edges(line, ("shape", "dtype", "layout", "value", "scalar"), {}, None)
    assert len(ms) > 20
    for m in ms:
        back = decode(json.loads(json.dumps(encode(m))), "campaign.json")
        assert (back.kind, back.op, back.where) == (m.kind, m.op, m.where)
        assert [str(p) for p in back.params] == [str(p) for p in m.params]  # (nan == nan as text)
        assert str(apply(line, [back])) == str(apply(line, [m]))
    assert set(KIND_OF) == set(APPLY) and all(KIND_OF[m.op] == m.kind for m in ms)
    for bad, said in [
        (["shape", "resize", "", "__import__('os').system('true')"], "its parameters"),
        (["shape", "resize", "", "os.system(1)"], "are not parameters"),
        (["shape", "explode", "", "parameters(1)"], "'explode'"),
        (["dtype", "resize", "", "parameters(4, 2, False)"], "'dtype' 'resize'"),
        (["shape", "resize", ""], "four strings"),
    ]:
        with pytest.raises(InputError, match=said):
            decode(bad, "DIR/campaign.json: pool entry 3")
    # a record of the right shape whose parameters no such mutation has, or with fields missing: said, not raised
    entry = {"seed": 0, "seconds": 0.01, "found": 0, "drawn": 0}
    for records, said in [
        ([{**entry, "mutations": [["shape", "unsqueeze", "args[0]", 'parameters("a")']]}], "pool entry 0: not a"),
        ([{**entry, "mutations": [["layout", "transpose", "args[0]", "parameters(5, 1)"]]}], "pool entry 0: not a"),
        ([{"seed": 0, "mutations": [encode(ms[0])]}], "pool entry 0"),
        ([{**entry, "mutations": [encode(ms[0])] * (CHAIN_LIMIT + 1)}], "a list of 1 to 8 mutations"),
    ]:
        with pytest.raises(InputError, match=said):
            SeedPool().restore(records, [line], "DIR/campaign.json")


def test_the_pool_is_bounded_and_keeps_its_fruitful_entries():
    line = Line("f", [1])
    m = Mutation("scalar", "scalar", "args[0]", (2,))
    pool = SeedPool(limit=3)
    assert not pool.keep(0, (), line) and not pool.keep(0, (m,) * (CHAIN_LIMIT + 1), line)
    for n in range(1, 4):
        pool.keep(0, (m,) * n, line)
    pool.credit(pool.entries[0][0])  # (the first found something: the second, oldest of the rest, goes)
    pool.keep(0, (m,) * 5, line)
    pool.keep(1, (m,), line)
    assert [len(e.mutations) for e in pool.entries[0]] == [1, 3, 5] and len(pool) == 4
    # a fast entry's cases are drawn far more than a slow one's; half the draws are of the seed line itself
    fast, slow = SeedPool(), SeedPool()
    for p in (fast, slow):
        p.keep(0, (m,), line, 0.002)
        p.keep(0, (m, m), line, 0.2)
    rng = random.Random(0)
    drawn = [fast.draw(rng, 0) for _ in range(2000)]
    assert 800 < drawn.count(None) < 1200 and fast.draw(rng, 1) is None
    chosen = [len(e.mutations) for e in drawn if e is not None]
    assert chosen.count(1) > 10 * chosen.count(2) > 0
    # weights that round to nothing still draw (a pool read back with huge times and counts)
    huge = SeedPool()
    huge.keep(0, (m,), line, 1e300)
    huge.entries[0][0].drawn = 10**9
    assert any(huge.draw(rng, 0) for _ in range(20))
    # the pool in all is bounded too: the least fruitful, oldest entry of any seed goes first
    small = SeedPool(limit=4, total=5)
    for seed in range(6):
        small.keep(seed, (m,), line)
    assert len(small) == 5 and 0 not in [e.seed for es in small.entries.values() for e in es]


def test_behaviours_are_read_back_checked(tmp_path, capsys):
    path = tmp_path / "behaviours.jsonl"
    good = json.dumps({"case": 3, "api": "torch.mm", "behaviour": "ok float32:2d", "seconds": 1.5})
    path.write_text(good + "\n" + good[:20])  # (a last line cut short by a kill)
    assert [n for n, _ in read_behaviours(str(path))] == [1]
    assert "behaviours.jsonl:2: left out: a line cut short" in capsys.readouterr().err
    for text, said in [
        ("{}\n", "behaviours.jsonl:1"),
        (good.replace("1.5", "-1") + "\n", "seconds"),
        (good.replace('"case": 3', '"case": -3') + "\n", "case"),
    ]:
        path.write_text(text)
        with pytest.raises(InputError, match=said):
            read_behaviours(str(path))
    path.write_bytes(b'{"case": 3, "api": "\xff"}\n')
    with pytest.raises(InputError, match="UTF-8"):
        read_behaviours(str(path))


def test_an_argument_that_is_not_built_is_no_behaviour_of_the_api():
    r = replay_one(
        Config("<test>", 1, 'torch.add(Tensor([2], "float32"), torch.nn.Linear(-1, 2))'), ReplayOptions(behaviour=True)
    )
    assert r.status.value == "failed" and r.message.startswith("building ") and r.behaviour == ""


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory):
    """The staged operators fuzzed 400 cases, --blind and steered, on one
    worker: the blind campaign draws the same cases every time; the
    steered one weighs its pool's entries by their cases' time too, so
    what it draws varies a little from run to run."""
    base = tmp_path_factory.mktemp("steer")
    seeds = base / "staged.yaml"
    fuzz_staged.write_seeds(seeds)
    out = {}
    for mode in ("blind", "steered"):
        flags = ("--blind",) if mode == "blind" else ()
        r = run_cli("fuzz", str(seeds), "-o", str(base / mode), "--budget", "400", *FLAGS, *flags, env=ENV)
        assert r.returncode in (0, 1), r.stdout + r.stderr
        with open(base / mode / "campaign.json") as f:
            out[mode] = (base / mode, json.load(f), r.stdout)
    return seeds, out


def test_a_campaign_writes_each_behaviour_it_reaches_once(campaigns):
    _, out = campaigns
    for mode, (directory, state, stdout) in out.items():
        records = [r for _, r in read_behaviours(os.path.join(directory, "behaviours.jsonl"))]
        assert len(records) == state["behaviours"] > 30, mode
        assert len({(r["api"], r["behaviour"]) for r in records}) == len(records)
        assert {r["api"] for r in records} == {line.split("(")[0] for line in fuzz_staged.SEEDS.values()}
        assert f"behaviours: {len(records)} distinct of 3 APIs" in stdout
    assert out["blind"][1]["pool"] == [] and "; --blind" in out["blind"][2]


def test_steering_grows_cases_from_those_that_did_something_new(campaigns):
    _, out = campaigns
    directory, state, stdout = out["steered"]
    pool = state["pool"]
    assert 0 < len(pool) <= 3 * POOL_LIMIT and f"{len(pool)} cases kept as seeds for what they did" in stdout
    assert all(1 <= len(e["mutations"]) <= CHAIN_LIMIT for e in pool)
    # chains longer than one draw makes (three mutations at most): only grown from a kept case
    assert max(len(e["mutations"]) for e in pool) > 3
    assert sum(e["drawn"] for e in pool) > 50 and sum(e["found"] for e in pool) > 0
    # on the same cases' budget, more behaviours than drawing blind
    assert state["behaviours"] > out["blind"][1]["behaviours"] * 1.1, (state["behaviours"], out["blind"][1])


def test_resume_goes_on_with_the_pool_it_kept(campaigns, tmp_path):
    seeds, out = campaigns
    directory, state, _ = out["steered"]
    copy = tmp_path / "c"
    os.makedirs(copy)
    for name in os.listdir(directory):
        if os.path.isfile(directory / name):
            (copy / name).write_bytes((directory / name).read_bytes())
    r = run_cli("fuzz", str(seeds), "-o", str(copy), "--budget", "450", "--resume", *FLAGS, env=ENV)
    assert r.returncode in (0, 1), r.stdout + r.stderr
    with open(copy / "campaign.json") as f:
        after = json.load(f)
    kept = {json.dumps(e["mutations"]) for e in state["pool"]}
    assert after["cases_run"] == 450 and after["behaviours"] >= state["behaviours"]
    assert sum(1 for e in after["pool"] if json.dumps(e["mutations"]) in kept) >= len(kept) // 2
    assert sum(e["drawn"] for e in after["pool"]) > sum(e["drawn"] for e in state["pool"])
    # a damaged pool is said, naming the file and the entry, before any case runs
    after["pool"][1]["mutations"][0][1] = "explode"
    (copy / "campaign.json").write_text(json.dumps(after))
    r = run_cli("fuzz", str(seeds), "-o", str(copy), "--budget", "460", "--resume", *FLAGS, env=ENV)
    assert r.returncode == 2 and "campaign.json: pool entry 1" in r.stderr and "'explode'" in r.stderr, r.stderr
    # a campaign goes on as it began: steered, not --blind
    r = run_cli("fuzz", str(seeds), "-o", str(directory), "--budget", "460", "--resume", "--blind", *FLAGS, env=ENV)
    assert r.returncode == 2 and "the campaign ran steered" in r.stderr, r.stderr


def test_nan_parameters_survive_the_round_trip():
    m = Mutation("value", "fill", "args[0]", (math.nan,))
    assert math.isnan(decode(encode(m), "x").params[0])
