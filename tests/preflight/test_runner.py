"""The preflight step through the orchestrator and the local executor.

On this machine for real (CPU, memory, kernel, sysctl, governor, disks, tool versions;
nvidia-smi, ibstat and dcgmi are not installed here, so those facts are absent with the
reason), and with the test-only PATH folder ``fakebin/`` whose commands print the real
nvidia-smi, ibstat and dcgmi captures of tests/fixtures.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

import pytest

from aibench.executors.local import LocalExecutor
from aibench.inventory import Inventory, Node, local_inventory
from aibench.model import Fact, StepResult, StepStatus
from aibench.preflight import environment_from_facts
from aibench.preflight_run import collect, facts_of
from aibench.runners import RUNNERS
from aibench.suite import load_suite

HERE = Path(__file__).resolve().parent
FAKEBIN = HERE / "fakebin"


def run_preflight(tmp_path: Path, inventory: Inventory | None = None) -> list[StepResult]:
    inv = inventory or local_inventory()
    ex = LocalExecutor()
    results, unreachable = collect(load_suite("preflight"), inv, tmp_path / "run", lambda n: ex)
    assert not unreachable
    return results


def fact(results: list[StepResult], source: str, name: str, **dims: object) -> Fact:
    got = [
        f
        for f in facts_of(results)
        if f.source == source
        and f.name == name
        and all(f.dims.get(k) == v for k, v in dims.items())
    ]
    assert len(got) == 1, f"{source}.{name} {dims}: {got}"
    return got[0]


def step(results: list[StepResult], kind: str) -> StepResult:
    got = [r for r in results if r.step_id.split("/")[1].endswith("." + kind)]
    assert len(got) == 1, [r.step_id for r in results]
    return got[0]


@pytest.fixture(scope="module")
def local_results(tmp_path_factory: pytest.TempPathFactory) -> list[StepResult]:
    return run_preflight(tmp_path_factory.mktemp("local"))


def test_runner_is_registered_with_placement_each() -> None:
    r = RUNNERS.get("preflight")
    assert r.default_placement == "each"
    assert r.version_argv() is None


def test_invocations_are_argv_lists_without_shell_strings_from_the_inventory() -> None:
    node = Node(name="gpu01", address="10.0.0.1", facts={"data_dirs": ["/data/nvme0"]})
    suite = load_suite("preflight")
    from aibench.runners.base import Slot

    invs = RUNNERS.get("preflight").invocations("preflight", suite.steps[0].options, [node], Slot())
    kinds = [i.label.split(".", 1)[1] for i in invs]
    assert kinds == [
        "files",
        "disks",
        "system-disk",
        "mount-0",
        "tools",
        "gpu-q",
        "gpu-clocks",
        "gpu-topo",
        "dcgm",
        "hca",
        "hca-verbs",
        "kernel-log",
        # AMD Instinct and Huawei Ascend: absent facts on nodes without their tools
        "amd-version",
        "amd-static",
        "amd-metric",
        "amd-firmware",
        "amd-xgmi",
        "rocm-smi",
        "npu-info",
        "npu-detail",
        "hccn",
        "ascend-versions",
    ]
    for inv in invs:
        argv = inv.client.argv
        if argv[0] == "sh":
            assert "gpu01" not in argv[2]
            assert "/data/nvme0" not in argv[2]
    assert invs[2].client.argv == ("lsblk", "-J", "-b", "-o", "NAME,TYPE,SIZE,TRAN,ROTA,MOUNTPOINT")
    mount = invs[3].client.argv
    assert mount[-2:] == ("-T", "/data/nvme0")
    assert invs[8].client.argv == ("dcgmi", "diag", "-r", "1")


def test_bad_data_dir_is_refused_at_plan_time() -> None:
    from aibench.errors import UserError
    from aibench.runners.base import Slot

    node = Node(name="gpu01", facts={"data_dirs": ["data; rm -rf /"]})
    opts = load_suite("preflight").steps[0].options
    with pytest.raises(UserError, match="absolute path"):
        RUNNERS.get("preflight").invocations("preflight", opts, [node], Slot())


def test_this_machine_every_step_ok(local_results: list[StepResult]) -> None:
    assert [r.status for r in local_results] == [StepStatus.OK] * len(local_results)


def test_this_machine_cpu_memory_kernel(local_results: list[StepResult]) -> None:
    assert fact(local_results, "kernel", "release").value == platform.release()
    assert fact(local_results, "cpu", "threads").value == os.cpu_count()
    mem = fact(local_results, "memory", "total")
    kb = int(
        next(
            ln
            for ln in Path("/proc/meminfo").read_text().splitlines()
            if ln.startswith("MemTotal:")
        ).split()[1]
    )
    assert mem.unit == "GiB"
    assert mem.value == round(kb / 2**20, 2)
    swap = int(Path("/proc/sys/vm/swappiness").read_text())
    assert fact(local_results, "sysctl", "vm.swappiness").value == swap
    nodes_online = Path("/sys/devices/system/node/online")
    if nodes_online.exists():
        assert isinstance(fact(local_results, "cpu", "numa_nodes").value, int)


def test_this_machine_governor_present_or_absent_with_reason(
    local_results: list[StepResult],
) -> None:
    gov = fact(local_results, "cpu", "governor")
    path = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    if path.exists():
        assert gov.value == path.read_text().strip()
    else:
        assert gov.value is None
        assert gov.reason == f"{path}: No such file or directory"


def test_this_machine_thp_and_limits(local_results: list[StepResult]) -> None:
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if thp.exists():
        selected = thp.read_text().split("[")[1].split("]")[0]
        assert fact(local_results, "thp", "enabled").value == selected
    soft = fact(local_results, "limits", "nofile_soft").value
    assert soft == "unlimited" or (isinstance(soft, int) and soft > 0)


def test_this_machine_disks_match_lsblk(local_results: list[StepResult]) -> None:
    out = subprocess.run(
        ["lsblk", "-dn", "-o", "NAME,TYPE"], capture_output=True, text=True, check=True
    ).stdout
    disks = [ln.split()[0] for ln in out.splitlines() if ln.split()[1:] == ["disk"]]
    assert fact(local_results, "disk", "count").value == len(disks)
    for d in disks:
        assert isinstance(fact(local_results, "disk", "size", device=d).value, int)


def test_this_machine_system_disk_is_the_disk_findmnt_names_for_root(
    local_results: list[StepResult],
) -> None:
    """The disk the preflight calls the system disk holds the source findmnt gives for /."""
    src = subprocess.run(
        ["findmnt", "-n", "-o", "SOURCE", "/"], capture_output=True, text=True, check=True
    ).stdout.strip()
    count = fact(local_results, "system_disk", "count").value
    if not src.startswith("/dev/"):  # overlay or network root: no system disk, said so
        assert count == 0
        assert "no block device holds /" in fact(local_results, "system_disk", "size").reason
        return
    top = subprocess.run(
        ["lsblk", "-n", "-s", "-o", "NAME,TYPE", src], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    disks = {
        ln.split()[0].lstrip("`|-\u2514\u2500\u251c\u2502 ") for ln in top if ln.endswith("disk")
    }
    assert isinstance(count, int)
    assert count == len(disks) >= 1
    for d in disks:
        size = fact(local_results, "system_disk", "size", device=d).value
        assert size == int(
            subprocess.run(
                ["lsblk", "-dnb", "-o", "SIZE", f"/dev/{d}"], capture_output=True, text=True
            ).stdout
        )


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed")
def test_this_machine_tool_versions(local_results: list[StepResult]) -> None:
    out = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()
    assert fact(local_results, "tool-version", "fio").value == out.removeprefix("fio-")
    assert fact(local_results, "tool-path", "fio").value == shutil.which("fio")


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has nvidia-smi")
def test_this_machine_without_gpu_tools_facts_are_absent_not_passed(
    local_results: list[StepResult],
) -> None:
    drv = fact(local_results, "nvidia-smi", "driver_version")
    assert drv.value is None
    assert drv.reason == "nvidia-smi: not installed"
    assert step(local_results, "gpu-q").status is StepStatus.OK
    if shutil.which("ibstat") is None:
        assert fact(local_results, "ibstat", "hca_count").reason == "ibstat: not installed"
    if shutil.which("dcgmi") is None:
        assert fact(local_results, "dcgmi", "overall").reason == "dcgmi: not installed"


def test_data_dir_mounts(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    missing = tmp_path / "not-there"
    node = Node(name="local", facts={"data_dirs": [str(data), str(missing)]})
    inv = Inventory(name="t", nodes=(node,))
    results = run_preflight(tmp_path, inv)
    expected = subprocess.run(
        ["findmnt", "-n", "-o", "TARGET", "-T", str(data)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert fact(results, "mount", "target", path=str(data)).value == expected
    gone = fact(results, "mount", "target", path=str(missing))
    assert gone.value is None
    assert gone.reason.startswith(f"findmnt -T {missing}:")


# ------------------------------------------------------------- fakebin (test doubles)


@pytest.fixture
def fake_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{FAKEBIN}{os.pathsep}{os.environ['PATH']}")


def test_gpu_hca_dcgm_from_the_real_captures(tmp_path: Path, fake_path: None) -> None:
    results = run_preflight(tmp_path)
    for kind in ("gpu-q", "gpu-clocks", "gpu-topo", "dcgm", "hca", "hca-verbs"):
        assert step(results, kind).status is StepStatus.OK, step(results, kind).reason
    assert fact(results, "nvidia-smi", "driver_version").value == "590.48.01"
    assert fact(results, "nvidia-smi", "gpu_count").value == 1
    assert fact(results, "nvidia-smi", "clocks_event_reasons", gpu=0).value == "none"
    assert fact(results, "nvidia-smi", "cpu_affinity", gpu=0).value == "0-23"
    assert fact(results, "ibstat", "hca_count").value == 9
    assert fact(results, "ibv_devinfo", "hca_count").value == 2
    assert fact(results, "ibv_devinfo", "state", hca="mlx4_0", port=2).value == "PORT_DOWN"
    assert fact(results, "dcgmi", "overall").value == "fail"
    assert fact(results, "dcgmi", "result", test="GPU Memory").value == "fail"
    node = local_inventory().nodes[0].name
    env = environment_from_facts(facts_of(results))[node]
    assert env["nvidia-smi.driver_version"] == "590.48.01"
    assert env["nvidia-smi.product_name"] == "NVIDIA H100 80GB HBM3"
    # eight ConnectX-7 adapters and one other (the Ethernet port): both firmware versions
    assert env["ibstat.firmware_version"] == "28.41.1000, 32.38.3056"
    # the double's nvidia-smi prints no version (there is no capture of it): absent, with why
    ver = fact(results, "tool-version", "nvidia-smi")
    assert ver.value is None
    assert "exit 2" in ver.reason


def test_ibstat_exit_255_fails_the_step_and_keeps_the_partial_facts(
    tmp_path: Path, fake_path: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_IBSTAT", "failed")
    results = run_preflight(tmp_path)
    hca = step(results, "hca")
    assert hca.status is StepStatus.FAILED
    assert hca.exit_code == 255
    assert "exit code 255" in hca.reason
    assert "ibpanic" in hca.reason
    assert "mlx5_8" in hca.reason
    counts = [f for f in hca.facts if f.name == "hca_count"]
    assert [f.value for f in counts] == [8]
    assert len([f for f in hca.facts if f.name == "state"]) == 8


def test_dmesg_denied_is_absent_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    denied = HERE / "fakebin-dmesg-denied"
    monkeypatch.setenv("PATH", f"{denied}{os.pathsep}{os.environ['PATH']}")
    results = run_preflight(tmp_path)
    xid = fact(results, "kernel-log", "xid_count")
    assert xid.value is None
    assert xid.reason == "dmesg: read kernel buffer failed: Operation not permitted"
    assert step(results, "kernel-log").status is StepStatus.OK


def test_vendor_tools_are_searched_in_tool_path_then_the_inventorys_tool_dirs() -> None:
    from aibench.preflight.vendor import RUN
    from aibench.runners.base import Slot

    node = Node(name="mi01", facts={"tool_dirs": {"amd-smi": "/opt/rocm-6.2/bin", "fio": "/x"}})
    opts = load_suite("preflight").steps[0].options.model_copy(update={"tool_path": ["/srv/fake"]})
    invs = RUNNERS.get("preflight").invocations("preflight", opts, [node], Slot())
    (static,) = [i for i in invs if i.label.endswith(".amd-static")]
    assert static.client.argv == (
        "sh", "-c", RUN, "sh", "/srv/fake:/opt/rocm-6.2/bin", "amd-smi", "static", "--json",
    )  # fmt: skip
    (hccn,) = [i for i in invs if i.label.endswith(".hccn")]
    assert hccn.client.argv[-9:] == ("hccn_tool", "0", "1", "2", "3", "4", "5", "6", "7")
