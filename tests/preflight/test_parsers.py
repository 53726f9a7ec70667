"""Node fact parsers on the real captures: the facts a spec selects, and the failure cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from aibench import parsers
from aibench.errors import ParseError, ToolFailure
from aibench.model import Fact
from aibench.parsers.nvidia_smi import decode_clock_events
from aibench.parsers.sysinfo import parse_dmesg_xid

FIX = Path(__file__).resolve().parent.parent / "fixtures"
Q = FIX / "nvidia-smi-q" / "h100-mig-590.48.01-load.txt"
CSV = FIX / "nvidia-smi-query-gpu" / "h100-mig-590.48.01-all-fields.csv"
TOPO = FIX / "nvidia-smi-topo" / "h200-590.48.01.txt"
IB_OK = FIX / "ibstat" / "h100-all-active-mixed-ib-ethernet.txt"
IB_PANIC = FIX / "ibstat" / "a100-ibpanic-exit255-partial.txt"
DCGM = FIX / "dcgmi-diag" / "r3-8xh100-gpu-memory-fail.txt"


def one(facts: list[Fact], name: str, **dims: object) -> Fact:
    got = [f for f in facts if f.name == name and all(f.dims.get(k) == v for k, v in dims.items())]
    assert len(got) == 1, f"{name} {dims}: {got}"
    return got[0]


def facts(parser: str, path: Path) -> list[Fact]:
    out = parsers.parse(parser, path.read_text())
    assert all(isinstance(f, Fact) for f in out)
    return out  # type: ignore[return-value]


def test_q_driver_gpu_and_health_facts() -> None:
    fs = facts("nvidia-smi-q", Q)
    assert one(fs, "driver_version").value == "590.48.01"
    assert one(fs, "cuda_version").value == "13.1"
    assert one(fs, "gpu_count").value == 1
    assert one(fs, "product_name", gpu=0).value == "NVIDIA H100 80GB HBM3"
    assert one(fs, "persistence_mode", gpu=0).value == "Enabled"
    assert one(fs, "ecc_mode", gpu=0).value == "Enabled"
    assert one(fs, "mig_devices", gpu=0).value == 4
    assert one(fs, "ecc_uncorrected_total", gpu=0, scope="volatile").value == 0
    assert one(fs, "temp_gpu", gpu=0).value == 53
    assert one(fs, "temp_gpu", gpu=0).unit == "C"
    # newer drivers print thresholds as T.Limit margins, not absolute temperatures
    assert one(fs, "temp_shutdown_tlimit", gpu=0).value == -8
    assert not [f for f in fs if f.name == "temp_shutdown"]
    p = one(fs, "power_limit", gpu=0)
    assert (p.value, p.unit) == (700.0, "W")
    assert one(fs, "pcie_gen_current", gpu=0).value == 5
    assert one(fs, "pcie_width_current", gpu=0).value == 16
    assert one(fs, "clock_sm", gpu=0).value == 1980
    assert one(fs, "clocks_event.hw_slowdown", gpu=0).value is False
    assert one(fs, "fabric_state", gpu=0).value == "Completed"


def test_q_not_available_values_are_absent_with_reason() -> None:
    fs = facts("nvidia-smi-q", Q)
    sbe = one(fs, "retired_pages_sbe", gpu=0)
    assert sbe.value is None
    assert "N/A" in sbe.reason
    rows = one(fs, "remapped_rows_pending", gpu=0)
    assert rows.value is None
    assert rows.reason == "Remapped Rows: N/A"


def test_q_gpu_count_must_match_gpu_sections() -> None:
    text = Q.read_text().replace(
        "Attached GPUs                                          : 1",
        "Attached GPUs                                          : 8",
    )
    with pytest.raises(ParseError, match="8"):
        parsers.parse("nvidia-smi-q", text)


def test_q_cut_before_the_driver_line_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="Driver Version"):
        parsers.parse("nvidia-smi-q", "\n".join(Q.read_text().splitlines()[:3]))


def test_driver_not_loaded_is_a_tool_failure() -> None:
    msg = (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\n"
    )
    for name in ("nvidia-smi-q", "nvidia-smi-query-gpu", "nvidia-smi-topo"):
        with pytest.raises(ToolFailure, match="couldn't communicate"):
            parsers.parse(name, msg)


@pytest.mark.parametrize(
    ("mask", "names"),
    [
        (0x0, []),
        (0x1, ["gpu_idle"]),
        (0x4, ["sw_power_cap"]),
        (0x48, ["hw_slowdown", "hw_thermal_slowdown"]),
        (0xA0, ["sw_thermal_slowdown", "hw_power_brake_slowdown"]),
        (
            0x1FF,
            [
                "gpu_idle",
                "applications_clocks_setting",
                "sw_power_cap",
                "hw_slowdown",
                "sync_boost",
                "sw_thermal_slowdown",
                "hw_thermal_slowdown",
                "hw_power_brake_slowdown",
                "display_clock_setting",
            ],
        ),
    ],
)
def test_clock_event_bitmask_decoding(mask: int, names: list[str]) -> None:
    assert sorted(decode_clock_events(mask)) == sorted(names)


def test_query_gpu_bitmask_and_units() -> None:
    fs = facts("nvidia-smi-query-gpu", CSV)
    assert one(fs, "clocks_event_reasons_active", gpu=0).value == "0x0000000000000000"
    assert one(fs, "clocks_event_reasons", gpu=0).value == "none"
    assert one(fs, "clocks_event_reasons_supported", gpu=0).value == "0x00000000000001FF"
    assert one(fs, "driver_version").value == "590.48.01"
    m = one(fs, "memory_total", gpu=0)
    assert (m.value, m.unit) == (81559, "MiB")
    assert one(fs, "power_limit", gpu=0).value == 700.0
    assert one(fs, "retired_pages_sbe", gpu=0).value is None


def test_query_gpu_decodes_an_active_throttle() -> None:
    text = CSV.read_text()
    header, row = text.splitlines()[:2]
    row = row.replace("0x0000000000000000", "0x0000000000000048", 1)
    fs = parsers.parse("nvidia-smi-query-gpu", header + "\n" + row + "\n")
    got = one(fs, "clocks_event_reasons", gpu=0)  # type: ignore[arg-type]
    assert got.value == "hw_slowdown,hw_thermal_slowdown"


def test_query_gpu_row_cut_short_is_a_parse_error() -> None:
    header, row = CSV.read_text().splitlines()[:2]
    with pytest.raises(ParseError, match="columns") as exc:
        parsers.parse("nvidia-smi-query-gpu", header + "\n" + row[: len(row) // 2] + "\n")
    assert exc.value.line == 2


def test_topo_affinity_and_ansi_header() -> None:
    fs = facts("nvidia-smi-topo", TOPO)
    assert one(fs, "cpu_affinity", gpu=0).value == "0-23"
    assert one(fs, "numa_affinity", gpu=0).value == "0"
    assert one(fs, "gpu_numa_id", gpu=0).value is None
    assert not [f for f in fs if f.name == "topo_link"]  # one GPU: only itself


def test_ibstat_ports_and_firmware() -> None:
    fs = facts("ibstat", IB_OK)
    assert one(fs, "hca_count").value == 9
    layers = [f.value for f in fs if f.name == "link_layer"]
    assert layers.count("InfiniBand") == 8
    assert layers.count("Ethernet") == 1
    assert {f.value for f in fs if f.name == "state"} == {"Active"}
    r = one(fs, "rate", hca="mlx5_0", port=1)
    assert (r.value, r.unit) == (400, "Gbit/s")
    assert one(fs, "firmware_version", hca="mlx5_0").value == "28.41.1000"


def test_ibstat_ibpanic_keeps_the_adapters_read_before_it() -> None:
    with pytest.raises(ToolFailure, match="mlx5_8") as exc:
        parsers.parse("ibstat", IB_PANIC.read_text())
    partial = [f for f in exc.value.partial if isinstance(f, Fact)]
    assert one(partial, "hca_count").value == 8
    assert {f.dims["hca"] for f in partial if f.name == "state"} == {f"mlx5_{i}" for i in range(8)}


def test_dcgmi_failed_test_and_joined_warnings() -> None:
    fs = facts("dcgmi-diag", DCGM)
    assert one(fs, "overall").value == "fail"
    assert one(fs, "failed_tests").value == 1
    assert one(fs, "result", test="GPU Memory").value == "fail"
    assert one(fs, "result_text", test="GPU Memory").value == "Fail - All"
    assert one(fs, "result", test="PCIe").value == "skip"
    assert one(fs, "version").value == "3.3.8"
    warnings = [f for f in fs if f.name == "warning"]
    assert len(warnings) == 8
    assert "Unable to initialize CUDA library: 'system not yet initialized'" in str(
        warnings[0].value
    )
    assert "https://github.com/nvidia/cuda-samples" in str(warnings[7].value)
    info = one(fs, "info", test="Persistence Mode")
    assert 'Enable persistence mode by running "nvidia-smi -i <gpuId> -pm 1 " as root.' in str(
        info.value
    )


def test_dcgmi_host_engine_error_is_a_tool_failure() -> None:
    with pytest.raises(ToolFailure, match="host engine"):
        parsers.parse(
            "dcgmi-diag", "Error: unable to establish a connection to the specified host engine.\n"
        )


def test_node_files_absent_files_carry_grep_reason() -> None:
    fs = facts("node-files", FIX / "node-files" / "debian12-vm-2cpu.txt")
    gov = one(fs, "governor")
    assert gov.source == "cpu"
    assert gov.value is None
    assert gov.reason.endswith("scaling_governor: No such file or directory")
    assert one(fs, "vm.swappiness").value == 60
    assert one(fs, "total").unit == "GiB"


def test_xid_events_in_the_documented_kernel_log_format() -> None:
    # NVIDIA's documented line format (XID errors guide): "NVRM: Xid (PCI:<bdf>): <code>, ..."
    text = (
        "[12345.678901] NVRM: Xid (PCI:0000:18:00): 79, pid=1234, GPU has fallen off the bus.\n"
        "[12345.678902] NVRM: GPU at PCI:0000:18:00.0 has fallen off the bus.\n"
        "[12399.000001] NVRM: Xid (PCI:0000:3b:00): 48, pid=0, An uncorrectable double bit error\n"
    )
    fs = parse_dmesg_xid(text)
    assert one(fs, "xid_count").value == 2
    assert one(fs, "xid_codes").value == "48,79"


def test_ibv_devinfo_ports_and_verbose_physical_state() -> None:
    fs = facts("ibv-devinfo", FIX / "ibv-devinfo" / "mlx4-2hca-2port-one-down.txt")
    assert one(fs, "hca_count").value == 2
    assert one(fs, "state", hca="mlx4_1", port=1).value == "PORT_ACTIVE"
    assert one(fs, "state", hca="mlx4_1", port=2).value == "PORT_DOWN"
    mtu = one(fs, "active_mtu", hca="mlx4_0", port=1)
    assert (mtu.value, mtu.unit) == (4096, "B")
    v = facts("ibv-devinfo", FIX / "ibv-devinfo" / "mlx4-verbose-port2-polling.txt")
    assert one(v, "phys_state", hca="mlx4_1", port=2).value == "POLLING"
    assert one(v, "active_speed", hca="mlx4_1", port=2).value == "2.5 Gbps"
    assert not [f for f in v if f.name == "max_qp"]


def test_ibv_devinfo_without_devices_is_zero_hcas() -> None:
    # rdma-core's ibv_devinfo prints this (and exits non-zero) on a host with no RDMA device
    assert [(f.name, f.value) for f in parsers.parse("ibv-devinfo", "No IB devices found\n")] == [
        ("hca_count", 0)
    ]


def test_default_table_facts_match_the_q_names() -> None:
    fs = facts("nvidia-smi-table", FIX / "nvidia-smi-table" / "h200-590.48.01-idle.txt")
    assert one(fs, "driver_version").value == "590.48.01"
    assert one(fs, "gpu_count").value == 1
    assert one(fs, "product_name", gpu=0).value == "NVIDIA H200"
    assert one(fs, "persistence_mode", gpu=0).value == "Enabled"
    assert one(fs, "power_limit", gpu=0).value == 700.0
    assert one(fs, "memory_total", gpu=0).value == 143771
    assert one(fs, "mig_mode", gpu=0).value == "Disabled"


def test_default_table_cut_inside_a_gpu_row_is_a_parse_error() -> None:
    text = (FIX / "nvidia-smi-table" / "h200-590.48.01-idle.txt").read_text()
    cut = "\n".join(text.splitlines()[:10]) + "\n"
    with pytest.raises(ParseError, match="cut off"):
        parsers.parse("nvidia-smi-table", cut)
