"""What the commands that write a file (export -o, report -o, replay -o and
--junit) do where the path names something other than a regular file, or
one of the files they read (docs/cli.md).

A regular file (or nothing) is written beside its place and renamed over
it; a link to one has its target replaced and stays a link; anything else
there (a FIFO a process reads, a character device) is written as it is and
stays what it was; a FIFO no process reads, a link to nothing or a
directory is refused, exit 2, not waited on. An output that is one of the
command's inputs, by any name, is refused before any work: `api-tracer:
COMMAND: -o PATH is one of its inputs (INPUT, which COMMAND reads)`.

No test writes to the machine's devices: the character device written is a
terminal of the test's own (a pseudo-terminal's slave, read at its master),
and a writer that would replace it could not (nothing can be made in
/dev/pts), so such a regression fails here instead of replacing anything.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import stat
import threading
import tty
from pathlib import Path
from typing import Callable, Dict, Iterator, List

import pytest
import torch

from api_tracer import APITracer
from api_tracer.cli import main
from support import run_cli

OPERATOR = 'torch.ops.aten.add.Tensor(Tensor([2, 3], "float32"), Tensor([2, 3], "float32"))'
RESULT = {"file": "c.yaml", "line": 1, "config": "torch.ones(2)", "api": "torch.ones", "status": "ok"}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Dict[str, Path]:
    """A file of config lines, a labelled trace set (api_config_sources.yaml
    beside its configs), a replay report, a diff, a fuzz campaign."""
    top = tmp_path_factory.mktemp("inputs")
    (top / "c.yaml").write_text(OPERATOR + "\n")
    with APITracer(output_path=str(top / "set"), levels=[1], merge_output=True, label="run"):
        torch.add(torch.ones(2, 3), 1)
    shutil.copytree(top / "set", top / "set_b")
    (top / "r.jsonl").write_text(json.dumps(RESULT) + "\n")
    diffed = run_cli("diff", str(top / "set"), str(top / "set_b"), "--json")
    assert diffed.returncode == 0, diffed.stderr
    (top / "d.jsonl").write_text(diffed.stdout)
    (top / "campaign").mkdir()
    (top / "campaign" / "campaign.json").write_text("{}\n")
    (top / "campaign" / "findings.jsonl").write_text("")
    return {
        "configs": top / "c.yaml",
        "set": top / "set",
        "replay": top / "r.jsonl",
        "diff": top / "d.jsonl",
        "campaign": top / "campaign",
    }


def export_argv(inputs: Dict[str, Path], out: Path) -> List[str]:
    return ["export", "--format", "operator-inputs", str(inputs["configs"]), "-o", str(out)]


def report_argv(inputs: Dict[str, Path], out: Path) -> List[str]:
    return ["report", str(inputs["set"]), "-o", str(out)]


WRITERS: Dict[str, Callable[[Dict[str, Path], Path], List[str]]] = {"export": export_argv, "report": report_argv}


@contextlib.contextmanager
def no_wait(seconds: float = 60) -> Iterator[None]:
    """A TimeoutError, not a hang, where the command waits (a FIFO opened
    for writing that no process reads blocks the open for ever)."""

    def expire(signum, frame):
        raise TimeoutError(f"still waiting after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run(capsys, argv: List[str]):
    with no_wait():
        code = main(argv)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.err


class Drain:
    """A thread that reads everything written into a file descriptor (a
    FIFO's read end, a terminal's master) until stopped."""

    def __init__(self, fd: int) -> None:
        self.fd, self.data, self.stopped = fd, bytearray(), threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while not self.stopped.is_set():
            if select.select([self.fd], [], [], 0.05)[0]:
                try:
                    chunk = os.read(self.fd, 1 << 16)
                except OSError:
                    return
                self.data += chunk

    def stop(self) -> bytes:
        """What was read, once nothing more has come for a while."""
        size = -1
        while size != len(self.data):
            size = len(self.data)
            self.stopped.wait(0.3)
        self.stopped.set()
        self.thread.join()
        return bytes(self.data)


def expected_output(capsys, writer: str, inputs: Dict[str, Path], tmp_path: Path) -> bytes:
    """What the writer writes into a regular file."""
    plain = tmp_path / "plain.out"
    code, err = run(capsys, WRITERS[writer](inputs, plain))
    assert code == 0, err
    return plain.read_bytes()


@pytest.mark.parametrize("writer", WRITERS)
def test_a_fifo_a_process_reads_is_written_and_stays_a_fifo(inputs, tmp_path, capsys, writer):
    want = expected_output(capsys, writer, inputs, tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a process reading it
    try:
        drain = Drain(reader)
        code, err = run(capsys, WRITERS[writer](inputs, fifo))
        got = drain.stop()
    finally:
        os.close(reader)
    assert code == 0, err
    assert got == want and stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("link", [False, True])
@pytest.mark.parametrize("writer", WRITERS)
def test_a_fifo_no_process_reads_is_refused_not_waited_on(inputs, tmp_path, capsys, writer, link):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    out = tmp_path / "link" if link else fifo
    if link:
        out.symlink_to(fifo)
    code, err = run(capsys, WRITERS[writer](inputs, out))
    assert (code, err) == (2, f"api-tracer: {out}: cannot write: a FIFO no process reads\n")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.path.islink(out) == link
    assert sorted(os.listdir(tmp_path)) == sorted({"fifo", out.name})  # no temporary file left beside


@pytest.mark.parametrize("link", [False, True])
@pytest.mark.parametrize("writer", WRITERS)
def test_a_character_device_is_written_and_stays_one(inputs, tmp_path, capsys, writer, link):
    """A terminal of the test's own, as `-o /dev/null` or `-o /dev/stdout`
    would be: written through, never replaced by a regular file."""
    want = expected_output(capsys, writer, inputs, tmp_path)
    master, slave = os.openpty()
    try:
        tty.setraw(slave)  # its bytes as written: no newline made CR LF
        device = Path(os.ttyname(slave))
        out = tmp_path / "link" if link else device
        if link:
            out.symlink_to(device)
        drain = Drain(master)
        code, err = run(capsys, WRITERS[writer](inputs, out))
        got = drain.stop()
        assert code == 0, err
        assert got == want
        assert stat.S_ISCHR(os.stat(device).st_mode) and os.path.islink(out) == link
    finally:
        os.close(slave)
        os.close(master)


@pytest.mark.parametrize("writer", WRITERS)
def test_a_link_to_a_regular_file_keeps_the_link_and_replaces_its_target(inputs, tmp_path, capsys, writer):
    want = expected_output(capsys, writer, inputs, tmp_path)
    (tmp_path / "elsewhere").mkdir()
    target = tmp_path / "elsewhere" / "target.out"
    target.write_text("old\n")
    link = tmp_path / "link.out"
    link.symlink_to(target)
    code, err = run(capsys, WRITERS[writer](inputs, link))
    assert code == 0, err
    assert os.path.islink(link) and os.readlink(link) == str(target) and target.read_bytes() == want
    assert sorted(os.listdir(tmp_path / "elsewhere")) == ["target.out"]


@pytest.mark.parametrize("writer", WRITERS)
def test_a_link_to_nothing_and_a_directory_are_refused(inputs, tmp_path, capsys, writer):
    link = tmp_path / "link.out"
    link.symlink_to(tmp_path / "nowhere")
    code, err = run(capsys, WRITERS[writer](inputs, link))
    assert code == 2 and "a symbolic link to nothing" in err and str(link) in err, err
    assert os.path.islink(link) and not os.path.lexists(tmp_path / "nowhere")
    code, err = run(capsys, WRITERS[writer](inputs, tmp_path))
    assert code == 2 and str(tmp_path) in err and "directory" in err, err


@pytest.mark.parametrize("flag", ["-o", "--junit"])
def test_replay_refuses_a_fifo_no_process_reads(tmp_path, flag):
    """Its reports are written a line at a time as results come: opened
    before any config runs, a FIFO no process reads is said then (replay
    waited for a reader for ever, before)."""
    (tmp_path / "c.yaml").write_text("torch.ones(2)\n")
    os.mkfifo(tmp_path / "fifo")
    r = run_cli("replay", str(tmp_path / "c.yaml"), flag, str(tmp_path / "fifo"), timeout=120)
    assert (r.returncode, r.stderr) == (
        2,
        f"api-tracer: replay: {flag} {tmp_path / 'fifo'}: cannot write: a FIFO no process reads\n",
    )
    assert stat.S_ISFIFO(os.lstat(tmp_path / "fifo").st_mode)


# -- an output that is an input ------------------------------------------------------------------


def refused(command: str, out: Path, given: Path) -> str:
    return f"api-tracer: {command}: -o {out} is one of its inputs ({given}, which {command} reads)\n"


def cases(inputs: Dict[str, Path], tmp_path: Path):
    """(argv, the output, the input it is as the command names it), each
    the issue's or a way to name an input by another name."""
    s, camp = inputs["set"], inputs["campaign"]
    (tmp_path / "link.jsonl").symlink_to(inputs["replay"])
    os.link(inputs["configs"], tmp_path / "hard.yaml")
    return [
        (["report", str(inputs["replay"])], inputs["replay"], inputs["replay"]),
        (["report", str(s)], s / "api_statistics.yaml", s / "api_statistics.yaml"),
        (["report", str(s.parent)], s / "api_configs.yaml", s / "api_configs.yaml"),  # a set found under it
        (["report", str(camp)], camp / "findings.jsonl", camp / "findings.jsonl"),
        (["report", str(camp)], camp / "campaign.json", camp / "campaign.json"),
        (["report", str(inputs["diff"])], inputs["diff"], inputs["diff"]),
        (["report", str(inputs["replay"])], tmp_path / "link.jsonl", inputs["replay"]),
        (["export", "--format", "operator-inputs", str(inputs["configs"])], inputs["configs"], inputs["configs"]),
        (["export", "--format", "operator-inputs", str(inputs["configs"])], tmp_path / "hard.yaml", inputs["configs"]),
        (  # the calls of each config are read from beside it
            ["export", "--format", "operator-inputs", str(s / "api_configs.yaml")],
            s / "api_config_sources.yaml",
            s / "api_config_sources.yaml",
        ),
        (["replay", str(inputs["configs"])], tmp_path / "hard.yaml", inputs["configs"]),
    ]


def test_an_output_that_is_an_input_is_refused_before_any_work(inputs, tmp_path, capsys):
    """The issue's: report wrote its page over its input (a replay report,
    a set's statistics, a campaign's findings); export and replay refused
    it each in its own words. One check, one message, for all three."""
    for argv, out, given in cases(inputs, tmp_path):
        before = {p: p.read_bytes() for p in (out, given)}
        code, err = run(capsys, [*argv, "-o", str(out)])
        assert (code, err) == (2, refused(argv[0], out, given)), argv
        assert {p: p.read_bytes() for p in (out, given)} == before, argv
    # the flag as replay was given it
    code, err = run(capsys, ["replay", str(inputs["configs"]), "--junit", str(inputs["configs"])])
    assert (code, err) == (
        2,
        f"api-tracer: replay: --junit {inputs['configs']} is one of its inputs "
        f"({inputs['configs']}, which replay reads)\n",
    )
    # -o and --junit one file by two names: the two reports would mix in it
    (tmp_path / "o").mkdir()
    report, junit = tmp_path / "o" / "r.jsonl", f"{tmp_path}/o/./r.jsonl"  # (a Path would drop the "./")
    code, err = run(capsys, ["replay", str(inputs["configs"]), "-o", str(report), "--junit", junit])
    said = f"api-tracer: replay: -o {report} and --junit {junit} name one file: the reports would mix\n"
    assert (code, err) == (2, said)
    assert not report.exists()
    # a page beside the files it reads is no input
    code, err = run(capsys, ["report", str(inputs["set"]), "-o", str(inputs["set"] / "report.html")])
    assert code == 0, err
    (inputs["set"] / "report.html").unlink()


def test_merge_refuses_an_output_that_is_an_input_set_by_another_name(inputs, tmp_path, capsys):
    """merge IN -o LINK/./x/.. wrote the merged set over IN's own files (its
    statistics doubled); -o IN/new/.. was refused as \"no file set under
    IN\". Each is the input by another name: refused, the set unchanged."""
    s = inputs["set"]
    (tmp_path / "link").symlink_to(s)
    before = {p.name: p.read_bytes() for p in s.iterdir()}
    for out in (f"{tmp_path}/link/./x/..", f"{s}/new/..", str(tmp_path / "link")):
        code, err = run(capsys, ["merge", str(s), "-o", out])
        assert (code, err) == (
            2,
            f"api-tracer: merge: -o {out} is {s}, which merge reads: the merged set would replace its input\n",
        ), out
    assert {p.name: p.read_bytes() for p in s.iterdir()} == before
