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
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($python --version)"
  "$python" -m venv .venv
fi
echo "setup: installing pinned Python packages (requirements.txt)"
.venv/bin/python -m pip install -q --disable-pip-version-check -r requirements.txt 2>&1 \
  | grep -v "is ignored: it is neither a file nor a directory" || true
.venv/bin/python -c "import torch" || { echo "setup: torch did not install" >&2; exit 1; }
