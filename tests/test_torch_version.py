"""The extension loads only under the torch release it was built for
(api_tracer/extension.py); otherwise `import api_tracer` fails, naming both."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import api_tracer
from api_tracer import _build_info, extension


def test_builds_of_one_release_agree():
    assert extension.torch_mismatch("2.13.0", "2.13.0") is None
    assert extension.torch_mismatch("2.13.0+cpu", "2.13.0+cu126") is None
    assert extension.torch_mismatch("2.13.0+cpu", "2.13.0") is None


@pytest.mark.parametrize(
    "built, running", [("2.12.0", "2.13.0+cpu"), ("2.13.0+cpu", "2.13.1+cpu"), ("2.13.0", "2.13.0a0+git1234")]
)
def test_another_release_is_refused_naming_both(built, running):
    message = extension.torch_mismatch(built, running)
    assert message and f"built for torch {built}" in message and f"imports torch {running}" in message


def test_the_build_records_the_torch_it_compiled_against():
    assert _build_info.TORCH_VERSION == torch.__version__


@pytest.fixture
def package_copy(tmp_path):
    """A copy of the package as it is installed, its _C and _build_info.py
    included, that `import api_tracer` finds first from tmp_path."""
    shutil.copytree(
        Path(api_tracer.__file__).parent, tmp_path / "api_tracer", ignore=shutil.ignore_patterns("__pycache__")
    )
    return tmp_path / "api_tracer"


def import_copy(package: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "import api_tracer; print(api_tracer.__file__)"],
        cwd=package.parent,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=str(package.parent)),
    )


def test_the_copy_imports_as_built(package_copy):
    r = import_copy(package_copy)
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.strip()).parent == package_copy


def test_an_extension_built_for_another_torch_is_not_loaded(package_copy):
    (package_copy / "_build_info.py").write_text('TORCH_VERSION = "2.4.1+cu121"\n')
    r = import_copy(package_copy)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: api_tracer's extension was built for torch 2.4.1+cu121")
    assert f"imports torch {torch.__version__}" in last and "--no-build-isolation" in last


def test_an_unbuilt_extension_says_so(package_copy):
    (package_copy / "_build_info.py").unlink()
    r = import_copy(package_copy)
    assert r.returncode != 0
    assert "ImportError: api_tracer's extension is not built" in r.stderr.strip().splitlines()[-1]


def test_an_extension_that_fails_to_load_names_both_torches(package_copy):
    (so,) = package_copy.glob("_C*.so")
    so.write_bytes(b"not a shared object")
    other_build = torch.__version__.split("+")[0] + "+cu126"  # of the same release: it passes the check
    (package_copy / "_build_info.py").write_text(f'TORCH_VERSION = "{other_build}"\n')
    r = import_copy(package_copy)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: ") and str(so) in last
    assert f"built for torch {other_build}; this process imports torch {torch.__version__}" in last
