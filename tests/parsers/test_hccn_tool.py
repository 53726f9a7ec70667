"""hccn_tool -link_stat: the [device N] and [devid N] line prefixes read alike."""

from __future__ import annotations

import re

import pytest

from aibench.parsers import hccn_tool
from tests.golden import FIXTURES

H = FIXTURES / "hccn-tool"


@pytest.mark.parametrize(
    ("name", "prefix"),
    [
        ("huawei-doc-device0-collection-example.txt", "[device 0]"),
        ("hccl-doc-devid0-link-stat-flap.txt", "[devid 0]"),
    ],
)
def test_link_counts_as_printed(name: str, prefix: str) -> None:
    text = (H / name).read_text()
    assert prefix in text
    printed = {
        key.replace(" ", "_"): int(n)
        for key, n in re.findall(r"\](link (?:up|down) count)\s*: (\d+)$", text, re.M)
    }
    facts = {f.name: f.value for f in hccn_tool.parse(text) if f.name in printed}
    assert printed
    assert facts == printed
