"""A finding's life after its campaign (fuzz/history.py): fuzz --recheck
in another release of the code marks each finding still failing, fixed or
changed, and one it cannot run here "not run", never fixed; fuzz --merge
makes one finding a signature of several campaigns, first and last seen
kept, status the latest event's."""

import json
import os
import shutil

import fuzz_planted
import pytest
import torch

from api_tracer.fuzz.findings import Finding, combined
from support import run_cli, user_code_env

ENV = user_code_env()
# the planted defects rechecked: their seeds' edge cases find each (mutate.edges run first, in a fixed order)
SEEDS = ("first_scaled", "bounded_cumsum", "row_sums", "repeat_rows")
RELEASE_2 = {"first_scaled": "fixed", "bounded_cumsum": "changed"}  # (fuzz_planted.RELEASE's "2"; the rest still fail)
FLAGS = ("--jobs", "2", "--timeout", "1.5")


def cli(*args, env=ENV):
    return run_cli(*args, env=env, timeout=600)


def findings_of(directory):
    with open(os.path.join(directory, "findings.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def name(f):
    return f["api"].split(".")[-2]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    base = tmp_path_factory.mktemp("history")
    seeds = base / "seeds.yaml"
    seeds.write_text("".join(fuzz_planted.SEEDS[s] + "\n" for s in SEEDS))
    out = base / "campaign"
    r = cli("fuzz", str(seeds), "-o", str(out), "--budget", "80", *FLAGS, "--import", "fuzz_planted")
    assert r.returncode == 1, r.stdout + r.stderr
    findings = findings_of(out)
    assert {name(f) for f in findings} == set(SEEDS), r.stdout
    return out, findings


def test_a_campaign_says_when_and_where_each_finding_was_seen(campaign):
    _, findings = campaign
    for f in findings:
        assert f["status"] == "found" and f["rechecks"] == []
        for seen in (f["first_seen"], f["last_seen"]):
            assert seen["torch"] == torch.__version__ and seen["device"] == "cpu" and seen["when"].endswith("Z")
        assert f["first_seen"]["when"] <= f["last_seen"]["when"]


def test_recheck_marks_findings_still_failing_fixed_or_changed_and_merge_keeps_history(campaign, tmp_path):
    out, findings = campaign
    same, release_2 = tmp_path / "same", tmp_path / "release_2"
    shutil.copytree(out, same)
    shutil.copytree(out, release_2)

    r = cli("fuzz", "--recheck", str(same), *FLAGS, "--import", "fuzz_planted")
    assert r.returncode == 1 and f"{len(findings)} still failing" in r.stdout, r.stdout + r.stderr
    again = findings_of(same)
    assert [f["status"] for f in again] == ["still failing"] * len(findings)
    for before, after in zip(findings, again):
        assert after["first_seen"] == before["first_seen"] and after["last_seen"]["when"] > before["last_seen"]["when"]
        assert after["rechecks"] == [{**after["last_seen"], "status": "still failing", "message": ""}]

    release = {**ENV, "FUZZ_PLANTED_RELEASE": "2"}
    r = cli("fuzz", "--recheck", str(release_2), *FLAGS, "--import", "fuzz_planted", env=release)
    assert r.returncode == 1, r.stdout + r.stderr
    rechecked = findings_of(release_2)
    for f in rechecked:
        assert f["status"] == RELEASE_2.get(name(f), "still failing"), f
        said = f["rechecks"][-1]["message"]
        if name(f) == "first_scaled":  # now a clean error: fixed; last seen where it still failed
            assert "RuntimeError: first_scaled: x must have an element" in said
            assert f["last_seen"] == next(x for x in findings if x["signature"] == f["signature"])["last_seen"]
        if name(f) == "bounded_cumsum":  # an abort then, an unclean AssertionError now: changed, and how
            assert said.startswith("error [run]: AssertionError: bounded_cumsum: at most 4096")

    # its operators not loaded (no --import): not run, and nothing said fixed
    r = cli("fuzz", "--recheck", str(release_2), *FLAGS)
    assert r.returncode == 1 and f"{len(findings)} not run" in r.stdout, r.stdout + r.stderr
    assert [f["status"] for f in findings_of(release_2)] == [f["status"] for f in rechecked]
    assert all(f["rechecks"][-1]["status"] == "not run" for f in findings_of(release_2))

    merged = tmp_path / "merged"
    r = cli("fuzz", "--merge", str(same), str(release_2), "-o", str(merged), "--import", "fuzz_planted")
    assert r.returncode == 1, r.stdout + r.stderr
    one = {f["signature"]: f for f in findings_of(merged)}
    assert set(one) == {f["signature"] for f in findings}  # one finding a signature
    for f in findings:
        m = one[f["signature"]]
        assert m["count"] == 2 * f["count"] and m["first_seen"] == f["first_seen"] and len(m["rechecks"]) == 3
        # the latest event's status: release 2's recheck came after the other
        assert m["status"] == RELEASE_2.get(name(f), "still failing")
        assert os.path.isfile(merged / m["reproducer"])
    assert (merged / "classes.md").is_file()
    assert (merged / "findings.yaml").read_text().splitlines() == [f["line"] for f in findings_of(merged)]
    page = tmp_path / "r.html"
    r = cli("report", str(merged), "-o", str(page))
    assert r.returncode == 0 and "rechecked" in page.read_text() and "1 fixed" in page.read_text(), r.stderr


def test_recheck_and_merge_refuse_what_they_cannot_do(campaign, tmp_path):
    out, _ = campaign
    linked = tmp_path / "linked"  # (-o's findings.jsonl a link to the source's: merged into, it would be lost)
    linked.mkdir()
    (linked / "findings.jsonl").symlink_to(out / "findings.jsonl")
    before = (out / "findings.jsonl").read_bytes()
    for args, said in (
        (["--recheck", str(out), "seeds.yaml"], "--recheck: not with CONFIGS"),
        (["--recheck", str(out), "--budget", "3"], "--recheck: not with --budget"),
        (["--recheck", str(out), "--merge", str(out)], "--recheck: not with --merge"),
        (["--recheck", str(tmp_path)], f"--recheck {tmp_path}: no findings.jsonl there"),
        (["--merge", str(out), "-o", str(out)], f"--merge {out} is -o itself"),
        (["--merge", str(out), "-o", str(linked)], "findings.jsonl"),
    ):
        r = cli("fuzz", *args)
        assert r.returncode == 2 and said in r.stderr, (args, r.stderr)
    assert (out / "findings.jsonl").read_bytes() == before


def _finding(when_first, when_last, status="found", rechecks=(), count=1, line="torch.abs(1.0)"):
    seen = lambda when: {"when": when, "torch": "2.13.0", "device": "cpu"} if when else {}  # noqa: E731
    return Finding(
        "crash", "torch.abs", "run", line, line, "f:1", [], "sig", "m", count=count, status=status,
        first_seen=seen(when_first), last_seen=seen(when_last),
        rechecks=[{**seen(w), "status": s, "message": ""} for w, s in rechecks],
    )  # fmt: skip


def test_combined_findings_keep_the_first_and_last_sighting_and_the_latest_status():
    a = _finding("2026-01-01T00:00:00.000Z", "2026-01-05T00:00:00.000Z", line="torch.abs(1.0)")
    b = _finding(
        "2026-02-01T00:00:00.000Z", "2026-02-02T00:00:00.000Z", "fixed", [("2026-03-01T00:00:00.000Z", "fixed")], 4
    )
    for x, y in ((a, b), (b, a)):  # either order
        c = combined(x, y)
        assert c.count == 5 and c.line == a.line and c.first_seen == a.first_seen and c.last_seen == b.last_seen
        assert c.status == "fixed" and len(c.rechecks) == 1
    # found again after the fix: found, the regression's sighting the last
    later = _finding("2026-04-01T00:00:00.000Z", "2026-04-02T00:00:00.000Z")
    assert combined(b, later).status == "found" and combined(b, later).last_seen == later.last_seen
    # a sighting of a file written before they were kept is neither first nor last
    old = _finding("", "")
    assert combined(old, a).first_seen == a.first_seen and combined(a, old).last_seen == a.last_seen
    # a recheck that did not run says nothing of the status
    c = combined(b, _finding("", "", rechecks=[("2026-05-01T00:00:00.000Z", "not run")]))
    assert c.status == "fixed" and [r["status"] for r in c.rechecks] == ["fixed", "not run"]
