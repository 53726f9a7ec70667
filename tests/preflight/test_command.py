"""``aibench preflight`` end to end: the real CLI on this machine (and two local nodes)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from aibench.model import Run, StepStatus
from tests.aibench_cli import aibench

HERE = Path(__file__).resolve().parent
SWAPPINESS = int(Path("/proc/sys/vm/swappiness").read_text())


def preflight(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return aibench("preflight", "--quiet", *args, env=env, timeout=240)


def test_this_machine_table_and_json(tmp_path: Path) -> None:
    out = tmp_path / "preflight.json"
    p = preflight("--output", str(out))
    assert p.returncode == 0, p.stderr
    assert "kernel.release" in p.stdout
    assert os.uname().release in p.stdout
    assert "sysctl.vm.swappiness" in p.stdout
    run = Run.from_dict(json.loads(out.read_text()))
    assert run.suite == "preflight"
    assert run.steps
    assert all(s.status is StepStatus.OK for s in run.steps)
    (node,) = [n for n in run.environment if n != "_controller"]  # assembled like any run
    assert run.environment[node]["sysctl.vm.swappiness"] == SWAPPINESS
    assert [j["by"] for j in run.judgements] == ["aibench preflight"]
    assert any(f.name == "vm.swappiness" for f in run.facts)


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has nvidia-smi")
def test_absent_facts_are_listed_with_their_reason() -> None:
    p = preflight()
    assert p.returncode == 0, p.stderr
    row = next(ln for ln in p.stdout.splitlines() if ln.startswith("nvidia-smi.driver_version "))
    assert row.split()[1] == "absent"
    assert "nvidia-smi.driver_version: nvidia-smi: not installed" in p.stdout


def write_inventory(tmp_path: Path) -> Path:
    inv = {
        "name": "two-local",
        "defaults": {"executor": "local"},
        "nodes": [{"name": "node-a"}, {"name": "node-b"}],
    }
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(inv))
    return path


def test_two_nodes_side_by_side_with_fakebin_gpu_and_a_failing_spec(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "schema_version": 1,
                "name": "preflight-test",
                "checks": [
                    {
                        "id": "swappiness",
                        "fact": {"source": "sysctl", "name": "vm.swappiness"},
                        "op": "eq",
                        "value": SWAPPINESS,
                    },
                    {
                        "id": "driver",
                        "fact": {"source": "nvidia-smi", "name": "driver_version"},
                        "op": "version_ge",
                        "value": "550",
                    },
                    {
                        "id": "nvme-read",
                        "select": {"tool": "fio", "metric": "bw", "dims": {"direction": "read"}},
                        "scope": "node",
                        "unit": "MB/s",
                        "min": 5000,
                    },
                    {
                        "id": "dcgm",
                        "fact": {"source": "dcgmi", "name": "overall"},
                        "op": "eq",
                        "value": "pass",
                    },
                ],
            }
        )
    )
    env = dict(os.environ, PATH=f"{HERE / 'fakebin'}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "out.json"
    p = preflight(
        "--inventory",
        str(write_inventory(tmp_path)),
        "--spec",
        str(spec),
        "--output",
        str(out),
        env=env,
    )
    assert p.returncode == 1, p.stdout + p.stderr  # the DCGM capture has a failed test
    header = p.stdout.splitlines()[0].split()
    assert header == ["fact", "node-a", "node-b"]
    assert "590.48.01" in p.stdout
    run = Run.from_dict(json.loads(out.read_text()))
    outcomes = {(v.check, v.subject): v.outcome.value for v in run.verdicts}
    assert outcomes[("swappiness", ("node-a",))] == "PASS"
    assert outcomes[("driver", ("node-b",))] == "PASS"
    assert outcomes[("dcgm", ("node-a",))] == "FAIL"
    assert not [v for v in run.verdicts if v.check.startswith("consistency.")]
    # the spec's benchmark check is left to `aibench run`: no MISSING verdict for it here
    assert not [v for v in run.verdicts if v.check == "nvme-read"]
    assert "1 benchmark check(s) of preflight-test not judged here" in p.stdout


def test_unknown_suite_is_a_user_error() -> None:
    p = preflight("--suite", "no-such-suite")
    assert p.returncode == 2
    assert "no-such-suite" in p.stderr
