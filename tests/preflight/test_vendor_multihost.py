"""``aibench preflight`` over SSH on the test bed's hosts, with AMD and Ascend tools.

The hosts have no AMD GPU and no Ascend NPU, so ``amd-smi``, ``npu-smi`` and
``hccn_tool`` are the TEST DOUBLES of tests/preflight/fakebin-vendors, which print real
public captures (see that file); the preflight finds them through its ``tool_path``
option, exactly as it finds the tools in ``/opt/rocm/bin`` or
``/usr/local/Ascend/driver/tools`` on real nodes. The Ascend install root holds the real
driver ``version.info`` and CANN ``ascend_toolkit_install.info`` files of the fixtures.
One host is the ODD NODE: its doubles print another real capture (another ROCm, GPU,
NPU model and NPU driver), and the golden-config check must name it.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from aibench.model import Outcome, Run
from tests.aibench_cli import aibench
from tests.testbed.bed import TestBed

pytestmark = pytest.mark.netns

HERE = Path(__file__).resolve().parent
FAKE = HERE / "fakebin-vendors" / "fake_vendor_tool.py"
FIX = HERE.parent / "fixtures"


@pytest.fixture
def vendor_root(testbed_hosts: TestBed) -> Iterator[Path]:
    # Not under /tmp: hosts of the bed may have a private /tmp.
    root = Path("/var/tmp") / f"aibench-vendor-tests-{uuid.uuid4().hex[:8]}"
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    for tool in ("amd-smi", "rocm-smi", "npu-smi", "hccn_tool"):
        (bin_dir / tool).symlink_to(FAKE)
    (bin_dir / "odd-hosts").write_text(testbed_hosts.hosts[2].name + "\n")
    ascend = root / "Ascend"
    (ascend / "driver").mkdir(parents=True)
    shutil.copy(
        FIX / "ascend-version-info/driver-version.info-24.1.rc2.2.txt",
        ascend / "driver/version.info",
    )
    toolkit = ascend / "ascend-toolkit/latest/aarch64-linux"
    toolkit.mkdir(parents=True)
    shutil.copy(
        FIX / "ascend-version-info/cann-toolkit-install.info-8.0.0.txt",
        toolkit / "ascend_toolkit_install.info",
    )
    yield root
    shutil.rmtree(root, ignore_errors=True)


def preflight(
    tmp_path: Path, bed: TestBed, root: Path, spec: str, **options: object
) -> tuple[int, str, Run]:
    base = {"gpu": False, "infiniband": False, "dcgm_level": 0, "disks": False, "tools": False}
    base |= {"kernel_log": False, "tool_path": [str(root / "bin")], "npu_ids": [0, 1]}
    suite = {
        "schema_version": 1,
        "name": f"vendor-preflight-{spec}",
        "steps": [{"name": "preflight", "tool": "preflight", "options": base | options}],
    }
    suite_path = tmp_path / f"suite-{spec}.yaml"
    suite_path.write_text(yaml.safe_dump(suite))
    inv = bed.write_inventory(tmp_path / "inventory.yaml")
    nodes = ",".join(h.name for h in bed.hosts[:3])
    out = tmp_path / f"{spec}.json"
    p = aibench(
        "preflight", "--suite", str(suite_path), "--inventory", str(inv), "--nodes", nodes,
        "--spec", spec, "--output", str(out), timeout=300,
    )  # fmt: skip
    assert out.exists(), p.stdout + p.stderr
    return p.returncode, p.stdout, Run.from_dict(json.loads(out.read_text()))


def verdicts(run: Run) -> dict[tuple[str, str], tuple[Outcome, str, str]]:
    return {
        (v.check, ",".join(v.subject)): (v.outcome, v.observed_text, v.reason) for v in run.verdicts
    }


def test_amd_facts_judged_by_the_mi300x_profile_and_the_odd_node_named(
    tmp_path: Path, testbed_hosts: TestBed, vendor_root: Path
) -> None:
    h1, h2, odd = (h.name for h in testbed_hosts.hosts[:3])
    rc, stdout, run = preflight(tmp_path, testbed_hosts, vendor_root, "mi300x", ascend=False)
    got = verdicts(run)
    assert rc == 1, stdout
    # golden config: the odd node's amd-smi prints ROCm 6.1.0 and a Radeon RX 6600
    outcome, observed, reason = got[("consistency.rocm_version", odd)]
    assert (outcome, observed) == (Outcome.FAIL, "6.1.0")
    assert reason == f"{odd} has amd-smi.rocm_version 6.1.0, the majority 6.1.2"
    assert got[("consistency.amd_gpu_model", odd)][:2] == (
        Outcome.FAIL, "Navi 23 [Radeon RX 6600/6600 XT",
    )  # fmt: skip
    assert got[("consistency.amdgpu_driver_version", odd)][1] == "7.0.0-3-pve"
    assert not [k for k in got if k[0].startswith("consistency.") and k[1] != odd]
    # the mi300x profile on the real captures
    for node in (h1, h2, odd):
        assert got[("rocm-version", node)][0] is Outcome.PASS
        assert got[("xgmi-link-type", node)][0] is Outcome.PASS
        assert got[("xgmi-bandwidth", node)][0] is Outcome.PASS  # 608 Gb/s per GPU
        assert got[("amd-ecc-uncorrectable", node)][0] is Outcome.PASS
        assert got[("amd-throttle", node)][0] is Outcome.PASS
        # the static capture is of a one-GPU MI210 (or the RX 6600): not an 8×MI300X node
        assert got[("amd-gpu-count", node)][0] is Outcome.FAIL
    assert got[("amd-gpu-model", h1)][1] == "gpu=0: AMD Instinct MI210"
    assert got[("amd-power-cap", h1)][2] == "power_cap gpu=0: 300.0, expected >= 750"
    # the table names the facts and marks the odd node's values
    line = next(ln for ln in stdout.splitlines() if ln.startswith("amd-smi.rocm_version"))
    assert line.split()[1:] == ["6.1.2", "6.1.2", "6.1.0*"]
    # rocm-smi is the fallback: not run where amd-smi is installed
    (skip,) = {f.reason for f in run.facts if (f.source, f.name) == ("rocm-smi", "gpu_count")}
    assert skip == "rocm-smi: not run, amd-smi is installed"


def test_ascend_facts_judged_by_the_910b_profile_and_the_odd_node_named(
    tmp_path: Path, testbed_hosts: TestBed, vendor_root: Path
) -> None:
    h1, h2, odd = (h.name for h in testbed_hosts.hosts[:3])
    ascend_root = str(vendor_root / "Ascend")
    rc, stdout, run = preflight(
        tmp_path, testbed_hosts, vendor_root, "ascend-910b", amd=False, ascend_root=ascend_root
    )
    got = verdicts(run)
    assert rc == 1, stdout
    outcome, observed, reason = got[("consistency.npu_driver_version", odd)]
    assert (outcome, observed) == (Outcome.FAIL, "25.3.rc1.b061")
    assert reason == f"{odd} has npu-smi.driver_version 25.3.rc1.b061, the majority 23.0.7"
    assert got[("consistency.npu_model", odd)][:2] == (Outcome.FAIL, "910B3")
    assert not [k for k in got if k[0].startswith("consistency.") and k[1] != odd]
    checks = ("npu-count", "npu-model", "npu-health", "npu-hbm", "npu-hbm-uncorrectable")
    checks += ("npu-firmware", "npu-driver", "cann-installed", "npu-roce-link")
    for node in (h1, h2, odd):
        for check in checks:
            assert got[(check, node)][0] is Outcome.PASS, (check, node, got[(check, node)])
    assert got[("npu-roce-link", h1)][1] == "device=0: UP; device=1: UP"
    assert got[("cann-installed", h1)][1] == "8.0.0"
    # hccn_tool -speed has no captured output: the double exits 2, the fact is absent
    speed = [f for f in run.facts if (f.source, f.name) == ("hccn_tool", "speed")]
    assert {f.reason for f in speed} == {"hccn_tool -speed: no output"}
    assert "1 benchmark check(s) of ascend-910b not judged here" in stdout
