"""``aibench run`` for real across the bed: through SSH, through Slurm, and with faults.

fio on every node and iperf3 over every pair (``pairs``: 3 rounds for 4 hosts). The link
between abt-h2 and abt-h3 is shaped to 200 Mbit/s (htb on both sides, only that pair), so
that pair, and only that pair, fails the spec's iperf3 floor. Faults (a step past its
timeout, sshd killed mid-step, a link down mid-iperf3) and Ctrl-C followed by ``--resume``
are injected while the run goes on. Each test reads what a person reads too: report.html
(as escaped HTML text), junit.xml and summary.md, not only run.json.
"""

from __future__ import annotations

import html
import json
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from markupsafe import escape

from aibench.reports.context import fmt_number
from aibench.reports.markdown import cell
from tests.aibench_cli import aibench
from tests.testbed.bed import TestBed
from tests.testbed.slurm import SlurmCluster

pytestmark = [pytest.mark.netns, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def aibench_run(
    inventory: Path,
    out: Path,
    suite: str,
    env: dict[str, str] | None = None,
    spec: str = "spec-e2e.yaml",
) -> subprocess.Popen[str]:
    argv = [
        sys.executable, "-m", "aibench", "run",
        "--suite", str(HERE / suite),
        "--inventory", str(inventory),
        "--spec", str(HERE / spec),
        "--output-dir", str(out),
        "--quiet",
    ]  # fmt: skip
    return subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def run_dir(out: Path) -> Path:
    dirs = [d for d in out.iterdir() if d.is_dir()] if out.exists() else []
    return dirs[0]


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str]:
    text, _ = proc.communicate(timeout=timeout)
    return proc.returncode, text


def load_run(out: Path) -> dict[str, Any]:
    return json.loads((run_dir(out) / "run.json").read_text())  # type: ignore[no-any-return]


@pytest.fixture
def shaped(testbed_hosts: TestBed) -> Iterator[TestBed]:
    testbed_hosts.shape_pair("abt-h2", "abt-h3", "200mbit")
    try:
        yield testbed_hosts
    finally:
        testbed_hosts.unshape("abt-h2")
        testbed_hosts.unshape("abt-h3")


def check_shaped_run(run: dict[str, Any]) -> None:
    steps = {s["step_id"]: s for s in run["steps"]}
    fio = [s for s in run["steps"] if s["step"] == "fio-rand-read"]
    assert sorted(s["nodes"][0] for s in fio) == ["abt-h1", "abt-h2", "abt-h3", "abt-h4"]
    iperf = [s for s in run["steps"] if s["step"] == "iperf3-tcp"]
    assert len(iperf) == 6
    assert {frozenset(s["nodes"]) for s in iperf} == {
        frozenset(p)
        for p in [
            ("abt-h1", "abt-h2"), ("abt-h1", "abt-h3"), ("abt-h1", "abt-h4"),
            ("abt-h2", "abt-h3"), ("abt-h2", "abt-h4"), ("abt-h3", "abt-h4"),
        ]
    }  # fmt: skip
    assert sorted({s["round"] for s in iperf}) == [0, 1, 2]  # 3 rounds for 4 hosts
    for r in (0, 1, 2):  # two pairs per round, no host twice
        hosts = [h for s in iperf if s["round"] == r for h in s["nodes"]]
        assert len(hosts) == len(set(hosts)) == 4
    bad = [s for s in steps.values() if s["status"] != "ok"]
    assert bad == []
    fails = [v for v in run["verdicts"] if v["outcome"] == "FAIL"]
    assert len(fails) == 1, [(v["check"], v["subject"], v["observed"]) for v in fails]
    assert fails[0]["check"] == "iperf3-tcp-throughput"
    assert sorted(fails[0]["subject"]) == ["abt-h2", "abt-h3"]
    assert 0.1 < fails[0]["observed"] < 0.21  # Gbit/s: the htb rate, as iperf3 saw it
    passed = [
        v
        for v in run["verdicts"]
        if v["check"] == "iperf3-tcp-throughput" and v["outcome"] == "PASS"
    ]
    assert len(passed) == 5


def verdict_rows(report: str, outcome: str) -> list[str]:
    """The rows of report.html's verdict table with this outcome (escaped HTML text)."""
    return re.findall(rf'<tr data-outcome="{outcome}">.*?</tr>', report)


def verdict_row(report: str, check: str, subject: list[str]) -> str:
    """The verdict table row of one check on one subject (a node, a pair in either order)."""
    names = {", ".join(subject), ", ".join(reversed(subject))}
    for row in re.findall(r'<tr data-outcome="[A-Z]+">.*?</tr>', report):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row)
        if cells[1].split("<div", 1)[0] == check and cells[3] in names:
            return row
    raise AssertionError(f"no verdict row for {check} {subject} in the report")


def check_shaped_report(rd: Path, run: dict[str, Any]) -> None:
    """The shaped pair is the one FAIL, named in report.html and junit.xml with its number;
    every other pair's number is in the report too."""
    report = (rd / "report.html").read_text()
    [fail] = [v for v in run["verdicts"] if v["outcome"] == "FAIL"]
    number = f"{fmt_number(fail['observed'])} Gbit/s"
    rows = verdict_rows(report, "FAIL")
    assert len(rows) == 1, rows
    assert rows[0] == verdict_row(report, "iperf3-tcp-throughput", fail["subject"])
    assert number in rows[0]
    judged = [v for v in run["verdicts"] if v["subject"] and v["observed"] is not None]
    assert len(judged) == 4 + 6  # fio per node, iperf3 per pair
    for v in judged:  # every number of run.json is in the report, in its check's row
        row = verdict_row(report, v["check"], v["subject"])
        assert f">{fmt_number(v['observed'])} {v['unit']}</td>" in row, row
    cases = ET.parse(rd / "junit.xml").getroot().iter("testcase")
    failed = [c for c in cases if c.find("failure") is not None or c.find("error") is not None]
    assert [c.get("name") for c in failed] == [
        f"iperf3-tcp-throughput [{', '.join(fail['subject'])}]"
    ]
    failure = failed[0].find("failure")
    assert failure is not None
    assert number in (failure.get("message") or "")
    assert sorted(fail["subject"]) == ["abt-h2", "abt-h3"]


def test_suite_over_ssh_with_one_shaped_link(shaped: TestBed, tmp_path: Path) -> None:
    inv = shaped.write_inventory(tmp_path / "inventory.yaml", executor="ssh")
    rc, text = finish(aibench_run(inv, tmp_path / "runs", "suite-e2e.yaml"))
    assert rc == 1, text  # one check failed
    assert "FAIL    iperf3-tcp-throughput [abt-h2,abt-h3]" in text
    run = load_run(tmp_path / "runs")
    check_shaped_run(run)
    check_shaped_report(run_dir(tmp_path / "runs"), run)
    # every process the executor started on the hosts is gone
    for h in shaped.hosts:
        assert shaped.pids(h.name) == []


def _journal(out: Path) -> dict[str, dict[str, Any]]:
    try:
        path = run_dir(out) / "steps.jsonl"
        lines = path.read_text().splitlines()
    except (IndexError, FileNotFoundError):
        return {}
    got = {}
    for ln in lines:
        try:
            rec = json.loads(ln)
        except json.JSONDecodeError:
            continue  # a line being written
        got[rec["step_id"]] = rec
    return got


def _wait_for(cond: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_faults_mid_run(testbed_hosts: TestBed, tmp_path: Path) -> None:
    bed = testbed_hosts
    out = tmp_path / "runs"
    inv = bed.write_inventory(tmp_path / "inventory.yaml", executor="ssh")
    proc = aibench_run(inv, out, "suite-faults.yaml", spec="spec-faults.yaml")
    try:

        def started(name: str) -> bool:
            """The raw stdout of this iperf3 client is there (the run's folder may not be,
            yet: ``runs/`` is made first)."""
            return any(out.glob(f"*/raw/iperf3-tcp/{name}.r0.stdout"))

        # round 1: (abt-h2 -> abt-h3) runs; kill every sshd of abt-h2 while its client runs
        _wait_for(lambda: started("abt-h2--abt-h3"), 60, "h2->h3")
        time.sleep(0.7)
        bed.kill_sshd("abt-h2")
        # round 2: (abt-h1 -> abt-h3) runs; take abt-h3's link down mid-iperf3
        _wait_for(lambda: started("abt-h1--abt-h3"), 60, "h1->h3")
        time.sleep(0.7)
        bed.link_down("abt-h3")
        _wait_for(lambda: "iperf3-tcp/abt-h1--abt-h3/r0" in _journal(out), 60, "h1->h3 result")
        bed.link_up("abt-h3")
        rc, text = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
        bed.link_up("abt-h3")
        bed.restart_sshd("abt-h2")
    assert rc == 1, text
    steps = {s["step_id"]: s for s in load_run(out)["steps"]}
    # completed measurements are kept
    for h in ("abt-h1", "abt-h2", "abt-h3", "abt-h4"):
        s = steps[f"fio-quick/{h}/r0"]
        assert s["status"] == "ok", s
        assert s["measurements"], s
    # the step that ran past its timeout: killed, with its reason, nothing left behind
    slow = steps["fio-too-long/abt-h1/r0"]
    assert slow["status"] == "timeout"
    assert "timed out after 2 s" in slow["reason"], slow
    # sshd killed mid-step: the step and every later one of abt-h2 are unreachable
    lost = steps["iperf3-tcp/abt-h2--abt-h3/r0"]
    assert lost["status"] == "unreachable", lost
    assert "abt-h2" in lost["reason"]
    for sid in ("iperf3-tcp/abt-h4--abt-h2/r0", "iperf3-tcp/abt-h1--abt-h2/r0"):
        assert steps[sid]["status"] == "unreachable", steps[sid]
        assert "abt-h2" in steps[sid]["reason"]
    # link down mid-iperf3: the pair times out (or iperf3 fails), with a reason
    down = steps["iperf3-tcp/abt-h1--abt-h3/r0"]
    assert down["status"] in ("timeout", "failed", "unreachable"), down
    assert down["reason"]
    # the untouched pairs measured normally, also after the faults
    for sid in ("iperf3-tcp/abt-h1--abt-h4/r0", "iperf3-tcp/abt-h3--abt-h4/r0"):
        assert steps[sid]["status"] == "ok", steps[sid]
        assert steps[sid]["measurements"]
    assert len(steps) == 4 + 1 + 6
    for h in ("abt-h1", "abt-h3", "abt-h4"):
        _wait_for(lambda h=h: bed.pids(h) == [], 10, f"no process left on {h}")
    # the reports name each fault: its step, status and reason
    rd = run_dir(out)
    report = (rd / "report.html").read_text()
    summary = (rd / "summary.md").read_text()
    faulted = [s for s in steps.values() if s["status"] != "ok"]
    assert len(faulted) == 5
    for s in faulted:
        row = step_row(report, s["step_id"])
        assert f"<b>✖ {s['status']}</b>: {escape(s['reason'])}</td>" in row, row
        assert cell(f"{s['step_id']} {s['status']}: {s['reason']}") in summary, s["step_id"]
    for sid in ("fio-quick/abt-h1/r0", "iperf3-tcp/abt-h1--abt-h4/r0"):
        assert ">ok</td>" in step_row(report, sid)


@pytest.mark.slurm
def test_suite_through_slurm_as_a_batch_job_with_one_shaped_link(
    shaped: TestBed, testbed_slurm: SlurmCluster, tmp_path: Path
) -> None:
    """`aibench submit`: sbatch runs `aibench run` on a bed host; every step is an srun step
    of that job (the executor finds SLURM_JOB_ID and uses the allocation)."""
    testbed_hosts = shaped
    # the job runs on a bed host, whose /tmp is private: its inputs and the run directory
    # go beside the cluster's state
    inv = testbed_hosts.write_inventory(
        testbed_slurm.root / "submit-inventory.yaml", executor="slurm"
    )
    out = testbed_slurm.root / "submit-runs"
    r = aibench(
        "submit", "--suite", str(HERE / "suite-e2e.yaml"),
        "--inventory", str(inv), "--spec", str(HERE / "spec-e2e.yaml"), "--nodes", "4",
        "--partition", "debug", "--time", "5", "--output-dir", str(out),
        cwd=ROOT, env=testbed_slurm.env, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    job = r.stdout.split("submitted job ")[1].split(";")[0].strip()

    def state() -> str:
        s = subprocess.run(
            ["scontrol", "show", "job", job, "-o"],
            capture_output=True, text=True, env=testbed_slurm.env, check=False,
        )  # fmt: skip
        return s.stdout.split("JobState=")[1].split()[0] if "JobState=" in s.stdout else ""

    _wait_for(lambda: state() in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"), 90, "the job")
    log = (out / f"aibench-job-{job}.out").read_text()
    assert list(out.glob("2*")), log
    run = load_run(out)
    check_shaped_run(run)
    check_shaped_report(run_dir(out), run)
    assert "FAIL    iperf3-tcp-throughput [abt-h2,abt-h3]" in log
    # the job's exit code is aibench's: 1, one check failed
    assert state() == "FAILED", log
    s = subprocess.run(
        ["scontrol", "show", "job", job, "-o"],
        capture_output=True, text=True, env=testbed_slurm.env, check=False,
    )  # fmt: skip
    assert "ExitCode=1:0" in s.stdout


def test_sigint_mid_iperf3_then_resume_finishes_only_what_was_not_done(
    testbed_hosts: TestBed, tmp_path: Path
) -> None:
    """Ctrl-C while the first round of iperf3 runs on the hosts: exit 130, nothing left
    running on any host, the finished fio steps kept; ``--resume`` runs only the rest."""
    bed = testbed_hosts
    out = tmp_path / "runs"
    inv = bed.write_inventory(tmp_path / "inventory.yaml", executor="ssh")
    proc = aibench_run(inv, out, "suite-interrupt.yaml")
    try:
        fio = {f"fio-rand-read/{h.name}/r0" for h in bed.hosts}
        _wait_for(lambda: fio <= set(_journal(out)), 60, "the fio steps")
        _wait_for(
            lambda: len(list((run_dir(out) / "raw" / "iperf3-tcp").glob("*.r0.stdout"))) == 2,
            60,
            "the first round of iperf3",
        )
        # both clients of round 1 are running on their hosts (a 3 s run each)
        _wait_for(
            lambda: sum(bed.commands(h.name).count("iperf3") for h in bed.hosts) >= 4,
            10,
            "iperf3 servers and clients on the hosts",
        )
        proc.send_signal(signal.SIGINT)
        rc, text = finish(proc, timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert rc == 130, text
    # no tool process is left on any host (sshd and slurmd are the bed's own)
    for h in bed.hosts:
        _wait_for(lambda h=h: bed.pids(h.name) == [], 5, f"no process left on {h.name}")
    rd = run_dir(out)
    journal = _journal(out)
    assert set(journal) == fio, sorted(journal)  # finished steps kept, nothing else claimed
    assert all(r["status"] == "ok" and r["measurements"] for r in journal.values()), journal
    first = json.loads((rd / "run.json").read_text())
    assert any("interrupted" in n for n in first["notes"]), first["notes"]
    by_status = {s["step_id"]: s["status"] for s in first["steps"]}
    assert {k for k, v in by_status.items() if v == "ok"} == fio
    assert sorted(v for k, v in by_status.items() if k not in fio) == ["not_run"] * 6
    started = {sid: journal[sid]["started"] for sid in fio}

    r = aibench("run", "--resume", str(rd), "--quiet", cwd=ROOT, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    final = json.loads((rd / "run.json").read_text())
    steps = {s["step_id"]: s for s in final["steps"]}
    assert len(steps) == 4 + 6
    assert all(s["status"] == "ok" and s["measurements"] for s in steps.values()), [
        (s["step_id"], s["reason"]) for s in steps.values() if s["status"] != "ok"
    ]
    for sid in fio:  # not run again
        assert steps[sid]["started"] == started[sid], sid
    assert not any("interrupted before the end" in n for n in final["notes"]), final["notes"]
    assert [x["signal"] for x in final["interruptions"]] == ["SIGINT"]  # kept, as a note too
    lines = (rd / "steps.jsonl").read_text().splitlines()
    assert len(lines) == 4 + 6  # each step recorded once: the fio steps were not redone
    judged = [v for v in final["verdicts"] if not v["check"].endswith(".coverage")]
    assert {v["outcome"] for v in final["verdicts"]} == {"PASS"}
    assert sorted(tuple(sorted(v["subject"])) for v in judged) == sorted(
        [(h.name,) for h in bed.hosts] + [tuple(sorted(p)) for p in _pairs(bed)]
    )
    report = (rd / "report.html").read_text()
    assert "not run (interrupted)" not in report
    assert "interrupted before the end" not in report
    for sid in steps:  # the report lists every step, and each ran
        assert ">ok</td>" in step_row(report, sid), sid
    for h in bed.hosts:
        assert bed.pids(h.name) == []


def _pairs(bed: TestBed) -> list[tuple[str, str]]:
    names = [h.name for h in bed.hosts]
    return [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]


def step_row(report: str, step_id: str) -> str:
    """The report's table row of one step (report.html is read as escaped HTML text)."""
    m = re.search(
        r"<tr id=\"step-\d+\"[^>]*><td>\d+</td><td class=\"mono\">"
        + re.escape(html.escape(step_id))
        + r"</td>.*?</tr>",
        report,
    )
    assert m, f"{step_id} is not in the report's step table"
    return m.group(0)
