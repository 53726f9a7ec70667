"""Ceph on the test bed: ``rados bench`` against the RADOS pool, and CephFS (an active and
a standby metadata server, ``ceph-fuse`` on every host) measured through ``aibench run``.

The bed (:func:`tests.testbed.cephfs.cephfs_bed`, hosts ``cf-h1`` .. ``cf-h4``): the
monitor, the memstore OSD and ``mds.a`` (active) on ``cf-h3``, ``mds.b`` (standby) on
``cf-h4``, the file system mounted on all four. Everything it starts is stopped and
removed at the end of the module, also when a test or the bring-up fails.

* rados bench from two hosts at once: write, seq and rand measured on each, judged by
  the spec, the pool left empty by the runner's cleanup;
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

from tests.testbed import cephfs
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
    with cephfs.cephfs_bed(4, root) as (bed, cluster):
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


def values(run: dict[str, Any], metric: str, **dims: Any) -> dict[str, float]:
    """node -> value of the steps' measurements of ``metric`` with ``dims``."""
    got = {}
    for s in run["steps"]:
        for m in s["measurements"]:
            if m["metric"] == metric and all(m["dims"].get(k) == v for k, v in dims.items()):
                got[m["nodes"][0]] = m["value"]
    return got


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
        bw = values(run, "bandwidth", mode=mode, stat="mean", pool=POOL)
        assert set(bw) == set(clients), (mode, bw)
        assert all(v > 0 for v in bw.values()), (mode, bw)
    writes = values(run, "ops", mode="write")
    assert all(0 < v <= 150 for v in writes.values()), writes
    # the runner's cleanup removed every object it wrote
    assert cluster.run("rados", "-p", POOL, "ls").strip() == ""
    assert "Ceph RADOS (rados bench)" in (run_dir / "report.html").read_text()
