"""Hardware identity of a node, read from its preflight facts, and what changed.

A repair swaps a GPU, a drive or an HCA, or updates a BIOS, a firmware or a driver. Where
that happened the node's earlier results no longer describe it, whatever they were: every
per-node step of such a node is run again. The identity is the facts below, plus every
fact whose name holds ``serial`` or ``uuid`` (whichever tool reports one); per-device
facts keep their device (``gpu=3``) so that the change names it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from aibench.model import Fact

IDENTITY_KEYS: frozenset[tuple[str, str]] = frozenset(
    {
        ("dmi", "bios_version"),
        ("dmi", "bios_date"),
        ("dmi", "sys_vendor"),
        ("dmi", "product_name"),
        ("kernel", "release"),
        ("disk", "model"),
        ("disk", "firmware"),
        ("nvidia-smi", "driver_version"),
        ("nvidia-smi", "product_name"),
        ("nvidia-smi", "vbios_version"),
        ("nvidia-smi", "gpu_count"),
        ("ibstat", "hca_count"),
        ("ibstat", "firmware_version"),
        ("ibstat", "hardware_version"),
        ("ibv_devinfo", "firmware_version"),
        ("ibv_devinfo", "board_id"),
        ("amd-smi", "driver_version"),
        ("amd-smi", "vbios_version"),
        ("amd-smi", "firmware_version"),
        ("amd-smi", "gpu_count"),
        ("rocm-smi", "driver_version"),
        ("rocm-smi", "vbios_version"),
        ("npu-smi", "driver_version"),
        ("npu-smi", "firmware_version"),
        ("npu-smi", "npu_count"),
        ("ascend", "driver_version"),
        ("ascend", "firmware_version"),
    }
)
_NAMED = ("serial", "uuid")


def is_identity(f: Fact) -> bool:
    return (f.source, f.name) in IDENTITY_KEYS or any(w in f.name.lower() for w in _NAMED)


def fact_label(f: Fact) -> str:
    """``nvidia-smi.serial gpu=3``: the fact's name with the device it is about."""
    dims = " ".join(f"{k}={v}" for k, v in f.dims.items())
    return f"{f.source}.{f.name}" + (f" {dims}" if dims else "")


def identities(facts: Iterable[Fact]) -> dict[str, dict[str, str]]:
    """node -> identity label -> value (an absent fact as ``absent``)."""
    out: dict[str, dict[str, str]] = {}
    for f in facts:
        if not is_identity(f):
            continue
        for node in f.nodes:
            out.setdefault(node, {})[fact_label(f)] = "absent" if f.value is None else str(f.value)
    return out


@dataclass(frozen=True)
class Change:
    """One identity fact of a node that differs between two attempts."""

    node: str
    fact: str
    before: str
    after: str

    @property
    def text(self) -> str:
        return f"{self.fact} {self.before}→{self.after}"

    def to_dict(self) -> dict[str, str]:
        return {"node": self.node, "fact": self.fact, "before": self.before, "after": self.after}

    @classmethod
    def from_dict(cls, d: Mapping[str, str]) -> Change:
        return cls(str(d["node"]), str(d["fact"]), str(d["before"]), str(d["after"]))


def changes(
    before: Mapping[str, Mapping[str, str]], after: Mapping[str, Mapping[str, str]]
) -> dict[str, list[Change]]:
    """node -> its identity facts that differ; only nodes, and facts, read on both sides
    are compared (a fact collected one time and not the other is no change: the preflight
    may have been asked for less)."""
    out: dict[str, list[Change]] = {}
    for node in sorted(set(before) & set(after)):
        old, new = before[node], after[node]
        found = [
            Change(node, k, old[k], new[k]) for k in sorted(set(old) & set(new)) if old[k] != new[k]
        ]
        if found:
            out[node] = found
    return out
