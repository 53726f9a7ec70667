"""Golden-config consistency: facts that must be identical on every node of the fleet.

For each fact of :data:`GOLDEN` the value of every node is found (per-GPU and per-HCA
facts become one value per node, see :func:`aibench.preflight.node_value`; an absent fact
is the value ``absent``). The most common value is the majority; every node with another
value gets a :class:`Verdict` (outcome FAIL or WARN per fact, check ``consistency.<fact>``,
subject and culprit the node, ``observed_text`` its value, ``expected``
``"majority: X (N of M nodes)"``). With no unique majority (a tie) every node outside the
first of the tied values is named, and ``expected`` lists the tie. Nodes that did not
report the fact at all (a failed step) are left out of that comparison; the failed step
says why. A fleet of one node has nothing to compare and gives no verdicts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from aibench.model import Fact, Outcome, StepResult, Verdict
from aibench.preflight import by_node, node_value

ABSENT = "absent"

# (check name, source, fact name, outcome for the odd node out)
GOLDEN: tuple[tuple[str, str, str, Outcome], ...] = (
    ("driver_version", "nvidia-smi", "driver_version", Outcome.FAIL),
    ("cuda_version", "nvidia-smi", "cuda_version", Outcome.FAIL),
    ("gpu_count", "nvidia-smi", "gpu_count", Outcome.FAIL),
    ("gpu_model", "nvidia-smi", "product_name", Outcome.FAIL),
    ("vbios_version", "nvidia-smi", "vbios_version", Outcome.WARN),
    ("hca_count", "ibstat", "hca_count", Outcome.FAIL),
    ("hca_firmware", "ibstat", "firmware_version", Outcome.WARN),
    ("nccl_version", "nccl", "version", Outcome.FAIL),
    ("kernel", "kernel", "release", Outcome.WARN),
    ("os", "os", "pretty_name", Outcome.WARN),
    ("bios_version", "dmi", "bios_version", Outcome.WARN),
    ("cpu_model", "cpu", "model", Outcome.WARN),
    ("dcgm_version", "dcgmi", "version", Outcome.WARN),
)
# AMD Instinct and Huawei Ascend (aibench.preflight.vendor); HCCL is versioned by CANN
GOLDEN += (
    ("rocm_version", "amd-smi", "rocm_version", Outcome.FAIL),
    ("amdgpu_driver_version", "amd-smi", "driver_version", Outcome.FAIL),
    ("amd_gpu_count", "amd-smi", "gpu_count", Outcome.FAIL),
    ("amd_gpu_model", "amd-smi", "product_name", Outcome.FAIL),
    ("amd_vbios_version", "amd-smi", "vbios_version", Outcome.WARN),
    ("amdgpu_firmware", "amd-smi", "firmware_version", Outcome.WARN),
    ("rocm_smi_driver_version", "rocm-smi", "driver_version", Outcome.FAIL),
    ("npu_driver_version", "npu-smi", "driver_version", Outcome.FAIL),
    ("npu_count", "npu-smi", "npu_count", Outcome.FAIL),
    ("npu_model", "npu-smi", "product_name", Outcome.FAIL),
    ("npu_firmware", "npu-smi", "firmware_version", Outcome.WARN),
    ("cann_version", "ascend", "cann_version", Outcome.FAIL),
)


def _text(v: object) -> str:
    return ABSENT if v is None else str(v)


def check_results(results: Iterable[StepResult]) -> list[Verdict]:
    """:func:`check` over the facts of step results, with the steps as evidence."""
    results = list(results)
    evidence: dict[tuple[str, str], list[str]] = {}
    for r in results:
        for f in r.facts:
            for node in f.nodes:
                ids = evidence.setdefault((node, f"{f.source}.{f.name}"), [])
                if r.step_id not in ids:
                    ids.append(r.step_id)
    return check([f for r in results for f in r.facts], evidence)


def check(
    facts: Iterable[Fact], evidence: Mapping[tuple[str, str], Sequence[str]] | None = None
) -> list[Verdict]:
    """Verdicts for every node whose golden facts differ from the fleet's majority.

    ``evidence`` maps (node, "source.name") to the step ids that reported the fact.
    """
    nodes = by_node(facts)
    verdicts: list[Verdict] = []
    for check_name, source, name, outcome in GOLDEN:
        key = f"{source}.{name}"
        values = {
            node: _text(node_value(named[key])) for node, named in nodes.items() if key in named
        }
        if len(values) < 2:
            continue
        counts = Counter(values.values())
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        top_value, top_n = ranked[0]
        tied = [v for v, n in ranked if n == top_n]
        total = len(values)
        if len(tied) > 1:
            expected = "no majority: " + ", ".join(f"{v} ({top_n} of {total} nodes)" for v in tied)
        else:
            expected = f"majority: {top_value} ({top_n} of {total} nodes)"
        for node, value in sorted(values.items()):
            if value == top_value:
                continue
            verdicts.append(
                Verdict(
                    check=f"consistency.{check_name}",
                    outcome=outcome,
                    subject=(node,),
                    description=f"{key} must be the same on every node",
                    expected=expected,
                    observed_text=value,
                    samples=total,
                    culprits=(node,),
                    evidence=tuple((evidence or {}).get((node, key), ())),
                    reason=f"{node} has {key} {value}, the majority {top_value}",
                    benchmark="preflight",
                )
            )
    return verdicts
