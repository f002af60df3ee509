"""Builds api_tracer._C with CMake (see CMakeLists.txt) against the torch of
the running interpreter, and makes the wheel require that torch release: the
binary runs with no other (api_tracer/extension.py checks it at import).

The build must see the installed torch, so it runs without build isolation:
    pip install --no-build-isolation .
    python -m build --wheel --no-isolation
"""
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent

try:
    import torch
except ImportError:
    sys.exit("api_tracer: the build needs torch installed in the environment it builds in, the "
             "torch the extension will run with (an isolated build environment has none): install "
             "torch, then `pip install --no-build-isolation .` or `python -m build --wheel --no-isolation`.")


def public_version(version: str) -> str:
    """api_tracer/extension.py's, which says which torch versions are one
    release; the module is loaded alone (the package needs the extension)."""
    spec = importlib.util.spec_from_file_location("api_tracer_extension", ROOT / "src" / "api_tracer" / "extension.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.public_version(version)


def pinned(name: str) -> str:
    """The pin of package `name` in requirements.txt, the one place it is
    written (an optional extra's requirement is the one CI tests)."""
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.split("==")[0].strip().lower() == name:
            return line.strip()
    raise RuntimeError(f"requirements.txt pins no {name}")


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        target = Path(self.get_ext_fullpath(ext.name)).resolve()
        if self.editable_mode:
            # `make build`'s editable install: _C and _build_info.py are in
            # src/api_tracer/, built there by make's CMake build folder.
            build_dir, out_dir = ROOT / "build", ROOT / "src" / "api_tracer"
        else:
            # A wheel: a build folder of its own, configured afresh, that
            # writes _C and _build_info.py among the wheel's files.
            build_dir, out_dir = Path(self.build_temp).resolve() / "cmake", target.parent
        subprocess.check_call([
            "cmake", "-S", str(ROOT), "-B", str(build_dir), "-G", "Ninja",
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-DTorch_DIR={Path(torch.utils.cmake_prefix_path) / 'Torch'}",
            f"-DAPI_TRACER_PYTHON_DIR={out_dir}",
        ])
        jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL") or str(os.cpu_count() or 2)  # (make test: 1, beside pytest)
        subprocess.check_call(["cmake", "--build", str(build_dir), "--target", "_C", "--parallel", jobs])
        built = out_dir / target.name
        for made in (built, out_dir / "_build_info.py"):
            if not made.is_file():
                raise RuntimeError(f"the CMake build did not make {made}")
        if built != target:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(built, target)


setup(
    ext_modules=[CMakeExtension("api_tracer._C")],
    cmdclass={"build_ext": CMakeBuild},
    # The torch release the binary is built for, the one extension.py accepts at import.
    # (numpy: replay's KeySet, api_tracer/replay/keyed.py; torch's wheel does not require it)
    install_requires=[f"torch=={public_version(torch.__version__)}", "pyyaml>=6", "numpy"],
    # pip install 'api-tracer[ray]': replay --ray (api_tracer/replay/on_ray.py)
    extras_require={"ray": [pinned("ray")]},
)
