"""rocm-smi: the complaints it prints beside its numbers are Notes, in both text forms."""

from __future__ import annotations

from pathlib import Path

import pytest

from aibench.model import Fact, Note
from aibench.parsers import parse

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "rocm-smi"


@pytest.mark.parametrize(
    ("name", "complaints"),
    [
        # rocm_smi_lib 7.0, `rocm-smi -g`: the library's exception beside a clock level
        ("g-current-clocks-1gpu-rocm-smi-lib7.0-map-at.txt", ["Exception caught: map::at"]),
        # the concise table of a dGPU and an iGPU: the exception before the banner
        (
            "concise-2gpu-rx7900-igpu-rocm-map-at-key-not-found.txt",
            ["Exception caught: map::at:  key not found"],
        ),
    ],
)
def test_map_at_is_a_note_and_the_numbers_are_kept(name: str, complaints: list[str]) -> None:
    text = (FIX / name).read_text()
    recs = parse("rocm-smi", text)
    notes = [r for r in recs if isinstance(r, Note)]
    lines = text.splitlines()
    assert [n.text for n in notes] == complaints
    assert all(lines[n.line - 1].strip() == n.text for n in notes if n.line)
    assert any(isinstance(r, Fact) and r.name == "gpu_count" for r in recs)


def test_every_not_supported_line_of_rocm_smi_a_is_a_note() -> None:
    text = (FIX / "mi300x-oam-4gpu-vf-driver6.7.0-a.txt").read_text()
    recs = parse("rocm-smi", text)
    notes = [(n.line, n.text) for n in recs if isinstance(n, Note)]
    printed = [
        (no, line.strip())
        for no, line in enumerate(text.splitlines(), 1)
        if "Not supported" in line
    ]
    assert len(printed) > 20
    assert notes == printed  # each line, in rocm-smi's words, at its line
    # the facts read beside them are unchanged
    facts = [r for r in recs if isinstance(r, Fact)]
    assert {f.dims.get("gpu") for f in facts if f.name == "product_name"} == {0, 1, 2, 3}
