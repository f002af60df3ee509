"""PaddleAPITest's own engine on this machine's CPU, for a side-by-side run.

Their `engine.py --accuracy=True --test_cpu=True` runs Paddle on the CPU but
puts torch on `cuda:0` (`torch.set_default_device`); SHIM sends that to the
CPU and changes nothing else. Their engine runs a file of lines in one
process, writing each line to `checkpoint` before it starts and to an
outcome log after; a process that dies is started again and skips what its
checkpoint holds, and the line it died on (checkpointed, in no outcome log)
is counted `crash`, as their engineV2 counts a dead worker.

Their repository is theirs and is not part of this one: REPO is a checkout
of github.com/PFCCLab/PaddleAPITest (its `engine.py`, `tester/`). Their
Python needs `pandas` and `func_timeout` beside Paddle and torch; PYTHONPATH
may name a folder holding them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from typing import Dict, List, Tuple

SHIM = (
    "import os, runpy, sys, torch\n"
    "_set = torch.set_default_device\n"
    "torch.set_default_device = lambda device: _set('cpu')\n"
    "sys.path.insert(0, os.getcwd())\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_path('engine.py', run_name='__main__')\n"
)
# Their outcome logs (tester/api_config/log_writer.py LOG_PREFIXES), by the
# outcome names `replay --outcomes` uses for the same files.
LOGS = {
    "pass": "api_config_pass",
    "accuracy_error": "api_config_accuracy_error",
    "paddle_error": "api_config_paddle_error",
    "torch_error": "api_config_torch_error",
    "paddle_to_torch_failed": "api_config_paddle_to_torch_failed",
    "numpy_error": "api_config_numpy_error",
    "timeout": "api_config_timeout",
    "crash": "api_config_crash",
    "oom": "api_config_oom",
}


def _read(path: str) -> List[str]:
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        return [line.strip() for line in f if line.strip()]


def _worker(repo: str, lines: List[str], tag: str, env: Dict[str, str], logs: str) -> subprocess.Popen:
    todo = os.path.join(logs, f"lines_{tag}.txt")
    with open(todo, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.writelines(line + "\n" for line in lines)
    command = [sys.executable, "-c", SHIM, "engine.py", f"--api_config_file={todo}", "--accuracy=True"]
    command += ["--test_cpu=True", f"--id={tag}"]
    out = open(os.path.join(logs, f"stdout_{tag}.txt"), "ab")
    return subprocess.Popen(command, cwd=repo, env=env, stdout=out, stderr=subprocess.STDOUT)


def run(repo: str, lines: List[str], jobs: int, pythonpath: str = "") -> Tuple[Dict[str, str], float, str]:
    """Their outcome of each line, the wall seconds of the whole run, and the
    folder of their logs and output. `jobs` engines run side by side, each
    on every `jobs`-th line."""
    logs = os.path.join(repo, "tester", "api_config", "test_log")
    shutil.rmtree(logs, ignore_errors=True)
    os.makedirs(logs)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (pythonpath, os.environ.get("PYTHONPATH", "")) if p))
    shares = {str(i): lines[i::jobs] for i in range(jobs)}
    outcome: Dict[str, str] = {}
    start = time.perf_counter()
    running = {tag: _worker(repo, share, tag, env, logs) for tag, share in shares.items() if share}
    while running:
        for tag, process in list(running.items()):
            if process.poll() is None:
                continue
            del running[tag]
            checkpoint = _read(os.path.join(logs, f"checkpoint_{tag}.txt"))
            logged = {line for name in LOGS.values() for line in _read(os.path.join(logs, f"{name}_{tag}.txt"))}
            if process.returncode != 0 and checkpoint and checkpoint[-1] not in logged:
                with open(os.path.join(logs, f"{LOGS['crash']}_{tag}.txt"), "a") as f:
                    f.write(checkpoint[-1] + "\n")
            if process.returncode != 0 and len(set(checkpoint)) < len(set(shares[tag])):
                running[tag] = _worker(repo, shares[tag], tag, env, logs)
        time.sleep(0.2)
    seconds = time.perf_counter() - start
    for name, prefix in LOGS.items():
        for tag in shares:
            for line in _read(os.path.join(logs, f"{prefix}_{tag}.txt")):
                outcome.setdefault(line, name)
    return outcome, seconds, logs


def messages(logs: str) -> Dict[str, str]:
    """What their engine printed for each line (its output from the line's
    `test begin:` to the next), for the lines whose verdicts differ."""
    said: Dict[str, List[str]] = {}
    for name in sorted(os.listdir(logs)):
        if not name.startswith("stdout_"):
            continue
        current = None
        for text in _read(os.path.join(logs, name)):
            if " test begin: " in text:
                current = text.split(" test begin: ", 1)[1].strip()
                said[current] = []
            elif current is not None and not text.startswith("W1") and len(said[current]) < 6:
                said[current].append(text)
    return {line: " | ".join(texts) for line, texts in said.items()}
