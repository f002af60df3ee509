"""Builds api_tracer._C with CMake (see CMakeLists.txt) against the torch of
the running interpreter. Use: pip install --no-build-isolation [-e] ."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext: Extension) -> None:
        import torch

        build_dir = ROOT / "build"
        subprocess.check_call([
            "cmake", "-S", str(ROOT), "-B", str(build_dir), "-G", "Ninja",
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-DCMAKE_PREFIX_PATH={torch.utils.cmake_prefix_path}",
        ])
        subprocess.check_call(["cmake", "--build", str(build_dir), "--target", "_C",
                               "--parallel", str(os.cpu_count() or 2)])
        built = next((ROOT / "src" / "api_tracer").glob("_C*.so"))
        target = Path(self.get_ext_fullpath(ext.name))
        if built.resolve() != target.resolve():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(built, target)


setup(ext_modules=[CMakeExtension("api_tracer._C")], cmdclass={"build_ext": CMakeBuild})
