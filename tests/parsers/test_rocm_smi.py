"""rocm-smi -a: the current clocks, voltage and fan, read as printed."""

from __future__ import annotations

import re

import pytest

from aibench import parsers
from aibench.errors import ParseError
from aibench.model import Fact
from tests.golden import FIXTURES

R = FIXTURES / "rocm-smi"


@pytest.mark.parametrize("name", ["vega10-rocm4.1-a.txt", "mi300x-oam-4gpu-vf-driver6.7.0-a.txt"])
def test_current_clocks_and_voltage_are_the_printed_figures(name: str) -> None:
    text = (R / name).read_text()
    printed = {
        (int(g), clk, float(mhz))
        for g, clk, mhz in re.findall(
            r"^GPU\[(\d+)\]\s+: (\w+) clock level: \w+:? \((\d+)Mhz\)$", text, re.M
        )
    }
    volts = {
        (int(g), float(v))
        for g, v in re.findall(r"^GPU\[(\d+)\]\s+: Voltage \(mV\): (\d+)$", text, re.M)
    }
    facts = [r for r in parsers.parse("rocm-smi", text) if isinstance(r, Fact)]  # not Notes
    got = {(f.dims["gpu"], f.name, f.value) for f in facts if f.unit == "MHz"}
    assert printed
    assert got == printed
    assert {(f.dims["gpu"], f.value) for f in facts if f.name == "voltage"} == volts


def test_vega10_fan_use_and_voltage() -> None:
    text = (R / "vega10-rocm4.1-a.txt").read_text()
    facts = [r for r in parsers.parse("rocm-smi", text) if isinstance(r, Fact)]
    by = {f.name: f for f in facts}
    assert (by["sclk"].value, by["sclk"].unit) == (1138.0, "MHz")
    assert "fclk" not in by  # "fclk clock is unsupported": no reading, no fact
    assert (by["voltage"].value, by["voltage"].unit) == (825.0, "mV")
    assert (by["fan_speed"].value, by["fan_rpm"].value) == (29.0, 1024.0)
    assert by["gfx_activity"].value == 0.0


def test_a_clock_line_without_a_frequency_names_the_line() -> None:
    text = "GPU[0]\t\t: sclk clock level: S: (fast)\n"
    with pytest.raises(ParseError, match=r"sclk clock level: not a reading") as exc:
        parsers.parse("rocm-smi", text)
    assert exc.value.line == 1
