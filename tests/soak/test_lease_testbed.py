"""Nothing aibench starts on a node outlives it: ``kill -9`` of aibench in the middle of a
soak, and in the middle of ``aibench run --telemetry``, on the SSH test bed; within a few
seconds no process of aibench's is left on any host (only the hosts' own sshd), and a
``soak --resume`` afterwards finds no stale sampler; a dry run starts nothing on any
host."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.soak import lease
from tests.testbed import net
from tests.testbed.bed import TestBed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng not installed"),
]
AIBENCH = [sys.executable, "-m", "aibench"]
SUITE = """\
schema_version: 1
name: long-step
steps:
  - name: stress
    tool: stress-ng
    options: {cpu: 1, cpu_load: 10, vm: 0, duration: 120}
"""


_BED_DAEMONS = ("sshd", "slurmd", "munged", "slurmctld")


def _left_on(bed: TestBed) -> dict[str, list[str]]:
    """Every process in a host's namespace that is not one of the bed's own daemons (its
    sshd, and slurmd and munged once a Slurm test on the same bed has started them)."""
    out: dict[str, list[str]] = {}
    for h in bed.hosts:
        names = [net.comm(p) for p in net.netns_pids(h)]
        left = [n for n in names if n and not n.startswith(_BED_DAEMONS)]
        if left:
            out[h.name] = left
    return out


def _kill_when_running(argv: list[str], bed: TestBed, *want: str) -> float:
    """Start aibench, wait until every host runs ``want`` (and the host probe), kill -9
    aibench, and return how long the hosts took to be clean."""
    assert _left_on(bed) == {}, "the bed was not clean before the test"
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def running() -> bool:
        left = _left_on(bed)
        return len(left) == len(bed.hosts) and all(
            all(w in names for w in (*want, "sh")) for names in left.values()
        )

    try:
        assert lease.seconds_until(running, 60) >= 0, _left_on(bed)
        time.sleep(2)  # the samplers have written a few blocks
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(10)
    took = lease.seconds_until(lambda: not _left_on(bed), 15)
    assert took >= 0, f"left running after kill -9: {_left_on(bed)}"
    return took


def test_a_dry_run_starts_nothing_on_any_host(testbed_soak: TestBed, tmp_path: Path) -> None:
    """``soak --dry-run`` and ``run --suite soak --dry-run``: the plan names every host, and
    no host sees a login (its sshd log) or a process."""
    inv = testbed_soak.write_inventory(tmp_path / "inv.yaml")
    logs = [testbed_soak.ssh.host_dir(h) / "sshd.log" for h in testbed_soak.hosts]
    before = [log.read_text() for log in logs]
    for args in (("soak",), ("run", "--suite", "soak")):
        r = subprocess.run(
            [*AIBENCH, *args, "--dry-run", "--inventory", str(inv), "--duration", "4h",
             "--output-dir", str(tmp_path / "runs")],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert all(f"{h.name} (ssh {h.address})" in r.stdout for h in testbed_soak.hosts)
    assert [log.read_text() for log in logs] == before
    assert _left_on(testbed_soak) == {}
    assert not (tmp_path / "runs").exists()


def test_kill_9_mid_soak_and_mid_run_with_telemetry_leaves_nothing(
    testbed_soak: TestBed, tmp_path: Path
) -> None:
    inv = testbed_soak.write_inventory(tmp_path / "inv.yaml")
    out = tmp_path / "runs"
    soak = [
        *AIBENCH, "soak", "--inventory", str(inv), "--duration", "120s", "--chunk", "60",
        "--interval", "1", "--cpu", "1", "--cpu-load", "10", "--vm", "0",
        "--output-dir", str(out), "--quiet",
    ]  # fmt: skip
    took = _kill_when_running(soak, testbed_soak, "stress-ng")
    assert took < 8, took
    [run_dir] = list(out.iterdir())
    # the hosts are clean (above), so --resume finds no stale sampler; it runs to its end
    resume = subprocess.run(
        [*AIBENCH, "soak", "--resume", str(run_dir), "--duration", "3s", "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resume.returncode in (0, 1), resume.stderr
    assert lease.seconds_until(lambda: not _left_on(testbed_soak), 10) >= 0, _left_on(testbed_soak)

    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    run = [
        *AIBENCH, "run", "--suite", str(suite), "--inventory", str(inv), "--telemetry", "1",
        "--output-dir", str(tmp_path / "runs2"), "--quiet",
    ]  # fmt: skip
    took = _kill_when_running(run, testbed_soak, "stress-ng")
    assert took < 8, took


def test_a_soak_on_the_bed_is_re_judged_from_its_record(
    testbed_soak: TestBed, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A short soak over SSH on the four hosts: ``aibench check RUN`` with no options
    reproduces its stored verdicts, also from a copy with the inventory deleted."""
    from aibench.store import load_run
    from tests.test_rejudge_record import _check, _reproduces

    inv = testbed_soak.write_inventory(tmp_path / "inv.yaml")
    r = subprocess.run(
        [*AIBENCH, "soak", "--inventory", str(inv), "--duration", "4s", "--chunk", "2",
         "--interval", "1", "--cpu", "1", "--cpu-load", "10", "--vm", "0",
         "--output-dir", str(tmp_path / "runs"), "--quiet"],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    [run_dir] = list((tmp_path / "runs").iterdir())
    stored = load_run(run_dir)
    assert {v.subject[0] for v in stored.verdicts} == {h.name for h in testbed_soak.hosts}
    _reproduces(_check(capsys, run_dir), stored)
    copy = tmp_path / "archive" / run_dir.name
    shutil.copytree(run_dir, copy)
    inv.unlink()
    _reproduces(_check(capsys, copy), stored)
