"""Node preflight: the facts collected on every node, and what is made of them.

The ``preflight`` runner (:mod:`aibench.runners.preflight`) collects the facts; the
parsers in :mod:`aibench.parsers.sysinfo`, :mod:`aibench.parsers.nvidia_smi`,
:mod:`aibench.parsers.ibstat` and :mod:`aibench.parsers.dcgmi` read them;
:mod:`aibench.consistency` compares them across the fleet;
:mod:`aibench.preflight.expected` checks them against what the inventory declares
(``gpus.count``, ``hcas`` and their ``rate_gbps``, ``data_dirs``);
:func:`environment_from_facts` turns them into the run's bill of materials;
:mod:`aibench.preflight_run` runs the preflight suite alone (``aibench preflight``).

Fact names (``source`` / ``name``; these are stable, select them in specs). An absent fact
has value None and a reason ("nvidia-smi: not installed", "/sys/...: No such file or
directory", "Remapped Rows: N/A").

=============  ===============================================================================
source         names (unit; dims)
=============  ===============================================================================
cpu            model, sockets, cores, threads, numa_nodes (count), numa_cpulist (dims
               numa_node), governor
memory         total (GiB), hugepages_total (count), hugepage_size (KiB)
kernel         release
os             pretty_name
host           hostname
sysctl         vm.swappiness, vm.zone_reclaim_mode, vm.max_map_count, kernel.numa_balancing
thp            enabled, defrag (the selected value)
limits         nofile_soft, nofile_hard (count), memlock_soft, memlock_hard (B); int or
               "unlimited"
dmi            bios_vendor, bios_version, bios_date, sys_vendor, product_name
disk           count; per disk (dims device): model, size (B), firmware, transport, rotational
mount          per data dir (dims path): target, device, fstype, size (B), avail (B)
tool-path      one name per tool (fio, iperf3, iperf, ib_write_bw, mpirun, srun, docker,
               enroot, nvidia-container-cli, all_reduce_perf, nvidia-smi, dcgmi, ibstat)
tool-version   the same names; the version text (fio "3.33")
container      runtimes (the container tools found, comma separated)
nccl           version (from the libnccl.so.2 in the ldconfig cache)
nvidia-smi     driver_version, cuda_version, gpu_count; per GPU (dims gpu): product_name,
               product_architecture, vbios_version, bus_id, persistence_mode, mig_mode,
               mig_devices, ecc_mode, compute_mode, compute_cap, performance_state,
               memory_total, memory_used, memory_free, memory_reserved (MiB),
               utilization_gpu, utilization_memory (%), ecc_errors (dims scope, counter),
               ecc_corrected_total, ecc_uncorrected_total (dims scope: volatile |
               aggregate), retired_pages_sbe,
               retired_pages_dbe, retired_pages_pending, remapped_rows_correctable,
               remapped_rows_uncorrectable, remapped_rows_pending, remapped_rows_failure,
               temp_gpu, temp_memory, temp_tlimit, temp_shutdown[_tlimit],
               temp_slowdown[_tlimit], temp_max_operating[_tlimit],
               temp_memory_max_operating[_tlimit] (C), power_draw, power_limit,
               power_limit_default, power_limit_enforced, power_limit_min, power_limit_max,
               power_limit_requested, power_draw_instant (W; the same prefixed memory_ and
               module_ for the GPU memory's and the module's readings), voltage_graphics
               (mV), clock_graphics, clock_sm, clock_memory, clock_max_graphics, clock_max_sm,
               clock_max_memory (MHz), clocks_event.<reason> (bool), clocks_event_reasons
               (decoded active reasons, "none"), clocks_event_reasons_active /
               _supported (hex), pcie_gen_current, pcie_gen_max, pcie_width_current,
               pcie_width_max, pcie_replays, fabric_state, fabric_status; topology (dims gpu,
               peer): topo_link, nvlink_bonds; per GPU: cpu_affinity, numa_affinity,
               gpu_numa_id
ibstat         hca_count; per HCA (dims hca): ca_type, firmware_version, hardware_version,
               port_count; per port (dims hca, port, link_layer): state, physical_state,
               rate (Gbit/s), link_layer
ibv_devinfo    hca_count; per HCA (dims hca): transport, firmware_version, hardware_version,
               vendor_part_id, board_id, port_count; per port (dims hca, port,
               link_layer): state, max_mtu, active_mtu (B), link_layer, phys_state,
               active_width, active_speed
dcgmi          version, driver_version, gpu_device_ids, overall (pass | warn | fail),
               failed_tests (count); per test (dims test, section): result (pass | fail |
               warn | skip), result_text; warning, info (dims test, section, n)
kernel-log     lines, xid_count (count), xid_codes ("none" or "79,48")
amd-smi        rocm_version, tool_version, library_version; gpu_count; per GPU (dims gpu):
               product_name, driver_version, vbios_version, vram_total (MiB), power_cap (W),
               ecc_uncorrectable_total, throttle_status, temp_hotspot (C), firmware_version
               (dims fw), xgmi_bit_rate / xgmi_max_bandwidth (Gbit/s), xgmi_link_type ...
               (:mod:`aibench.parsers.amd_smi`)
rocm-smi       driver_version, gpu_count; per GPU product_name, vbios_version, power_cap,
               firmware_version (dims fw) ... (:mod:`aibench.parsers.rocm_smi`; the fallback)
npu-smi        driver_version, npu_count, chip_count; per chip (dims npu, chip): product_name,
               health, power, temp, hbm_used / hbm_total (MiB), aicore_usage; per NPU:
               firmware_version, software_version, health_status, hbm_*_error_count
               (:mod:`aibench.parsers.npu_smi`)
hccn_tool      per NPU (dims device): link_status, net_health, ip_address, netmask, speed
               (Gbit/s), optical_present, optical_* (:mod:`aibench.parsers.hccn_tool`)
ascend         driver_version, firmware_version, cann_version (HCCL ships with CANN)
=============  ===============================================================================

Example spec selections: ``nvidia-smi`` / ``driver_version`` version_ge 550; ``sysctl`` /
``vm.swappiness`` eq 10; ``memory`` / ``total`` >= N GiB; ``cpu`` / ``cores`` >= N;
``dcgmi`` / ``overall`` eq pass; ``kernel-log`` / ``xid_count`` eq 0; ``ibstat`` /
``state`` with dims ``{link_layer: InfiniBand}`` eq Active (the port's link layer is a dim,
added by the preflight runner, so that an unused Ethernet port is not judged).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from aibench.model import Fact, FactValue

# The bill of materials: (source, name) pairs that make up Run.environment.
BOM_KEYS: tuple[tuple[str, str], ...] = (
    ("host", "hostname"),
    ("os", "pretty_name"),
    ("kernel", "release"),
    ("dmi", "sys_vendor"),
    ("dmi", "product_name"),
    ("dmi", "bios_version"),
    ("cpu", "model"),
    ("cpu", "sockets"),
    ("cpu", "cores"),
    ("cpu", "threads"),
    ("cpu", "numa_nodes"),
    ("cpu", "governor"),
    ("memory", "total"),
    ("sysctl", "vm.swappiness"),
    ("thp", "enabled"),
    ("limits", "nofile_soft"),
    ("disk", "count"),
    ("disk", "model"),
    ("disk", "firmware"),
    ("nvidia-smi", "driver_version"),
    ("nvidia-smi", "cuda_version"),
    ("nvidia-smi", "gpu_count"),
    ("nvidia-smi", "product_name"),
    ("nvidia-smi", "vbios_version"),
    ("nvidia-smi", "persistence_mode"),
    ("nvidia-smi", "ecc_mode"),
    ("ibstat", "hca_count"),
    ("ibstat", "ca_type"),
    ("ibstat", "firmware_version"),
    ("dcgmi", "version"),
    ("dcgmi", "overall"),
    ("kernel-log", "xid_count"),
    ("nccl", "version"),
    ("container", "runtimes"),
    ("mount", "target"),
    ("mount", "fstype"),
)
# AMD Instinct and Huawei Ascend (aibench.preflight.vendor): versions and identity
BOM_KEYS += (
    ("amd-smi", "rocm_version"),
    ("amd-smi", "driver_version"),
    ("amd-smi", "gpu_count"),
    ("amd-smi", "product_name"),
    ("amd-smi", "vbios_version"),
    ("amd-smi", "firmware_version"),
    ("rocm-smi", "driver_version"),
    ("rocm-smi", "gpu_count"),
    ("rocm-smi", "product_name"),
    ("npu-smi", "driver_version"),
    ("npu-smi", "npu_count"),
    ("npu-smi", "product_name"),
    ("npu-smi", "firmware_version"),
    ("ascend", "cann_version"),
    ("ascend", "driver_version"),
    ("ascend", "firmware_version"),
)

# Health facts shown beside the bill of materials in the `aibench preflight` table (they
# change from run to run, so they are not part of Run.environment).
HEALTH_KEYS: tuple[tuple[str, str], ...] = (
    ("nvidia-smi", "ecc_uncorrected_total"),
    ("nvidia-smi", "retired_pages_pending"),
    ("nvidia-smi", "remapped_rows_pending"),
    ("nvidia-smi", "clocks_event_reasons"),
    ("nvidia-smi", "pcie_gen_current"),
    ("nvidia-smi", "pcie_width_current"),
    ("nvidia-smi", "power_limit"),
    ("nvidia-smi", "temp_gpu"),
    ("nvidia-smi", "mig_mode"),
    ("ibstat", "state"),
    ("ibstat", "rate"),
    ("ibv_devinfo", "state"),
    ("dcgmi", "overall"),
    ("kernel-log", "xid_codes"),
)
# AMD Instinct and Huawei Ascend (aibench.preflight.vendor): health and links
HEALTH_KEYS += (
    ("amd-smi", "ecc_uncorrectable_total"),
    ("amd-smi", "throttle_status"),
    ("amd-smi", "temp_hotspot"),
    ("amd-smi", "power_cap"),
    ("amd-smi", "xgmi_bit_rate"),
    ("amd-smi", "xgmi_link_type"),
    ("rocm-smi", "power_cap"),
    ("npu-smi", "health"),
    ("npu-smi", "health_status"),
    ("npu-smi", "hbm_total"),
    ("npu-smi", "temp"),
    ("npu-smi", "hbm_double_bit_error_count"),
    ("hccn_tool", "link_status"),
    ("hccn_tool", "speed"),
    ("hccn_tool", "optical_present"),
)


def fact_key(f: Fact) -> str:
    return f"{f.source}.{f.name}"


def node_value(facts: Iterable[Fact]) -> FactValue:
    """One value for facts of one name on one node (one per GPU, per HCA ...).

    All equal: that value. Different: the distinct values, sorted, joined with ", ".
    All absent: None.
    """
    present = [f.value for f in facts if f.value is not None]
    if not present:
        return None
    distinct = sorted({str(v) for v in present})
    if len(distinct) == 1:
        return present[0]
    return ", ".join(distinct)


def by_node(facts: Iterable[Fact]) -> dict[str, dict[str, list[Fact]]]:
    """node -> "source.name" -> the facts of that name (several for per-GPU facts)."""
    out: dict[str, dict[str, list[Fact]]] = defaultdict(lambda: defaultdict(list))
    for f in facts:
        for node in f.nodes or ("?",):
            out[node][fact_key(f)].append(f)
    return {n: dict(d) for n, d in out.items()}


def environment_from_facts(
    facts: Iterable[Fact], keys: Iterable[tuple[str, str]] | None = BOM_KEYS
) -> dict[str, dict[str, FactValue]]:
    """The bill of materials per node: ``{node: {"source.name": value}}``.

    ``keys=None`` keeps every fact name. A per-GPU (per-HCA, per-disk) fact becomes one
    value (see :func:`node_value`); an absent fact is None.
    """
    wanted = None if keys is None else [f"{s}.{n}" for s, n in keys]
    out: dict[str, dict[str, FactValue]] = {}
    for node, named in sorted(by_node(facts).items()):
        names = wanted if wanted is not None else sorted(named)
        out[node] = {k: node_value(named[k]) for k in names if k in named}
    return out
