#!/usr/bin/env bash
# Sets up a fresh machine for api_tracer: the Debian packages the build needs
# (and headless Chromium with its driver, which the report's tests open the
# HTML report in), then a virtual environment (.venv) with the pinned Python
# packages.
# Idempotent: what is already there is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ libgtest-dev chromium chromium-driver)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing Debian packages: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

python=${PYTHON:-python3}
[ -x .venv/bin/python ] && python=.venv/bin/python
# The Pythons the package supports are pyproject.toml's requires-python;
# a Python outside them stops here, before minutes of installing.
requires=$(sed -n 's/^requires-python = "\(.*\)"$/\1/p' pyproject.toml)
"$python" - "$requires" <<'EOF_PY'
import operator
import sys

spec = sys.argv[1]
ops = {">=": operator.ge, "<=": operator.le, "==": operator.eq, ">": operator.gt, "<": operator.lt}
for part in spec.split(","):
    op = next(o for o in ops if part.startswith(o))
    version = tuple(int(x) for x in part[len(op) :].split("."))
    if not ops[op](sys.version_info[: len(version)], version):
        sys.exit(
            f"setup: {sys.executable} is Python {sys.version.split()[0]}, and pyproject.toml's "
            f"requires-python is {spec!r}: remove a .venv made with it and run with PYTHON=<such a python>"
        )
EOF_PY
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($python --version)"
  "$python" -m venv .venv
fi
echo "setup: installing pinned Python packages (requirements.txt)"
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt 2>&1 \
  | grep -v "is ignored: it is neither a file nor a directory" || true
.venv/bin/python -c "import torch" || { echo "setup: torch did not install" >&2; exit 1; }
