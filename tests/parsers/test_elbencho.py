"""elbencho: both table layouts, figures read against the printed text."""

from __future__ import annotations

import pytest

from aibench import parsers
from aibench.errors import ParseError, ToolFailure
from tests.golden import FIXTURES, value_of

DIR = FIXTURES / "elbencho"


def _value(recs: list, metric: str, **dims: object) -> float:
    return value_of(recs, metric, unset=("pass",), **dims)


def test_elapsed_time_and_throughput_of_the_3x_example() -> None:
    text = (DIR / "v3.x-docs-result-example-write.txt").read_text()
    recs = parsers.parse("elbencho", text)
    assert "WRITE       Elapsed time     :    2m3.241s    2m5.755s" in text
    assert _value(recs, "elapsed", op="write", done="last") == pytest.approx(125.755)
    assert _value(recs, "throughput", op="write", done="first") == 33395


def test_sweep_tables_are_runs_and_repeated_phases_passes() -> None:
    recs = parsers.parse("elbencho", (DIR / "v1.x-storage-sweep-losf-nersc.txt").read_text())
    assert _value(recs, "ops_rate", op="write", done="last", run=1, item="files") == 53757
    assert _value(recs, "items", op="rmfiles", done="last", run=2, item="files") == 1048600
    assert _value(recs, "elapsed", op="dropcache", done="first", run=1, **{"pass": 2}) == 3.416


def test_latency_cells_in_both_forms() -> None:
    old = (
        "OPERATION RESULT TYPE        FIRST DONE  LAST DONE\n"
        "========= ================   ==========  =========\n"
        "READ      Elapsed ms       :       6001       6001\n"
        "          IO latency us    : [ min=91 avg=120 max=1583 ]\n"
        "---\n"
    )
    recs = parsers.parse("elbencho", old)
    assert _value(recs, "latency", op="read", stat="max", kind="io") == 1583.0
    new = old.replace(
        "IO latency us    : [ min=91 avg=120 max=1583 ]",
        "IO latency : [ min=91us avg=120us max=1.58ms ]",
    )
    assert _value(parsers.parse("elbencho", new), "latency", op="read", stat="max") == 1580.0


def test_errors_and_missing_tables() -> None:
    with pytest.raises(ToolFailure, match="ERROR: "):
        parsers.parse("elbencho", "ERROR: Unable to open file: /mnt/x\n")
    with pytest.raises(ParseError, match="no results table"):
        parsers.parse("elbencho", "elbencho - A distributed benchmark\n")
