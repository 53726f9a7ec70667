"""The repair loop of a hand-over on the 4-host bed, as a vendor engineer runs it.

abt-h2 is slowed: a blkio cgroup throttles reads of the disk under its data directory to
2 MB/s for every process its sshd starts (fio among them), and its link is shaped to
200 Mbit/s. The acceptance run fails on abt-h2's fio and on its three pairs. The limits
are lifted; ``aibench retest`` plans abt-h2's fio step and its three pairs, each end of
them with a known-good control partner (the plan is printed), runs them and passes;
``aibench accept`` composes one record that passes, shows the repair, verifies, and
re-judges to the same verdicts from a copy with every input deleted. Then a preflight fact
is edited on abt-h3 (its kernel release, bind-mounted over /proc/sys/kernel/osrelease in
the mount namespace of its sshd: the bed's hosts have no GPU or DMI serials to edit), and
``aibench retest`` of the composed record runs abt-h3's whole per-node suite.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aibench.model import Outcome
from aibench.store import load_run
from tests.aibench_cli import aibench
from tests.testbed.bed import TestBed

pytestmark = [pytest.mark.netns, pytest.mark.slow]

SLOW, EDITED = "abt-h2", "abt-h3"
CGROUP = Path("/sys/fs/cgroup/blkio/abt-repair-slow")
SUITE = """\
schema_version: 1
name: handover
settings: {base_port: 16411}
steps:
  - name: preflight
    tool: preflight
    options: {gpu: false, infiniband: false, dcgm_level: 0, kernel_log: false, amd: false,
              ascend: false}
  - name: fio-seq-read
    tool: fio
    options: {rw: read, bs: 1M, size: 32M, runtime: 2, iodepth: 1, ioengine: psync,
              direct: true}
  - name: iperf3-tcp
    tool: iperf3
    placement: pairs
    options: {duration: 2, streams: 1, bandwidth: 1G}
"""
SPEC = """\
schema_version: 1
name: handover
source: measured on the test bed; a disk throttled to 2 MB/s and a link shaped to 200 Mbit/s
  fall below these floors, an unthrottled disk reads hundreds of MB/s and a veth carries the
  1 Gbit/s iperf3 is paced to here (several Gbit/s flat out)
checks:
  - id: fio-seq-read-bw
    select: {tool: fio, metric: bw, step: fio-seq-read, dims: {direction: read}}
    unit: MB/s
    min: 20
    require: every_node
  - id: iperf3-tcp-throughput
    select: {tool: iperf3, metric: throughput, step: iperf3-tcp, dims: {side: receiver}}
    scope: pair
    unit: Gbit/s
    min: 0.5
    require: every_pair
"""


def data_device(bed: TestBed) -> str:
    """MAJOR:MINOR of the disk the data directories of the bed's inventory are on."""
    nodes: Any = bed.inventory_data()["nodes"]
    top = Path(nodes[0]["data_dirs"][0]).parent
    top.mkdir(parents=True, exist_ok=True)
    st = os.stat(top)
    return f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"


@pytest.fixture
def slowed(testbed_hosts: TestBed) -> Iterator[TestBed]:
    """abt-h2's disk reads throttled (its sshd and all it starts in a blkio cgroup) and
    its link shaped; both undone at the end, whatever happened."""
    if not (CGROUP.parent / "blkio.throttle.read_bps_device").exists():
        pytest.skip("no cgroup v1 blkio controller with throttling at /sys/fs/cgroup/blkio")
    if data_device(testbed_hosts).startswith("0:"):
        pytest.skip("the data directories are not on a block device (tmpfs, overlay)")
    CGROUP.mkdir(exist_ok=True)
    sshd = testbed_hosts.sshd_procs[SLOW].pid
    try:
        (CGROUP / "blkio.throttle.read_bps_device").write_text(
            f"{data_device(testbed_hosts)} 2097152"
        )
        (CGROUP / "cgroup.procs").write_text(str(sshd))
        testbed_hosts.shape(SLOW, "200mbit")
        yield testbed_hosts
    finally:
        lift(testbed_hosts)
        with contextlib.suppress(ProcessLookupError):
            (CGROUP.parent / "cgroup.procs").write_text(str(sshd))
        with contextlib.suppress(OSError):  # a process it started may not have ended yet
            CGROUP.rmdir()


def lift(bed: TestBed) -> None:
    """The repair: no throttle on the disk, the link as it was."""
    (CGROUP / "blkio.throttle.read_bps_device").write_text(f"{data_device(bed)} 0")
    bed.unshape(SLOW)


def test_retest_and_accept_repair_a_slowed_host(slowed: TestBed, tmp_path: Path) -> None:
    suite, spec = tmp_path / "suite.yaml", tmp_path / "spec.yaml"
    suite.write_text(SUITE)
    spec.write_text(SPEC)
    inventory = slowed.write_inventory(tmp_path / "inventory.yaml")
    runs = tmp_path / "runs"
    res = aibench(
        "run", "--suite", str(suite), "--spec", str(spec), "--inventory", str(inventory),
        "--output-dir", str(runs), "--quiet",
    )  # fmt: skip
    print(res.stdout)
    assert res.returncode == 1, res.stdout + res.stderr
    (first,) = runs.iterdir()
    failing = {
        (v.check, tuple(sorted(v.subject))) for v in load_run(first).verdicts if v.outcome.failing
    }
    assert failing == {
        ("fio-seq-read-bw", (SLOW,)),
        *{
            ("iperf3-tcp-throughput", tuple(sorted((SLOW, h))))
            for h in ("abt-h1", "abt-h3", "abt-h4")
        },
    }
    lift(slowed)

    res = aibench("retest", str(first), "--quiet")
    print(res.stdout)
    assert res.returncode == 0, res.stdout + res.stderr
    (retest,) = set(runs.iterdir()) - {first}
    check_retest_plan(load_run(retest), first.name)
    assert "PASS: the fleet" in res.stdout

    record = accept_and_check(first, retest, tmp_path)
    check_changed_host_reruns_its_suite(slowed, record, tmp_path)


def check_retest_plan(run: object, parent: str) -> None:
    """Only abt-h2's fio step, its three pairs again, and each other end against a
    control partner."""
    steps = {(s.step, s.nodes) for s in run.steps}  # type: ignore[attr-defined]
    assert {n for name, n in steps if name == "fio-seq-read"} == {(SLOW,)}
    pairs = [n for name, n in steps if name == "iperf3-tcp"]
    with_slow = [p for p in pairs if SLOW in p]
    assert {frozenset(p) for p in with_slow} == {
        frozenset((SLOW, h)) for h in ("abt-h1", "abt-h3", "abt-h4")
    }
    controls = [p for p in pairs if SLOW not in p]
    assert controls, pairs
    plan = run.inputs["retest"]  # type: ignore[attr-defined]
    why = {tuple(g["nodes"]): g["why"] for s in plan["steps"] for g in s["groups"]}
    for p in controls:
        assert all(w.startswith("control: ") for w in why[p]), why[p]
    assert not any(name == "preflight" for name, _ in steps)
    assert run.inputs["parent"]["id"] == parent  # type: ignore[attr-defined]
    assert all(s.ok for s in run.steps)  # type: ignore[attr-defined]


def accept_and_check(first: Path, retest: Path, tmp_path: Path) -> Path:
    res = aibench("accept", str(first), str(retest), "--output-dir", str(tmp_path / "accepted"))
    print(res.stdout)
    assert res.returncode == 0, res.stdout + res.stderr
    (record,) = (tmp_path / "accepted").iterdir()
    run = load_run(record)
    assert run.outcome is Outcome.PASS
    rows = {(r["check"], tuple(r["subject"])): r for r in run.inputs["accept"]["rows"]}
    fio = rows[("fio-seq-read-bw", (SLOW,))]
    assert [e["outcome"] for e in fio["attempts"]] == ["FAIL", "PASS"]
    assert fio["attempts"][0]["observed"] < 20 < fio["attempts"][1]["observed"]
    assert f"repair: {SLOW} fio-seq-read-bw: FAIL" in res.stdout
    assert aibench("verify", str(record)).returncode == 0
    stored = {(v.check, v.subject, v.outcome.value) for v in run.verdicts}
    copy = tmp_path / "elsewhere" / record.name
    shutil.copytree(record, copy)
    kept = tmp_path / "kept"
    kept.mkdir()
    for name in ("runs", "accepted", "suite.yaml", "spec.yaml", "inventory.yaml"):
        shutil.move(tmp_path / name, kept / name)
    res = aibench("check", str(copy), "--format", "json")
    assert res.returncode == 0, res.stdout + res.stderr
    again = {
        (v["check"], tuple(v["subject"]), v["outcome"]) for v in json.loads(res.stdout)["verdicts"]
    }
    assert again == stored
    assert aibench("verify", str(copy)).returncode == 0
    return copy


def check_changed_host_reruns_its_suite(bed: TestBed, record: Path, tmp_path: Path) -> None:
    sshd = bed.sshd_procs[EDITED].pid
    release = Path("/proc/sys/kernel/osrelease").read_text().strip()
    edited = tmp_path / "osrelease"
    edited.write_text(release + "-bios2\n")
    mount = [
        "nsenter",
        "-t",
        str(sshd),
        "-m",
        "mount",
        "--bind",
        str(edited),
        "/proc/sys/kernel/osrelease",
    ]
    subprocess.run(mount, check=True, timeout=10)
    try:
        res = aibench(
            "retest", str(record), "--inventory", str(tmp_path / "kept" / "inventory.yaml"),
            "--quiet",
            "--output-dir", str(tmp_path / "again"),
        )  # fmt: skip
    finally:
        umount = ["nsenter", "-t", str(sshd), "-m", "umount", "/proc/sys/kernel/osrelease"]
        subprocess.run(umount, check=True, timeout=10)
    print(res.stdout)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"changed {EDITED}: kernel.release {release}→{release}-bios2" in res.stdout
    (again,) = (tmp_path / "again").iterdir()
    run = load_run(again)
    assert {(s.step, s.nodes) for s in run.steps} == {
        ("fio-seq-read", (EDITED,)),
        ("preflight", (EDITED,)),  # its fact commands, one step each
    }
    assert run.inputs["parent"]["id"] == record.name
