"""api-tracer replay: configs traced from real workloads replay, round-trip,
and stay data."""

import json
import os
from xml.etree import ElementTree

import pytest
import torch

from api_tracer import APITracer
from api_tracer.formats.configs import read_config_file
from api_tracer.frameworks.torch import policy
from api_tracer.replay import Config, ReplayOptions, replay_one, roundtrip, run_in_process
from support import run_cli, write_lines
from support.workloads import WORKLOADS, traced_configs


@pytest.mark.parametrize("level", [0, 1, 2, 3])
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_configs_of_real_workloads_replay(tmp_path, name, level):
    configs = traced_configs(tmp_path, name, level)
    results = run_in_process(configs, ReplayOptions(), lambda r: None)
    ok = [r for r in results if r.status == "ok"]
    not_ok = [(r.config, r.status, r.error, r.message) for r in results if r.status != "ok"]
    assert len(results) >= 5
    assert len(ok) >= 0.99 * len(results), not_ok
    assert all(r.message for r in results if r.status != "ok")  # every failure says why


@pytest.mark.parametrize("level", [0, 1, 2, 3])
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_tracing_a_replay_gives_back_the_config(tmp_path, name, level):
    configs = traced_configs(tmp_path, name, level)
    problems = [(c.text, why) for c, why in roundtrip(configs, level) if why]
    assert len(problems) <= 0.01 * len(configs), problems


@pytest.mark.parametrize("name", ["rnn", "embedding_bag"])
def test_the_modules_and_optimizers_of_real_models_come_back(tmp_path, name):
    """At level 0, the LSTM, GRU, embedding bags, losses and optimizers a
    training step passes are rebuilt, and traced back as the same lines."""
    configs = traced_configs(tmp_path, name, 0)
    objects = [c for c in configs if "torch.nn." in c.text.split("(", 1)[1] or "torch.optim." in c.text]
    assert len(objects) >= 4 and not any("Module(" in c.text or "Opaque(" in c.text for c in objects)
    results = run_in_process(configs, ReplayOptions(), lambda r: None)
    assert [(r.config, r.message) for r in results if r.status != "ok"] == []
    assert [(c.text, why) for c, why in roundtrip(configs, 0) if why] == []


def bags_and_attention():
    """What left trailing defaults in level 2's and 3's lines: operators
    that C++ code calls with an undefined optional tensor (embedding_bag's
    per_sample_weights, the CPU flash attention backward's attn_mask)."""
    torch.manual_seed(0)
    bag = torch.nn.EmbeddingBag(20, 4, mode="mean")
    weighted = torch.nn.EmbeddingBag(20, 4, mode="sum")
    q = torch.randn(2, 2, 8, 4, requires_grad=True)
    ids, offsets = torch.tensor([1, 2, 3, 4, 5]), torch.tensor([0, 2])

    def step():
        bag(ids, offsets).sum().backward()
        weighted(ids, offsets, per_sample_weights=torch.rand(5)).sum().backward()
        torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True).sum().backward()
        torch.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=torch.ones(8, 8).tril().bool()).sum()

    return step


@pytest.mark.parametrize("level", [2, 3])
def test_capture_leaves_out_the_defaults_a_replay_leaves_out(tmp_path, level):
    step = bags_and_attention()
    step()
    with APITracer(output_path=str(tmp_path), levels=level, merge_output=True):
        step()
    configs = read_config_file(str(tmp_path / "api_configs.yaml"))
    texts = [c.text for c in configs]
    bags = [t for t in texts if t.startswith("torch.ops.aten._embedding_bag.default(")]
    assert len(bags) == 2 if level == 2 else not bags  # level 3 sees embedding_bag.padding_idx, outermost
    assert all(not t.endswith(", False, None)") for t in bags), bags
    backward = [t for t in texts if "_scaled_dot_product_flash_attention_for_cpu_backward" in t]
    assert backward and all("attn_mask=None" not in t for t in backward)
    assert any("scaled_dot_product" in t and "Tensor([8, 8], " in t for t in texts)  # a mask given stays
    assert [(c.text, why) for c, why in roundtrip(configs, level) if why] == []


EVIL = [
    '__import__("os").system("touch PWNED")',
    'os.system("touch PWNED")',
    'torch.os.system("touch PWNED")',
    "torch.Tensor.__class__.__subclasses__()",
    "torch.ops.aten.__class__.__subclasses__()",
    'torch.ops.aten.__getattr__("__and__")',
    'torch.add(Callable("builtins.exec"), 1)',
    'torch.add(__import__("os").system("touch PWNED"))',
    "torch.nn.functional.math.sqrt(4)",
    'torch.load("PWNED")',
]


def test_operators_named_as_dunders_and_tensor_methods_outside_overrides_replay():
    """Held-out models (a Qwen2 padding mask at levels 1 and 3) and
    clip_grad_norm_ at level 1 recorded these: aten registers __and__,
    __or__, ... as operator names; torch.overrides lists Tensor.new_zeros
    among the functions it ignores, though level 1 sees it, and leaves out
    private bindings of operators (torch._foreach_norm). Replay refused
    them all."""
    lines = [
        'torch.ops.aten.__and__.Tensor(Tensor([1, 1, 9, 9], "bool"), Tensor([2, 1, 1, 9], "bool"))',
        'torch.ops.aten.__lshift__.Scalar(Tensor([4], "int64"), 2)',
        'torch.Tensor.new_zeros(Tensor([2, 5], "int64"), torch.Size([2, 5]))',
        'torch.Tensor.new_ones(Tensor([1, 1, 9, 1], "int64"), (), dtype=torch.bool)',
        'torch._foreach_norm([Tensor([50, 16], "float32"), Tensor([96], "float32")], 2.0)',
        'torch._foreach_mul_([Tensor([50, 16], "float32"), Tensor([96], "float32")], Tensor([], "float32"))',
    ]
    assert policy.refusal("torch._cufft_set_plan_cache_max_size")  # an operator's binding, as denied as it
    results = run_in_process(
        [Config("f", i + 1, line) for i, line in enumerate(lines)], ReplayOptions(), lambda r: None
    )
    assert [(r.status, r.message) for r in results] == [("ok", "")] * len(lines)
    # level 3 sees them (level 2 sees what they decompose to: bitwise_and)
    assert [why for _, why in roundtrip([Config("f", 1, line) for line in lines[:2]], 3)] == ["", ""]


def test_lines_holding_code_execute_nothing_and_the_rest_still_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    good = 'torch.add(Tensor([2, 3], "float32"), Tensor([2, 3], "float32"), alpha=2)'
    path = write_lines(tmp_path, EVIL[:4] + [good] + EVIL[4:])
    results = run_in_process(read_config_file(str(path)), ReplayOptions(), lambda r: None)
    assert not (tmp_path / "PWNED").exists()
    by_text = {r.config: r for r in results}
    assert by_text[good].status == "ok"
    for line in EVIL:
        r = by_text[line]
        # what does not parse, or walks through a dunder, is invalid; a name the policy does
        # not call, inside torch or not, is refused, with the policy's reason
        unreadable = "__import__(" in line or line.startswith("torch.ops.aten.__")
        assert r.status == ("invalid" if unreadable else "refused"), (line, r)
        assert r.column >= 1 and r.line >= 1
    # torch.load is torch's own API, but it unpickles (runs code): the policy refuses it
    assert "reads or writes files" in by_text['torch.load("PWNED")'].message


# Each of these ran from a config file before replay had a policy.
UNSAFE = [
    'torch.utils.collect_env.run("id > PWNED")',
    'torch.ops.load_library("evil.so")',
    'torch.save(Tensor([2], "float32"), "PWNED")',
    'torch.from_file("PWNED", True, 10)',
    "torch._C._abort()",
    "torch._C._crash_if_aten_asan(3)",
    "torch.set_num_threads(1)",
    "torch.set_default_dtype(torch.float64)",
    "torch.classes.evil.Thing()",
    'torch.ops.c10d.barrier.default(Tensor([1], "float32"))',
    'torch.ops.debugprims.load_tensor.default("PWNED", [2], [1], dtype=torch.float32, device=torch.device("cpu"))',
    # names inside arguments: a Callable the API calls, constructors replay makes, classes passed on
    'torch.Tensor.apply_(Tensor([2], "float32"), Callable("torch._C._abort"))',
    'torch.Tensor.map_(Tensor([2], "float32"), Tensor([2], "float32"), Callable("torch.save"))',
    'torch.nn.Sequential.forward(torch.nn.Sequential(torch.nn.SyncBatchNorm(2)), Tensor([2, 2], "float32"))',
    'torch.Tensor.apply_(Tensor([2], "float32"), torch.utils.data.DataLoader)',
    'torch.add(Tensor([2], "float32"), torch.ops.load_library("evil.so"))',
    'torch.add(Tensor([2], "float32"), numpy.load("PWNED"))',
]


def test_the_policy_refuses_what_does_not_compute_before_building_anything(tmp_path, monkeypatch):
    from api_tracer import replay

    monkeypatch.chdir(tmp_path)
    built = []
    real_build = replay.Builder.build
    monkeypatch.setattr(replay.Builder, "build", lambda self, v, path: built.append(path) or real_build(self, v, path))
    libraries, threads, dtype = set(torch.ops.loaded_libraries), torch.get_num_threads(), torch.get_default_dtype()
    path = write_lines(tmp_path, UNSAFE)
    results = run_in_process(read_config_file(str(path)), ReplayOptions(), lambda r: None)
    numpy = {line for line in UNSAFE if "numpy." in line}  # not torch's: invalid, refused by no policy
    assert [(r.config, r.status) for r in results] == [
        (line, "invalid" if line in numpy else "refused") for line in UNSAFE
    ]
    for r in results:
        assert ("is refused: it " in r.message or "not a numpy scalar type" in r.message) and r.column >= 1, r
        assert r.line == UNSAFE.index(r.config) + 1
    assert built == []  # refused before any argument was built
    assert sorted(os.listdir(tmp_path)) == ["configs.txt"]
    assert torch.ops.loaded_libraries == libraries
    assert (torch.get_num_threads(), torch.get_default_dtype()) == (threads, dtype)


def test_refusals_name_the_family_and_the_allow_list_holds_the_computing_apis():
    from api_tracer.frameworks.torch.dialect import PyTorchDialect
    from api_tracer.frameworks.torch.policy import DENIED, allow_list, refusal

    allowed = allow_list()
    assert {
        "torch.add",
        "torch.Tensor.__add__",
        "torch.nn.Linear",
        "torch.nn.functional.linear",
        "torch.optim.SGD.step",
        "torch.ops.aten.add.Tensor",
        "torch.ops.prims.add.default",
        "torch.functional.einsum",
    } <= allowed
    assert (
        not {
            "torch.save",
            "torch.load",
            "torch.ops.aten.from_file.default",
            "torch.set_num_threads",
            "torch.Tensor.share_memory_",
        }
        & allowed
    )
    assert "threads" in refusal("torch.set_num_threads") and "autocast" in refusal("torch.set_autocast_enabled")
    assert "an operator of c10d, not of a computing namespace" in refusal("torch.ops.c10d.allreduce_.default")
    assert "loads code" in refusal("torch.ops.load_library")
    assert "allow-list" in refusal("torch.utils.collect_env.run")
    # every family of the deny-list refuses something the API list or the operators hold
    apis = set(PyTorchDialect().api_list())
    ops = {f"torch.ops.{s.name.replace('::', '.')}" for s in torch._C._jit_get_all_schemas()}
    for reason, patterns in DENIED.items():
        for pattern in patterns:
            assert any(
                refusal(name) for name in apis | ops if name == pattern or name.startswith(pattern.rstrip("*"))
            ), (reason, pattern)


def test_allow_unsafe_lifts_the_policy_and_the_summary_says_so(tmp_path):
    path = write_lines(tmp_path, ['torch.save(Tensor([2], "float32"), "SAVED")', "torch.ones(2)"])
    safe = run_cli("replay", str(path), cwd=tmp_path)
    # the policy working is no failure: counted and said, exit 0 (with --strict, 1)
    assert safe.returncode == 0 and "1 ok, 0 failed, 0 skipped, 1 refused, 0 invalid" in safe.stdout
    assert "refused: 1 x torch.save is refused: it reads or writes files" in safe.stdout
    assert not (tmp_path / "SAVED").exists()
    strict = run_cli("replay", str(path), "--strict", "--junit", str(tmp_path / "junit.xml"), cwd=tmp_path)
    assert strict.returncode == 1 and "1 refused" in strict.stdout and not (tmp_path / "SAVED").exists()
    junit = (tmp_path / "junit.xml").read_text()
    assert 'skipped="1"' in junit and '<skipped message="refused: torch.save is refused' in junit
    assert "--allow-unsafe" not in safe.stdout.replace("(--allow-unsafe lifts the policy)", "")
    unsafe = run_cli("replay", str(path), "--allow-unsafe", cwd=tmp_path)
    assert unsafe.returncode == 0 and "2 ok" in unsafe.stdout, unsafe.stdout
    assert "--allow-unsafe: the replay policy was off" in unsafe.stdout
    assert torch.load(tmp_path / "SAVED").shape == (2,)


def test_a_call_that_sets_grad_mode_sets_it_for_itself_only():
    assert torch.is_grad_enabled()
    assert replay_one(Config("x", 1, "torch._C._set_grad_enabled(False)")).status == "ok"
    assert torch.is_grad_enabled()


def test_malformed_lines_are_reported_with_file_line_column(tmp_path):
    path = write_lines(tmp_path, ["torch.ones(2, 3)", "torch.ones(2,, 3)", "torch.zeros(3, dtype=torch.int8)"])
    result = run_cli("replay", str(path), "-o", str(tmp_path / "r.jsonl"), "--junit", str(tmp_path / "r.xml"))
    assert result.returncode == 1
    assert f"INVALID {path}:2:14: Invalid: expected a value" in result.stdout
    assert "3 configs: 2 ok, 0 failed, 0 skipped, 0 refused, 1 invalid" in result.stdout
    report = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [r["status"] for r in report] == ["ok", "invalid", "ok"]
    assert report[1]["line"] == 2 and report[1]["column"] == 14
    suite = ElementTree.parse(tmp_path / "r.xml").getroot()
    assert suite.get("tests") == "3" and suite.get("errors") == "1"
    assert len(suite.findall("testcase/error")) == 1


def test_a_line_that_is_not_utf8_is_invalid_at_its_bad_byte_and_the_rest_run(tmp_path):
    path = tmp_path / "configs.txt"
    path.write_bytes(b'torch.ones(2)\ntorch.ones(2, "\xc3\xa9\xff")\ntorch.zeros(\xed\xa0\x80)\r\ntorch.zeros(3)\n')
    result = run_cli("replay", str(path), "-o", str(tmp_path / "r.jsonl"))
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    report = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [(r["line"], r["status"]) for r in report] == [(1, "ok"), (2, "invalid"), (3, "invalid"), (4, "ok")]
    assert (report[1]["column"], report[2]["column"]) == (17, 13)  # in characters: "é" is one
    assert "byte 0xff" in report[1]["message"] and "byte 0xed" in report[2]["message"]
    assert f"INVALID {path}:2:17: Invalid: the line is not UTF-8: byte 0xff" in result.stdout


def test_sizes_below_minus_one_are_invalid_and_minus_one_is_symbolic():
    r = replay_one(Config("x", 1, 'torch.neg(Tensor([2, -5], "float32"))'))
    assert (r.status, r.api, r.column) == ("invalid", "torch.neg", 22)
    assert "size -5" in r.message and "-1 for a symbolic one" in r.message
    r = replay_one(Config("x", 1, 'torch.neg(Tensor([2, -1], "float32"))'))
    assert (r.status, r.message) == ("skipped", "a tensor with a symbolic size")


def test_an_argument_that_fails_to_build_is_reported_with_the_api_and_the_argument():
    line = 'torch.add(Tensor([2], "float32"), torch.nn.Linear(2, "three"))'
    r = replay_one(Config("x", 1, line))
    assert (r.status, r.api, r.error) == ("failed", "torch.add", "TypeError")
    assert r.message.startswith("building args[1]: ")
    [(config, why)] = roundtrip([Config("x", 1, line)], level=1)
    assert why.startswith("not replayed: BuildError: building args[1]: ")


class Unexpected(Exception):
    """What no one expects a build to raise."""


def raise_unexpected(*args, **kwargs):
    raise Unexpected("boom")


@pytest.mark.parametrize("where", ["tensor", "constructor", "check"])
def test_whatever_building_an_argument_raises_is_a_reported_result(monkeypatch, where):
    from api_tracer import replay

    line = 'torch.nn.Linear.forward(torch.nn.Linear(2, 3), Tensor([4, 2], "float32"))'
    if where == "tensor":
        monkeypatch.setattr(replay.Builder, "tensor", raise_unexpected)
    elif where == "constructor":
        line = 'torch.nn.Linear.forward(torch.nn.Linear(2, -3), Tensor([4, 2], "float32"))'  # torch raises
    else:
        monkeypatch.setattr(replay.Builder, "check_tensors", raise_unexpected)
    config = Config("x", 1, line)
    [result] = run_in_process([config], ReplayOptions(), lambda r: None)
    assert result.status == "failed" and result.api == "torch.nn.Linear.forward"
    if where == "tensor":
        assert (result.error, result.message) == ("Unexpected", "building args[1]: boom")
    elif where == "constructor":
        assert result.error == "RuntimeError" and result.message.startswith("building args[0]: ")
    else:
        assert (result.error, result.message) == ("Unexpected", "boom")
    [(_, why)] = roundtrip([config], level=0)
    assert why.startswith("not replayed: ") and why.endswith(result.message), why


def test_tensors_above_the_byte_limit_are_skipped_before_they_are_made(tmp_path, monkeypatch):
    from api_tracer import replay
    from api_tracer.flags import byte_count

    made = []
    monkeypatch.setattr(replay.Builder, "tensor", lambda self, spec, path: made.append(path))
    # by default: half the free memory of the device, far below 4e15 bytes
    r = replay_one(Config("x", 1, 'torch.neg(Tensor([100000, 100000, 100000], "float32"))'))
    assert r.status == "skipped" and made == []
    assert r.message.startswith("its tensor arguments need 4000000000000000 bytes (3.6 PiB), more than the limit")
    assert "--max-bytes" in r.message
    # the bytes of all tensor arguments count, strides included
    line = 'torch.add(Tensor([10, 10], "float32"), Tensor([10], "float64", stride=[10]))'
    assert replay_one(Config("x", 1, line), ReplayOptions(max_bytes=1127)).status == "skipped"
    monkeypatch.undo()
    # ... and then its outputs', as the same call on the meta device has them: 10 x 10 float64
    assert replay_one(Config("x", 1, line), ReplayOptions(max_bytes=1927)).status == "skipped"
    assert replay_one(Config("x", 1, line), ReplayOptions(max_bytes=1928)).status == "ok"  # 400 + 728 + 800
    assert [byte_count(x) for x in ("8G", "512M", "1000", "1.5K")] == [8 << 30, 512 << 20, 1000, 1536]
    path = write_lines(tmp_path, ['torch.neg(Tensor([1000], "float32"))', 'torch.neg(Tensor([10], "float32"))'])
    result = run_cli("replay", str(path), "--max-bytes", "1K")
    assert result.returncode == 0 and "1 ok, 0 failed, 1 skipped, 0 refused, 0 invalid" in result.stdout
    assert "need 4000 bytes (3.9 KiB), more than the limit of 1024 bytes" in result.stdout
    result = run_cli("replay", str(path), "--max-bytes", "lots")
    assert result.returncode == 2 and (
        "--max-bytes: expected a number of bytes (e.g. 1048576, 512M, 1G), not 'lots'" in result.stderr
    )
    # the default limit asks the device: one torch does not know is a usage error
    result = run_cli("replay", str(path), "--device", "nonsense")
    assert result.returncode == 2 and result.stderr.startswith("api-tracer: replay: --device nonsense: ")


def test_isolated_workers_report_a_crash_and_go_on(tmp_path):
    lines = [
        "torch.ones(2)",
        'torch.neg(Tensor([3], "float32"))',
        "torch.zeros(4)",
        'torch.abs(Tensor([2], "float32"))',
    ]
    path = write_lines(tmp_path, lines)
    env = dict(os.environ, API_TRACER_REPLAY_CRASH_ON="torch.neg")
    result = run_cli(
        "replay", str(path), "--isolate", "--jobs", "2", "-o", str(tmp_path / "r.jsonl"), env=env, timeout=300
    )
    report = {r["config"]: r for r in map(json.loads, (tmp_path / "r.jsonl").read_text().splitlines())}
    assert report[lines[1]]["status"] == "failed" and report[lines[1]]["error"] == "WorkerCrashed"
    assert [report[line]["status"] for line in (lines[0], lines[2], lines[3])] == ["ok", "ok", "ok"]
    assert result.returncode == 1


def test_a_crash_in_process_keeps_the_report_and_says_how_far_replay_got(tmp_path):
    lines = ["torch.ones(2)", 'torch.neg(Tensor([3], "float32"))', "torch._C._abort()", "torch.zeros(4)"]
    path = write_lines(tmp_path, lines)
    report = tmp_path / "r.jsonl"
    env = dict(os.environ, PYTHONFAULTHANDLER="1")
    result = run_cli("replay", str(path), "--allow-unsafe", "-o", str(report), env=env, timeout=300)
    assert result.returncode == -6  # died by SIGABRT, as it would have without replay's note
    rows = [json.loads(line) for line in report.read_text().splitlines()]
    assert [(r["line"], r["status"]) for r in rows] == [(1, "ok"), (2, "ok"), (3, "failed")]
    assert (rows[2]["api"], rows[2]["error"]) == ("torch._C._abort", "Crashed")
    assert "signal 6, SIGABRT" in rows[2]["message"]
    assert (
        f"api-tracer replay: the process died (signal 6, SIGABRT) while replaying {path}:3: torch._C._abort(); "
        "the report holds the 2 configs before it; rerun with --isolate"
    ) in result.stderr
    # the handler that was there before (faulthandler's) still ran, after the note
    assert result.stderr.index("api-tracer replay:") < result.stderr.index("Fatal Python error: Aborted")


def test_after_in_process_replay_the_previous_signal_handlers_are_back(tmp_path):
    code = """
        import ctypes, faulthandler, signal, sys
        import torch
        from api_tracer import _C
        from api_tracer.replay import Config, ReplayOptions, run_in_process

        libc = ctypes.CDLL(None, use_errno=True)

        def handlers():
            out = []
            for sig in _C.replay_crash_signals:
                action = ctypes.create_string_buffer(256)
                assert libc.sigaction(sig, None, action) == 0
                # glibc's struct sigaction: the handler, the mask (the kernel's 64
                # signals in its first 8 bytes, the rest not filled), flags, restorer
                out.append(action.raw[:16] + action.raw[136:152])
            stack = ctypes.create_string_buffer(64)
            assert libc.sigaltstack(None, stack) == 0
            return out, stack.raw

        faulthandler.enable()
        before = handlers()
        results = run_in_process([Config("f", 1, "torch.ones(2)")], ReplayOptions(), lambda r: None)
        assert [r.status for r in results] == ["ok"]
        assert handlers() == before
        print("same handlers", flush=True)
        torch._C._abort()
    """
    from support import run_script

    result = run_script(code, tmp_path)
    assert "same handlers" in result.stdout, result.stderr
    assert result.returncode == -6
    assert "Fatal Python error: Aborted" in result.stderr and "api-tracer replay" not in result.stderr


def test_the_crash_note_is_written_on_a_stack_overflow_too(tmp_path):
    code = """
        import os, sys
        from api_tracer import _C

        fd = os.open("report.jsonl", os.O_WRONLY | os.O_CREAT)
        _C.replay_crash_note_install(fd)
        _C.replay_crash_note_set({sig: (f"note: signal {sig}\\n", f"line: signal {sig}\\n")
                                  for sig in _C.replay_crash_signals})
        sys.setrecursionlimit(10 ** 8)
        nested = []
        for _ in range(10 ** 6):
            nested = [nested]
        repr(nested)  # recurses in C until the stack overflows
    """
    from support import run_script

    result = run_script(code, tmp_path)
    assert result.returncode == -11
    assert "note: signal 11" in result.stderr  # the handler ran, on its own stack
    assert (tmp_path / "report.jsonl").read_text() == "line: signal 11\n"


def test_integer_tensors_come_from_the_recorded_ranges(tmp_path):
    emb = torch.nn.Embedding(50, 4)
    out = tmp_path / "t"
    with APITracer(output_path=str(out), levels=3, merge_output=True, value_ranges=True):
        emb(torch.tensor([[30, 40], [35, 49]]))
    from api_tracer.formats.configs import ranges_beside
    from api_tracer.formats.summaries import read_value_ranges
    from api_tracer.replay import prepare

    path = str(out / "api_configs.yaml")
    ranges = read_value_ranges(ranges_beside(path))
    config = next(c for c in read_config_file(path) if "embedding" in c.text)
    api, func, args, kwargs = prepare(config, ReplayOptions(ranges=ranges))
    indices = args[1]
    assert indices.dtype == torch.int64 and 30 <= int(indices.min()) and int(indices.max()) <= 49
    assert replay_one(config, ReplayOptions(ranges=ranges)).status == "ok"


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_integer_arguments_tied_to_another_keep_their_sum(tmp_path, level):
    """Integer and bool tensors whose values add up to another argument's
    size: segment_reduce's lengths to the data's length, ctc_loss's target
    lengths to the targets' count, a mask's true values to what
    masked_scatter's source holds. Each call's sum is kept in the profile;
    replay draws values that add up to it, and every config replays (drawn
    from the range alone, the lengths summed to anything from 0 to 20)."""
    from api_tracer.formats.configs import ranges_beside
    from api_tracer.formats.summaries import read_value_ranges

    data, lengths = torch.randn(5), torch.tensor([1, 0, 3, 1])
    log_probs = torch.randn(12, 2, 6).log_softmax(2)
    targets, target_lengths = torch.randint(1, 6, (7,)), torch.tensor([3, 4])
    mask = torch.tensor([True, False, True, True, False, False, True, False])
    with APITracer(output_path=str(tmp_path), levels=level, merge_output=True, value_ranges=True):
        torch.segment_reduce(data, "max", axis=0, lengths=lengths)
        torch.nn.functional.ctc_loss(log_probs, targets, torch.tensor([12, 10]), target_lengths)
        torch.zeros(8).masked_scatter(mask, torch.randn(4))
    path = str(tmp_path / "api_configs.yaml")
    ranges = read_value_ranges(ranges_beside(path))
    wanted = ("segment_reduce", "ctc_loss", "masked_scatter")
    configs = [c for c in read_config_file(path) if any(w in c.text.split("(")[0] for w in wanted)]
    assert {w for w in wanted for c in configs if w in c.text.split("(")[0]} == set(wanted)
    sums = sorted(p.sum for c in configs for p in ranges.get(c.text, {}).values() if p.same_sum and p.min < p.max)
    assert {4, 5, 7} <= set(sums)  # the mask, the lengths, the target lengths
    for seed in range(5):  # drawn again from other seeds: the sums still hold
        results = run_in_process(configs, ReplayOptions(ranges=ranges, seed=seed), lambda r: None)
        assert [(r.config, r.message) for r in results if r.status != "ok"] == []


def test_a_sum_of_random_64_bit_integers_is_not_kept():
    """Values spread over most of int64 (random 64-bit numbers, as an
    OpInfo sample holds) can have a sum, but moving drawn ones toward it
    would wrap around int64: they are drawn from their range alone, and
    the config replays (it failed, calling the sum impossible)."""
    from api_tracer import _C
    from api_tracer.replay.draw import draw

    p = _C.ValueProfile.of([-6884741690873564829, 8029969161481514868, 5, -7] * 4 + [1, 2])
    assert p.same_sum
    values = draw(p, 18, torch.Generator().manual_seed(0), keep_sum=True)
    assert int(values.min()) >= p.min and int(values.max()) <= p.max
    lengths = _C.ValueProfile.of([1, 0, 3, 1])
    assert int(draw(lengths, 4, torch.Generator().manual_seed(0), keep_sum=True).sum()) == 5


def test_linalg_checks_its_errors_at_level_2(tmp_path):
    """linalg's operators call the private _linalg_check_errors on LAPACK's
    info tensor, which level 2 records; reviewed, its configs replay and
    trace back."""
    with APITracer(output_path=str(tmp_path), levels=2, merge_output=True, value_ranges=True):
        torch.linalg.cholesky(torch.eye(3) * 2)
    from api_tracer.formats.configs import ranges_beside
    from api_tracer.formats.summaries import read_value_ranges

    path = str(tmp_path / "api_configs.yaml")
    configs = [c for c in read_config_file(path) if "_linalg_check_errors" in c.text]
    assert len(configs) == 1
    options = ReplayOptions(ranges=read_value_ranges(ranges_beside(path)))
    assert [(r.status, r.message) for r in run_in_process(configs, options, lambda r: None)] == [("ok", "")]
    assert [why for _, why in roundtrip(configs, 2)] == [""]


def test_tensors_keep_recorded_strides_and_dtypes():
    config = Config(
        "x",
        1,
        'torch.ops.aten.addmm.default(Tensor([4], "float64"), Tensor([2, 3], "float64"), '
        'Tensor([3, 4], "float64", stride=[1, 3]))',
    )
    from api_tracer.replay import prepare

    api, func, args, kwargs = prepare(config)
    assert args[2].stride() == (1, 3) and args[2].dtype == torch.float64
    assert replay_one(config).status == "ok"


def test_modules_in_evaluation_mode_replay_in_it_and_trace_back(tmp_path):
    """Level 0 writes a module's mode: all of it in evaluation mode is
    Eval(call); a training container may hold modules of either mode; a mix
    no call can say is the placeholder. Replay builds each in its mode."""
    import torch.nn as nn

    dropout, lstm = nn.Dropout(0.3).eval(), nn.LSTM(4, 8, num_layers=2, dropout=0.2).eval()
    mixed = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1).eval())
    unsayable = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.1)).eval()
    unsayable[0].train()
    out = tmp_path / "out"
    with APITracer(output_path=str(out), levels=0, merge_output=True):
        dropout(torch.ones(2, 4))
        lstm(torch.ones(3, 1, 4))
        mixed(torch.ones(2, 4))
        unsayable(torch.ones(2, 4))
        dropout.train()
        dropout(torch.ones(2, 4))  # the same module again, in the other mode
    lines = (out / "api_trace.txt").read_text().splitlines()
    forwards = [line for line in lines if ".forward(" in line]
    assert forwards == [
        'torch.nn.Dropout.forward(Eval(torch.nn.Dropout(p=0.3)), Tensor([2, 4], "float32"))',
        'torch.nn.LSTM.forward(Eval(torch.nn.LSTM(4, 8, num_layers=2, dropout=0.2)), Tensor([3, 1, 4], "float32"))',
        "torch.nn.Sequential.forward(torch.nn.Sequential(torch.nn.Linear(4, 4), Eval(torch.nn.Dropout(p=0.1))), "
        'Tensor([2, 4], "float32"))',
        'torch.nn.Sequential.forward(Module("torch.nn.Sequential"), Tensor([2, 4], "float32"))',
        'torch.nn.Dropout.forward(torch.nn.Dropout(p=0.3), Tensor([2, 4], "float32"))',
    ]
    configs = [Config("t", i + 1, line) for i, line in enumerate(forwards) if "Module(" not in line]
    from api_tracer.replay.builder import prepare

    built = [prepare(c, ReplayOptions())[2][0] for c in configs]
    assert [[m.training for m in b.modules()] for b in built] == [[False], [False], [True, True, False], [True]]
    assert [(c.text, why) for c, why in roundtrip(configs, 0) if why] == []
    bad = [
        Config("t", 1, 'torch.nn.Dropout.forward(Eval(torch.ones(2)), Tensor([2], "float32"))'),
        Config("t", 2, 'torch.nn.Dropout.forward(Eval(torch.nn.Dropout(), 1), Tensor([2], "float32"))'),
    ]
    results = run_in_process(bad, ReplayOptions(), lambda r: None)
    assert [(r.status, r.message) for r in results] == [
        ("skipped", "argument torch.ones(...) is not one this replay rebuilds"),
        ("invalid", "Eval(...) takes one module's constructor call"),
    ]


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_views_into_a_larger_storage_are_rebuilt_there(tmp_path, level):
    """A view that does not cover its storage (here elements 5 to 14 of a
    20-element one) is written with its storage offset and size, and rebuilt
    so: as_strided reaching past the view's own elements (to element 10 of
    the storage) replays, gives what the program got from the same storage,
    and traces back as the same line."""
    storage = torch.arange(20.0)
    view = storage[5:15]
    with APITracer(output_path=str(tmp_path), levels=level, merge_output=True):
        torch.as_strided(view, (2, 2), (1, 2), storage_offset=10)
        torch.neg(storage[::2][:4])  # a strided view from offset 0, ending before the storage does
    configs = [
        c for c in read_config_file(str(tmp_path / "api_configs.yaml")) if "as_strided" in c.text or "neg" in c.text
    ]
    assert len(configs) == 2
    assert 'Tensor([10], "float32", storage_offset=5, storage_size=20)' in configs[0].text
    assert 'Tensor([4], "float32", stride=[2], storage_offset=0, storage_size=20)' in configs[1].text
    results = run_in_process(configs, ReplayOptions(), lambda r: None)
    assert [(r.status, r.message) for r in results] == [("ok", ""), ("ok", "")]
    from api_tracer.replay.builder import prepare

    _, _, (built, *_), _ = prepare(configs[0], ReplayOptions())
    assert (built.storage_offset(), built.untyped_storage().nbytes(), built.is_contiguous()) == (5, 80, True)
    assert [why for _, why in roundtrip(configs, level)] == ["", ""]


def test_a_partial_is_built_with_its_arguments_bound():
    """functools.partial(callable, ...) (how the tracer writes a partial) is
    built so: the bound slope reaches the layer's activation; its callable
    goes through the policy."""
    layer = (
        "torch.nn.TransformerEncoderLayer.forward(torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, "
        'activation=functools.partial(Callable("torch.nn.functional.leaky_relu"), negative_slope={})), '
        'Tensor([3, 5, 8], "float32"))'
    )
    from api_tracer.replay import prepare

    _, _, args, _ = prepare(Config("x", 1, layer.format(0.2)))
    assert args[0].activation.keywords == {"negative_slope": 0.2}
    assert replay_one(Config("x", 1, layer.format(0.2)), ReplayOptions(check="float64")).status == "ok"
    r = replay_one(Config("x", 1, 'torch.add(functools.partial(Callable("torch.save"), "/tmp/x"), 1)'))
    assert r.status == "refused" and "torch.save is refused" in r.message, r.message
