"""nvidia-smi -q: the power domains, FB memory use and voltage, read as printed."""

from __future__ import annotations

import re

import pytest

from aibench import parsers
from tests.golden import FIXTURES

Q = FIXTURES / "nvidia-smi-q"
# section as printed -> prefix of the facts of that domain
DOMAINS = {
    "GPU Power Readings": "",
    "GPU Memory Power Readings": "memory_",
    "Module Power Readings": "module_",
}
LABELS = {
    "Average Power Draw": "power_draw",
    "Power Draw": "power_draw",
    "Instantaneous Power Draw": "power_draw_instant",
    "Current Power Limit": "power_limit",
    "Max Power Limit": "power_limit_max",
}


def printed(text: str) -> dict[str, float | None]:
    """The first GPU's power figures, read from the text line by line."""
    out: dict[str, float | None] = {}
    section = ""
    for line in text.split("\nGPU ")[1].splitlines():
        if line.startswith("    ") and not line.startswith("     "):
            section = line.strip()
            continue
        m = re.match(r"^ {8}(\S.*?)\s+: (.*)$", line)
        if m and section in DOMAINS and m[1] in LABELS:
            value = m[2].strip()
            out[DOMAINS[section] + LABELS[m[1]]] = None if value == "N/A" else float(value[:-2])
    return out


@pytest.mark.parametrize(
    "name",
    ["gh200-550.127.05.txt", "h200-590.48.01-load.txt", "rtx2080super-595.71.05-load.txt"],
)
def test_every_power_figure_printed_is_a_fact(name: str) -> None:
    text = (Q / name).read_text()
    want = printed(text)
    assert want, "the capture prints power readings"
    got = {f.name: f.value for f in parsers.parse("nvidia-smi-q", text) if f.dims.get("gpu") == 0}
    assert {k: got[k] for k in want} == want


def test_grace_hopper_prints_the_module_and_memory_draws_and_the_voltage() -> None:
    facts = parsers.parse("nvidia-smi-q", (Q / "gh200-550.127.05.txt").read_text())
    by = {f.name: f for f in facts}
    assert (by["module_power_draw"].value, by["module_power_draw"].unit) == (169.77, "W")
    assert by["module_power_limit"].value == 1000.0
    assert by["power_limit"].value == 700.0  # the GPU's own limit stays apart
    assert by["memory_power_draw"].value == 18.51
    assert (by["voltage_graphics"].value, by["voltage_graphics"].unit) == (685.0, "mV")
    assert (by["memory_used"].value, by["memory_total"].value) == (2, 97871)


def test_a_gpu_that_prints_only_the_instantaneous_draw() -> None:
    facts = parsers.parse("nvidia-smi-q", (Q / "rtx2080super-595.71.05-load.txt").read_text())
    by = {f.name: f for f in facts}
    assert by["power_draw"].value is None
    assert "Average Power Draw: N/A" in by["power_draw"].reason
    assert by["power_draw_instant"].value == 98.55
    assert by["memory_used"].value == 819
