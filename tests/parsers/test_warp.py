"""warp: both report layouts, figures read against the printed text."""

from __future__ import annotations

import pytest

from aibench import parsers
from aibench.errors import ParseError, ToolFailure
from tests.golden import FIXTURES, value_of

DIR = FIXTURES / "warp"


def _value(recs: list, metric: str, **dims: object) -> float:
    return value_of(recs, metric, unset=("host",), **dims)


def test_older_layout_average_hosts_and_segments() -> None:
    text = (DIR / "v0.x-k8s-guide-put-get-4hosts.txt").read_text()
    recs = parsers.parse("warp", text)
    assert "* Average: 412.73 MiB/s, 12.90 obj/s" in text
    assert _value(recs, "throughput", op="put", stat="mean") == 412.73
    assert _value(recs, "ops_rate", op="get", stat="median") == 27.08
    host = "http://minio-3.minio.default.svc.cluster.local:9000"
    assert _value(recs, "throughput", op="get", host=host) == 322.47
    assert {r.dims["concurrency"] for r in recs} == {256}


def test_newer_layout_latency_in_ms() -> None:
    text = (DIR / "v1.x-readme-multipart-put.txt").read_text()
    recs = parsers.parse("warp", text)
    assert "Fastest: 53.6ms, Slowest: 6976.4ms, StdDev: 1027.5ms" in text
    assert _value(recs, "latency", op="putpart", stat="max") == 6976.4
    assert _value(recs, "ops_rate", op="putpart", stat="mean") == 266.85


def test_ttfb_in_seconds_and_errors_fail_the_step() -> None:
    text = (
        "Report: GET. Concurrency: 64. Ran: 57s\n"
        " * Average: 61.54 MiB/s, 61.54 obj/s\n"
        " * TTFB: Avg: 34ms, Best: 5ms, 25th: 12ms, Median: 16ms, 75th: 21ms, 90th: 106ms,"
        " 99th: 392ms, Worst: 1.028s StdDev: 70ms\n"
        " * Reqs: 261, Errs: 3, Objs: 261, Bytes: 261.0MiB\n"
    )
    with pytest.raises(ToolFailure, match="3 requests failed") as exc:
        parsers.parse("warp", text)
    assert _value(exc.value.partial, "ttfb", op="get", stat="max") == 1028.0


def test_no_report_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match=r"no 'Report: OP\.'"):
        parsers.parse("warp", "warp: Benchmark starting...\n")


def test_a_garbled_rate_is_not_read_as_a_number() -> None:
    """A rate cut into (".2.90 obj/s") is no rate: the report has no Average, a ParseError,
    never a ValueError out of the parser."""
    with pytest.raises(ParseError, match="summary with an Average"):
        parsers.parse("warp", "Report: GET. Concurrency: 4\n * Average: .2.90 obj/s\n")
