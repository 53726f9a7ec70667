"""``aibench preflight`` over SSH on the namespace hosts of the test bed.

The hosts share this machine's kernel and file system, so their facts must agree with
each other (no consistency finding) and with this machine; a command missing on the hosts
comes back over SSH as exit 127 and must become an absent fact, not a failure.
"""

from __future__ import annotations

import json
import platform
import shutil
from pathlib import Path

import pytest

from aibench.model import Run, StepStatus
from tests.aibench_cli import aibench
from tests.testbed.bed import TestBed

pytestmark = pytest.mark.netns


def test_preflight_over_ssh_on_every_bed_host(testbed_hosts: TestBed, tmp_path: Path) -> None:
    inv = testbed_hosts.write_inventory(tmp_path / "inventory.yaml")
    for h in testbed_hosts.hosts:
        Path(f"/tmp/aibench-testbed/{h.name}").mkdir(parents=True, exist_ok=True)
    out = tmp_path / "preflight.json"
    p = aibench("preflight", "--quiet", "--inventory", str(inv), "--output", str(out), timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    run = Run.from_dict(json.loads(out.read_text()))
    names = [h.name for h in testbed_hosts.hosts]
    # every bed host, and the controller's own facts (the pipeline records them for every run)
    assert sorted(run.environment) == sorted([*names, "_controller"])
    bad = [
        (s.step_id, s.status.value, s.reason) for s in run.steps if s.status is not StepStatus.OK
    ]
    assert not bad
    for name in names:
        env = run.environment[name]
        assert env["kernel.release"] == platform.release()
        assert isinstance(env["cpu.threads"], int)
        mount = [
            f
            for f in run.facts
            if f.nodes == (name,) and f.source == "mount" and f.name == "target"
        ]
        assert [f.dims["path"] for f in mount] == [f"/tmp/aibench-testbed/{name}"]
        assert mount[0].value is not None
    if shutil.which("nvidia-smi") is None:
        drv = [f for f in run.facts if f.name == "driver_version" and f.source == "nvidia-smi"]
        assert len(drv) == len(names)
        assert {f.reason for f in drv} == {"nvidia-smi: not installed"}
    assert not [v for v in run.verdicts if v.check.startswith("consistency.")]
