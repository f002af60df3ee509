"""The C++ API: a libtorch program built with find_package(api_tracer) and
traced with api_tracer::TraceScope writes the same files as level 3."""

import subprocess

import torch
import yaml

from support import ROOT, read_set


def test_example_program_builds_runs_and_writes_the_files(tmp_path):
    package = ROOT / "build" / "api_tracerConfig.cmake"
    assert package.exists(), f"{package} is missing: build the project first (make build)"
    build = tmp_path / "build"
    subprocess.run(
        [
            "cmake",
            "-S",
            str(ROOT / "examples" / "cpp"),
            "-B",
            str(build),
            "-G",
            "Ninja",
            f"-Dapi_tracer_DIR={package.parent}",
            f"-DCMAKE_PREFIX_PATH={torch.utils.cmake_prefix_path}",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True, text=True)
    out = tmp_path / "trace"
    result = subprocess.run([str(build / "trace_mlp"), str(out)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    files = read_set(out)
    assert set(files) == {"api_trace.yaml", "api_trace.txt", "api_apis.txt", "api_configs.yaml", "api_statistics.yaml"}
    assert result.stdout == files["api_statistics.yaml"]
    lines = files["api_trace.txt"].splitlines()
    assert lines[:2] == [
        'torch.ops.aten.matmul.default(Tensor([8, 4], "float32"), Tensor([4, 16], "float32"))',
        'torch.ops.aten.relu.default(Tensor([8, 16], "float32"))',
    ]
    assert 'torch.ops.aten.add.Scalar(Tensor([2, 2], "float32"), 1)' in lines  # the worker thread
    records = yaml.safe_load(files["api_trace.yaml"])
    assert len(records) == len(lines)
    assert any(r.get("backward") == "MmBackward0" for r in records)
    assert "torch.ops.aten.cross_entropy_loss.default" in files["api_apis.txt"].splitlines()
