"""The layer-by-layer profiler (api_tracer.Profile)."""

import csv
import json
import time

import pytest
import torch
import torch.nn as nn

from api_tracer import Profile
from support import ROOT, run_in_threads
from support.workloads import transformer_block


class Sleepy(nn.Module):
    """Spends a known time in its own forward."""

    def __init__(self, seconds):
        super().__init__()
        self.seconds = seconds
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        time.sleep(self.seconds)
        return self.lin(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Conv2d(8, 4, 3))
        self.slow = Sleepy(0.02)
        self.shared = nn.Linear(4, 4)
        self.alias = self.shared
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        x = self.features(x).mean((2, 3))
        x = self.slow(x)
        x = self.shared(self.shared(x))
        x = self.alias(x)
        return self.head(x)


def run(model, prof_kwargs=None, x=None):
    x = torch.randn(2, 3, 12, 12) if x is None else x
    with Profile(model, **(prof_kwargs or {})) as prof:
        loss = model(x).pow(2).sum()  # outside every module: unattributed
        loss.backward()
    return prof


def rows(prof):
    return {r.name: r for r in prof.rows}


def test_one_row_per_module_path_tree_drawn():
    prof = run(Net())
    names = [r.name for r in prof.rows]
    assert names == [
        "Net",
        "Net.features",
        "Net.features.0",
        "Net.features.1",
        "Net.features.2",
        "Net.slow",
        "Net.slow.lin",
        "Net.shared",
        "Net.alias",
        "Net.head",
    ]
    table = str(prof)
    lines = table.splitlines()
    assert lines[0].split("|")[0].strip() == "Module"
    assert lines[2].startswith("Net ")
    assert "├── features" in table and "│   ├── 0" in table and "└── head" in table
    assert "(unattributed)" in table and "(profiled block)" in table


def test_totals_are_right():
    prof = run(Net())
    rs = rows(prof)
    for r in prof.rows:
        assert 0 <= r.self_cpu_ns <= r.cpu_total_ns, r.name
        assert 0 <= r.self_cpu_bwd_ns <= r.cpu_total_bwd_ns, r.name
    children = {name: [c for c in rs if c.rsplit(".", 1)[0] == name and c != name] for name in rs}
    for name, r in rs.items():
        kids = [rs[c] for c in children[name] if not rs[c].alias_of]
        # backward: self is total minus the children's totals, exactly
        assert r.self_cpu_bwd_ns == r.cpu_total_bwd_ns - sum(k.cpu_total_bwd_ns for k in kids), name
        # forward: every child call ran inside its parent's call here
        assert r.self_cpu_ns == r.cpu_total_ns - sum(k.cpu_total_ns for k in kids), name
    selfs = sum(r.self_cpu_ns + r.self_cpu_bwd_ns for r in prof.rows)
    assert selfs + prof.unattributed_ns == prof.total_ns
    assert prof.unattributed_ns > 0  # the loss and the engine's own work


def test_time_lands_in_the_right_row():
    """A known stretch of time (a sleep: at least 20 ms) is in the sleeping
    module's self time, and in its parent's children's time, not its self."""
    prof = run(Net())
    rs = rows(prof)
    slept = 20e6
    assert rs["Net.slow"].self_cpu_ns >= slept
    net = rs["Net"]
    children = net.cpu_total_ns - net.self_cpu_ns
    assert children >= rs["Net.slow"].cpu_total_ns >= slept


def test_forward_and_backward_are_separate():
    prof = run(Net())
    rs = rows(prof)
    assert rs["Net.features.0"].bwd_runs >= 1 and rs["Net.features.0"].self_cpu_bwd_ns > 0
    assert rs["Net.head"].bwd_runs >= 1
    bwd_ops = {op.name for op in rs["Net.head"].ops if op.direction == "backward"}
    fwd_ops = {op.name for op in rs["Net.head"].ops if op.direction == "forward"}
    assert "aten::mm" in bwd_ops and "aten::linear" in fwd_ops
    with Profile(Net()) as prof:
        with torch.no_grad():
            Net()(torch.randn(1, 3, 12, 12))
    assert all(r.bwd_runs == 0 and r.cpu_total_bwd_ns == 0 for r in prof.rows)


def test_without_ops_the_layers_are_timed_alike_and_no_operator_is_recorded(tmp_path):
    model, x = Net(), torch.randn(2, 3, 12, 12)
    full = run(model, x=x)
    light = run(model, {"ops": False, "profile_memory": True}, x=x)
    assert [r.name for r in light.rows] == [r.name for r in full.rows]
    for a, b in zip(light.rows, full.rows):
        assert (a.calls, a.bwd_runs) == (b.calls, b.bwd_runs), a.name
        assert a.ops == [] and 0 <= a.self_cpu_ns <= a.cpu_total_ns and 0 <= a.self_cpu_bwd_ns <= a.cpu_total_bwd_ns
    rs = rows(light)
    assert rs["Net.slow"].self_cpu_ns >= 20e6
    assert rs["Net.features.0"].self_cpu_bwd_ns > 0 and rs["Net.features.0"].mem > 0
    assert sum(r.self_cpu_ns + r.self_cpu_bwd_ns for r in light.rows) + light.unattributed_ns == light.total_ns
    assert light.raw()["unattributed_ops"] == []
    with pytest.raises(ValueError, match="ops=False"):
        light.display(show_events=True)
    light.export_chrome_trace(str(tmp_path / "t.json"))
    cats = {e["cat"] for e in json.load(open(tmp_path / "t.json"))["traceEvents"]}
    assert cats == {"module", "backward"}
    with pytest.raises(ValueError, match="ops must be True or False"):
        Profile(model, ops=1)


@pytest.mark.parametrize("ops", [True, False])
def test_a_double_backward_is_attributed_to_the_modules(ops, tmp_path):
    """A gradient penalty: the nodes the first backward builds (create_graph)
    belong to the module whose node run built them."""
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    x = torch.randn(3, 4, requires_grad=True)
    with Profile(model, ops=ops) as prof:
        (g,) = torch.autograd.grad(model(x).sum(), x, create_graph=True)
        g.pow(2).sum().backward()
    prof.export_chrome_trace(str(tmp_path / "t.json"))
    runs = [e["name"] for e in json.load(open(tmp_path / "t.json"))["traceEvents"] if e["cat"] == "backward"]
    # made in the first backward, by the node runs of Tanh and of the Linears
    assert "Sequential.1 [TanhBackwardBackward0]" in runs
    assert "Sequential.0 [MmBackward0]" in runs and "Sequential.2 [MmBackward0]" in runs
    assert (
        sorted(r for r in runs if r.startswith("unattributed"))
        == ["unattributed [PowBackward0]", "unattributed [SumBackward0]", "unattributed [SumBackward0]"]
        + ["unattributed [torch::autograd::AccumulateGrad]"] * 4
    )
    assert sum(r.self_cpu_ns + r.self_cpu_bwd_ns for r in prof.rows) + prof.unattributed_ns == prof.total_ns


def counting_backend(runs):
    """A torch.compile backend whose graphs count their runs in `runs`."""

    def backend(gm, example_inputs):
        def run(*args):
            runs.append(1)
            return gm.forward(*args)

        return run

    return backend


def test_a_compiled_model_is_profiled_eagerly_under_its_own_names():
    from torch._dynamo.utils import counters

    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    runs = []
    compiled = torch.compile(model, backend=counting_backend(runs))
    x = torch.randn(3, 4)
    expected = compiled(x)
    assert len(runs) == 1
    frames = dict(counters["frames"])
    with Profile(compiled) as prof:
        out = compiled(x)
        out.sum().backward()
    assert torch.allclose(out, expected)
    assert len(runs) == 1  # the compiled graph did not run: the layers did, eagerly
    assert [(r.name, r.calls) for r in prof.rows] == [
        ("Sequential", 1),
        ("Sequential.0", 1),
        ("Sequential.1", 1),
        ("Sequential.2", 1),
    ]
    assert rows(prof)["Sequential.2"].bwd_runs == 2
    assert dict(counters["frames"]) == frames  # nothing was compiled for the profile
    assert "forward" not in vars(model)
    compiled(x)
    assert len(runs) == 2 and dict(counters["frames"]) == frames  # the compiled code runs again as it was


def test_a_failed_start_leaves_nothing_behind():
    class NoForward(nn.Module):
        """Refuses to have its forward replaced."""

        def forward(self, x):
            return x

        def __setattr__(self, name, value):
            if name == "forward":
                raise AttributeError("NoForward keeps its forward")
            super().__setattr__(name, value)

    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), NoForward())
    runs = []
    compiled = torch.compile(nn.Linear(4, 4), backend=counting_backend(runs))
    x = torch.randn(2, 4)
    compiled(x)
    with pytest.raises(AttributeError, match="NoForward keeps its forward"):
        with Profile(model):
            pass
    assert all("forward" not in vars(m) for m in model.modules())
    compiled(x)
    assert len(runs) == 2  # the compiler's stance is back: compiled code runs compiled
    with Profile(nn.Sequential(nn.Linear(4, 4))) as prof:  # the process-wide lock was released
        pass
    assert prof.rows


def test_a_profile_inside_a_compiled_function():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())

    @torch.compile(backend="eager")
    def step(x):
        with Profile(model) as prof:
            y = model(x).sum()
        return y, prof

    y, prof = step(torch.randn(2, 4))
    assert [(r.name, r.calls) for r in prof.rows] == [("Sequential", 1), ("Sequential.0", 1), ("Sequential.1", 1)]


def test_shared_and_repeated_modules_are_counted_once_per_call_and_said_so():
    prof = run(Net())
    rs = rows(prof)
    assert rs["Net.shared"].calls == 3  # twice as shared, once as alias: one module
    assert rs["Net.shared"].shared_with == ["Net.alias"]
    assert rs["Net.alias"].alias_of == "Net.shared"
    assert rs["Net.alias"].calls == 0
    table = str(prof)
    assert "shared (also Net.alias)" in table and "alias (same module as Net.shared)" in table


def test_memory_per_module():
    class Alloc(nn.Module):
        def forward(self, x):
            self.kept = torch.ones(1 << 18)  # 1 MiB, still alive at the end
            return x

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.alloc = Alloc()

        def forward(self, x):
            return self.alloc(x)

    model = Outer()
    with Profile(model, profile_memory=True) as prof:
        model(torch.zeros(1))
    rs = rows(prof)
    assert rs["Outer.alloc"].self_mem == 1 << 20
    assert rs["Outer"].mem == (1 << 20) + rs["Outer"].self_mem
    assert "CPU Mem" in str(prof)
    with Profile(model) as prof2:
        model(torch.zeros(1))
    assert rows(prof2)["Outer.alloc"].self_mem is None


def test_a_module_list_its_parent_runs_one_by_one_totals_its_children():
    """A ModuleList is never called itself: its forward total, as its
    backward and memory totals, is what its children's add up to, its self
    0; memory is written in binary units."""

    class Blocks(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(Sleepy(0.005) for _ in range(3))

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return x

    model = Blocks()
    with Profile(model, profile_memory=True) as prof:
        model(torch.ones(2, 4, requires_grad=True)).sum().backward()
    rs = rows(prof)
    blocks, children = rs["Blocks.blocks"], [rs[f"Blocks.blocks.{i}"] for i in range(3)]
    assert blocks.calls == 0 and blocks.self_cpu_ns == 0 and blocks.self_cpu_bwd_ns == 0
    assert blocks.cpu_total_ns == sum(c.cpu_total_ns for c in children) >= 3 * 5_000_000
    assert blocks.cpu_total_bwd_ns == sum(c.cpu_total_bwd_ns for c in children) > 0
    assert blocks.mem == sum(c.mem for c in children)
    assert rs["Blocks"].cpu_total_ns >= blocks.cpu_total_ns
    table = str(prof)
    assert " KiB" in table or " B " in table or " MiB" in table
    assert " Kb" not in table and " Mb" not in table


def test_a_recursive_module_counts_its_outermost_call_in_its_total():
    class Recursive(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x, depth=3):
            time.sleep(0.004)
            return self.lin(x) if depth == 0 else self(x, depth - 1)

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.rec = Recursive()

        def forward(self, x):
            return self.rec(x)

    model = Outer()
    with Profile(model) as prof:
        model(torch.ones(1, 4))
    rs = rows(prof)
    rec, outer = rs["Outer.rec"], rs["Outer"]
    assert rec.calls == 4
    assert rec.cpu_total_ns <= outer.cpu_total_ns <= prof.total_ns
    assert rec.cpu_total_ns >= rec.self_cpu_ns >= 4 * 4_000_000


def test_a_forward_the_program_assigns_inside_the_block_is_kept():
    model = Net()
    own = model.head.forward

    def replacement(x):
        return own(x) * 2

    with Profile(model):
        model.head.forward = replacement
    assert model.head.forward is replacement
    assert "forward" not in vars(model.features)  # what the profile put there is gone


def test_paths_depth_and_sorting():
    prof = run(Net(), {"paths": ["features", "Net.head"]})
    assert [r.name for r in prof.rows] == [
        "Net.features",
        "Net.features.0",
        "Net.features.1",
        "Net.features.2",
        "Net.head",
    ]
    with pytest.raises(ValueError, match="paths: no module at Net.nope"):
        Profile(Net(), paths=["nope"]).__enter__()
    prof = run(Net())
    shallow = prof.display(depth=1)
    assert "features" in shallow and "│   ├── 0" not in shallow
    by_time = prof.display(sort_by="self_cpu", depth=1).splitlines()
    first_child = next(line for line in by_time if line.startswith("├──"))
    assert first_child.startswith("├── slow")  # the slowest child first
    with pytest.raises(ValueError, match="sort_by"):
        prof.display(sort_by="colour")


def test_show_events_lists_each_modules_operators():
    prof = run(Net())
    text = prof.display(show_events=True)
    assert "· fwd aten::conv2d" in text and "· bwd aten::convolution_backward" in text


def model_state(model):
    state = {}
    for name, m in model.named_modules():
        state[name] = (dict(vars(m)), {k: dict(getattr(m, k)) for k in vars(m) if k.endswith("hooks")})
    return state


def test_model_untouched_also_after_an_exception():
    model = Net()
    before = model_state(model)
    from torch.nn.modules import module as module_mod

    hooks_before = (dict(module_mod._global_forward_hooks), dict(module_mod._global_forward_pre_hooks))
    run(model)
    with pytest.raises(ZeroDivisionError):
        with Profile(model):
            model(torch.randn(1, 3, 12, 12))
            1 / 0  # noqa: B018 - the exception the profile must let through
    after = model_state(model)
    assert after.keys() == before.keys()
    for name in before:
        assert after[name][1] == before[name][1], name
        assert after[name][0].keys() == before[name][0].keys(), name
    assert (dict(module_mod._global_forward_hooks), dict(module_mod._global_forward_pre_hooks)) == hooks_before


def test_entering_twice_at_once_raises():
    model = Net()
    prof = Profile(model)
    with prof:
        with pytest.raises(RuntimeError, match="already running"):
            prof.__enter__()
        with pytest.raises(RuntimeError, match="another Profile"):
            Profile(model).__enter__()
    with prof:  # after it ends, it can run again
        model(torch.randn(1, 3, 12, 12))


def test_disabled_profiles_nothing():
    model = Net()
    with Profile(model, enabled=False) as prof:
        model(torch.randn(1, 3, 12, 12))
    assert str(prof) == "<unprofiled>"
    assert prof.rows == []


def test_memory_profile_refuses_to_share_with_torch_profiler():
    model = Net()
    with torch.profiler.profile(profile_memory=True):
        with pytest.raises(RuntimeError, match="profile_memory cannot run while torch.profiler"):
            Profile(model, profile_memory=True).__enter__()
    with Profile(model, profile_memory=True):  # nothing was left behind
        model(torch.randn(1, 3, 12, 12))


def test_exports_load_back(tmp_path):
    prof = run(Net())
    prof.export_json(tmp_path / "p.json")
    data = json.loads((tmp_path / "p.json").read_text())
    assert [r["name"] for r in data["rows"]] == [r.name for r in prof.rows]
    assert data["total_ns"] == prof.total_ns and data["unattributed_ns"] == prof.unattributed_ns
    prof.export_csv(tmp_path / "p.csv")
    table = list(csv.DictReader((tmp_path / "p.csv").open()))
    assert [r["name"] for r in table] == [r.name for r in prof.rows] + ["unattributed"]
    assert int(table[0]["cpu_total_ns"]) == prof.rows[0].cpu_total_ns
    prof.export_chrome_trace(tmp_path / "p.trace.json")
    trace = json.loads((tmp_path / "p.trace.json").read_text())["traceEvents"]
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in trace)
    spans = {e["name"]: e for e in trace if e["cat"] == "module"}
    conv = spans["Net.features.0"]
    inside = [
        e
        for e in trace
        if e["cat"] == "operator"
        and e["name"] == "aten::conv2d"
        and conv["ts"] <= e["ts"]
        and e["ts"] + e["dur"] <= conv["ts"] + conv["dur"] + 1e-3
    ]
    assert inside, "the module span holds its operators"
    assert any(e["cat"] == "backward" and e["name"].startswith("Net.head [") for e in trace)


def test_a_transformer_block_from_transformers():
    step = transformer_block()
    with Profile(step.model) as prof:
        step()
    rs = rows(prof)
    assert "BertLayer.attention.self.query" in rs
    assert rs["BertLayer.attention.self.query"].calls == 1
    assert rs["BertLayer.intermediate.dense"].bwd_runs >= 1
    assert sum(r.self_cpu_ns + r.self_cpu_bwd_ns for r in prof.rows) + prof.unattributed_ns == prof.total_ns


def test_tracer_tags_records_with_their_module(tmp_path):
    from api_tracer import APITracer, parse_call
    from support import trace_lines, yaml_records

    model = Net()
    x = torch.randn(1, 3, 12, 12)
    with APITracer(output_path=str(tmp_path), levels=[1, 3], merge_output=True, tag_modules=model):
        model(x)
        torch.ones(1)  # outside every module: no tag
    records = yaml_records(tmp_path)
    lines = trace_lines(tmp_path)
    by_module = {}
    for record, line in zip(records, lines):
        by_module.setdefault(record.get("module"), []).append(line)
    assert any(t.startswith("torch.nn.functional.conv2d(") for t in by_module["Net.features.0"])
    assert any(t.startswith("torch.ops.aten.conv2d.default(") for t in by_module["Net.features.0"])
    assert any(t.startswith("torch.nn.functional.linear(") for t in by_module["Net.head"])
    assert all(
        t.startswith("torch.nn.functional.linear(") or t.startswith("torch.ops.aten.linear")
        for t in by_module["Net.shared"]
    )
    assert by_module[None] == [
        "torch.ones(1)",
        'torch.ops.aten.ones.default([1], device=torch.device("cpu"), pin_memory=False)',
    ]
    # configs stay what they are: the tag is beside the config, not in it
    for line in lines:
        parse_call(line)
    with pytest.raises(ValueError, match="tag_modules"):
        APITracer(output_path=str(tmp_path), tag_modules="Net")


def test_timeline_keeps_at_most_its_limit_and_the_table_stays_whole(tmp_path):
    model = Net()
    whole = run(model)
    cut = run(model, {"timeline_limit": 10})
    assert cut.raw()["timeline_dropped"] > 0 and whole.raw()["timeline_dropped"] == 0
    cut.export_chrome_trace(tmp_path / "cut.json")
    trace = json.loads((tmp_path / "cut.json").read_text())
    assert len(trace["traceEvents"]) == 10  # one thread ran everything here
    assert trace["otherData"]["api_tracer_spans_dropped"] == cut.raw()["timeline_dropped"]
    # the sums are not cut: every operator call is counted
    calls = lambda p: {(r.name, o.name, o.direction): o.calls for r in p.rows for o in r.ops}  # noqa: E731 - a one-line measure, named
    assert calls(cut) == calls(whole)
    assert sum(r.self_cpu_ns + r.self_cpu_bwd_ns for r in cut.rows) + cut.unattributed_ns == cut.total_ns
    for bad in (-1, 2.5, True, "10"):
        with pytest.raises(ValueError, match="timeline_limit"):
            Profile(model, timeline_limit=bad)


def test_cuda_columns_only_with_a_cuda_device():
    prof = run(Net(), {"use_cuda": True})
    if torch.cuda.is_available():
        assert "CUDA total bwd" in str(prof)
    else:
        # asked for on a machine without CUDA: a CPU profile, no empty columns
        assert not prof.use_cuda and "CUDA" not in str(prof)
        assert all(r.cuda_total_ns is None and r.cuda_total_bwd_ns is None for r in prof.rows)
        from api_tracer import _C

        with pytest.raises(ValueError, match="no CUDA device"):
            _C.Profiler([-1], cuda=True)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (scripts/gpu_check.py runs it)")
@pytest.mark.parametrize("ops", [True, False])
def test_cuda_time_forward_and_backward_without_a_sync_per_layer(ops):
    model = Net().cuda()
    x = torch.randn(8, 3, 12, 12, device="cuda")
    model(x).sum().backward()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")  # any synchronization inside the block raises
    try:
        with Profile(model, use_cuda=True, profile_memory=True, ops=ops) as prof:
            loss = model(x).pow(2).sum()
            loss.backward()
    finally:
        torch.cuda.set_sync_debug_mode(0)
    rs = rows(prof)
    conv = rs["Net.features.0"]
    assert conv.cuda_total_ns > 0 and conv.cuda_total_bwd_ns > 0
    for r in prof.rows:
        if r.alias_of:
            continue
        assert r.self_cuda_ns <= r.cuda_total_ns and r.self_cuda_bwd_ns <= r.cuda_total_bwd_ns
    # totals are self plus the children's, in both directions
    features = rs["Net.features"]
    kids = [rs[f"Net.features.{i}"] for i in range(3)]
    assert features.cuda_total_ns == features.self_cuda_ns + sum(k.cuda_total_ns for k in kids)
    assert features.cuda_total_bwd_ns == features.self_cuda_bwd_ns + sum(k.cuda_total_bwd_ns for k in kids)
    assert any(r.cuda_mem for r in prof.rows)  # the caching allocator's reports arrived


@pytest.mark.parametrize("ops", [True, False])
def test_threads_running_the_model_at_once_are_all_counted(ops):
    model = Net()
    model.slow.seconds = 0.0
    x = torch.randn(2, 3, 12, 12)
    errors = []

    def work():
        try:
            for _ in range(5):
                model(x).sum().backward()
        except BaseException as e:  # noqa: BLE001 - a thread's error, asserted on after the join
            errors.append(e)

    alone = rows(run(model, {"ops": ops}, x=x))
    with Profile(model, ops=ops) as prof:
        run_in_threads(work, 3)
    assert not errors
    rs = rows(prof)
    assert rs["Net"].calls == 15 and rs["Net.head"].calls == 15
    assert rs["Net.shared"].calls == 45  # three calls per forward (twice as shared, once as alias)
    for name in ("Net.head", "Net.shared", "Net.features.0"):
        assert rs[name].bwd_runs == 15 * alone[name].bwd_runs > 0, name  # each thread's nodes found their module
    for r in prof.rows:
        assert 0 <= r.self_cpu_ns <= r.cpu_total_ns and 0 <= r.self_cpu_bwd_ns <= r.cpu_total_bwd_ns


class Checkpointed(nn.Module):
    """A block whose inner layers run under a reentrant checkpoint: their
    forward runs again inside the checkpoint's backward node."""

    def __init__(self):
        super().__init__()
        self.inner = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))
        self.out = nn.Linear(8, 1)

    def forward(self, x):
        from torch.utils.checkpoint import checkpoint

        return self.out(checkpoint(self.inner, x, use_reentrant=True))


@pytest.mark.parametrize("ops", [True, False])
def test_a_reentrant_checkpoint_is_counted_once(ops):
    model = Checkpointed()
    x = torch.randn(4, 8, requires_grad=True)
    prof = run(model, {"ops": ops}, x=x)
    rs = rows(prof)
    # the inner forward ran twice: once in the forward, once recomputed in backward
    assert rs["Checkpointed.inner"].calls == 2
    # the nodes the recomputation made ran inside the checkpoint's node, each under its own layer
    assert [rs[f"Checkpointed.{n}"].bwd_runs for n in ("inner.0", "inner.1", "inner.2", "out")] == [2, 1, 2, 2]
    assert rs["Checkpointed"].bwd_runs == 1  # CheckpointFunctionBackward
    for r in prof.rows:
        assert 0 <= r.self_cpu_ns <= r.cpu_total_ns and 0 <= r.self_cpu_bwd_ns <= r.cpu_total_bwd_ns
    assert sum(r.self_cpu_ns + r.self_cpu_bwd_ns for r in prof.rows) + prof.unattributed_ns == prof.total_ns


def test_an_operator_whose_library_goes_away_during_the_profile_keeps_its_name(tmp_path):
    import gc

    lib = torch.library.Library("api_tracer_profile_test", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CompositeExplicitAutograd")
    model = nn.Linear(2, 2)
    with Profile(model) as prof:
        torch.ops.api_tracer_profile_test.twice(torch.ones(2))
        lib._destroy()  # the schema, and the name the observer met, are freed
        del lib
        gc.collect()
        for _ in range(100):
            torch.ones(64).add_(1)  # allocations that may reuse that memory
        # another operator, whose name may now lie where the first one's was
        other = torch.library.Library("api_tracer_profile_tesu", "DEF")
        other.define("thrice(Tensor x) -> Tensor")
        other.impl("thrice", lambda x: x * 3, "CompositeExplicitAutograd")
        torch.ops.api_tracer_profile_tesu.thrice(torch.ones(2))
        torch.ops.api_tracer_profile_tesu.thrice(torch.ones(2))
        other._destroy()
    calls = {o["name"]: o["calls"] for o in prof.raw()["unattributed_ops"]}
    assert calls["api_tracer_profile_test::twice"] == 1
    assert calls["api_tracer_profile_tesu::thrice"] == 2
    prof.export_chrome_trace(tmp_path / "t.json")
    trace = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    assert any(e["name"] == "api_tracer_profile_test::twice" for e in trace)


def test_the_bundled_profile_example_runs_and_writes_its_exports(tmp_path):
    import os
    import subprocess
    import sys

    script = os.path.join(ROOT, "examples", "profile_layers.py")
    r = subprocess.run([sys.executable, script, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[2].startswith("BertModel ") and any("├── encoder" in line for line in lines)
    data = json.load(open(tmp_path / "profile.json"))
    # Which module is busiest is a matter of timing; that the example names
    # the row of greatest self time of its own export is not.
    busiest = max(data["rows"], key=lambda r: r["self_cpu_ns"] + r["self_cpu_bwd_ns"])
    assert f"busiest module by self time: {busiest['name']}, {busiest['calls']} call(s)" in r.stdout
    # (its operators listed, where it ran any of its own: under load a module that only calls others
    # may be the busiest by self time, its Python the time)
    assert ("aten::" in r.stdout) == bool(busiest["ops"]) and any(row["ops"] for row in data["rows"])
    assert data["root"] == "BertModel" and data["rows"][0]["cpu_total_ns"] > 0
    assert next(csv.reader(open(tmp_path / "profile.csv")))[0] == "name"
    assert json.load(open(tmp_path / "profile.trace.json"))["traceEvents"]
