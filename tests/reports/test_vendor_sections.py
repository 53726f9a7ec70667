"""Report sections in the vendors' terms: AMD/Ascend preflight columns, the HCCL section.

The facts are parsed from the real captures of tests/fixtures (the parsers' golden
inputs), given to two nodes, one of which has another capture (the odd node).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from aibench import parsers
from aibench.model import Fact
from aibench.preflight.vendor import KEY_FACTS
from aibench.reports.sections import section_for
from aibench.reports.sections.preflight import preflight_table

FIX = Path(__file__).resolve().parents[1] / "fixtures"


def facts_of(node: str, parser: str, rel: str) -> list[Fact]:
    recs = parsers.parse(parser, (FIX / rel).read_text())
    return [dataclasses.replace(r, nodes=(node,)) for r in recs if isinstance(r, Fact)]


def test_amd_and_ascend_columns_name_the_vendor_terms_and_mark_the_odd_node() -> None:
    facts: list[Fact] = []
    for node, npu in (
        ("n1", "910b2-23.0.7-eight-npus-idle"),
        ("n2", "910b3-25.3.rc1.b061-eight-npus-idle"),
    ):
        facts += facts_of(
            node, "amd-smi-xgmi", "amd-smi-xgmi/mi300-class-8gpu-38Gbps-transferbench-faq.txt"
        )
        facts += facts_of(node, "npu-smi-info", f"npu-smi-info/{npu}.txt")
        facts += facts_of(node, "hccn-tool", "hccn-tool/huawei-doc-device0-collection-example.txt")
    table = preflight_table(facts, ["n1", "n2"])
    assert table is not None
    rows = {r[0]: r[1:] for r in table.rows}
    assert rows["xGMI link type"] == ("XGMI ×8", "XGMI ×8", "XGMI ×8")
    assert rows["xGMI max bandwidth (Gbit/s)"][0] == "608 ×8"
    assert rows["NPU RoCE link (hccn_tool)"][0] == "UP"
    # two nodes, two drivers: a tie, so both values are marked
    assert rows["NPU driver"] == ("≠ 23.0.7", "≠ 25.3.rc1.b061", "(no majority)")
    assert rows["NPU model"][:2] == ("≠ 910B2", "≠ 910B3")


def test_a_cluster_without_amd_or_ascend_gets_no_such_columns() -> None:
    absent = [
        Fact(source, name, None, nodes=(node,), reason=f"{source}: not installed")
        for node in ("n1", "n2")
        for pairs in KEY_FACTS.values()
        for source, name in pairs
    ]
    present = [Fact("kernel", "release", "6.1.0", nodes=(n,)) for n in ("n1", "n2")]
    table = preflight_table(absent + present, ["n1", "n2"])
    assert table is not None
    assert [r[0] for r in table.rows] == ["kernel"]


def test_the_hccl_section_is_its_own_and_names_hccs() -> None:
    section = section_for("hccl-tests")
    assert section.tool == "hccl-tests"
    assert "HCCS inside a node" in section.title
