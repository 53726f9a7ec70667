"""NVIDIA AIPerf: latency and throughput of an OpenAI-compatible inference endpoint.

Reads the summary AIPerf writes for one profiling run, ``profile_export_aiperf.json``
(``aiperf profile ... --artifact-dir DIR``; with a sweep, one per variation in
``DIR/<variation>/``). Tested on AIPerf 0.13.0 (export ``schema_version`` 1.4).

Emitted, each with dims ``api`` (chat | completions ...), ``streaming`` (bool), ``load``
(the profiling phase's type: concurrency | poisson | constant ...) and ``concurrency``
(int) or ``rate`` (requests/s) from the phase:

* ``request_throughput`` (queries/s), ``output_token_throughput`` (tokens/s);
* ``ttft``, ``itl`` (AIPerf's ``inter_token_latency``: per request, the time after the
  first token divided by the tokens after it, i.e. TPOT) and ``e2e_latency`` (ms), each
  with dim ``stat`` = mean | p50 | p90 | p99 (streaming only for ``ttft`` and ``itl``);
* ``requests`` (count, finished with or without error), ``error_rate`` (%) and
  ``errors`` (count) with dim ``kind`` (``http_500``, ``ClientConnectorError`` ...: the
  HTTP code when there is one, else the error type).

A run AIPerf reports as cancelled or incomplete (``was_cancelled``, ``is_complete``
false) is a ToolFailure, with what it measured as partial records; a document without
the ``request_count`` block is a ParseError. AIPerf's own run settings are read for the
dims only; its ``api_key`` is redacted by AIPerf and never read.

GenAI-Perf's ``profile_export_genai_perf.json`` (its ``genai-perf profile`` summary, the
format AIPerf grew from) is read the same way: the same blocks give the same metrics; it
has no request or error counts, so none are emitted; its flat ``input_config`` gives
``api`` (``endpoint_type``), ``streaming``, ``load`` = concurrency | request_rate and
``concurrency`` or ``rate``. Tested on GenAI-Perf 24.12-era exports (Triton, KServe).

The console table AIPerf and GenAI-Perf print (``NVIDIA AIPerf | LLM Metrics``, numbers
with thousands separators) is read too, into the same metrics: see
:mod:`aibench.parsers._aiperf_console`. Tested on the tables of AIPerf's own tutorials and
of a GenAI-Perf run against Qwen2.5-72B.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement
from aibench.parsers import Parser
from aibench.parsers._aiperf_console import detect_console, parse_console
from aibench.parsers._util import json_document

TOOL = "aiperf"
STATS = (("mean", "avg"), ("p50", "p50"), ("p90", "p90"), ("p99", "p99"))
LATENCIES = (("ttft", "time_to_first_token"), ("itl", "inter_token_latency"),
             ("e2e_latency", "request_latency"))  # fmt: skip
UNIT_MS = "ms"


def _number(block: Mapping[str, Any], key: str, where: str) -> float:
    value = block.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParseError(TOOL, f"{where}.{key}: not a number: {value!r}")
    if not math.isfinite(value):  # JSON's 1e999 reads as inf
        raise ParseError(TOOL, f"{where}.{key}: not a finite number: {value!r}")
    return float(value)


def _genai_perf_phase(cfg: Mapping[str, Any]) -> dict[str, str | int | float | bool]:
    """GenAI-Perf's flat ``input_config`` (``endpoint_type``, ``streaming``,
    ``concurrency`` or ``request_rate``) as the same dims."""
    dims: dict[str, str | int | float | bool] = {}
    if isinstance(cfg.get("endpoint_type"), str):
        dims["api"] = cfg["endpoint_type"]
    if isinstance(cfg.get("streaming"), bool):
        dims["streaming"] = cfg["streaming"]
    rate = cfg.get("request_rate")
    if isinstance(rate, int | float) and not isinstance(rate, bool):
        dims["load"], dims["rate"] = "request_rate", float(rate)
    elif isinstance(cfg.get("concurrency"), int) and not isinstance(cfg["concurrency"], bool):
        dims["load"], dims["concurrency"] = "concurrency", cfg["concurrency"]
    return dims


def is_genai_perf(doc: Mapping[str, Any]) -> bool:
    """GenAI-Perf's ``profile_export_genai_perf.json``: the same statistics blocks as
    AIPerf's, no request counts, a flat ``input_config`` naming its ``service_kind``."""
    cfg = doc.get("input_config")
    return isinstance(cfg, dict) and "service_kind" in cfg and "aiperf_version" not in doc


def _phase(doc: Mapping[str, Any]) -> dict[str, str | int | float | bool]:
    cfg = doc.get("input_config")
    dims: dict[str, str | int | float | bool] = {}
    if not isinstance(cfg, dict):
        return dims
    if is_genai_perf(doc):
        return _genai_perf_phase(cfg)
    ep = cfg.get("endpoint") or {}
    if isinstance(ep.get("type"), str):
        dims["api"] = ep["type"]
    if isinstance(ep.get("streaming"), bool):
        dims["streaming"] = ep["streaming"]
    phases = [p for p in cfg.get("phases") or [] if isinstance(p, dict)]
    prof = [p for p in phases if p.get("kind", p.get("name")) == "profiling"] or phases
    if prof:
        p = prof[-1]
        if isinstance(p.get("type"), str):
            dims["load"] = p["type"]
        if p.get("type") == "concurrency" and isinstance(p.get("concurrency"), int):
            dims["concurrency"] = p["concurrency"]
        elif isinstance(p.get("rate"), int | float) and not isinstance(p.get("rate"), bool):
            dims["rate"] = float(p["rate"])
            if isinstance(p.get("concurrency"), int):
                dims["concurrency"] = p["concurrency"]
    return dims


def error_kind(details: Mapping[str, Any]) -> str:
    """``http_<code>`` when AIPerf saw an HTTP status, else its error type."""
    code = details.get("code")
    if isinstance(code, int) and not isinstance(code, bool):
        return f"http_{code}"
    kind = details.get("type")
    return str(kind) if kind else "unknown"


def _request_counts(doc: Mapping[str, Any]) -> tuple[float, float, dict[str, float]]:
    """The requests made (those that succeeded and those that failed), the error rate (%)
    and the failed requests by error kind, of an AIPerf summary."""
    ok = _number(doc["request_count"], "avg", "request_count")
    errors = doc.get("error_request_count")
    n_err = _number(errors, "avg", "error_request_count") if isinstance(errors, dict) else 0.0
    rate = doc.get("request_error_rate")
    if isinstance(rate, dict):
        error_rate = _number(rate, "avg", "request_error_rate")
    else:
        error_rate = 100.0 * n_err / (ok + n_err) if ok + n_err else 0.0
    kinds: dict[str, float] = {}
    for entry in doc.get("error_summary") or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("error_details"), dict):
            raise ParseError(TOOL, f"error_summary: unexpected entry {entry!r}"[:200])
        kind = error_kind(entry["error_details"])
        kinds[kind] = kinds.get(kind, 0.0) + _number(entry, "count", "error_summary[]")
    return ok + n_err, error_rate, kinds


def summary_records(doc: Mapping[str, Any]) -> list[Measurement]:
    dims = _phase(doc)

    def m(metric: str, value: float, unit: str, **extra: str) -> Measurement:
        return Measurement(TOOL, metric, value, unit, FrozenDims({**dims, **extra}))

    genai = is_genai_perf(doc)
    if not genai and not isinstance(doc.get("request_count"), dict):
        raise ParseError(
            TOOL,
            "no request_count block: neither an AIPerf summary export nor GenAI-Perf's "
            "profile_export_genai_perf.json (aiperf parser)",
        )
    out: list[Measurement] = []
    for metric, key, unit in (
        ("request_throughput", "request_throughput", "queries/s"),
        ("output_token_throughput", "output_token_throughput", "tokens/s"),
    ):
        if isinstance(doc.get(key), dict):
            out.append(m(metric, _number(doc[key], "avg", key), unit))
    for metric, key in LATENCIES:
        block = doc.get(key)
        if not isinstance(block, dict):
            continue
        if block.get("unit") != UNIT_MS:
            raise ParseError(TOOL, f"{key}: unit {block.get('unit')!r}, expected ms")
        out.extend(m(metric, _number(block, k, key), UNIT_MS, stat=s) for s, k in STATS)
    if genai:  # GenAI-Perf exports no request or error counts
        if not out:
            raise ParseError(TOOL, "GenAI-Perf export without a throughput or latency block")
        return out
    requests, error_rate, kinds = _request_counts(doc)
    out.append(m("requests", requests, "count"))
    out.append(m("error_rate", error_rate, "%"))
    out.extend(m("errors", n, "count", kind=k) for k, n in sorted(kinds.items()))
    if doc.get("was_cancelled") is True or doc.get("is_complete") is False:
        raise ToolFailure(TOOL, "AIPerf reports the run as cancelled or incomplete",
                          partial=list(out))  # fmt: skip
    return out


def parse(text: str) -> list[Measurement]:
    if not text.lstrip().startswith("{") and detect_console(text):
        return parse_console(text)
    doc, _line = json_document(TOOL, text)
    if not isinstance(doc, dict):
        raise ParseError(TOOL, "the summary is not a JSON object")
    return summary_records(doc)


def detect(text: str) -> bool:
    head = text[:4096]
    return (
        '"aiperf_version"' in head
        or ('"time_to_first_token"' in head and '"request_throughput"' in head)
        or detect_console(text)
    )


def load(text: str) -> dict[str, Any]:
    """The summary document itself (for the runner's cross-checks)."""
    doc = json.loads(text)
    if not isinstance(doc, dict):
        raise ParseError(TOOL, "the summary is not a JSON object")
    return doc


PARSER = Parser(
    name=TOOL,
    parse=parse,
    description="AIPerf profile_export_aiperf.json (one profiling run)",
    detect=detect,
)
