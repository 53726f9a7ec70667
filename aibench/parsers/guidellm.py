"""GuideLLM: the benchmark report JSON (``guidellm run ... --output kind=json,path=F``).

Tested on GuideLLM 0.8.1 reports. One report holds one benchmark per load level
(``benchmarks[]``); each is read from its ``config.strategy`` and ``metrics``, with dims
``load`` (the strategy: concurrent, constant, poisson, synchronous, throughput ...) and
``concurrency`` (int, ``streams``) or ``rate`` (requests/s) when the strategy has one.

Emitted per benchmark, from the successful requests (GuideLLM's ``successful`` block):
``request_throughput`` (queries/s), ``output_token_throughput`` (tokens/s), ``ttft``,
``itl`` and ``tpot`` (ms) and ``e2e_latency`` (s, GuideLLM's ``request_latency``), each
with dim ``stat`` = mean | p50 | p90 | p99; ``requests`` (count, all), ``error_rate`` (%:
errored / total) and ``errors`` (count) with dim ``kind`` = errored | incomplete.

A report without ``benchmarks`` is a ParseError; a benchmark whose metric block lacks
``successful`` values that its ``request_totals`` say exist is a ParseError naming the
metric. Nothing is invented for a level with no successful request: only its counts.

The console tables GuideLLM prints (``Benchmarks Info:``, ``Benchmarks Stats:``; 0.2.x and
later) are read too, into the same metrics and dims: see
:mod:`aibench.parsers._guidellm_console` (including the version whose ``Req Latency (ms)``
column holds seconds, decided by the values and said in a Note), and those of 0.4 and
later (``ℹ Request Latency Statistics``, ``ℹ Server Throughput Statistics``): see
:mod:`aibench.parsers._guidellm_titled`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aibench.errors import ParseError
from aibench.model import FrozenDims, Measurement, Note
from aibench.parsers import Parser
from aibench.parsers._guidellm_console import detect_console, parse_console
from aibench.parsers._guidellm_titled import detect_titled, parse_titled
from aibench.parsers._util import json_document

TOOL = "guidellm"
STATS = (("mean", None), ("p50", "p50"), ("p90", "p90"), ("p99", "p99"))
LATENCIES = (
    ("ttft", "time_to_first_token_ms", "ms"),
    ("itl", "inter_token_latency_ms", "ms"),
    ("tpot", "time_per_output_token_ms", "ms"),
    ("e2e_latency", "request_latency", "s"),
)


def _num(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ParseError(TOOL, f"{where}: not a number: {v!r}")
    return float(v)


def _dims(b: Mapping[str, Any]) -> dict[str, str | int | float]:
    strat = (b.get("config") or {}).get("strategy") or {}
    dims: dict[str, str | int | float] = {}
    if isinstance(strat.get("type_"), str):
        dims["load"] = strat["type_"]
    if isinstance(strat.get("streams"), int) and not isinstance(strat.get("streams"), bool):
        dims["concurrency"] = strat["streams"]
    rate = strat.get("rate")
    if isinstance(rate, int | float) and not isinstance(rate, bool):
        dims["rate"] = float(rate)
    return dims


def _benchmark(b: Mapping[str, Any], i: int) -> list[Measurement]:
    where = f"benchmarks[{i}]"
    metrics = b.get("metrics")
    if not isinstance(metrics, dict) or not isinstance(metrics.get("request_totals"), dict):
        raise ParseError(TOOL, f"{where}: no metrics.request_totals")
    dims = _dims(b)
    totals = metrics["request_totals"]
    total = _num(totals.get("total"), f"{where}.request_totals.total")
    ok = _num(totals.get("successful"), f"{where}.request_totals.successful")
    out: list[Measurement] = []

    def m(metric: str, value: float, unit: str, **extra: str) -> None:
        out.append(Measurement(TOOL, metric, value, unit, FrozenDims({**dims, **extra})))

    if ok > 0:
        for metric, key, unit in (
            ("request_throughput", "requests_per_second", "queries/s"),
            ("output_token_throughput", "output_tokens_per_second", "tokens/s"),
        ):
            block = (metrics.get(key) or {}).get("successful")
            if not isinstance(block, dict):
                raise ParseError(TOOL, f"{where}.metrics.{key}: no successful values")
            m(metric, _num(block.get("mean"), f"{where}.metrics.{key}.mean"), unit)
        for metric, key, unit in LATENCIES:
            block = (metrics.get(key) or {}).get("successful")
            if not isinstance(block, dict):
                raise ParseError(TOOL, f"{where}.metrics.{key}: no successful values")
            pct = block.get("percentiles") or {}
            for stat, p in STATS:
                raw = block.get("mean") if p is None else pct.get(p)
                m(metric, _num(raw, f"{where}.metrics.{key}.{stat}"), unit, stat=stat)
    m("requests", total, "count")
    m("error_rate", 100.0 * _num(totals.get("errored", 0), where) / total if total else 0.0, "%")
    for kind in ("errored", "incomplete"):
        n = _num(totals.get(kind, 0), f"{where}.request_totals.{kind}")
        if n:
            m("errors", n, "count", kind=kind)
    return out


def parse(text: str) -> list[Measurement | Note]:
    if not text.lstrip().startswith("{") and detect_console(text):
        return parse_console(text)
    if not text.lstrip().startswith("{") and detect_titled(text):
        return [*parse_titled(text)]
    doc, _line = json_document(TOOL, text)
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise ParseError(TOOL, "no benchmarks list: not a GuideLLM report")
    out: list[Measurement | Note] = []
    for i, b in enumerate(doc["benchmarks"]):
        if not isinstance(b, dict):
            raise ParseError(TOOL, f"benchmarks[{i}] is not an object")
        out += _benchmark(b, i)
    return out


def detect(text: str) -> bool:
    return '"guidellm_version"' in text[:4096] or detect_console(text) or detect_titled(text)


PARSER = Parser(
    name=TOOL,
    parse=parse,
    description="GuideLLM benchmark report JSON (one benchmark per load level)",
    detect=detect,
)
