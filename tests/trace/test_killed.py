"""A traced job that is killed keeps its configs; the trace is bounded.

Each test starts a traced loop in a fresh interpreter, waits until it runs,
signals it and reads every file it left. The summaries are snapshots,
rewritten whole every snapshot_interval seconds; under `api-tracer run`,
SIGTERM and SIGHUP write everything first, then end the program by the same
signal; Ctrl-C writes everything at every level, as it always did.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import yaml

from api_tracer import APITracer, parse_call
from support import CLI, read_set, run_cli, run_script

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # traces of megabytes

# 50 sizes: 100 distinct configs, a few thousand calls a second
CONFIGS = 100
LOOP = """
import sys
import torch
for i in range(10 ** 9):
    torch.add(torch.ones(i % 50 + 1), 1)
    if i == 200:
        print("looping", flush=True)
"""
WITH_FORM = """
import sys
import torch
from api_tracer import APITracer
with APITracer(output_path="out", levels=[int(x) for x in sys.argv[1].split(",")], merge_output=True,
               snapshot_interval=0.1):
""" + "\n".join("    " + line for line in LOOP.splitlines() if line and not line.startswith("import"))


def default_signals():
    """The child starts with the default action of the signals the test sends
    (a shell without job control starts background jobs ignoring SIGINT)."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def kill_while_looping(tmp_path, how, levels, signum, whole_snapshot=False):
    if how == "run":
        (tmp_path / "loop.py").write_text(LOOP)
        command = CLI + ["run", "--levels", levels, "--merge", "--snapshot-interval", "0.1", "-o", "out", "loop.py"]
    else:
        (tmp_path / "loop.py").write_text(WITH_FORM)
        command = [sys.executable, "loop.py", levels]
    proc = subprocess.Popen(
        command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_signals
    )
    try:
        assert proc.stdout.readline() == "looping\n", proc.stderr.read()
        # past a snapshot holding every config the loop makes, with the trace
        # streaming (how soon the snapshot thread runs depends on the load)
        configs = tmp_path / "out" / "api_configs.yaml"
        while (
            len(configs.read_bytes().splitlines()) < CONFIGS
            or os.path.getsize(tmp_path / "out" / "api_trace.txt") < 300_000
        ):
            time.sleep(0.01)
        if whole_snapshot:  # and until the next one begins: that one wrote all its files
            written = os.stat(configs).st_ino  # (one by one, each a new inode)
            while os.stat(configs).st_ino == written:
                time.sleep(0.01)
        proc.send_signal(signum)
        proc.wait(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    return proc.returncode, proc.stderr.read()


def complete_records(text):
    """The trace records before the last one, which a kill may have cut."""
    return text[: text.rfind("\n- ") + 1]


def check_summaries(files):
    """Every summary file is whole: it parses, and it holds what the loop made."""
    configs = files["api_configs.yaml"].splitlines()
    assert len(configs) == CONFIGS
    assert all(parse_call(line)[0] in ("torch.ones", "torch.add") for line in configs)
    assert files["api_apis.txt"] == "torch.add\ntorch.ones\n"
    stats = yaml.safe_load(files["api_statistics.yaml"])
    assert stats["Total APIs"] == 2
    return stats["Total API calls"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_run_writes_everything_on_termination_then_dies_by_the_signal(tmp_path, signum):
    returncode, stderr = kill_while_looping(tmp_path, "run", "0,1", signum)
    assert returncode == -signum, stderr
    files = read_set(tmp_path / "out")
    calls = check_summaries(files)
    lines = files["api_trace.txt"].splitlines()
    records = yaml.load(files["api_trace.yaml"], Loader=LOADER)
    assert calls == len(lines) == len(records) > 1000  # nothing lost, not even the buffered tail


@pytest.mark.parametrize("how,signum", [("run", signal.SIGKILL), ("with", signal.SIGKILL), ("with", signal.SIGTERM)])
def test_a_kill_keeps_the_last_snapshot_whole(tmp_path, how, signum):
    returncode, stderr = kill_while_looping(tmp_path, how, "0,1", signum, whole_snapshot=True)
    assert returncode == -signum, stderr  # the with-form installs no handler: SIGTERM kills
    files = read_set(tmp_path / "out")
    calls = check_summaries(files)
    lines = files["api_trace.txt"].splitlines()
    records = yaml.load(complete_records(files["api_trace.yaml"]), Loader=LOADER)
    assert calls > 0  # as of the last snapshot (the trace holds the chunks written by then)
    assert len(records) >= len(lines) - 1 > 1000
    # A kill that lands inside a snapshot leaves the temporary file it was
    # writing (the file it replaces is whole); the next tracer removes it.
    with APITracer(
        output_path=str(tmp_path / "out"), levels=[0, 1], merge_output=True, record_stack=True, value_ranges=True
    ):
        pass
    assert not [name for name in os.listdir(tmp_path / "out") if name.endswith(".tmp")]


@pytest.mark.parametrize("levels", ["0", "1", "2", "3"])
@pytest.mark.parametrize("how", ["run", "with"])
def test_ctrl_c_writes_every_file_whole_at_every_level(tmp_path, how, levels):
    returncode, stderr = kill_while_looping(tmp_path, how, levels, signal.SIGINT)
    assert returncode == -signal.SIGINT and "KeyboardInterrupt" in stderr, stderr
    files = read_set(tmp_path / "out")
    lines = files["api_trace.txt"].splitlines()
    records = yaml.load(files["api_trace.yaml"], Loader=LOADER)
    assert len(records) == len(lines) == yaml.safe_load(files["api_statistics.yaml"])["Total API calls"] > 1000


def test_a_program_s_own_handler_and_ignored_signals_stay_its_own(tmp_path):
    code = """
        import os, signal, sys, torch
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        print(signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL, flush=True)  # run's handler
        signal.signal(signal.SIGTERM, lambda *a: sys.exit(7))  # the program's own, installed later
        torch.ones(1)
        os.kill(os.getpid(), signal.SIGHUP)  # ignored, as untraced
        torch.ones(2)
        os.kill(os.getpid(), signal.SIGTERM)
        signal.pause()
    """
    (tmp_path / "prog.py").write_text(textwrap.dedent(code))
    result = run_cli("run", "--merge", "-o", "out", "prog.py", cwd=tmp_path, timeout=300, preexec_fn=default_signals)
    assert (result.returncode, result.stdout) == (7, "True\n"), result.stderr
    assert (tmp_path / "out" / "api_trace.txt").read_text() == "torch.ones(1)\ntorch.ones(2)\n"


def test_a_tiny_trace_limit_cuts_the_trace_and_keeps_the_counts(tmp_path):
    import torch

    out = tmp_path / "out"
    with APITracer(output_path=str(out), levels=1, merge_output=True, trace_limit=1000):
        for i in range(100):
            torch.ones(i % 5 + 1)
    files = read_set(out)
    note = "# trace_limit of 1000 bytes reached: {} calls not written\n"
    lines = files["api_trace.txt"].splitlines()
    written = len(lines) - 1
    assert files["api_trace.txt"].endswith(note.format(100 - written))
    assert files["api_trace.yaml"].endswith(note.format(100 - written))
    assert lines[:written] == [f"torch.ones({i % 5 + 1})" for i in range(written)]
    assert len(yaml.safe_load(files["api_trace.yaml"])) == written > 10
    assert len(files["api_trace.txt"]) + len(files["api_trace.yaml"]) - 2 * len(note.format(100 - written)) <= 1000
    assert "Total API calls: 100" in files["api_statistics.yaml"]  # the summaries count every call
    assert len(files["api_configs.yaml"].splitlines()) == 5

    stats = run_cli("stats", str(out), timeout=300)
    assert (
        f"trace_limit (1000 bytes) reached: {100 - written} calls are counted here but not in api_trace.*"
        in stats.stdout
    ), stats.stdout

    merged = run_cli("merge", str(out), str(out), "-o", str(tmp_path / "m"), timeout=300)
    assert merged.returncode == 0, merged.stderr
    m = read_set(tmp_path / "m")
    assert m["api_trace.txt"].splitlines() == lines[:written] * 2 + [note.format(2 * (100 - written)).strip()]
    assert len(yaml.safe_load(m["api_trace.yaml"])) == 2 * written


def test_no_limit_and_no_snapshots_when_asked(tmp_path):
    import torch

    out = tmp_path / "out"
    with APITracer(output_path=str(out), levels=1, merge_output=True, trace_limit=0, snapshot_interval=0):
        for _ in range(20000):
            torch.ones(1)
    assert read_set(out)["api_trace.txt"] == "torch.ones(1)\n" * 20000


def test_a_full_disk_names_the_file_and_keeps_the_summaries(tmp_path):
    import torch

    out = tmp_path / "out"
    out.mkdir()
    (out / "api_trace.txt").symlink_to("/dev/full")  # every write there: ENOSPC
    tracer = APITracer(output_path=str(out), levels=1, merge_output=True)
    with pytest.raises(OSError) as e:
        with tracer:
            torch.ones(2)
    assert str(e.value) == f"writing {out / 'api_trace.txt'} failed: No space left on device"
    assert (out / "api_configs.yaml").read_text() == "torch.ones(2)\n"
    assert "Total API calls: 1" in (out / "api_statistics.yaml").read_text()


def test_when_a_snapshot_cannot_be_written_the_last_good_one_stays(tmp_path):
    # Files may not grow past 8 KiB: the first snapshots fit, later ones not.
    code = """
        import resource, signal, time, torch
        from api_tracer import APITracer
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (8192, 8192))
        tracer = APITracer(output_path="out", levels=1, merge_output=True, stream_trace=False,
                           snapshot_interval=0.05)
        tracer.start()
        for n in range(1, 2000):
            torch.ones(n)
            if n % 100 == 0:
                time.sleep(0.2)
        try:
            tracer.stop()
        except OSError as e:
            print(e)
    """
    result = run_script(code, tmp_path)
    assert result.returncode == 0, result.stderr
    # (the output path given relative is taken from the working directory at start)
    assert result.stdout == f"writing {tmp_path / 'out' / 'api_configs.yaml'} failed: File too large\n"
    configs = (tmp_path / "out" / "api_configs.yaml").read_text().splitlines()
    assert 100 <= len(configs) < 1999
    assert all(parse_call(line)[0] == "torch.ones" for line in configs)
