"""Built-in profiles judging real preflight facts: ``aibench preflight --spec NAME``.

The nodes are this machine, run twice as two inventory nodes (local executor); its real
/proc and /sys files give memory, cores and swappiness. GPU, HCA and DCGM facts come from
the TEST DOUBLES in tests/preflight/fakebin, which print real captured outputs
(tests/fixtures, tests/preflight/captures; sources in their SOURCES.md):

* default: an H100 (driver 590.48.01, ECC on, zero errors), an H100 node's ibstat (every
  port Active), a DCGM level-3 run with a failed GPU Memory test;
* FAKE_NVIDIA_SMI=l20-535: an L20 with driver 535.161.08;
* FAKE_IBSTAT=port-down: a ConnectX-3 whose InfiniBand port is Down / Polling.

Outcomes that depend on this machine (memory, cores, swappiness) are computed from the
same facts the run recorded, so the tests hold on any machine.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from aibench.model import Outcome, Run, Verdict
from tests.aibench_cli import aibench

HERE = Path(__file__).resolve().parent
FAKEBIN = HERE / "fakebin"


def preflight(
    tmp_path: Path, *args: str, labels: list[dict[str, str]], **env: str
) -> tuple[subprocess.CompletedProcess[str], Run]:
    inv = {
        "name": "roles",
        "defaults": {"executor": "local"},
        "nodes": [{"name": f"node-{i}", "labels": lab} for i, lab in enumerate(labels)],
    }
    inv_path = tmp_path / "inventory.yaml"
    inv_path.write_text(yaml.safe_dump(inv))
    out = tmp_path / "preflight.json"
    full_env = dict(os.environ, PATH=f"{FAKEBIN}{os.pathsep}{os.environ['PATH']}", **env)
    p = aibench(
        "preflight", "--quiet", "--inventory", str(inv_path), "--output", str(out), *args,
        env=full_env, timeout=240,
    )  # fmt: skip
    assert out.exists(), p.stdout + p.stderr
    return p, Run.from_dict(json.loads(out.read_text()))


def verdicts(run: Run) -> dict[tuple[str, str], Verdict]:
    return {(v.check, ",".join(v.subject)): v for v in run.verdicts}


def fact(run: Run, source: str, name: str, node: str) -> object:
    (value,) = {
        f.value for f in run.facts if (f.source, f.name) == (source, name) and node in f.nodes
    }
    return value


TWO_ROLES = [{"role": "training"}, {"role": "inference"}]


def test_seed_reference_on_a_training_and_an_inference_node(tmp_path: Path) -> None:
    p, run = preflight(tmp_path, "--spec", "seed-reference", labels=TWO_ROLES)
    got = verdicts(run)
    # driver: the H100 capture's 590.48.01 >= 550 on both nodes
    for node in ("node-0", "node-1"):
        v = got[("gpu-driver", node)]
        assert v.outcome is Outcome.PASS
        assert v.observed_text == "590.48.01"
    # swappiness, memory and cores: this machine's real values against the floors
    swap = fact(run, "sysctl", "vm.swappiness", "node-0")
    v = got[("swappiness", "node-0")]
    assert v.observed_text == str(swap)
    assert v.outcome is (Outcome.PASS if swap == 10 else Outcome.FAIL)
    mem = fact(run, "memory", "total", "node-0")
    cores = fact(run, "cpu", "cores", "node-0")
    threads = fact(run, "cpu", "threads", "node-0")
    assert isinstance(mem, float)
    assert isinstance(cores, int)
    assert isinstance(threads, int)
    # the guide's §3.1 floors; memory x 0.95 for MemTotal
    floors = {
        ("training-memory", "node-0"): (mem, 60.8),
        ("training-cores", "node-0"): (cores, 24),
        ("training-threads", "node-0"): (threads, 48),
        ("inference-memory", "node-1"): (mem, 30.4),
        ("inference-cores", "node-1"): (cores, 16),
        ("inference-threads", "node-1"): (threads, 32),
    }
    for key, (value, floor) in floors.items():
        v = got[key]
        assert v.observed_text == str(value)
        assert v.outcome is (Outcome.PASS if value >= floor else Outcome.FAIL), v
        if v.outcome is Outcome.FAIL:
            assert f"expected >= {floor:g}" in v.reason
    # §3.1 system disk: this machine's disk holding / (lsblk), against NVMe and 1 TB
    sizes = [
        f.value for f in run.facts if (f.source, f.name) == ("system_disk", "size") and
        "node-0" in f.nodes
    ]  # fmt: skip
    v = got[("system-disk-size", "node-0")]
    ok = bool(sizes) and all(isinstance(x, int) and x >= 10**12 for x in sizes)
    assert v.outcome is (Outcome.PASS if ok else Outcome.FAIL), v
    trans = {
        f.value for f in run.facts
        if (f.source, f.name) == ("system_disk", "transport") and "node-0" in f.nodes
    }  # fmt: skip
    v = got[("system-disk-nvme", "node-0")]
    assert v.outcome is (Outcome.PASS if trans == {"nvme"} else Outcome.FAIL), v
    # §4.1: governor, container tools, OS (advice: WARN); §7.2 ECC; §3.3 thermal (WARN)
    gov = fact(run, "cpu", "governor", "node-0")
    v = got[("cpu-governor", "node-0")]
    assert v.outcome is (Outcome.PASS if gov == "performance" else Outcome.FAIL), v
    for check, tool in (("docker", "docker"), ("nvidia-container-toolkit", "nvidia-container-cli")):
        present = fact(run, "tool-path", tool, "node-0") is not None
        assert got[(check, "node-0")].outcome is (Outcome.PASS if present else Outcome.FAIL)
    release = fact(run, "os", "release", "node-0")
    v = got[("os-release", "node-0")]
    assert v.outcome is (Outcome.PASS if release in ("ubuntu 22.04", "centos 8") else Outcome.WARN)
    # the H100 capture: persistence and ECC on, no thermal slowdown, HCA ports at 400
    for check in ("gpu-persistence", "gpu-ecc", "gpu-no-thermal-slowdown", "hca-port-rate"):
        assert got[(check, "node-0")].outcome is Outcome.PASS, got[(check, "node-0")]
    # the H100 capture is one GPU: no NVLink in the node, which never passes
    assert got[("nvlink-in-node", "node-0")].outcome is Outcome.MISSING
    # each node is judged by its own role's floors only
    assert ("training-memory", "node-1") not in got
    assert ("inference-cores", "node-0") not in got
    # the NVMe, fabric, TCP and shared-storage (§4.2) checks are benchmark checks: left to
    # aibench run / check
    assert not [v for v in run.verdicts if v.check == "nvme-system-read"]
    assert "9 benchmark check(s) of seed-reference not judged here" in p.stdout
    assert "judged against seed-reference (--spec)" in p.stdout
    failing = any(v.outcome.failing for v in run.verdicts)
    assert p.returncode == (1 if failing else 0)


def test_seed_reference_driver_below_550_fails(tmp_path: Path) -> None:
    _, run = preflight(
        tmp_path, "--spec", "seed-reference", labels=TWO_ROLES, FAKE_NVIDIA_SMI="l20-535"
    )
    v = verdicts(run)[("gpu-driver", "node-0")]
    assert v.outcome is Outcome.FAIL
    assert v.observed_text == "535.161.08"
    assert v.reason == "driver_version 535.161.08, expected >= 550"
    assert v.culprits == ("node-0",)


def test_seed_reference_on_a_training_only_cluster(tmp_path: Path) -> None:
    p, run = preflight(
        tmp_path, "--spec", "seed-reference", labels=[{"role": "training"}, {"role": "training"}]
    )
    checks = {v.check for v in run.verdicts}
    assert {"training-memory", "training-cores"} <= checks
    assert not checks & {"inference-memory", "inference-cores"}
    note = (
        "inference-memory: not applicable: no node is labelled role=inference "
        "(the inventory has role=training)"
    )
    assert note in run.notes
    assert f"note: {note}" in p.stdout


def test_seed_reference_on_an_unlabelled_cluster_is_missing(tmp_path: Path) -> None:
    _, run = preflight(tmp_path, "--spec", "seed-reference", labels=[{}, {"rack": "r1"}])
    roles = [v for v in run.verdicts if v.check.startswith(("training-", "inference-"))]
    assert len(roles) == 6
    assert {v.outcome for v in roles} == {Outcome.MISSING}
    assert "no node of the inventory has a role label" in roles[0].reason


def test_h100_profile_healthy_gpu_and_hca_facts(tmp_path: Path) -> None:
    _, run = preflight(tmp_path, "--spec", "h100-ndr", labels=[{}])
    got = verdicts(run)
    for check in ("gpu-sram-uncorrectable", "ib-port-state", "ib-port-physical", "ib-port-rate"):
        assert got[(check, "node-0")].outcome is Outcome.PASS, got[(check, "node-0")]
    assert got[("gpu-pcie-width", "node-0")].outcome is Outcome.PASS
    assert got[("gpu-pcie-gen", "node-0")].outcome is Outcome.PASS
    # the Ethernet port of the capture (mlx5_bond_0, 200 Gb/s) is not an InfiniBand port
    assert "200" not in got[("ib-port-rate", "node-0")].observed_text
    # the DCGM capture has a failed GPU Memory test
    assert got[("dcgm-diag", "node-0")].outcome is Outcome.FAIL
    # the MIG-mode capture prints Remapped Rows: N/A: not verified is never a pass
    v = got[("gpu-remap-pending", "node-0")]
    assert v.outcome is Outcome.FAIL
    assert "Remapped Rows: N/A" in v.reason


def test_h100_profile_fails_a_down_infiniband_port(tmp_path: Path) -> None:
    p, run = preflight(tmp_path, "--spec", "h100-ndr", labels=[{}], FAKE_IBSTAT="port-down")
    got = verdicts(run)
    state = got[("ib-port-state", "node-0")]
    assert state.outcome is Outcome.FAIL
    assert state.observed_text == "hca=mlx4_0,link_layer=InfiniBand,port=1: Down"
    assert state.culprits == ("node-0",)
    phys = got[("ib-port-physical", "node-0")]
    assert phys.outcome is Outcome.FAIL
    assert "Polling" in phys.reason
    # the adapter's Ethernet port (Down / Disabled) is not judged by the InfiniBand checks
    assert "port=2" not in state.observed_text
    assert p.returncode == 1


def test_h100_profile_gpu_facts_of_an_l20(tmp_path: Path) -> None:
    _, run = preflight(tmp_path, "--spec", "h100-ndr", labels=[{}], FAKE_NVIDIA_SMI="l20-535")
    got = verdicts(run)
    assert got[("gpu-remap-pending", "node-0")].outcome is Outcome.PASS  # "Pending: No"
    assert got[("gpu-remap-failure", "node-0")].outcome is Outcome.PASS
    assert got[("gpu-sram-uncorrectable", "node-0")].outcome is Outcome.PASS
    gen = got[("gpu-pcie-gen", "node-0")]
    assert gen.outcome is Outcome.FAIL  # an L20 is a PCIe Gen4 card
    assert gen.observed_text == "gpu=0: 4"
    assert got[("gpu-count", "node-0")].outcome is Outcome.FAIL


def _bin_without(tmp_path: Path, missing: str) -> Path:
    """A PATH directory with the commands the preflight runs, except ``missing``."""
    d = tmp_path / "bin"
    d.mkdir()
    for name in (
        "sh", "grep", "lsblk", "findmnt", "timeout", "head", "ldconfig", "awk",
        "readlink", "dmesg", "cat", "fio", "iperf3", "iperf", "ib_write_bw", "mpirun",
    ):  # fmt: skip
        found = shutil.which(name)
        if name != missing and found:
            (d / name).symlink_to(found)
    return d


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed here")
def test_the_suites_spec_judges_without_spec_and_a_missing_tool_exits_1(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    env = dict(os.environ, PATH=str(_bin_without(tmp_path, "fio")))
    p = aibench("preflight", "--quiet", "--output", str(out), env=env, timeout=240)
    assert p.returncode == 1, p.stdout + p.stderr
    run = Run.from_dict(json.loads(out.read_text()))
    assert run.spec == "preflight"
    (fio,) = [v for v in run.verdicts if v.check == "tool-fio"]
    assert fio.outcome is Outcome.FAIL
    assert "fio: not installed" in fio.reason
    (iperf3,) = [v for v in run.verdicts if v.check == "tool-iperf3"]
    assert iperf3.outcome is Outcome.PASS
    assert "judged against preflight (the spec of suite preflight)" in p.stdout
    # with fio back on the PATH the same command passes
    env = dict(
        os.environ,
        PATH=str(tmp_path / "bin") + os.pathsep + str(Path(shutil.which("fio") or "").parent),
    )
    p = aibench("preflight", "--quiet", env=env, timeout=240)
    assert p.returncode == 0, p.stdout + p.stderr
