"""Expectations derived from the hardware: line rate × a stated efficiency.

Given a node description (:class:`~aibench.thresholds.spec.Hardware`: accelerator model
and count, intra-node fabric, NICs with their line rates, drives), :func:`derive` returns
one :class:`Expectation` per measurable quantity, each carrying its own derivation text::

    all_reduce busbw 8×H100 NVLink4 (ring, NVLS off): 450 GB/s line × 0.82 (...) = 369 GB/s

The line rates and efficiencies are in :data:`FABRICS` and :data:`EFFICIENCY`, each with
its source. ``aibench spec explain PROFILE`` prints these lines next to the profile's
checks, so that a number in a profile can be traced to a datasheet and a measured ratio.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aibench.thresholds.spec import Hardware


@dataclass(frozen=True)
class Fabric:
    name: str
    busbw_line_gbs: float  # per-GPU unidirectional bandwidth, GB/s
    source: str


# Intra-node fabrics: per-GPU unidirectional line rate (GB/s).
FABRICS: dict[str, Fabric] = {
    "nvlink3": Fabric("NVLink3", 300.0, "12 links × 25 GB/s (A100 SXM)"),
    "nvlink4": Fabric(
        "NVLink4", 450.0, "18 links; '450GB/s is the line rate' (NCCL maintainer, nccl-tests#212)"
    ),
    "nvlink5": Fabric("NVLink5", 900.0, "18 links × 50 GB/s (B200/B300 HGX)"),
    "infinity-fabric": Fabric(
        "xGMI", 448.0, "7 peer links × 64 GB/s raw per MI300X (AMD ROCm blog mi300x-rccl-xgmi)"
    ),
}


@dataclass(frozen=True)
class Efficiency:
    factor: float
    source: str


EFFICIENCY: dict[str, Efficiency] = {
    "ring": Efficiency(
        0.82,
        "ring efficiency: ~370 GB/s of 450 measured with NVLS off (NCCL maintainer, "
        "nccl-tests#212); 8×H200 ring 367 GB/s",
    ),
    "nvls": Efficiency(
        1.067,
        "NVLink SHARP reduces in the switch, so busbw exceeds the line rate: ~480 GB/s on "
        "8×H100 (nccl-tests#212), 480 GB/s on 8×H200 (Azure AI-benchmarking-guide)",
    ),
    "nvls5": Efficiency(
        0.93,
        "8×B200 with NVLS: 838 GB/s of 900 (ml-engineering network notes, secondary); "
        "8×B300 845 GB/s (nccl#2140, user)",
    ),
    "ring5": Efficiency(
        0.76, "8×B200 ring: 682 GB/s of 900 (ml-engineering network notes, secondary)"
    ),
    "xgmi": Efficiency(
        0.71,
        "RCCL all_reduce on 8×MI300X: 319 GB/s of 448 raw, capped by the slowest xGMI link "
        "(AMD ROCm blog mi300x-rccl-xgmi)",
    ),
    "rdma": Efficiency(
        0.90,
        "pass at 90% of port rate for ib_write_bw (NVIDIA ngc_multinode_perf BW_PASS_RATE); "
        "healthy ports measure 95-97%",
    ),
    "tcp": Efficiency(
        0.90,
        "pass at 90% of port rate for iperf3 (NVIDIA ngc_multinode_perf PASS_CRITERION); "
        "MTU 1500 caps TCP goodput at 94.1% of 100 GbE",
    ),
    "net_ring": Efficiency(
        0.80,
        "multi-node ring all_reduce is bound by the node's NIC bandwidth; 80-90% of it is "
        "the derived estimate (~320 GB/s at >= 4 nodes on 8×400G, nccl#1221)",
    ),
    "disk": Efficiency(
        0.80,
        "our assumption (unsourced estimate): fio 1 MiB sequential at high queue depth "
        "reaches most of the datasheet figure on a preconditioned drive",
    ),
}


@dataclass(frozen=True)
class Expectation:
    key: str  # e.g. "nccl.all_reduce.nvls", "perftest.rail.mlx5_0"
    tool: str
    metric: str
    line: float
    efficiency: float
    unit: str
    text: str
    source: str

    @property
    def value(self) -> float:
        return self.line * self.efficiency


def _fmt(x: float) -> str:
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _line(what: str, line: float, unit: str, eff: Efficiency) -> str:
    value = line * eff.factor
    return (
        f"{what}: {_fmt(line)} {unit} line × {eff.factor:g} ({eff.source}) = {_fmt(value)} {unit}"
    )


def _exp(
    key: str, tool: str, metric: str, what: str, line: float, unit: str, eff: str
) -> Expectation:
    e = EFFICIENCY[eff]
    return Expectation(
        key, tool, metric, line, e.factor, unit, _line(what, line, unit, e), e.source
    )


def derive(hw: Hardware) -> list[Expectation]:
    """Every expectation that follows from ``hw``, in a stable order."""
    return [*_fabric(hw), *_nics(hw), *_multinode(hw), *_drives(hw)]


def _fabric(hw: Hardware) -> list[Expectation]:
    """all_reduce inside one node, bound by the GPUs' fabric (NVLink, xGMI)."""
    fabric = FABRICS.get((hw.nvlink or "").lower())
    if not fabric or hw.gpus < 2:
        return []
    who = f"{hw.gpus}×{hw.gpu or 'GPU'} {fabric.name}"
    if fabric.name == "NVLink4":
        pairs = [("nvls", "NVLS on, NCCL default"), ("ring", "ring, NVLS off")]
    elif fabric.name == "NVLink5":
        pairs = [("nvls5", "NVLS on, NCCL default"), ("ring5", "ring, NVLS off")]
    elif fabric.name == "xGMI":
        pairs = [("xgmi", "RCCL ring")]
    else:
        pairs = [("ring", "ring")]
    return [
        _exp(
            f"nccl.all_reduce.{eff}",
            "nccl-tests",
            "busbw",
            f"all_reduce busbw {who} ({label})",
            fabric.busbw_line_gbs,
            "GB/s",
            eff,
        )
        for eff, label in pairs
    ]


def _nics(hw: Hardware) -> list[Expectation]:
    """One per network adapter: ib_write_bw per rail (IB, RoCE), else iperf3 TCP."""
    out = []
    for nic in hw.nics:
        if nic.kind in ("ib", "roce"):
            label = f"{nic.count}× " if nic.count > 1 else ""
            out.append(
                _exp(
                    f"perftest.{nic.role}.{nic.name}",
                    "perftest",
                    "bw_avg",
                    f"ib_write_bw per rail, {label}{nic.name} ({nic.role}, {nic.kind})",
                    nic.rate_gbps,
                    "Gbit/s",
                    "rdma",
                )
            )
        else:
            out.append(
                _exp(
                    f"iperf3.{nic.role}.{nic.name}",
                    "iperf3",
                    "throughput",
                    f"iperf3 TCP, {nic.name} ({nic.role} Ethernet)",
                    nic.rate_gbps,
                    "Gbit/s",
                    "tcp",
                )
            )
    return out


def _multinode(hw: Hardware) -> list[Expectation]:
    """all_reduce across nodes, a ring bound by a node's compute ports."""
    compute = [n for n in hw.nics if n.role == "compute" and n.kind in ("ib", "roce")]
    if not compute or hw.gpus < 1:
        return []
    node_gbs = sum(n.rate_gbps * n.count for n in compute) / 8
    return [
        _exp(
            "nccl.all_reduce.multinode",
            "nccl-tests",
            "busbw",
            f"all_reduce busbw across nodes, ring bound by {sum(n.count for n in compute)} "
            f"compute ports ({node_gbs:.0f} GB/s per node)",
            node_gbs,
            "GB/s",
            "net_ring",
        )
    ]


def _drives(hw: Hardware) -> list[Expectation]:
    """Sequential read of every kind of drive, its count times its datasheet rate."""
    out = []
    for d in hw.drives:
        total = d.read_mbps * d.count
        src = f"; datasheet: {d.source}" if d.source else ""
        out.append(
            _exp(
                f"fio.seq_read.{d.kind}",
                "fio",
                "bw",
                f"sequential read, {d.count}× {d.kind} at {d.read_mbps:.0f} MB/s{src}",
                total,
                "MB/s",
                "disk",
            )
        )
    return out


def explain(hw: Hardware) -> list[str]:
    """The derivation, one line per expectation."""
    return [e.text for e in derive(hw)]


# Accelerator model (as an inventory names it) -> intra-node fabric.
_FABRIC_OF = (
    ("MI300", "infinity-fabric"),
    ("MI325", "infinity-fabric"),
    ("A100", "nvlink3"),
    ("H100", "nvlink4"),
    ("H200", "nvlink4"),
    ("H800", "nvlink4"),
    ("B200", "nvlink5"),
    ("B300", "nvlink5"),
    ("GB200", "nvlink5"),
)


def hardware_from_facts(facts: Mapping[str, Any]) -> Hardware:
    """A node description from an inventory node's facts (``gpus``, ``hcas``).

    ``gpus: {model, count}`` gives the accelerators and, from the model name, the
    intra-node fabric; every HCA with a ``rate_gbps`` becomes a compute rail. Facts the
    inventory does not give are left out (nothing is guessed for them).
    """
    gpus = facts.get("gpus") if isinstance(facts.get("gpus"), Mapping) else {}
    model = str(gpus.get("model", "")) if gpus else ""
    fabric = next((f for key, f in _FABRIC_OF if key in model.upper()), None)
    nics = [
        {
            "name": str(h["name"]),
            "rate_gbps": float(h["rate_gbps"]),
            "kind": "roce" if h.get("gid_index") is not None else "ib",
        }
        for h in facts.get("hcas") or []
        if isinstance(h, Mapping) and h.get("rate_gbps")
    ]
    return Hardware.model_validate(
        {
            "gpu": model or None,
            "gpus": int(gpus.get("count", 0)) if gpus else 0,
            "nvlink": fabric,
            "nics": nics,
        }
    )
