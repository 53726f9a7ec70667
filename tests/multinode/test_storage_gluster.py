"""Shared storage on a real distributed file system: a GlusterFS volume across four
namespace hosts, the FUSE client mounted on each, measured from all of them at once with
fio's client/server mode through ``aibench run``.

The healthy run gives per-client and aggregate read/write, the scaling sweep, the metadata
rates and the checkpoint time. Then one host's FUSE client is held to 1 % of a CPU (a
cgroup quota): that host is named as the fleet outlier, and the aggregate checks, whose
bars are set at three quarters of what the healthy fleet reached, FAIL; the healthy run judged
against the very same spec passes them.
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

from tests.testbed.bed import TestBed
from tests.testbed.gluster import GlusterVolume, gluster_bed
from tests.testbed.net import netns_available

pytestmark = pytest.mark.netns

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
THROTTLED = "gl-h3"
STEPS = "shared-write,shared-read,shared-read-sweep,shared-metadata,shared-checkpoint"


@pytest.fixture(scope="module")
def gl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestBed, GlusterVolume]]:
    reason = netns_available()
    for tool in ("glusterd", "gluster", "mount.glusterfs", "fio", "sshd"):
        if reason is None and shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            reason = f"{tool} is not installed (make system-packages)"
    if reason:
        pytest.skip(reason)
    with gluster_bed(4, tmp_path_factory.mktemp("gl")) as both:
        yield both


def run_suite(
    bed: TestBed, vol: GlusterVolume, tmp: Path, tag: str, steps: str, spec: str
) -> dict[str, Any]:
    suite = (HERE / "suite-storage.yaml").read_text().replace("SHARED", str(vol.mount))
    (tmp / f"suite-{tag}.yaml").write_text(suite)
    (tmp / f"spec-{tag}.yaml").write_text(spec)
    inv = bed.write_inventory(tmp / "inventory.yaml")
    out = tmp / f"runs-{tag}"
    proc = subprocess.run(
        [sys.executable, "-m", "aibench", "run", "--suite", str(tmp / f"suite-{tag}.yaml"),
         "--inventory", str(inv), "--spec", str(tmp / f"spec-{tag}.yaml"),
         "--output-dir", str(out), "--steps", steps, "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=400, check=False,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    (run_dir,) = out.iterdir()
    run: dict[str, Any] = json.loads((run_dir / "run.json").read_text())
    run["dir"] = run_dir
    return run


def spec_text(write_min: float = 1.0, read_min: float = 1.0) -> str:
    text = (HERE / "spec-storage.yaml").read_text()
    return text.replace("WRITE_MIN", f"{write_min:.1f}").replace("READ_MIN", f"{read_min:.1f}")


def measured(
    run: dict[str, Any], step: str, metric: str, **dims: object
) -> dict[tuple[str, int], float]:
    """(client, clients) -> value of the step's ``metric`` with these dims."""
    out = {}
    for s in run["steps"]:
        assert s["status"] == "ok", f"{s['step_id']}: {s['reason']}"
        if s["step"] != step:
            continue
        for m in s["measurements"]:
            if m["metric"] == metric and all(m["dims"].get(k) == v for k, v in dims.items()):
                out[(m["dims"].get("client", ""), m["dims"]["clients"])] = m["value"]
    return out


def verdicts(run: dict[str, Any], check: str) -> list[dict[str, Any]]:
    return [v for v in run["verdicts"] if v["check"] == check]


def leftovers(bed: TestBed, vol: GlusterVolume) -> tuple[list[str], list[str]]:
    """What is left on the volume (seen from host 1) and the fio processes still running."""
    r = subprocess.run(
        ["ssh", "-F", str(bed.ssh.config), bed.hosts[0].name, f"ls -A {vol.mount}"],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    fio = [f"{h.name}: fio" for h in bed.hosts if "fio" in bed.commands(h.name)]
    return r.stdout.split(), fio


def test_glusterfs_aggregate_metadata_checkpoint_and_a_throttled_client(
    gl: tuple[TestBed, GlusterVolume], tmp_path: Path
) -> None:
    bed, vol = gl
    nodes = [h.name for h in bed.hosts]
    healthy = run_suite(bed, vol, tmp_path, "healthy", STEPS, spec_text())
    # every client and the aggregate, each direction
    for step, direction in (("shared-write", "write"), ("shared-read", "read")):
        bw = measured(healthy, step, "bw", direction=direction)
        assert {c for c, _ in bw} == {*nodes, "all"}, bw
        assert all(v > 0 for v in bw.values())
        pct = measured(healthy, step, "clat_percentile", direction=direction, percentile=99.0)
        assert {c for c, _ in pct} == set(nodes)
    # the sweep: 1, 2, then all 4 clients, each with fio's aggregate
    sweep = measured(healthy, "shared-read-sweep", "bw", client="all")
    assert sorted(n for _, n in sweep) == [1, 2, 4]
    # metadata: files per second of each phase, per client and summed
    for job in ("create", "stat", "delete"):
        rate = measured(healthy, "shared-metadata", "iops", job=job)
        assert {c for c, _ in rate} == {*nodes, "all"}
        assert all(v > 0 for v in rate.values())
    # checkpoint: a 70e9-parameter model at 14 bytes per parameter, at the measured rate
    (save,) = measured(healthy, "shared-checkpoint", "checkpoint_write_s").values()
    agg_write = measured(healthy, "shared-checkpoint", "bw", client="all", direction="write")
    assert save == pytest.approx(70e9 * 14 / (agg_write[("all", 4)] * 1024), rel=1e-6)
    assert leftovers(bed, vol) == ([], [])

    # the bars: three quarters of what the healthy fleet reached, all clients at once
    # (KiB/s to MB/s: x 1024 / 1e6)
    write_min = measured(healthy, "shared-write", "bw", client="all")[("all", 4)] * 1024e-6 * 0.75
    read_min = measured(healthy, "shared-read", "bw", client="all")[("all", 4)] * 1024e-6 * 0.75
    spec = spec_text(write_min, read_min)
    # At 1 % of a CPU the held client moves about 4 MB/s whatever else the machine runs,
    # and the fleet's aggregate (all bytes over the slowest client's time) falls to about
    # four times that, while the bar stays a fraction of what the healthy fleet reached on
    # this machine at its load (3 % of a CPU and half the healthy aggregate once came to
    # 43 MB/s against a bar of about 40 on a loaded machine).
    vol.throttle(THROTTLED, 1)
    slow = run_suite(bed, vol, tmp_path, "throttled", "shared-write,shared-read", spec)
    for check, bar in (("shared-write-aggregate", write_min), ("shared-read-aggregate", read_min)):
        (v,) = verdicts(slow, check)
        assert v["outcome"] == "FAIL", (bar, v)
    flagged = [v for v in verdicts(slow, "shared-read-client") if v["outcome"] == "WARN"]
    read = measured(slow, "shared-read", "bw")
    assert [v["subject"] for v in flagged] == [[THROTTLED]], read
    assert "median" in flagged[0]["reason"]
    assert leftovers(bed, vol) == ([], [])

    # the same spec passes the healthy run: the bar is one the fleet can reach
    (tmp_path / "spec-healthy.yaml").write_text(spec)
    again = subprocess.run(
        [sys.executable, "-m", "aibench", "check", str(healthy["dir"]),
         "--spec", str(tmp_path / "spec-healthy.yaml"), "--format", "json"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    judged = {v["check"]: v["outcome"] for v in json.loads(again.stdout)["verdicts"]}
    assert judged["shared-write-aggregate"] == "PASS", again.stdout
    assert judged["shared-read-aggregate"] == "PASS", again.stdout
