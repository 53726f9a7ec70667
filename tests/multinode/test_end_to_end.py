"""``aibench run`` for real across the bed: through SSH, through Slurm, and with faults.

fio on every node and iperf3 over every pair (``pairs``: 3 rounds for 4 hosts). The link
between abt-h2 and abt-h3 is shaped to 1 Gbit/s (htb on both sides, only that pair), so
that pair, and only that pair, fails the spec's iperf3 floor.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.testbed.bed import TestBed
from tests.testbed.slurm import SlurmCluster

pytestmark = [pytest.mark.netns, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


def aibench_run(
    inventory: Path, out: Path, suite: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    argv = [
        sys.executable, "-m", "aibench", "run",
        "--suite", str(HERE / suite),
        "--inventory", str(inventory),
        "--spec", str(HERE / "spec-e2e.yaml"),
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
    testbed_hosts.shape_pair("abt-h2", "abt-h3", "1gbit")
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
    assert len(fails) == 1
    assert fails[0]["check"] == "iperf3-tcp-throughput"
    assert sorted(fails[0]["subject"]) == ["abt-h2", "abt-h3"]
    assert 0.5 < fails[0]["observed"] < 1.05  # Gbit/s: the tbf rate, as iperf3 saw it
    passed = [
        v
        for v in run["verdicts"]
        if v["check"] == "iperf3-tcp-throughput" and v["outcome"] == "PASS"
    ]
    assert len(passed) == 5


def test_suite_over_ssh_with_one_shaped_link(shaped: TestBed, tmp_path: Path) -> None:
    inv = shaped.write_inventory(tmp_path / "inventory.yaml", executor="ssh")
    rc, text = finish(aibench_run(inv, tmp_path / "runs", "suite-e2e.yaml"))
    assert rc == 1, text  # one check failed
    assert "FAIL    iperf3-tcp-throughput [abt-h2,abt-h3]" in text
    run = load_run(tmp_path / "runs")
    check_shaped_run(run)
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
    proc = aibench_run(inv, out, "suite-faults.yaml")
    try:

        def raw(name: str) -> Path:
            return run_dir(out) / "raw" / "iperf3-tcp" / name

        # round 1: (abt-h2 -> abt-h3) runs; kill every sshd of abt-h2 while its client runs
        _wait_for(lambda: out.exists() and raw("abt-h2--abt-h3.r0.stdout").exists(), 60, "h2->h3")
        time.sleep(0.7)
        bed.kill_sshd("abt-h2")
        # round 2: (abt-h1 -> abt-h3) runs; take abt-h3's link down mid-iperf3
        _wait_for(lambda: raw("abt-h1--abt-h3.r0.stdout").exists(), 60, "h1->h3")
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
    r = subprocess.run(
        [sys.executable, "-m", "aibench", "submit", "--suite", str(HERE / "suite-e2e.yaml"),
         "--inventory", str(inv), "--spec", str(HERE / "spec-e2e.yaml"), "--nodes", "4",
         "--partition", "debug", "--time", "5", "--output-dir", str(out)],
        cwd=ROOT, env=testbed_slurm.env, capture_output=True, text=True, timeout=60, check=False,
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
    check_shaped_run(load_run(out))
    assert "FAIL    iperf3-tcp-throughput [abt-h2,abt-h3]" in log
    # the job's exit code is aibench's: 1, one check failed
    assert state() == "FAILED", log
    s = subprocess.run(
        ["scontrol", "show", "job", job, "-o"],
        capture_output=True, text=True, env=testbed_slurm.env, check=False,
    )  # fmt: skip
    assert "ExitCode=1:0" in s.stdout
