"""The CUDA paths, on a machine with an NVIDIA GPU (CI has none):

    python scripts/gpu_check.py OUTPUT_DIR

Each check runs in a process of its own (a crash fails that check only);
prints one PASS/FAIL line per check and exits 1 if any failed.
"""

import os
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter

import torch
import yaml

from api_tracer import APITracer, parse_call

TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests")
# the tests' package `support`, and the profiler-agreement test's helpers
sys.path.insert(0, TESTS)
sys.path.insert(0, os.path.join(TESTS, "profile"))
OUT = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp()
ONLY = sys.argv[2] if len(sys.argv) > 2 else None
CHECKS = {}


def check(name):
    def wrap(fn):
        CHECKS[name] = fn
        return fn

    return wrap


def run_one(name):
    t0 = time.perf_counter()
    try:
        detail = CHECKS[name](os.path.join(OUT, name))
        print(f"PASS {name} ({time.perf_counter() - t0:.1f}s) {detail or ''}", flush=True)
        return 0
    except Exception:  # noqa: BLE001 - a check's failure is printed, and the next check runs
        print(f"FAIL {name}\n{traceback.format_exc()}", flush=True)
        return 1


def lines(d):
    with open(os.path.join(d, "api_trace.txt")) as f:
        return f.read().splitlines()


def records(d):
    with open(os.path.join(d, "api_trace.yaml")) as f:
        return yaml.safe_load(f) or []


dev = torch.device("cuda")


@check("cuda_tensors_each_level")
def _(out):
    x = torch.randn(2, 3, device=dev)
    for level in (0, 1, 2, 3):
        d = f"{out}/{level}"
        with APITracer(output_path=d, levels=level, merge_output=True, show_device=True):
            torch.relu(x)
        line = [t for t in lines(d) if "relu" in t][0]
        assert 'Tensor([2, 3], "float32", device="cuda:0")' in line, line
        rec = [r for r in records(d) if "relu" in r["api"]][0]
        assert rec["args"][0]["device"] == "cuda:0", rec
    return line


@check("level3_records_autograd_cuda_threads")
def _(out):
    lin = torch.nn.Linear(64, 64).to(dev)
    x = torch.randn(32, 64, device=dev)
    with APITracer(output_path=out, levels=3, merge_output=True):
        lin(x).relu().sum().backward()
    recs = records(out)
    nodes = Counter(r["backward"] for r in recs if "backward" in r)
    assert {"ReluBackward0", "AddmmBackward0"} <= set(nodes), nodes
    assert lin.weight.grad is not None
    return f"{sum(nodes.values())} records inside {len(nodes)} autograd nodes"


@check("no_device_sync_while_tracing")
def _(out):
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.LazyLinear(10)
    ).to(dev)
    x = torch.randn(4, 3, 16, 16, device=dev)
    idx = torch.tensor([1, 2, 3], device=dev)
    model(x)  # materialize the lazy layer
    torch.cuda.synchronize()
    for level in (0, 1, 2, 3):
        torch.cuda.set_sync_debug_mode("error")
        try:
            with APITracer(output_path=f"{out}/{level}", levels=level, merge_output=True):
                model(x).sum().backward()
                torch.nn.functional.embedding(idx, torch.randn(10, 4, device=dev))
        finally:
            torch.cuda.set_sync_debug_mode(0)
    return "levels 0-3 traced a CUDA step under sync_debug_mode('error')"


@check("value_ranges_on_cuda")
def _(out):
    emb = torch.nn.Embedding(100, 8).to(dev)
    with APITracer(output_path=out, levels=[2, 3], merge_output=False, value_ranges=True):
        emb(torch.tensor([[5, 9], [70, 3]], device=dev))
    for level in (2, 3):
        with open(f"{out}/api_value_ranges_level_{level}.yaml") as f:
            ranges = yaml.safe_load(f)
        entry = [r for r in ranges if r["config"].startswith("torch.ops.aten.embedding")][0]
        assert entry["ranges"] == {"args[1]": [3, 70]}, entry
    return "[3, 70] at levels 2 and 3"


@check("level3_agrees_with_profiler_on_cuda")
def _(out):
    from test_profiler_agreement import dispatcher_view, profiler_tensors
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU(), torch.nn.Linear(64, 10)).to(dev)
    opt = torch.optim.Adam(model.parameters())
    x, y = torch.randn(16, 32, device=dev), torch.randint(0, 10, (16,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        step()
        torch.cuda.synchronize()
    expected = Counter()
    for e in prof.events():
        if not e.name.startswith("aten::"):
            continue
        p = e.cpu_parent
        while p is not None and not p.name.startswith("aten::"):
            p = p.cpu_parent
        if p is None:
            expected[(e.name, profiler_tensors(e))] += 1
    with APITracer(output_path=out, levels=3, merge_output=True):
        step()
        torch.cuda.synchronize()
    got = Counter(dispatcher_view(*parse_call(text)) for text in lines(out))
    if any(t is None for _, t in expected):  # this torch reports no dtypes: names and counts
        got = Counter({(op, None): n for (op, _), n in got.items()})
    assert got == expected, (sorted((got - expected).items())[:5], sorted((expected - got).items())[:5])
    return f"{sum(got.values())} outermost calls"


@check("overhead_cuda_cnn")
def _(out):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(32, 32, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(32, 10),
    ).to(dev)
    x = torch.randn(64, 3, 64, 64, device=dev)

    def run(n=50):
        for _ in range(n):
            model.zero_grad(set_to_none=True)
            model(x).sum().backward()
        torch.cuda.synchronize()

    def best(ctx_factory):
        t = []
        for _ in range(5):
            with ctx_factory():
                t0 = time.perf_counter()
                run()
                t.append(time.perf_counter() - t0)
        return min(t)

    import contextlib

    run(5)
    base = best(contextlib.nullcontext)
    l2 = best(lambda: APITracer(output_path=f"{out}/2", levels=2, merge_output=True))
    l3 = best(lambda: APITracer(output_path=f"{out}/3", levels=3, merge_output=True))
    return f"untraced {base * 1e3:.1f} ms; level 2 {l2 / base:.3f}x; level 3 {l3 / base:.3f}x"


@check("compile_on_cuda_each_level")
def _(out):
    f = torch.compile(lambda a, b: torch.sin(a) * b + a.sum())
    a, b = torch.randn(1024, device=dev), torch.randn(1024, device=dev)
    ref = f(a, b)
    for level in (0, 1, 2, 3):
        with APITracer(output_path=f"{out}/{level}", levels=level, merge_output=True):
            got = f(a, b)
        torch.testing.assert_close(got, ref)
    return "same results at levels 0-3"


@check("profile_cuda_time_and_memory")
def _(out):
    # The layer profiler's CUDA tests (skipped without a GPU), then its
    # cost on a CUDA CNN forward and backward.
    tests = os.path.join(TESTS, "profile", "test_profile.py")
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", tests, "-k", "cuda"], capture_output=True, text=True
    )
    assert r.returncode == 0 and "skipped" not in r.stdout, r.stdout + r.stderr
    from api_tracer import Profile
    from support.workloads import cnn_forward_backward

    step = cnn_forward_backward(device=dev)

    def best(profiled, ops=True):
        times = []
        for _ in range(5):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            if profiled:
                with Profile(step.model, use_cuda=True, ops=ops) as prof:
                    for _ in range(20):
                        step()
                str(prof)
            else:
                for _ in range(20):
                    step()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        return min(times)

    for _ in range(5):
        step()
    base, prof, light = best(False), best(True), best(True, ops=False)
    return (
        f"{r.stdout.strip().splitlines()[-1]}; CNN Profile(use_cuda=True) {prof / base:.3f}x untraced, "
        f"with ops=False {light / base:.3f}x"
    )


@check("replay_check_device_cuda")
def _(out):
    # The workloads' configs at levels 1-3, traced and replayed on the CPU,
    # each judged against the same inputs on CUDA (replay --check
    # device:cuda), with TF32 off so that both sides run float32 kernels.
    # Nothing may be skipped, fail or be invalid; a mismatch only where
    # long float32 sums legitimately differ (workloads.LONG_SUMS).
    from pathlib import Path

    from api_tracer.replay import ReplayOptions, run_in_process
    from support.workloads import LONG_SUMS, WORKLOADS, traced_configs

    torch.backends.cudnn.allow_tf32 = False
    counts = []
    for name in WORKLOADS:
        for level in (1, 2, 3):
            results = run_in_process(
                traced_configs(Path(out), name, level), ReplayOptions(check="device:cuda"), lambda r: None
            )
            tally = Counter(r.status.value for r in results)
            unexplained = [
                (r.config, r.status.value, r.message)
                for r in results
                if r.status != "ok" and not (r.status == "mismatch" and r.worst in LONG_SUMS.get(r.api, ()))
            ]
            assert results and not unexplained, unexplained
            assert tally["mismatch"] <= 3 and all(r.check == "device:cuda" for r in results), tally
            counts.append(f"{name} {level}: " + ", ".join(f"{n} {s}" for s, n in sorted(tally.items())))
    return "; ".join(counts)


if ONLY:
    sys.exit(run_one(ONLY))
failed = []
for name in CHECKS:
    rc = subprocess.run([sys.executable, __file__, OUT, name]).returncode
    if rc:
        failed.append(name)
        if rc < 0:
            print(f"FAIL {name}: the process died with signal {-rc}", flush=True)
print(f"\n{len(CHECKS) - len(failed)} passed, {len(failed)} failed: {failed}")
sys.exit(1 if failed else 0)
