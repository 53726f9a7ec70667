"""nvbandwidth text: the Read1/Read2/Total matrices of a bidirectional testcase."""

from __future__ import annotations

import re

import pytest

from aibench.errors import ToolFailure
from aibench.parsers import nvbandwidth
from tests.golden import FIXTURES

B300 = FIXTURES / "nvbandwidth" / "b300-v0.10.0-7gpu-bidirectional-read-write.txt"


def test_every_sum_printed_is_read_with_its_part() -> None:
    text = B300.read_text()
    recs = nvbandwidth.parse(text)
    sums = {
        (r.dims["testcase"], r.dims.get("part", "")): r.value for r in recs if r.metric == "bw_sum"
    }
    printed = {}
    for name, value in re.findall(r"^SUM (\S+) (\S+)$", text, re.M):
        base, _, part = name.rpartition("_")
        if part in ("read1", "read2", "write1", "write2", "total"):
            printed[(base, part)] = float(value)
        else:
            printed[(name, "")] = float(value)
    assert sums == printed


def test_the_total_matrix_is_the_sum_of_the_two_directions() -> None:
    recs = nvbandwidth.parse(B300.read_text())
    case = "device_to_device_bidirectional_memcpy_read_ce"
    cell = {(r.dims.get("part"), r.dims["row"], r.dims["column"]): r.value for r in recs
            if r.metric == "bw" and r.dims["testcase"] == case}  # fmt: skip
    assert cell[("read1", 0, 1)] == 760.10  # as printed
    assert cell[("total", 0, 1)] == 1521.22
    assert cell[("total", 0, 1)] == pytest.approx(
        cell[("read1", 0, 1)] + cell[("read2", 0, 1)], abs=0.011
    )  # each printed to 0.01
    assert len(cell) == 3 * 7 * 6  # three 7x7 matrices without their N/A diagonal


def test_a_bidirectional_testcase_cut_after_read1_is_cut_short() -> None:
    text = B300.read_text()
    cut = text[: text.index("memcpy CE GPU(row) <-> GPU(column) Read2")]
    with pytest.raises(ToolFailure, match="device_to_device_bidirectional_memcpy_read_ce") as exc:
        nvbandwidth.parse(cut)
    assert any(r.dims.get("part") == "read1" for r in exc.value.partial)
