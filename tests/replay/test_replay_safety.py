"""Replay of config files that cannot be trusted, round 2: what compiles,
prints, runs forever, reads out of bounds or allocates past --max-bytes is
refused, bounded or cut short, each with its reason; the outputs replay
writes fail cleanly; and `api-tracer run` keeps what a program that changes
directory, execs or _exits recorded."""

import json
import os
import subprocess
import sys

import pytest

from api_tracer.replay import Config, ReplayOptions, run_in_process
from support import CLI, run_cli


def replayed(lines, **options):
    configs = [Config("hostile.txt", i + 1, line) for i, line in enumerate(lines)]
    return [(r.status, r.message) for r in run_in_process(configs, ReplayOptions(**options), lambda r: None)]


REFUSED = [
    (
        'torch.cond(Tensor([], "bool"), Callable("torch.sin"), Callable("torch.cos"), (Tensor([2], "float32"),))',
        "compiles the functions it is given",
    ),
    (
        'torch.while_loop(Callable("torch.Tensor.any"), Callable("torch.clone"), (Tensor([64], "bool"),))',
        "compiles the functions it is given",
    ),
    ('torch.ops.aten.center.default("x", 1000000000000)', "computes on no tensor"),
    ('torch.ops.aten.mul.left_t(["a"], 100000000000)', "computes on no tensor"),
    ('torch.ops.aten.mul(["a"], 100000000000)', "some of its overloads compute on no tensor"),
    ('torch._print("1000 configs: 1000 ok")', "prints"),
    ('torch.ops.aten._print.default("1000 configs: 1000 ok")', "prints"),
    ('torch._sobol_engine_initialize_state_(Tensor([2, 3], "int64"), 2)', "private operator"),
    (
        'torch._transform_bias_rescale_qkv(Tensor([2, 3, 12], "float32"), Tensor([12], "float32"), 2)',
        "private operator",
    ),
    (
        'torch.ops.aten._sparse_mask_projection.default(Tensor([2], "float32"), Tensor([2], "float32"))',
        "private operator",
    ),
    (
        'torch.ops._quantized.wrapped_fbgemm_linear_fp16_weight.default(Tensor([2, 2], "float32"), '
        'Tensor([2, 2], "float32"), Tensor([2], "float32"), 2)',
        "private operator",
    ),
]


@pytest.mark.parametrize("line, reason", REFUSED, ids=[r[1][:20] + str(i) for i, r in enumerate(REFUSED)])
def test_what_must_not_run_from_a_file_is_refused_with_its_reason(line, reason):
    [(status, message)] = replayed([line])
    assert status == "refused" and reason in message and "--allow-unsafe" in message, message


def test_a_view_by_sizes_and_strides_must_lie_inside_its_storage():
    """The same rule for every operator that reads a window of a storage by
    sizes and strides (as_strided and its kin, set_, prims' as_strided),
    named as a binding, a method or an operator, positionally or by keyword."""
    results = replayed(
        [
            'torch.as_strided(Tensor([10], "float32"), (2, 2), (1, 2), storage_offset=10)',
            'torch.as_strided(Tensor([10], "float32"), (2, 2), (1, 2), storage_offset=2)',
            'torch.Tensor.as_strided(Tensor([10], "float32"), [3, 3], [4, 1])',
            'torch.as_strided(input=Tensor([4], "float32"), size=[2], stride=[-1])',
            'torch.ops.aten.as_strided_copy.default(Tensor([6], "float32"), [2, 3], [3, 1], 1)',
            'torch.ops.aten.as_strided_scatter.default(Tensor([6], "float32"), Tensor([2, 2], "float32"), [2, 2], '
            "[2, 1], 0)",
            'torch.ops.prims.as_strided.default(Tensor([3], "float32"), [2], [5], 0)',
            'torch.as_strided(Tensor([10], "float32"), (0, 2), (100, 100))',
            'torch.ops.aten._reshape_alias_copy.default(Tensor([4], "float32"), [4], [-100000000])',
            'torch.ops.aten._reshape_alias.default(Tensor([6], "float32"), [2, 3], [4, 1])',
            'torch.ops.aten._reshape_alias.default(Tensor([6], "float32"), [2, 3], [3, 1])',
        ]
    )
    assert [s for s, _ in results] == ["invalid", "ok", "invalid", "invalid", "invalid", "ok", "invalid", "ok"] + [
        "invalid",
        "invalid",
        "ok",
    ]
    assert results[0][1] == (
        "torch.as_strided: sizes [2, 2], strides [1, 2] and offset 10 reach element 13 of a storage of 10"
    )
    assert "must all be 0 or more" in results[3][1] and "must all be 0 or more" in results[8][1]
    assert "reach element 6 of a storage of 6" in results[9][1]  # (a private view, refused unreviewed before)


def test_reviewed_private_operators_run_and_their_arguments_are_checked_first():
    results = replayed(
        [
            'torch.ops.aten._softmax_backward_data.default(Tensor([4, 5], "float32"), Tensor([2, 3], "float32"), 1, '
            "torch.float32)",
            'torch.ops.aten._softmax_backward_data.default(Tensor([4, 5], "float32"), Tensor([4, 5], "float32"), 1, '
            "torch.float32)",
            'torch.ops.aten._log_softmax_backward_data.default(Tensor([4, 5], "float32"), Tensor([4, 5], '
            '"float32"), 9, '
            "torch.float32)",
            'torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(Tensor([1, 2, 3, 4], "float32"), '
            'Tensor([1, 2, 5, 4], "float32"), Tensor([1, 2, 6, 4], "float32"))',
            'torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(Tensor([1, 2, 3, 4], "float32"), '
            'Tensor([1, 2, 5, 4], "float32"), Tensor([1, 2, 5, 4], "float32"))',
            # grouped-query attention (Llama's): 4 query heads to 2 key heads, not 3 to 2
            'torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(Tensor([1, 4, 3, 4], "float32"), '
            'Tensor([1, 2, 5, 4], "float32"), Tensor([1, 2, 5, 4], "float32"))',
            'torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(Tensor([1, 3, 3, 4], "float32"), '
            'Tensor([1, 2, 5, 4], "float32"), Tensor([1, 2, 5, 4], "float32"))',
            'torch._foreach_mul_([Tensor([2], "float32"), Tensor([3], "float32")], [Tensor([5], "float32")])',
            'torch.ops.aten._local_scalar_dense.default(Tensor([], "float32"))',
            'torch.ops.aten._embedding_bag_backward.default(Tensor([3, 2], "float32"), Tensor([3], "int64"), '
            'Tensor([1], "int64"), Tensor([3], "int64"), Tensor([3], "int64"), Tensor([3], "int64"), 0, False, '
            "0, False, "
            "None, -1)",
            'torch.ops.aten._embedding_bag_backward.default(Tensor([3, 2], "float32"), Tensor([3], "int64"), '
            'Tensor([1], "int64"), Tensor([3], "int64"), Tensor([3], "int64"), Tensor([3], "int64"), 4, False, '
            "0, False, "
            "None, -1)",
        ]
    )
    assert [s for s, _ in results] == [
        "invalid",
        "ok",
        "invalid",
        "invalid",
        "ok",
        "ok",
        "invalid",
        "failed",
        "ok",
        "invalid",
        "ok",
    ]
    assert "indices must lie in [0, 0)" in results[9][1]
    assert "do not agree" in results[6][1]
    assert "grad_output [4, 5] and output [2, 3] must have one shape" in results[0][1]
    assert "do not agree" in results[3][1]


def test_batch_norm_and_fft_kernels_get_their_arguments_checked_first():
    """Batch norm's CPU kernels, public native_batch_norm and its backward
    among them, index the per-channel tensors by the input's channels
    without looking (2 running means for 4,000 channels read past them and
    write there in training); the FFT kernels the fft functions call take
    their dims unchecked (one of 700,000 crashed the process). Refused
    before the call; the same calls with right sizes replay."""
    results = replayed(
        [
            'torch.ops.aten.native_batch_norm.default(Tensor([3, 4000], "float32"), None, None, Tensor([2], '
            '"float32"), '
            'Tensor([2], "float32"), True, 0.1, 1e-05)',
            'torch.ops.aten.native_batch_norm_backward.default(Tensor([3, 400], "float32"), Tensor([3, 400], '
            '"float32"), '
            'Tensor([2], "float32"), None, None, None, None, False, 1e-05, [True, True, True])',
            'torch.ops.aten._batch_norm_with_update.default(Tensor([3, 400], "float32"), None, None, '
            'Tensor([2], "float32"), Tensor([2], "float32"), 0.1, 1e-05)',
            'torch.ops.aten._native_batch_norm_legit_no_training.default(Tensor([3, 400], "float32"), '
            'Tensor([2], "float32"), None, Tensor([400], "float32"), Tensor([400], "float32"), 0.1, 1e-05)',
            'torch.ops.aten._fft_c2r.default(Tensor([5, 3, 6], "complex64"), [700000], 1, 10)',
            'torch.ops.aten._fft_c2c.default(Tensor([5, 3, 10], "complex64"), [1, 1], 1, False)',
            'torch.ops.aten.native_batch_norm.default(Tensor([3, 4, 5], "float32"), Tensor([4], "float32"), None, '
            'Tensor([4], "float32"), Tensor([4], "float32"), True, 0.1, 1e-05)',
            'torch.ops.aten._native_batch_norm_legit.no_stats(Tensor([3, 4], "float32"), Tensor([4], "float32"), '
            'Tensor([4], "float32"), True, 0.1, 1e-05)',
            'torch.ops.aten._fft_c2r.default(Tensor([5, 3, 6], "complex64"), [2], 1, 10)',
            'torch.ops.aten._fft_r2c.default(Tensor([1, 4, 7], "float32"), [1, 2], 0, True)',
        ]
    )
    assert [s for s, _ in results] == ["invalid"] * 6 + ["ok"] * 4, results
    assert "running_mean must hold one value per channel of input (4000), not 2" in results[0][1]
    assert "weight must hold one value per channel of input (400), not 2" in results[1][1]
    assert "dim [700000] must be distinct dimensions of self, in [0, 3)" in results[4][1]


def test_reviewed_private_operators_whose_kernels_check_fail_cleanly_on_wrong_shapes(tmp_path):
    """The private operators whose family's kernels check (and the
    composites of public operators: frameworks/torch/private_operators.py)
    were taken on those checks: with wrong shapes they raise, in worker
    processes, and no worker dies."""
    lines = [
        'torch.ops.aten._unsafe_view.default(Tensor([4], "float32"), [100])',
        'torch.ops.aten._embedding_bag.default(Tensor([4, 3], "float32"), Tensor([1], "int64"), Tensor([1], "int64"))',
        'torch.ops.aten._log_softmax.default(Tensor([4, 5], "float32"), 7, False)',
        'torch.ops.aten._softmax.default(Tensor([4, 5], "float32"), -9, False)',
        'torch.ops.aten._to_copy.default(Tensor([3], "float32"), dtype=torch.int8)',
        'torch._foreach_add_([Tensor([2], "float32")], [Tensor([3], "float32")])',
        'torch._scaled_mm(Tensor([16, 16], "float8_e4m3fn"), Tensor([32, 16], "float8_e4m3fn", stride=[1, 32]), '
        'Tensor([], "float32"), Tensor([], "float32"))',
        'torch._scaled_mm(Tensor([16, 16], "float8_e4m3fn"), Tensor([16, 16], "float8_e4m3fn", stride=[1, 16]), '
        'Tensor([3], "float32"), Tensor([], "float32"))',
        'torch._scaled_mm(Tensor([16, 16], "float8_e4m3fn"), Tensor([16, 16], "float8_e4m3fn", stride=[1, 16]), '
        'Tensor([], "float32"), Tensor([], "float32"), bias=Tensor([7], "float32"))',
        'torch._scaled_mm(Tensor([16], "float8_e4m3fn"), Tensor([16, 16], "float8_e4m3fn", stride=[1, 16]), '
        'Tensor([], "float32"), Tensor([], "float32"))',
        'torch._C._sparse._sparse_mm(Tensor([3, 4], "float32", layout=torch.sparse_csr, nnz=3), '
        'Tensor([5, 2], "float32"))',
        'torch._C._sparse._sparse_mm(Tensor([3, 4], "float32", layout=torch.sparse_coo, nnz=3), '
        'Tensor([4], "float32"))',
        'torch._scaled_mm_v2(Tensor([16, 16], "float8_e4m3fn"), Tensor([32, 16], "float8_e4m3fn", stride=[1, 32]), '
        '[Tensor([], "float32")], [0], [], [Tensor([], "float32")], [0], [], None, torch.bfloat16, (), False)',
        'torch._scaled_mm_v2(Tensor([16, 16], "float8_e4m3fn"), Tensor([16, 16], "float8_e4m3fn", stride=[1, 16]), '
        '[Tensor([3], "float32")], [0], [], [Tensor([], "float32")], [9], [], None, torch.bfloat16, (), False)',
        # what OpInfo's samples reach through public operators
        'torch.ops.aten._chunk_cat.default([Tensor([1, 2, 3], "float32"), Tensor([2, 2], "float32")], -1, 5)',
        'torch.ops.aten._linalg_eigh.default(Tensor([3, 4], "float32"), "U")',
        'torch.ops.aten._linalg_solve_ex.default(Tensor([12, 12], "float32"), Tensor([5], "float32"))',
        'torch.ops.aten._lu_with_info.default(Tensor([3], "float32"), True, False)',
        'torch.ops.aten._cdist_forward.default(Tensor([5, 5, 2], "float32"), Tensor([5, 6, 3], "float32"), 2.0, None)',
        'torch.ops.aten._pdist_forward.default(Tensor([4], "float32"), 2.0)',
        'torch.ops.aten._trilinear.default(Tensor([2, 3], "float32"), Tensor([5, 3, 4], "float32"), '
        'Tensor([2, 4], "float32"), [9], [0], [1, 2], [2, 3])',
        'torch.ops.aten._adaptive_avg_pool3d.default(Tensor([1, 8, 8, 8, 8], "float32"), [5, 7])',
        'torch.ops.aten._upsample_bilinear2d_aa.default(Tensor([10], "float32"), [4, 5], False)',
        'torch.ops.aten._sparse_mm_reduce_impl.default(Tensor([5, 5], "float32", layout=torch.sparse_csr, nnz=5), '
        'Tensor([7, 3], "float32"), "amax")',
        'torch.ops.aten._histogramdd_from_bin_cts.default(Tensor([5, 5], "float32"), [1, 1, 1])',
        'torch.ops.aten._unsafe_masked_index.default(Tensor([5, 5], "float32"), Tensor([3, 3], "bool"), '
        '[Tensor([10, 1], "int64"), Tensor([1, 10], "int64")], 0.0)',
    ]
    path = tmp_path / "probes.txt"
    path.write_text("\n".join(lines) + "\n")
    # (the embedding bag's index tensor is drawn as zeros: give it a profile that reaches past the weight)
    (tmp_path / "api_value_ranges.yaml").write_text(f"- config: {lines[1]}\n  ranges:\n    args[1]: [7, 7]\n")
    r = run_cli("replay", str(path), "--isolate", "-o", str(tmp_path / "r.jsonl"), timeout=600)
    results = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [x["status"] for x in results] == ["failed", "failed", "failed", "failed", "ok"] + ["failed"] * 21, r.stdout
    assert all(x["error"] != "WorkerCrashed" for x in results)
    assert "not in the valid range" in results[1]["message"]


def test_every_argument_replay_builds_counts_toward_max_bytes():
    limit = 100 << 20
    results = replayed(
        [
            'torch.Tensor.add(Tensor([20000, 10000], "float32", layout=torch.sparse_coo, stride=[0, 0], nnz=1), 1)',
            'torch.Tensor.int_repr(Tensor([20000, 10000], "qint8", stride=[0, 0], scale=0.1, zero_point=0))',
            'torch.add(numpy.ndarray([20000, 10000], "float64"), 1)',
            'torch.nn.Linear.forward(torch.nn.Linear(20000, 10000), Tensor([2, 20000], "float32"))',
            "torch.zeros(100000, 100000)",
            'torch.ops.aten.repeat.default(Tensor([10], "float32"), [100000, 1000])',
            "torch.ones(2, 3)",
        ],
        max_bytes=limit,
    )
    assert [s for s, _ in results] == ["skipped"] * 6 + ["ok"]
    assert all(f"more than the limit of {limit} bytes" in m for _, m in results[:6])
    assert "with torch.nn.Linear(...)" in results[3][1] and "outputs" in results[4][1]


def test_a_config_past_its_timeout_fails_and_its_worker_is_replaced(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("torch.ones(2)\ntorch.zeros(3)\ntorch.ones(4)\n")
    env = dict(os.environ, API_TRACER_REPLAY_HANG_ON="torch.zeros")
    r = run_cli("replay", str(path), "--timeout", "2", "-o", str(tmp_path / "r.jsonl"), timeout=300, env=env)
    results = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert r.returncode == 1
    assert [(x["line"], x["status"]) for x in results] == [(1, "ok"), (2, "failed"), (3, "ok")]
    assert results[1]["error"] == "Timeout" and results[1]["message"].startswith("timeout: no result after 2 s")


def test_a_file_name_that_is_not_utf8_replays_in_process(tmp_path):
    name = os.fsdecode(b"configs-\xff.txt")
    (tmp_path / name).write_text("torch.ones(2)\n")
    r = run_cli("replay", name, cwd=tmp_path, timeout=300)
    assert r.returncode == 0 and "1 configs: 1 ok" in r.stdout, r.stderr


def test_outputs_that_cannot_be_written_are_errors_not_tracebacks(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("torch.ones(2)\n")
    full = run_cli("replay", str(path), "-o", "/dev/full", timeout=300)
    assert full.returncode == 2 and full.stderr == "api-tracer: replay: -o /dev/full: No space left on device\n"
    env = dict(os.environ, API_TRACER_REPLAY_HANG_ON="torch.ones")  # it would hang, were the configs run first
    junit = run_cli("replay", str(path), "--isolate", "--junit", f"{path}/x.xml", timeout=60, env=env)
    assert junit.returncode == 2 and junit.stderr == (
        f"api-tracer: replay: --junit {path}/x.xml: {path} is not a directory\n"
    )


# -- run: what the program does to its process ------------------------------------------------


def run_traced(tmp_path, code, *flags):
    (tmp_path / "prog.py").write_text(code)
    return run_cli("run", "--merge", *flags, "-o", "out", "prog.py", cwd=tmp_path, timeout=300)


def statistics(directory):
    import yaml

    return yaml.safe_load((directory / "api_statistics.yaml").read_text())


def test_a_relative_output_path_holds_after_the_program_changes_directory(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = run_traced(
        tmp_path, f"import os, torch\nos.chdir({str(elsewhere)!r})\nfor i in range(200):\n    torch.ones(2)\n"
    )
    assert r.returncode == 0, r.stderr
    assert statistics(tmp_path / "out")["Total API calls"] == 200
    assert len((tmp_path / "out" / "api_trace.txt").read_text().splitlines()) == 200
    assert not (elsewhere / "out").exists()


def test_the_calls_before_an_exec_are_written_first(tmp_path):
    r = run_traced(
        tmp_path,
        "import os, sys, torch\nfor i in range(200):\n    torch.ones(2)\n"
        "os.execv(sys.executable, [sys.executable, '-c', 'print(\"replaced\")'])\n",
    )
    assert r.returncode == 0 and r.stdout == "replaced\n", r.stderr
    assert statistics(tmp_path / "out")["Total API calls"] == 200
    assert len((tmp_path / "out" / "api_trace.txt").read_text().splitlines()) == 200


def test_os_exit_keeps_the_last_snapshot(tmp_path):
    """os._exit runs no exit handler: the summary files stay as the last
    snapshot wrote them (here, every snapshot_interval of 0.1 s)."""
    r = run_traced(
        tmp_path,
        "import os, time, torch\nfor i in range(200):\n    torch.ones(2)\ntime.sleep(1)\nos._exit(0)\n",
        "--snapshot-interval",
        "0.1",
    )
    assert r.returncode == 0, r.stderr
    assert statistics(tmp_path / "out")["Total API calls"] == 200


# -- round 2, second look: what a hostile user found after the first fixes ----------------------


def test_replay_of_ordinary_operators_imports_no_compiler(tmp_path):
    """Counting a call's outputs on the meta device ran Python meta kernels
    that import torch._dynamo, which made Inductor's cache directory and set
    TORCHINDUCTOR_CACHE_DIR: replay compiles nothing unless a check asks."""
    lines = [
        'torch.logsumexp(Tensor([2, 2], "float32"), 1)',
        'torch.ops.aten.addmm.default(Tensor([2], "float32"), Tensor([2, 3], "float32"), Tensor([3, 2], "float32"))',
        'torch.ops.aten.cumsum.default(Tensor([4], "float32"), 0)',
        'torch.nn.functional.scaled_dot_product_attention(Tensor([1, 2, 4, 8], "float32"), '
        'Tensor([1, 2, 4, 8], "float32"), Tensor([1, 2, 4, 8], "float32"))',
    ]
    script = (
        "import os, sys\nfrom api_tracer.replay import Config, ReplayOptions, run_in_process\n"
        f"lines = {lines!r}\n"
        "rs = run_in_process([Config('c', i + 1, l) for i, l in enumerate(lines)], "
        "ReplayOptions(check='float64'), "
        "lambda r: None)\n"
        "print([r.status.value for r in rs], 'torch._dynamo' in sys.modules, "
        "os.environ.get('TORCHINDUCTOR_CACHE_DIR'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_CACHE_DIR"}  # (a test before may have set it)
    env["TMPDIR"] = str(tmp_path)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300)
    assert r.stdout.split("\n")[0] == "['ok', 'ok', 'ok', 'ok'] False None", r.stderr
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("torchinductor")]


def test_comparison_dunders_replay():
    results = replayed(
        [
            'torch.Tensor.__eq__(Tensor([2], "float32"), 1.0)',
            'torch.Tensor.__lt__(Tensor([2], "float32"), Tensor([2], "float32"))',
            'torch.Tensor.__ge__(Tensor([2], "int64"), 0)',
        ]
    )
    assert results == [("ok", "")] * 3  # failed: 'method-wrapper' object has no attribute 'overloads', before


def test_what_a_call_allocates_on_its_way_is_bounded_by_max_bytes(tmp_path):
    """No count before a call sees its temporaries, the Python objects of a
    list it returns, its outputs where no meta kernel tells them: past
    WORKING_FACTOR x the limit (and a slack) more than the process held,
    the process's data limit stops the call, and the config is skipped,
    said. (A fresh process: a long-lived one may hold freed memory a call
    can reuse without growing.)"""
    from api_tracer.replay.memory import WORKING_FACTOR

    lines = [
        'torch.Tensor.to(Tensor([100000000], "float32", stride=[0]), "cpu", torch.float64)',
        'torch.tensor_split(Tensor([1], "float32"), 1000000)',
        'torch.Tensor.unbind(Tensor([1000000, 0], "float32"))',
        'torch.combinations(Tensor([100], "float32"), 4)',
        'torch.Tensor.tolist(Tensor([10000000], "float32", stride=[0]))',
        'torch.nn.Linear.forward(torch.nn.Linear(20000, 10000, device="cpu"), Tensor([2, 20000], "float32"))',
        'torch.mm(Tensor([300, 300], "float32"), Tensor([300, 300], "float32"))',
    ]
    (tmp_path / "c.txt").write_text("\n".join(lines) + "\n")
    r = run_cli("replay", "c.txt", "--max-bytes", "100M", "-o", "r.jsonl", cwd=tmp_path, timeout=600)
    results = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert r.returncode == 0, r.stderr
    assert [x["status"] for x in results] == ["skipped"] * 6 + ["ok"], results
    assert "more than the limit of 104857600 bytes" in results[0]["message"]  # its output, counted on meta
    assert all(f": {WORKING_FACTOR} x the limit of 100.0 MiB, --max-bytes" in x["message"] for x in results[1:6])


def test_a_bounded_call_in_process_does_not_stop_torchs_threads_from_starting(tmp_path):
    """The first parallel kernel starts torch's OpenMP threads; inside a
    call bounded by a small --max-bytes their stacks could not be mapped,
    and libgomp aborted the whole replay ("Thread creation failed"), the
    lines after it never run. They start before any bound now."""
    (tmp_path / "c.txt").write_text(
        'torch.combinations(Tensor([400], "float32"), 3)\ntorch.add(Tensor([2], "float32"), Tensor([2], "float32"))\n'
    )
    r = run_cli("replay", "c.txt", "--max-bytes", "16M", cwd=tmp_path, timeout=300)
    assert r.returncode == 0 and "2 configs: 1 ok, 0 failed, 1 skipped" in r.stdout, r.stdout + r.stderr
    assert "Thread creation failed" not in r.stderr


def peak_rss(args, cwd) -> tuple:
    """(exit status, the peak resident bytes) of `api-tracer ARGS` run in a
    fresh process."""
    p = subprocess.Popen([*CLI, *args], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, usage.ru_maxrss * 1024


def test_a_check_allocates_at_most_check_factor_times_max_bytes_in_all(tmp_path):
    """Both sides of a --check float64 and its judge (float64 copies, the
    error model's probes) count against --max-bytes: a 64 MiB Kronecker
    product's check grew the process by 2.5 GB under --max-bytes 256M. Its
    peak is measured against the same command on a tiny config; past
    CHECK_FACTOR x the limit and the slack, the config is skipped, said."""
    from api_tracer.replay.memory import CHECK_FACTOR, WORKING_SLACK

    (tmp_path / "tiny.txt").write_text('torch.kron(Tensor([2, 2], "float32"), Tensor([2, 2], "float32"))\n')
    (tmp_path / "kron.txt").write_text('torch.kron(Tensor([64, 64], "float32"), Tensor([64, 64], "float32"))\n')
    limit = 64 << 20
    flags = ["--check", "float64", "--max-bytes", "64M", "-o"]
    rc, base = peak_rss(["replay", "tiny.txt", *flags, "tiny.jsonl"], tmp_path)
    assert rc == 0
    rc, peak = peak_rss(["replay", "kron.txt", *flags, "kron.jsonl"], tmp_path)
    assert rc == 0
    assert peak - base <= CHECK_FACTOR * limit + WORKING_SLACK, (peak - base) / limit
    (result,) = [json.loads(x) for x in (tmp_path / "kron.jsonl").read_text().splitlines() if '"config"' in x]
    assert (
        result["status"] == "skipped"
        and f"more than a check may (576.0 MiB: {CHECK_FACTOR} x the limit" in (result["message"])
    ), result


def test_a_value_profile_cannot_make_a_kernel_read_out_of_bounds(tmp_path):
    """The values a profile beside the file gives index tensors reach
    kernels that do not check them (ctc_loss reads log_probs at its
    targets), and sparse tensors a call makes are checked."""
    (tmp_path / "c.txt").write_text(
        'torch.nn.functional.ctc_loss(Tensor([5, 1, 3], "float32"), Tensor([1, 4], "int64"), [5], [4])\n'
        'torch.nn.functional.ctc_loss(Tensor([5, 1, 3], "float32"), Tensor([1, 4], "int64"), [5], [9])\n'
        'torch.sparse_coo_tensor(Tensor([1, 2], "int64"), Tensor([2], "float32"), [2], check_invariants=False)\n'
        'torch.sparse_csr_tensor(Tensor([3], "int64"), Tensor([2], "int64"), Tensor([2], "float32"), [2, 2])\n'
        'torch.nn.functional.ctc_loss(Tensor([5, 1, 3], "float32"), Tensor([1, 4], "int64"), [5], [4], 2)\n'
    )
    (tmp_path / "api_value_ranges.yaml").write_text(
        '- config: torch.nn.functional.ctc_loss(Tensor([5, 1, 3], "float32"), Tensor([1, 4], "int64"), [5], [4])\n'
        "  ranges:\n    args[1]: [1000000000000, 1000000000000]\n"
        '- config: torch.sparse_csr_tensor(Tensor([3], "int64"), Tensor([2], "int64"), Tensor([2], "float32"), '
        "[2, 2])\n  ranges:\n    args[0]: [1000000000, 1000000000]\n    args[1]: [100000000000, 100000000000]\n"
        '- config: torch.nn.functional.ctc_loss(Tensor([5, 1, 3], "float32"), Tensor([1, 4], "int64"), [5], [4], 2)\n'
        "  ranges:\n    args[1]: [0, 1]\n"
    )
    r = run_cli("replay", "c.txt", "-o", "r.jsonl", cwd=tmp_path, timeout=300)
    results = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr  # SIGSEGV in process, before
    assert [x["status"] for x in results] == ["invalid", "invalid", "invalid", "failed", "ok"], results
    assert "targets and blank must be classes in [0, 3)" in results[0]["message"]
    assert "target_lengths must fit the 4 targets" in results[1]["message"]
    assert "check_invariants=False" in results[2]["message"]
    assert "is not satisfied" in results[3]["message"]  # torch's own check, which replay turns on


def test_junit_is_well_formed_xml_and_a_full_disk_is_said_first(tmp_path):
    from xml.dom import minidom

    name = os.fsdecode(b"configs-\xff.txt")
    (tmp_path / name).write_text("torch.ones(2)\nfoo\x02bar(1)\n")
    r = subprocess.run(CLI + ["replay", name, "--junit", "j.xml"], cwd=tmp_path, capture_output=True, timeout=300)
    assert r.returncode == 1, r.stderr
    cases = minidom.parse(str(tmp_path / "j.xml")).getElementsByTagName("testcase")  # ExpatError, before
    assert [(c.getAttribute("file"), c.getAttribute("name")) for c in cases] == [
        ("configs-\\xff.txt", "torch.ones(2)"),
        ("configs-\\xff.txt", "foo\\x02bar(1)"),
    ]
    env = dict(os.environ, API_TRACER_REPLAY_HANG_ON="torch.ones")  # it would hang, were the configs run first
    full = run_cli("replay", name, "--isolate", "--junit", "/dev/full", cwd=tmp_path, timeout=120, env=env)
    assert full.returncode == 2 and full.stderr == "api-tracer: replay: --junit /dev/full: No space left on device\n"


def test_replay_reads_regular_files_and_writes_over_none_it_reads(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("torch.ones(2)\n")
    for flag in ("-o", "--junit"):
        r = run_cli("replay", str(path), flag, str(path), timeout=300)
        assert r.returncode == 2 and r.stderr == (
            f"api-tracer: replay: {flag} {path} is one of its inputs ({path}, which replay reads)\n"
        )
        assert path.read_text() == "torch.ones(2)\n"
    os.mkfifo(tmp_path / "fifo")
    for given in (str(tmp_path), str(tmp_path / "fifo"), "/dev/zero"):
        r = run_cli("replay", given, timeout=300)
        assert r.returncode == 2 and r.stderr == f"api-tracer: replay: {given}: not a regular file\n"


def test_index_put_impl_is_reviewed_with_its_indices_checked(tmp_path):
    """Real models reach aten._index_put_impl_ (Swin, at level 3) with
    unsafe=True, which skips the kernel's bounds checks: replay checks the
    indices, here drawn past the tensor from a profile beside the file."""
    line = (
        'torch.ops.aten._index_put_impl_.default(Tensor([49, 2], "float32"), [Tensor([256], "int64")], '
        'Tensor([256, 2], "float32", stride=[1, 256]), True, True)'
    )
    (tmp_path / "c.txt").write_text(line + "\n")
    ranges = tmp_path / "r.yaml"
    ranges.write_text(f"- config: {line}\n  ranges:\n    args[1][0]: [0, 1000000]\n")
    ok = run_cli("replay", "c.txt", cwd=tmp_path, timeout=300)
    assert ok.returncode == 0 and "1 ok" in ok.stdout, ok.stdout  # invalid before: a private operator
    bad = run_cli("replay", "c.txt", "--value-ranges", str(ranges), cwd=tmp_path, timeout=300)
    assert bad.returncode == 1 and "indices[0] must lie in [-49, 49) for dimension 0 of self" in bad.stdout


def test_a_kernel_the_build_lacks_is_skipped_with_its_name_and_dtype():
    """A dtype the CPU build has no kernel for is this machine's limit, not
    the operator's failure: skipped, counted apart, with what is missing."""
    results = replayed(
        [
            'torch.special.zeta(Tensor([3], "float16"), Tensor([3], "float16"))',
            'torch.special.zeta(Tensor([3], "float32"), Tensor([3], "float32"))',
            'torch.linalg.inv(Tensor([3, 3], "float16"))',  # a check of the operator's own: failed
        ]
    )
    assert results[0] == (
        "skipped",
        "no kernel: torch has no kernel `zeta_cpu` for Half: "
        "NotImplementedError: \"zeta_cpu\" not implemented for 'Half'",
    )
    assert results[1] == ("ok", "")
    assert results[2][0] == "failed" and "Low precision dtypes not supported" in results[2][1]


def test_float8_arguments_are_drawn_in_float32_and_converted():
    """torch has no random kernel for the float8 types: building such an
    argument failed ("normal_kernel_cpu" not implemented for 'Float8_e5m2')."""
    results = replayed(
        [
            'torch._scaled_mm(Tensor([16, 16], "float8_e4m3fn"), Tensor([16, 16], "float8_e4m3fn", stride=[1, 16]), '
            'Tensor([], "float32"), Tensor([], "float32"))',
            'torch.Tensor.float(Tensor([4], "float8_e5m2"))',
        ]
    )
    assert results == [("ok", ""), ("ok", "")]


def test_what_level_1_records_of_torch_sparse_replays(tmp_path):
    """The binding torch.sparse.mm calls, which level 1 records under
    torch._C._sparse, was refused as outside the allow-list, as was
    torch.sparse.mm itself: what the tracer records as a computing call,
    the policy allows."""
    import torch

    from api_tracer import APITracer
    from api_tracer.formats.configs import read_config_file

    a = torch.randn(3, 4).to_sparse_csr()
    with APITracer(output_path=str(tmp_path), levels=1, merge_output=True):
        torch.sparse.mm(a, torch.randn(4, 2))
        torch.sparse.mm(torch.randn(3, 4).to_sparse(), torch.randn(4, 2))
    configs = read_config_file(str(tmp_path / "api_configs.yaml"))
    apis = {c.text.split("(")[0] for c in configs}
    assert "torch._C._sparse._sparse_mm" in apis, apis
    configs.append(
        Config(
            "x",
            9,
            'torch.sparse.mm(Tensor([3, 4], "float32", layout=torch.sparse_coo, nnz=3), Tensor([4, 2], "float32"))',
        )
    )
    results = run_in_process(configs, ReplayOptions(), lambda r: None)
    assert [(r.config, r.status) for r in results if r.status != "ok"] == []
