"""redis-benchmark's text reports: figures read against the printed text."""

from __future__ import annotations

import pytest

from aibench import parsers
from aibench.errors import ToolFailure
from tests.golden import FIXTURES
from tests.golden import value_of as _value

DIR = FIXTURES / "redis-benchmark"


def test_summary_tables_of_a_run_with_progress_lines() -> None:
    """The throughput line used to be cut to 'oughput summary': the numbers are read whole."""
    text = (DIR / "v7.0.15-text-set-get-c20.out").read_text()
    recs = parsers.parse("redis-benchmark", text)
    assert "  throughput summary: 51679.59 requests per second" in text
    assert _value(recs, "ops_rate", op="set") == 51679.59
    assert "        0.318     0.016     0.087     2.207     5.455    11.991" in text
    assert _value(recs, "latency", op="set", stat="mean") == 0.318
    assert _value(recs, "latency", op="set", stat="p99") == 5.455
    assert _value(recs, "ops_rate", op="get") == 67340.07


def test_quiet_lines_give_rate_and_p50() -> None:
    recs = parsers.parse("redis-benchmark", (DIR / "v7.0.15-quiet-set-get-lpush.out").read_text())
    assert _value(recs, "ops_rate", op="lpush") == 50125.32
    assert _value(recs, "latency", op="lpush", stat="p50") == 0.087


def test_a_password_the_server_wants_is_a_tool_failure() -> None:
    with pytest.raises(ToolFailure, match="NOAUTH Authentication required"):
        parsers.parse("redis-benchmark", (DIR / "v7.0.15-noauth.out").read_text())


def test_no_result_names_the_last_lines_whole() -> None:
    with pytest.raises(ToolFailure) as exc:
        parsers.parse("redis-benchmark", "====== SET ======\n  100 requests completed\n")
    assert exc.value.reason == "no result row: ====== SET ====== | 100 requests completed"
