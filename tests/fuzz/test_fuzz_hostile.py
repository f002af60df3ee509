"""api-tracer fuzz against a hostile user: a damaged campaign.json or
findings.jsonl, a FIFO or a device in their place, another seeds file on
--resume, an output directory over the inputs, Ctrl-C and SIGTERM sent to
the process group, and the limits the user sets (--budget, --jobs,
--timeout) measured. Each bad input is `api-tracer: FILE[:LINE]: ...` and
exit status 2 before any case runs: never a traceback, a hang, nor exit
status 1 (which says the campaign found something).

What is refused before any case runs is asked of the command in this
process (api_tracer.cli.main, through `in_process`); what runs cases, is
stopped by a signal or is bounded by a limit runs in a fresh process, as
the user runs it. The tests that damage a finished campaign share one,
made once (`base`: run with more --jobs than its --budget, it is the
campaign whose workers test_budget_bounds_the_cases_and_the_workers
counts), and both tests that resume it with --budget 3 share that run
(`resumed`)."""

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import time
from types import SimpleNamespace

import fuzz_planted
import pytest

from api_tracer.cli import main
from api_tracer.cli.fuzz import max_jobs
from api_tracer.flags import FUZZ_MAX_BYTES
from api_tracer.fuzz.campaign import CONFIRM_FACTOR
from support import CLI, run_cli, user_code_env

ENV = user_code_env()
SEEDS = fuzz_planted.TORCH_SEEDS  # torch's add and mm: fast, and nothing to find
QUICK = ("--oracle", "crash,hang,error")  # (no check: a case is one step)


def cli(*args, timeout=120, env=ENV):
    return run_cli(*args, env=env, timeout=timeout)


class Hung(BaseException):
    """The command ran past in_process's timeout (a BaseException: neither
    the CLI's `except OSError` nor the user's code's `except Exception`
    takes it)."""


def in_process(*args, timeout=60):
    """`api-tracer ARGS` run in this process (api_tracer.cli.main), for
    what is refused before any case runs: a CompletedProcess as `cli`'s,
    SystemExit's code (argparse's) its status, and a traceback the
    exception itself. A command still running after `timeout` seconds
    (waiting on a FIFO, say) is stopped by SIGALRM and fails the test, as
    `cli`'s timeout would."""

    def alarm(signum, frame):
        raise Hung()

    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else int(e.code is not None)
    except Hung:
        pytest.fail(f"api-tracer {' '.join(args)}: still running after {timeout} s\n{err.getvalue()}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return subprocess.CompletedProcess(["api-tracer", *args], code, out.getvalue(), err.getvalue())


def refused(r, *said):
    """Exit status 2, `api-tracer: ` and each of `said` on stderr, no traceback."""
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("api-tracer: "), r.stderr
    for s in said:
        assert s in r.stderr, (s, r.stderr)


COUNT_WORKERS = """
import multiprocessing, os
if multiprocessing.parent_process() is not None:  # a worker, not the campaign
    with open(os.environ["WORKER_PIDS"], "a") as f:
        f.write(f"{os.getpid()}\\n")
"""


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished campaign of 2 cases over the seeds, run with more --jobs
    than that (the most this machine takes), each worker writing its pid
    (COUNT_WORKERS, imported with --import): the seeds file, the campaign's
    directory, how the command ended, its --jobs, its state and the pids.
    The tests damage copies of it; test_budget_bounds_the_cases_and_the_workers
    checks what it ran."""
    top = tmp_path_factory.mktemp("hostile")
    seeds = top / "seeds.yaml"
    seeds.write_text("".join(line + "\n" for line in SEEDS))
    (top / "count_workers.py").write_text(COUNT_WORKERS)
    pids = top / "pids"
    env = {**ENV, "PYTHONPATH": f"{top}{os.pathsep}{ENV['PYTHONPATH']}", "WORKER_PIDS": str(pids)}
    jobs = max_jobs(FUZZ_MAX_BYTES)[0]
    out = top / "campaign"
    args = ("fuzz", str(seeds), "-o", str(out), "--budget", "2", "--jobs", str(jobs), "--import", "count_workers")
    r = cli(*args, *QUICK, env=env)
    state = json.loads((out / "campaign.json").read_text()) if (out / "campaign.json").exists() else None
    return SimpleNamespace(seeds=seeds, out=out, run=r, jobs=jobs, state=state, pids=pids)


@pytest.fixture(scope="module")
def base(finished):
    """The seeds file, and a finished campaign of 2 cases over it."""
    r = finished.run
    assert r.returncode == 0, r.stdout + r.stderr
    return finished.seeds, finished.out


@pytest.fixture
def campaign(base, tmp_path):
    """A copy of the finished campaign, to damage: (seeds, its directory)."""
    seeds, out = base
    shutil.copytree(out, tmp_path / "c")
    return seeds, tmp_path / "c"


def resume(seeds, out, *more, run=in_process, timeout=60):
    """`fuzz SEEDS -o OUT --resume` and `more` flags, for 5 s unless they
    give --budget: in this process, unless `run` is `cli`."""
    limit = () if "--budget" in more else ("--time", "5")
    return run("fuzz", str(seeds), "-o", str(out), "--resume", *limit, *QUICK, *more, timeout=timeout)


# -- campaign.json ----------------------------------------------------------------------------------------


def _state(**changed):
    state = {"seed": 0, "seeds": 2, "next_case": 2, "cases_run": 2, "seconds": 1.5, "inactive_seeds": []}
    state.update(findings=0, **changed)
    return json.dumps(state)


DAMAGED_STATES = {
    "a list": "[]",
    "a string": '"hello"',
    "next_case null": _state(next_case=None),
    "next_case Infinity": _state().replace('"next_case": 2', '"next_case": Infinity'),
    "next_case negative": _state(next_case=-7),
    "next_case a float": _state(next_case=2.5),
    "cases_run true": _state(cases_run=True),
    "inactive_seeds a number": _state(inactive_seeds=5),
    "inactive_seeds past the seeds": _state(inactive_seeds=[7]),
    "inactive_seeds twice": _state(inactive_seeds=[1, 1]),
    "seconds NaN": _state().replace('"seconds": 1.5', '"seconds": NaN'),
    "seconds negative": _state(seconds=-1e12),
    "seconds 1e400": _state().replace('"seconds": 1.5', '"seconds": 1e400'),
    "seconds a string": _state(seconds="1"),
    "seed a string": _state(seed="0"),
    "no seeds": json.dumps({"seed": 0, "next_case": 2, "cases_run": 2, "seconds": 1.0, "inactive_seeds": []}),
    "an unknown field": _state(colour="blue"),
    "a field twice": _state().replace('"seed": 0', '"seed": 7, "seed": 0'),
    "not JSON": "{",
    "empty": "",
    "nested too deep": "[" * 100000,
    "not UTF-8": '{"seed": "\xff"}',
}


@pytest.mark.parametrize("name", DAMAGED_STATES)
def test_a_damaged_campaign_json_is_refused_naming_it(campaign, name):
    seeds, out = campaign
    state = out / "campaign.json"
    data = DAMAGED_STATES[name].encode("latin-1")
    state.write_bytes(data)
    r = resume(seeds, out)
    refused(r, f"api-tracer: {state}")
    assert state.read_bytes() == data  # left as it was: nothing ran, nothing was saved


@pytest.fixture(scope="module")
def resumed(base, tmp_path_factory):
    """A copy of the finished campaign resumed as the user would: first
    with other seed lines (refused), then, given a hand-written finding,
    with its own seeds, --budget 3 (one case more, in a fresh process).
    What each step came to, for the two tests below."""
    seeds, finished = base
    top = tmp_path_factory.mktemp("resumed")
    out = top / "c"
    shutil.copytree(finished, out)
    other = top / "other.yaml"  # as many lines, the same --seed: only the lines differ
    other.write_text('torch.sub(Tensor([4, 8], "float32"), Tensor([4, 8], "float32"))\n' + SEEDS[1] + "\n")
    before = (out / "campaign.json").read_text()
    other_seeds = resume(other, out)
    after_other_seeds = (out / "campaign.json").read_text()
    (out / "findings.jsonl").write_text(_finding() + "\n")
    own_seeds = resume(seeds, out, "--budget", "3", run=cli, timeout=120)
    return SimpleNamespace(
        out=out,
        before=before,
        other_seeds=other_seeds,
        after_other_seeds=after_other_seeds,
        own_seeds=own_seeds,
        state=json.loads((out / "campaign.json").read_text()),
        findings=[json.loads(x) for x in (out / "findings.jsonl").read_text().splitlines()],
    )


def test_resume_with_other_seeds_is_refused(resumed):
    out = resumed.out
    refused(resumed.other_seeds, str(out / "campaign.json"), "seed lines")
    assert resumed.after_other_seeds == resumed.before
    r = resumed.own_seeds  # (the campaign's own seeds: it goes on, its hand-written finding the only one)
    assert r.returncode == 1, r.stderr
    assert [f["signature"] for f in resumed.findings] == ["torch.add crash SIGSEGV [run]"]
    assert resumed.state["cases_run"] == 3


# -- findings.jsonl ---------------------------------------------------------------------------------------


def _finding(**changed):
    finding = {
        "kind": "crash",
        "api": "torch.add",
        "oracle": "run",
        "line": SEEDS[0],
        "seed_line": SEEDS[0],
        "file": "seeds.yaml:1",
        "mutation": [],
        "signature": "torch.add crash SIGSEGV [run]",
        "message": "the worker died: SIGSEGV",
        "count": 1,
        "case": 0,
        "minimized": True,
    }
    finding.update(changed)
    return json.dumps({k: v for k, v in finding.items() if v is not ...})


OTHER = "torch.mm crash SIGABRT [run]"
DAMAGED_FINDINGS = {
    "case a string": _finding(signature=OTHER, case="x"),
    "line a number": _finding(signature=OTHER, line=5),
    "message null": _finding(signature=OTHER, message=None),
    "count many": _finding(signature=OTHER, count="many"),
    "count 0": _finding(signature=OTHER, count=0),
    "count NaN": _finding(signature=OTHER).replace('"count": 1', '"count": NaN'),
    "kind boom": _finding(signature=OTHER, kind="boom"),
    "oracle unknown": _finding(signature=OTHER, oracle="psychic"),
    "minimized yes": _finding(signature=OTHER, minimized="yes"),
    "mutation a string": _finding(signature=OTHER, mutation="shape"),
    "no signature": _finding(signature=...),
    "signature again": _finding(),
    "line not a config line": _finding(signature=OTHER, line="torch.add(Tensor(["),
    "line of two lines": _finding(signature=OTHER, line=SEEDS[0] + "\n" + SEEDS[1]),
    "an unknown field": _finding(signature=OTHER, colour="blue"),
    "a list": "[1, 2]",
    "not JSON": "{",
}


@pytest.mark.parametrize("name", DAMAGED_FINDINGS)
def test_a_damaged_findings_jsonl_is_refused_naming_its_line(campaign, name):
    seeds, out = campaign
    findings = out / "findings.jsonl"
    data = _finding() + "\n" + DAMAGED_FINDINGS[name] + "\n"
    findings.write_text(data)
    r = resume(seeds, out, "--budget", "3")
    refused(r, f"api-tracer: {findings}:2: not a finding")
    assert findings.read_text() == data


def test_a_hand_written_finding_is_kept_on_resume(resumed):
    r = resumed.own_seeds
    assert r.returncode == 1, r.stderr  # (it holds a finding)
    assert [f["signature"] for f in resumed.findings] == ["torch.add crash SIGSEGV [run]"]
    assert "crash x1" in r.stdout


@pytest.mark.parametrize("name", ["campaign.json", "findings.jsonl"])
@pytest.mark.parametrize("what", ["a FIFO", "a link to /dev/zero", "a sparse terabyte"])
def test_a_fifo_or_a_device_in_place_of_a_campaign_file_is_refused(campaign, name, what):
    seeds, out = campaign
    path = out / name
    path.unlink()
    if what == "a FIFO":
        os.mkfifo(path)
        said = "a FIFO"
    elif what == "a link to /dev/zero":
        path.symlink_to("/dev/zero")
        said = "a character device"
    else:
        with open(path, "wb") as f:
            f.truncate(1 << 40)
        said = "bytes"
    refused(resume(seeds, out), f"api-tracer: {path}: ", said)


def test_report_refuses_a_damaged_campaign_json(campaign, tmp_path):
    """api-tracer report reads a campaign with the same checks as --resume."""
    _, out = campaign
    state = out / "campaign.json"
    state.write_text(_state(seconds="x"))
    r = in_process("report", str(out), "-o", str(tmp_path / "r.html"))
    refused(r, f"api-tracer: {state}: ", '"seconds" is "x"')
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(
    "file, name", [("campaign.json", n) for n in DAMAGED_STATES] + [("findings.jsonl", n) for n in DAMAGED_FINDINGS]
)
def test_every_damaged_campaign_file_is_refused_by_report_too(campaign, tmp_path, capsys, file, name):
    """The whole corpus above against the other command that reads a
    campaign (in this process, through api_tracer.cli.main: exit 2 and one
    line naming the file, never a traceback)."""
    _, out = campaign
    damaged = out / file
    if file == "campaign.json":
        damaged.write_bytes(DAMAGED_STATES[name].encode("latin-1"))
    else:
        damaged.write_text(_finding() + "\n" + DAMAGED_FINDINGS[name] + "\n")
    assert main(["report", str(out), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"api-tracer: {damaged}") and err.count("\n") == 1, err
    assert not (tmp_path / "r.html").exists()


# -- the output directory over the inputs -----------------------------------------------------------------

RANGED = 'torch.add(Tensor([4, 8], "int64"), Tensor([4, 8], "int64"))'
RANGES = f"""- config: {RANGED}
  ranges:
    args[0]:
    - 0
    - 31
    args[1]:
    - 1
    - 1
"""


def test_output_over_the_value_ranges_of_the_seeds_is_refused(tmp_path):
    merged = tmp_path / "merged"
    merged.mkdir()
    (merged / "api_configs.yaml").write_text(RANGED + "\n")
    (merged / "api_value_ranges.yaml").write_text(RANGES)
    r = in_process("fuzz", str(merged / "api_configs.yaml"), "-o", str(merged), "--budget", "2", *QUICK)
    refused(r, "api-tracer: fuzz: ", str(merged / "api_value_ranges.yaml"), str(merged / "api_configs.yaml"))
    assert (merged / "api_value_ranges.yaml").read_text() == RANGES
    assert sorted(os.listdir(merged)) == ["api_configs.yaml", "api_value_ranges.yaml"]


def test_output_over_the_seeds_file_is_refused(base, tmp_path):
    repro = tmp_path / "repro"
    repro.mkdir()
    (repro / "findings.yaml").write_text(SEEDS[0] + "\n")
    (tmp_path / "link").symlink_to(repro)
    for out in (repro, repro / "new" / "..", tmp_path / "link" / "." / "sub" / ".."):  # (the same directory)
        r = in_process("fuzz", str(repro / "findings.yaml"), "-o", str(out), "--budget", "2", *QUICK)
        refused(r, "api-tracer: fuzz: ", str(repro / "findings.yaml"))
        assert (repro / "findings.yaml").read_text() == SEEDS[0] + "\n"
        assert os.listdir(repro) == ["findings.yaml"]


def test_a_campaign_file_linked_to_a_seeds_file_is_refused(campaign, tmp_path):
    seeds, out = campaign
    kept = tmp_path / "kept.yaml"
    kept.write_text(SEEDS[0] + "\n")
    (out / "findings.yaml").unlink()
    (out / "findings.yaml").symlink_to(kept)
    r = in_process("fuzz", str(seeds), str(kept), "-o", str(out), "--resume", "--budget", "3", *QUICK)
    refused(r, str(kept))
    assert kept.read_text() == SEEDS[0] + "\n"


def test_output_holding_files_of_no_campaign_is_refused(base, tmp_path):
    seeds, _ = base
    out = tmp_path / "o"
    out.mkdir()
    (out / "findings.yaml").write_text("mine\n")
    r = in_process("fuzz", str(seeds), "-o", str(out), "--budget", "2", *QUICK)
    refused(r, "api-tracer: fuzz: ", str(out / "findings.yaml"))
    assert (out / "findings.yaml").read_text() == "mine\n"


def test_a_fifo_among_the_campaign_files_is_refused(campaign):
    seeds, out = campaign
    (out / "workers.log").unlink()
    os.mkfifo(out / "workers.log")  # (a worker would wait on it forever)
    refused(resume(seeds, out, "--budget", "3"), str(out / "workers.log"), "a FIFO")


# -- signals ----------------------------------------------------------------------------------------------


HANGING = 'torch.ops.fuzzdefects.repeat_rows.default(Tensor([2, 3], "float32"), -1)'  # (never returns)


@pytest.mark.parametrize(
    "signals, status",
    [([signal.SIGINT], 0), ([signal.SIGTERM], 0), ([signal.SIGINT, signal.SIGINT], 130)],
    ids=["SIGINT", "SIGTERM", "SIGINT twice"],
)
def test_a_signal_to_the_process_group_records_no_crash(base, tmp_path, signals, status):
    """Ctrl-C (SIGINT to the terminal's process group) and `timeout`
    (SIGTERM to its group) stop the campaign: the workers' deaths are not
    findings, and the campaign resumes clean. A second Ctrl-C kills the
    running cases: exit status 130 (its seed hangs, so that a case is still
    running when the second comes: the fast seeds' cases may all be over)."""
    seeds, _ = base
    twice = len(signals) > 1
    if twice:
        seeds = tmp_path / "hanging.yaml"
        seeds.write_text(HANGING + "\n")
    out = tmp_path / "c"
    argv = [*CLI, "fuzz", str(seeds), "-o", str(out), "--time", "120", "--jobs", "2"]
    argv += ["--timeout", "60", "--import", "fuzz_planted", *QUICK] if twice else []
    p = subprocess.Popen(argv, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while not (out / "campaign.json").exists() and time.monotonic() < deadline:  # (cases are running)
            time.sleep(0.2)
        assert (out / "campaign.json").exists()
        for sig in signals:
            os.killpg(p.pid, sig)
            time.sleep(0.2)
        stdout, stderr = p.communicate(timeout=90)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == status and "Traceback" not in stderr.decode(), stderr.decode()
    assert (out / "findings.jsonl").read_text() == "", stdout.decode()
    if twice:  # (resumed, its seed would hang again: a finding, rightly)
        assert "stopped by a second signal: the running cases were killed" in stderr.decode()
        return
    state = json.loads((out / "campaign.json").read_text())
    r = cli("fuzz", str(seeds), "-o", str(out), "--resume", "--budget", str(state["cases_run"] + 1))
    assert r.returncode == 0 and (out / "findings.jsonl").read_text() == "", r.stdout + r.stderr


# -- the limits the user sets -----------------------------------------------------------------------------


def test_budget_bounds_the_cases_and_the_workers(finished):
    """--budget 2 with more --jobs than that runs 2 cases, in 2 workers
    (the campaign the tests above copy)."""
    assert finished.jobs >= 4
    assert finished.run.returncode == 0, finished.run.stderr
    assert finished.state["cases_run"] == 2
    assert len(set(finished.pids.read_text().split())) == 2


def test_jobs_past_the_machine_are_refused(base, tmp_path):
    seeds, _ = base
    most, why = max_jobs(FUZZ_MAX_BYTES)
    for jobs in (most + 1, 100000):
        r = in_process("fuzz", str(seeds), "-o", str(tmp_path / "c"), "--budget", "1", "--jobs", str(jobs))
        refused(r, "api-tracer: fuzz: --jobs", f"at most {most}")
    assert not (tmp_path / "c").exists()
    # a smaller --max-bytes leaves room for more workers, never past 4 a CPU
    assert max_jobs(1 << 20)[0] >= most


def test_timeout_bounds_a_hanging_case(tmp_path):
    """A seed that never returns is killed past --timeout, then past
    CONFIRM_FACTOR times it: a hang, and the campaign ends (its budget of
    one case; the CLI's own timeout here is what a campaign that did not
    would meet). No duration is asserted: the machine is shared. (--timeout
    0.5: the seed hangs on every run, whatever the load, so a short timeout
    makes no false hang; the case and each of the HANG_TRIES candidates of
    its minimization wait --timeout, then CONFIRM_FACTOR times it.)"""
    seeds = tmp_path / "seeds.yaml"
    seeds.write_text(HANGING + "\n")
    out = tmp_path / "c"
    timeout = 0.5
    flags = ("--budget", "1", "--timeout", f"{timeout:g}", "--import", "fuzz_planted", *QUICK)
    r = cli("fuzz", str(seeds), "-o", str(out), *flags)
    assert r.returncode == 1, r.stderr
    (finding,) = [json.loads(x) for x in (out / "findings.jsonl").read_text().splitlines()]
    assert finding["kind"] == "hang" and f"no result after {CONFIRM_FACTOR * timeout:g} s" in finding["message"]
    with open(out / "campaign.json") as f:
        assert json.load(f)["cases_run"] == 1  # (the minimization's HANG_TRIES candidates are no cases)
