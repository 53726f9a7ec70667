"""s5cmd --stat: the summary table and its --json lines, read against the printed counts."""

from __future__ import annotations

import pytest

from aibench import parsers
from aibench.errors import ParseError
from aibench.model import Measurement
from tests.golden import FIXTURES

DIR = FIXTURES / "s5cmd"


def _counts(recs: list) -> dict[tuple[str, str], float]:
    return {(r.metric, str(r.dims["op"])): r.value for r in recs if isinstance(r, Measurement)}


def test_a_wildcard_copy_is_one_command() -> None:
    text = (DIR / "v2.3.0-stat-put-wildcard.out").read_text()
    assert text.count("\ncp src/") + text.startswith("cp src/") == 3
    assert "cp\t\t1\t0\t1\t" in text
    counts = _counts(parsers.parse("s5cmd", text))
    assert counts == {("commands", "cp"): 1.0, ("command_errors", "cp"): 0.0}


def test_json_stat_line_beside_the_result_lines() -> None:
    counts = _counts(parsers.parse("s5cmd", (DIR / "v2.3.0-json-stat-put.out").read_text()))
    assert counts[("ops", "cp")] == 3.0
    assert counts[("commands", "cp")] == 1.0


def test_a_row_whose_total_is_not_its_parts_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="Total 3 is not Error"):
        parsers.parse("s5cmd", "Operation\tTotal\tError\tSuccess\t\ncp\t\t3\t1\t1\t\n")
