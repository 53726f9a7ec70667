"""nvidia-smi query loop: the time dimension from the ``timestamp`` field, GPUs told apart."""

from __future__ import annotations

import pytest

from aibench import parsers
from aibench.errors import ParseError
from tests.golden import FIXTURES

H100 = FIXTURES / "nvidia-smi-query-gpu" / "h100-mig-590.48.01-all-fields.csv"


def test_a_real_all_fields_row_reads_as_one_sample_with_its_time() -> None:
    text = H100.read_text()
    recs = parsers.parse("nvidia-smi-loop", text)
    by = {r.metric: r for r in recs}
    assert by["temp_gpu"].value == 53
    assert by["power"].value == 433.78
    assert by["clocks_event_mask"].value == 0
    assert dict(by["temp_gpu"].dims) == {"gpu": 0, "sample": 0, "t": 0.0}
    # the same row twice, 2.5 s later: the second sample of GPU 0, t from the first row
    head, row = text.splitlines()[:2]
    later = row.replace("2026/07/14 09:00:44.579", "2026/07/14 09:00:47.079", 1)
    recs = parsers.parse("nvidia-smi-loop", "\n".join([head, row, later]))
    temps = [r for r in recs if r.metric == "temp_gpu"]
    assert [(r.dims["sample"], r.dims["t"]) for r in temps] == [(0, 0.0), (1, 2.5)]


def test_rows_cut_short_are_a_parse_error() -> None:
    text = (FIXTURES / "nvidia-smi-loop" / "ksysguard-520.56.06-1gpu-loop.csv").read_text()
    cut = text[: text.rindex(",")]
    with pytest.raises(ParseError, match="values for 10 fields"):
        parsers.parse("nvidia-smi-loop", cut)
