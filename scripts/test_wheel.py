"""The wheel as a user builds, installs and runs it (`make test-wheel`, part
of `make test`):

1. the source files (what git tracks or would add, not what it ignores) are
   copied to a temporary folder: no build/, no _C*.so, no _build_info.py,
   so nothing an earlier build left can stand in for a file the wheel lacks;
2. a fresh virtual environment gets torch, PyYAML and the build tools, at
   the versions requirements.txt pins;
3. the wheel is built there with README.md's command, which compiles the
   extension afresh: python -m build --wheel --no-isolation;
4. the wheel must hold every source file of src/ (the package and the
   pytest plugin's module) and only those, plus what the build makes (_C
   and _build_info.py, which records the torch it was built for), and
   require that torch release;
5. it is installed without an index (nothing downloaded), and from a folder
   outside the sources examples/quickstart.py runs, and `api-tracer run`
   traces a script that starts a child process (level 0 reads the API
   lists; the child starts tracing through _child/sitecustomize.py); the
   files they write are checked.

Prints how long each step took. Needs only the standard library.

    python scripts/test_wheel.py [--keep]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set

ROOT = Path(__file__).resolve().parent.parent
SOURCES = "src/"  # what the wheel holds, as the wheel names it without this
# What the fresh environment is given, requirements.txt's versions of them
# and of what they require: the wheel's dependencies and the build's, and
# numpy, without which importing torch warns.
INSTALL = ("torch", "numpy", "PyYAML", "setuptools", "build")
# What the build adds to the package, besides the extension _C.
BUILD_MADE = ("api_tracer/_build_info.py",)
# A script that starts a child process; `api-tracer run --follow-children`
# traces both at level 0.
PARENT = """\
import subprocess
import sys

import torch

torch.zeros(3)
subprocess.run([sys.executable, "-c", "import torch; torch.ones(2)"], check=True)
"""


class Failed(Exception):
    pass


def run(cmd: List[str], cwd: Path, log: Optional[Path] = None) -> subprocess.CompletedProcess:
    """Runs cmd, outside any environment this script runs in (its output
    also kept in `log`), or Failed with the output's end."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if log:
        log.write_text(done.stdout + done.stderr)
    if done.returncode:
        raise Failed(
            f"{' '.join(cmd)} (in {cwd}) exited with {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return done


@contextlib.contextmanager
def step(title: str, times: Dict[str, float]) -> Iterator[None]:
    print(f"test-wheel: {title}...", flush=True)
    start = time.monotonic()
    yield
    times[title] = time.monotonic() - start
    print(f"test-wheel: {title}: {times[title]:.0f} s", flush=True)


def source_files() -> List[str]:
    """The files of the working tree that git tracks or would add."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        stdout=subprocess.PIPE,
    ).stdout.decode()
    return [f for f in out.split("\0") if f and (ROOT / f).is_file()]


def copy_sources(files: List[str], dest: Path) -> None:
    for f in files:
        (dest / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, dest / f)


def wheel_problems(wheel: Path, sources: Set[str], ext_suffix: str, torch_version: str) -> List[str]:
    """What is wrong with the wheel: a source file missing, a file that is
    neither source nor built, the torch it records or requires not the one
    it was built with. `sources`: the files of src/, as the wheel names them."""
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        expected = sources | set(BUILD_MADE) | {f"api_tracer/_C{ext_suffix}"}
        shipped = {n for n in names if not n.split("/", 1)[0].endswith(".dist-info")}
        problems = [f"missing from the wheel: {n}" for n in sorted(expected - shipped)]
        problems += [f"in the wheel, neither source nor built: {n}" for n in sorted(shipped - expected)]
        if "api_tracer/_build_info.py" in names:
            recorded: Dict[str, object] = {}
            exec(z.read("api_tracer/_build_info.py").decode(), recorded)
            if recorded.get("TORCH_VERSION") != torch_version:
                problems.append(
                    f"_build_info.py records torch {recorded.get('TORCH_VERSION')}, the build's is {torch_version}"
                )
        metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
        requires = [
            line.partition(":")[2].strip()
            for line in z.read(metadata).decode().splitlines()
            if line.startswith("Requires-Dist:")
        ]
        # PEP 440: torch==2.13.0 is met by 2.13.0 and by its local builds, 2.13.0+cpu
        pins = [r[len("torch==") :] for r in requires if r.startswith("torch==")]
        if not any(torch_version == v or torch_version.startswith(v + "+") for v in pins):
            problems.append(f"the wheel requires {requires}: no torch==X that torch {torch_version} is")
    return problems


def check_outputs(run_dir: Path) -> List[str]:
    """What the quickstart and the traced parent and child did not write."""
    problems = []
    expected_lines = {
        "quickstart/api_configs_level_1.yaml": "torch.nn.functional.conv2d(",
        "quickstart/api_configs_level_2.yaml": "torch.ops.aten.convolution_backward.default(",
        "followed/api_configs_level_0.yaml": "torch.zeros(3)",
    }
    for name, start in expected_lines.items():
        path = run_dir / name
        lines = path.read_text().splitlines() if path.is_file() else []
        if not any(line.startswith(start) for line in lines):
            problems.append(f"{path}: no line starts with {start!r}" if lines else f"{path}: missing or empty")
    children = sorted((run_dir / "followed").glob("pid-*/api_configs_level_0.yaml"))
    if [p.read_text().splitlines() for p in children] != [["torch.ones(2)"]]:
        problems.append(f"the child's set is not one file holding torch.ones(2): {children}")
    return problems


def test_wheel(tmp: Path, times: Dict[str, float]) -> None:
    src, venv, dist, run_dir = tmp / "src", tmp / "venv", tmp / "dist", tmp / "run"
    python = venv / "bin" / "python"
    with step("copy the sources", times):
        files = source_files()
        copy_sources(files, src)
        sources = {f[len(SOURCES) :] for f in files if f.startswith(SOURCES)}

    with step("create a fresh venv with torch and the build tools", times):
        run([sys.executable, "-m", "venv", str(venv)], cwd=tmp)
        run(
            [
                str(python),
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                "-c",
                str(ROOT / "requirements.txt"),
                *INSTALL,
            ],
            cwd=tmp,
        )
        torch_version, ext_suffix = run(
            [
                str(python),
                "-c",
                "import sysconfig, torch; print(torch.__version__); print(sysconfig.get_config_var('EXT_SUFFIX'))",
            ],
            cwd=tmp,
        ).stdout.split()

    with step("build the wheel: python -m build --wheel --no-isolation", times):
        run(
            [str(python), "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist)],
            cwd=src,
            log=tmp / "build.log",
        )
        (wheel,) = dist.glob("*.whl")
        problems = wheel_problems(wheel, sources, ext_suffix, torch_version)
        if problems:
            raise Failed(f"{wheel.name}:\n  " + "\n  ".join(problems))

    with step("install the wheel, run the quickstart and api-tracer run outside the sources", times):
        run(
            [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-index", str(wheel)],
            cwd=tmp,
        )
        run_dir.mkdir()
        where = run([str(python), "-c", "import api_tracer; print(api_tracer.__file__)"], cwd=run_dir).stdout.strip()
        if not Path(where).is_relative_to(venv):
            raise Failed(f"api_tracer was imported from {where}, not from the venv's wheel")
        shutil.copy2(ROOT / "examples" / "quickstart.py", run_dir)
        run([str(python), "quickstart.py", "quickstart"], cwd=run_dir)
        (run_dir / "parent.py").write_text(PARENT)
        traced = run(
            [
                str(venv / "bin" / "api-tracer"),
                "run",
                "--levels",
                "0",
                "--follow-children",
                "-o",
                "followed",
                "parent.py",
            ],
            cwd=run_dir,
        )
        problems = check_outputs(run_dir)
        if (traced.stdout + traced.stderr).strip():
            problems.append(f"api-tracer run printed: {(traced.stdout + traced.stderr).strip()}")
        if problems:
            raise Failed("\n".join(problems))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (kept anyway on failure)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="api_tracer_wheel_"))
    times: Dict[str, float] = {}
    try:
        test_wheel(tmp, times)
    except Failed as e:
        print(f"test-wheel: FAILED: {e}\n(the sources, venv, wheel and build.log are in {tmp})", file=sys.stderr)
        return 1
    print(f"test-wheel: the wheel builds, installs and runs ({sum(times.values()):.0f} s in all)")
    if args.keep:
        print(f"test-wheel: kept {tmp}")
    else:
        shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
