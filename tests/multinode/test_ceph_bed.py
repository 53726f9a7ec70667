"""Ceph on the test bed: ``rados bench`` against the RADOS pool, and CephFS (an active and
a standby metadata server, ``ceph-fuse`` on every host) measured through ``aibench run``.

The bed (:func:`tests.testbed.cephfs.cephfs_bed`, hosts ``cf-h1`` .. ``cf-h4``): the
monitor, the memstore OSD and ``mds.a`` (active) on ``cf-h3``, ``mds.b`` (standby) on
``cf-h4``, the file system mounted on all four. Everything it starts is stopped and
removed at the end of the module, also when a test or the bring-up fails.

* rados bench from two hosts at once: write, seq and rand measured on each, judged by
  the spec, the pool left empty by the runner's cleanup;
* the metadata-failover step: the active MDS killed (SIGKILL) by the suite's own stop
  command while a client creates files; the stall and the takeover are measured and
  judged, the standby serves afterwards (the killed MDS is started again as the standby);
  a stop command that fails fails the step;
* the built-in acceptance suite on all four hosts, whose inventory declares the CephFS
  mount and the S3 gateway: its storage steps run (fio-cluster from every host through
  its own ceph-fuse: the read sweep over 1, 2 and 4 hosts, the metadata phases, the
  checkpoint burst; s5cmd against the gateway) and the shipped default spec judges them;
  the S3 key pair reaches aibench only as a 0600 credentials file's path. (Its write
  sweep is left out here for time: the checkpoint burst writes from every host.)
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.aibench_cli import node_values
from tests.testbed import ceph, cephfs
from tests.testbed.bed import TestBed
from tests.testbed.net import netns_available

pytestmark = [pytest.mark.netns, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent.parent
TOOLS = ("ceph-mon", "ceph-osd", "ceph-mds", "ceph-fuse", "rados", "sshd")
POOL = "bench"


@pytest.fixture(scope="module")
def ceph_bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    reason = netns_available()
    for tool in TOOLS:
        if reason is None and shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            reason = f"{tool} is not installed (make system-packages)"
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("ceph-bed")
    with cephfs.cephfs_bed(4, root, rgw=True) as (bed, cluster):
        cephfs.create_pool(cluster, POOL)
        yield {"bed": bed, "ceph": cluster, "root": root}


def run_aibench(
    ctx: dict[str, Any], out: Path, steps: list[dict[str, Any]], checks: list[dict[str, Any]],
    nodes: tuple[str, ...], timeout: float = 600,
) -> tuple[subprocess.CompletedProcess[str], Path, dict[str, Any]]:  # fmt: skip
    """``aibench run`` of ``steps`` judged by ``checks`` on ``nodes`` of the bed."""
    bed: TestBed = ctx["bed"]
    out.mkdir(parents=True, exist_ok=True)
    suite = {"schema_version": 1, "name": out.name, "settings": {"workdir": str(out / "work")},
             "steps": steps}  # fmt: skip
    spec = {"schema_version": 1, "name": out.name, "checks": checks}
    inv = bed.inventory_data("ssh")
    inv["nodes"] = [n for n in inv["nodes"] if n["name"] in nodes]  # type: ignore[union-attr,index]
    for name, doc in (("suite", suite), ("spec", spec), ("inventory", inv)):
        (out / f"{name}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    proc = subprocess.run(
        [sys.executable, "-m", "aibench", "run", "--suite", str(out / "suite.yaml"),
         "--inventory", str(out / "inventory.yaml"), "--spec", str(out / "spec.yaml"),
         "--output-dir", str(out / "runs"), "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    (run_dir,) = (d for d in (out / "runs").iterdir() if d.is_dir())
    return proc, run_dir, json.loads((run_dir / "run.json").read_text())


def listing(ctx: dict[str, Any], host: str, path: str) -> list[str]:
    """The names in ``path`` as ``host`` sees them (through its own ceph-fuse mount, in the
    mount namespace of its sshd: the root namespace sees the empty mount point)."""
    ns = ctx["bed"].sshd_procs[host].pid
    r = subprocess.run(["nsenter", "-t", str(ns), "-m", "ls", "-A", path],
                       capture_output=True, text=True, timeout=30, check=True)  # fmt: skip
    return sorted(r.stdout.split())


def outcomes(run: dict[str, Any]) -> dict[str, str]:
    return {v["check"]: v["outcome"] for v in run["verdicts"]}


RADOS_CHECKS: list[dict[str, Any]] = [
    {"id": f"rados-{mode}-bandwidth", "source": "the test's sanity floor",
     "select": {"tool": "rados-bench", "metric": "bandwidth",
                "dims": {"mode": mode, "stat": "mean"}},
     "scope": "fleet", "combine": "sum", "min": 1, "unit": "MiB/s"}
    for mode in ("write", "seq", "rand")
] + [
    {"id": "rados-write-latency", "source": "the test's sanity ceiling",
     "select": {"tool": "rados-bench", "metric": "latency", "dims": {"mode": "write",
                "stat": "mean"}}, "max": 5, "unit": "s", "require": "every_node"},
]  # fmt: skip


def test_rados_bench_write_seq_rand_from_two_hosts(
    ceph_bed: dict[str, Any], tmp_path: Path
) -> None:
    cluster: cephfs.CephCluster = ceph_bed["ceph"]
    options = {"pool": POOL, "seconds": 2, "concurrency": 4, "block_size": "1M",
               "max_objects": 150, "conf": str(cluster.conf), "client_id": "admin"}  # fmt: skip
    steps = [{"name": "rados", "tool": "rados-bench", "options": options}]
    clients = ("cf-h1", "cf-h2")
    proc, run_dir, run = run_aibench(ceph_bed, tmp_path / "rados", steps, RADOS_CHECKS, clients)
    status = {tuple(s["nodes"]): (s["status"], s["reason"]) for s in run["steps"]}
    assert status == {(n,): ("ok", "") for n in clients}, status
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:], outcomes(run))
    assert set(outcomes(run).values()) == {"PASS"}, outcomes(run)
    assert {c["id"] for c in RADOS_CHECKS} <= set(outcomes(run)), outcomes(run)
    for mode in ("write", "seq", "rand"):
        bw = node_values(run, "bandwidth", mode=mode, stat="mean", pool=POOL)
        assert set(bw) == set(clients), (mode, bw)
        assert all(v > 0 for v in bw.values()), (mode, bw)
    writes = node_values(run, "ops", mode="write")
    assert all(0 < v <= 150 for v in writes.values()), writes
    # the runner's cleanup removed every object it wrote
    assert cluster.run("rados", "-p", POOL, "ls").strip() == ""
    assert "Ceph RADOS (rados bench)" in (run_dir / "report.html").read_text()


FAILOVER_CHECKS: list[dict[str, Any]] = [
    {"id": "mds-failover-stall", "source": "the test's ceiling (the bed fails over in ~8 s)",
     "select": {"tool": "metadata-failover", "metric": "stall"}, "max": 60, "unit": "s"},
    {"id": "mds-failover-takeover", "source": "the test's ceiling",
     "select": {"tool": "metadata-failover", "metric": "takeover"}, "max": 60, "unit": "s"},
    {"id": "mds-failover-errors", "source": "no operation may fail",
     "select": {"tool": "metadata-failover", "metric": "errors"}, "max": 0, "unit": "count"},
]  # fmt: skip


def test_metadata_failover_with_the_active_mds_killed(
    ceph_bed: dict[str, Any], tmp_path: Path
) -> None:
    """The active MDS (mds.a on cf-h3) is killed with SIGKILL by the step's own stop
    command while cf-h1 creates files: the client stalls, the standby (mds.b on cf-h4)
    takes over, and both times are measured and judged."""
    cluster: cephfs.CephCluster = ceph_bed["ceph"]
    assert cluster.active_mds() == "a"
    mds_host = cluster.mds_hosts["a"].name
    stop = ["sh", "-c", 'kill -9 "$(cat "$1")"', "kill-mds", str(cluster.mds_pidfile("a"))]
    options = {"allow_disruption": True, "directory": str(cluster.mount), "mds_host": mds_host,
               "stop_command": stop, "stop_after": 4, "duration": 90, "settle": 4}  # fmt: skip
    steps = [{"name": "mds-failover", "tool": "metadata-failover", "options": options}]
    try:
        proc, run_dir, run = run_aibench(
            ceph_bed, tmp_path / "failover", steps, FAILOVER_CHECKS, ("cf-h1", mds_host)
        )
        (step,) = run["steps"]
        assert step["status"] == "ok", step["reason"]
        assert proc.returncode == 0, (proc.stderr[-2000:], outcomes(run))
        assert {c["id"]: "PASS" for c in FAILOVER_CHECKS}.items() <= outcomes(run).items()
        got = {m["metric"]: m["value"] for m in step["measurements"] if not m["dims"]}
        print(f"\nMDS failover: stall {got['stall']:.2f} s, takeover {got['takeover']:.2f} s")
        # the MDS was really killed, the client really stalled, the standby serves
        assert not cluster.mds_alive("a")
        assert cluster.active_mds() == "b"
        assert got["stall"] > 1.0, got
        assert got["takeover"] >= got["stall"] - 1.0, got
        assert got["ops"] > 0
        rates = {m["dims"]["phase"]: m["value"] for m in step["measurements"] if m["dims"]}
        assert set(rates) == {"before", "after"}, rates
        assert "Metadata-server failover" in (run_dir / "report.html").read_text()
    finally:  # mds.a back, as the standby, for the tests that follow
        if not cluster.mds_alive("a"):
            cephfs.start_mds(cluster, "a")


def test_metadata_failover_whose_stop_command_fails_fails(
    ceph_bed: dict[str, Any], tmp_path: Path
) -> None:
    """A stop command that fails (no such process) stops nothing: the step fails with its
    exit code, and no failover check passes."""
    cluster: cephfs.CephCluster = ceph_bed["ceph"]
    active = cluster.active_mds()
    assert active is not None
    mds_host = cluster.mds_hosts[active].name
    client = next(h.name for h in ceph_bed["bed"].hosts if h.name != mds_host)
    options = {"allow_disruption": True, "directory": str(cluster.mount), "mds_host": mds_host,
               "stop_command": ["kill", "-9", "999999999"], "stop_after": 2, "duration": 6,
               "settle": 2}  # fmt: skip
    steps = [{"name": "mds-failover", "tool": "metadata-failover", "options": options}]
    proc, _, run = run_aibench(
        ceph_bed, tmp_path / "failover-bad-stop", steps, FAILOVER_CHECKS, (client, mds_host)
    )
    (step,) = run["steps"]
    assert step["status"] == "failed", step
    assert "the stop command failed (exit 1)" in step["reason"], step["reason"]
    assert proc.returncode == 1
    assert "PASS" not in {outcomes(run)[c["id"]] for c in FAILOVER_CHECKS[:2]}, outcomes(run)
    assert cluster.active_mds() == active  # nothing was stopped


ACCEPTANCE_STORAGE = ("shared-read-sweep", "shared-metadata", "shared-checkpoint", "object-store")


def test_acceptance_suite_judges_the_declared_cephfs_and_s3(
    ceph_bed: dict[str, Any], tmp_path: Path
) -> None:
    """``aibench run --suite acceptance`` (its storage steps) with the shipped default spec,
    on an inventory that declares the CephFS mount and the RADOS gateway."""
    bed: TestBed = ceph_bed["bed"]
    cluster: cephfs.CephCluster = ceph_bed["ceph"]
    assert cluster.s3_keys is not None
    creds = tmp_path / "s3-credentials"
    creds.touch(mode=0o600)
    creds.write_text(f"[default]\naws_access_key_id = {cluster.s3_keys[0]}\n"
                     f"aws_secret_access_key = {cluster.s3_keys[1]}\n")  # fmt: skip
    inv = bed.inventory_data("ssh")
    inv["defaults"] = {
        "executor": "ssh",
        "tool_dirs": {"s5cmd": str(ceph.s5cmd_dir())},
        "shared_filesystems": [{"name": "cephfs", "mount": str(cluster.mount), "type": "cephfs"}],
        "s3_endpoints": [{"name": "rgw", "url": cluster.rgw_url, "bucket": "acceptance",
                          "credentials_file": str(creds)}],
    }  # fmt: skip
    (tmp_path / "inventory.yaml").write_text(yaml.safe_dump(inv, sort_keys=False))
    proc = subprocess.run(
        [sys.executable, "-m", "aibench", "run", "--suite", "acceptance",
         "--inventory", str(tmp_path / "inventory.yaml"), "--output-dir", str(tmp_path / "runs"),
         "--steps", ",".join(ACCEPTANCE_STORAGE), "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    (run_dir,) = (d for d in (tmp_path / "runs").iterdir() if d.is_dir())
    run = json.loads((run_dir / "run.json").read_text())
    bad = [(s["step_id"], s["reason"]) for s in run["steps"] if s["status"] != "ok"]
    assert not bad, bad
    assert {s["step"] for s in run["steps"]} == set(ACCEPTANCE_STORAGE)
    got = outcomes(run)
    want = {"shared-read-aggregate", "shared-read-client",
            "shared-metadata-create", "shared-checkpoint-write", "object-store-put-large",
            "object-store-get-large", "object-store-small-put-rate", "object-store-put-node",
            "object-store-errors"}  # fmt: skip
    assert want <= set(got), got
    print("\nacceptance storage verdicts:", {k: v for k, v in got.items() if k in want})
    assert proc.returncode == 0, (proc.stdout[-2000:], got)
    assert {got[k] for k in want} <= {"PASS", "WARN"}, got
    sweep = {len(s["nodes"]) for s in run["steps"] if s["step"] == "shared-read-sweep"}
    assert sweep == {1, 2, 4}, sweep  # powers of two up to the fleet
    # fio removed its files: only the (empty) directory the steps write in is left
    assert listing(ceph_bed, "cf-h2", str(cluster.mount)) == ["aibench"]
    assert listing(ceph_bed, "cf-h2", f"{cluster.mount}/aibench") == []
    report = (run_dir / "report.html").read_text()
    for check in ("shared-read-aggregate", "object-store-put-large"):
        assert check in report
    for f in run_dir.rglob("*"):
        if f.is_file():
            assert cluster.s3_keys[1].encode() not in f.read_bytes(), f
