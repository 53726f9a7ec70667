"""Each vendor's names for the links a collective benchmark crosses (for section notes).

NVIDIA's GPUs talk over NVLink inside a node; AMD's Instinct GPUs over xGMI (AMD Infinity
Fabric); Huawei's Ascend NPUs over HCCS (Huawei Cache Coherence System). Between nodes
the NPUs use the RoCE port each NPU has (configured and read with hccn_tool).
"""

from __future__ import annotations

# tool -> (library, link inside a node, link between nodes)
TERMS: dict[str, tuple[str, str, str]] = {
    "nccl-tests": ("NCCL", "NVLink / NVSwitch", "InfiniBand or RoCE HCAs"),
    "rccl-tests": ("RCCL", "xGMI (AMD Infinity Fabric)", "InfiniBand or RoCE HCAs"),
    "hccl-tests": ("HCCL", "HCCS (Huawei Cache Coherence System)", "each NPU's RoCE port"),
}


def link_note(tool: str) -> str:
    """One sentence naming the library and the links its measurements cross."""
    library, inside, between = TERMS[tool]
    return f"{library} collectives: inside a node over {inside}, between nodes over {between}."
