"""vLLM's serving benchmark: the result summary and the ``--save-result`` JSON.

Reads what ``vllm bench serve`` (and before it ``benchmarks/benchmark_serving.py`` of the
vLLM repository) reports for one run against an OpenAI-compatible endpoint:

* the text summary it prints, from ``============ Serving Benchmark Result ============``
  to the closing line of ``=``; the lines it prints before it (``Traffic request rate:``,
  ``Maximum request concurrency:``) give the load's dims. Tested on summaries that
  ``benchmark_serving.py`` printed in 2025: upstream vLLM's, the Gaudi fork's (with the
  ``Maximum request concurrency`` header) and a vllm-ascend fork's (with an extra
  ``Accuracy`` section), and on ``vllm bench serve`` summaries of 2025-2026 (vLLM's
  documentation and recipes: ``Failed requests``, ``Maximum request concurrency`` and
  ``Request rate configured (RPS)`` inside the block, peak throughput and concurrency).
  and an embeddings run (``--backend openai-embeddings``: no generated tokens, an
  ``End-to-end Latency`` section). The ``Pxx`` rows of ``--metric-percentiles`` are read
  by the same rules; no capture of them is among the tests yet.
* the result JSON (``--save-result``): one object, or one per line as
  ``--append-result`` writes them. Tested on that vllm-ascend fork's results of 2025
  (keys ``completed``, ``duration``, ``request_throughput``, ``output_throughput``,
  ``{mean,median,std,p99}_{ttft,tpot,itl}_ms``, ``max_concurrency``, ``request_rate``).

A log holding several summaries (or JSON lines) gives one record set per run, each with
dim ``run`` (1, 2 ...); one run has no ``run`` dim.

Emitted per run, in the vocabulary of the aiperf and guidellm parsers, with dims
``concurrency`` (int, from ``Maximum request concurrency`` / ``max_concurrency`` when
set) and ``rate`` (requests/s, when the request rate is finite; ``inf`` sends all requests
at once and sets no ``rate``):

* ``request_throughput`` and ``request_goodput`` (queries/s), ``output_token_throughput``,
  ``total_token_throughput`` and ``peak_output_token_throughput`` (tokens/s);
* ``ttft``, ``tpot`` (per request, the time after the first token over the tokens after
  it: what aiperf calls ``itl``), ``itl`` (vLLM's: the gaps between tokens) and
  ``e2e_latency`` (ms), each with dim ``stat`` = mean | p50 (vLLM's median) | p90 | p99 |
  any other percentile vLLM printed;
* ``successful_requests``, ``input_tokens``, ``output_tokens`` and
  ``peak_concurrent_requests`` (count), ``duration`` (s);
* when vLLM reports failed requests (the ``Failed requests`` line, the JSON's ``failed``
  key): ``requests`` (count, successful and failed), ``errors`` (count, dim ``kind`` =
  failed) and ``error_rate`` (%). Older versions do not report them, and nothing is
  invented then.

A summary without its closing line, a known line whose value is not a number, a line that
is neither a ``label: value`` line nor a section rule, or a run missing the successful
requests, duration or request throughput is a ParseError (never partial
numbers); so is SGLang's ``bench_serving`` summary (same banner, other lines). The
``Speculative Decoding`` section (a server with a draft model) gives
``spec_acceptance_rate`` (%), ``spec_acceptance_length`` (tokens per step),
``spec_drafts``, ``spec_draft_tokens``, ``spec_accepted_tokens`` (count) and
``spec_position_acceptance`` (%, dim ``position``: 0, 1 ...). Other sections vLLM or a
fork adds (``Accuracy``) are not read.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from aibench.errors import ParseError
from aibench.model import FrozenDims, Measurement, Scalar
from aibench.parsers import Parser
from aibench.traits import Traits

TOOL = "vllm-bench-serve"
BANNER = re.compile(r"^=+ Serving Benchmark Result =+\s*$")
CLOSE = re.compile(r"^={20,}\s*$")
RULE = re.compile(r"^-{2,}[^:]*-{2,}\s*$")  # ---------------Time to First Token----------
LINE = re.compile(r"^(?P<label>[^:]+):(?P<value>.*)$")
NUMBER = re.compile(r"^-?\d+(?:\.\d+)?$")
LATENCY = re.compile(r"^(?P<stat>Mean|Median|P\d+(?:\.\d+)?) (?P<what>TTFT|TPOT|ITL|E2EL) \(ms\)$")
LATENCY_KEY = re.compile(r"^(?P<stat>mean|median|p\d+(?:\.\d+)?)_(?P<what>ttft|tpot|itl|e2el)_ms$")
METRIC = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2el": "e2e_latency"}

# label in the summary -> (metric, unit); None: a dim or an error count read separately
# the "Speculative Decoding" section of a server with a draft model (EAGLE, DFlash ...)
SPEC_DECODE = {
    "Acceptance rate (%)": ("spec_acceptance_rate", "%"),
    "Acceptance length": ("spec_acceptance_length", "count"),
    "Drafts": ("spec_drafts", "count"),
    "Draft tokens": ("spec_draft_tokens", "count"),
    "Accepted tokens": ("spec_accepted_tokens", "count"),
}
POSITION = re.compile(r"^Position \d+$")
SCALARS: dict[str, tuple[str, str] | None] = {
    "Successful requests": ("successful_requests", "count"),
    "Failed requests": None,
    "Maximum request concurrency": None,
    "Traffic request rate": None,
    "Request rate configured (RPS)": None,
    "Benchmark duration (s)": ("duration", "s"),
    "Total input tokens": ("input_tokens", "count"),
    "Total generated tokens": ("output_tokens", "count"),
    "Request throughput (req/s)": ("request_throughput", "queries/s"),
    "Request goodput (req/s)": ("request_goodput", "queries/s"),
    "Output token throughput (tok/s)": ("output_token_throughput", "tokens/s"),
    "Total Token throughput (tok/s)": ("total_token_throughput", "tokens/s"),
    "Total token throughput (tok/s)": ("total_token_throughput", "tokens/s"),
    "Peak output token throughput (tok/s)": ("peak_output_token_throughput", "tokens/s"),
    "Peak concurrent requests": ("peak_concurrent_requests", "count"),
}
# the same numbers in the result JSON
JSON_SCALARS = {
    "completed": ("successful_requests", "count"),
    "duration": ("duration", "s"),
    "total_input_tokens": ("input_tokens", "count"),
    "total_output_tokens": ("output_tokens", "count"),
    "request_throughput": ("request_throughput", "queries/s"),
    "request_goodput": ("request_goodput", "queries/s"),
    "request_goodput:": ("request_goodput", "queries/s"),  # the key's spelling until 2025
    "output_throughput": ("output_token_throughput", "tokens/s"),
    "total_token_throughput": ("total_token_throughput", "tokens/s"),
    "max_output_tokens_per_s": ("peak_output_token_throughput", "tokens/s"),
    "max_concurrent_requests": ("peak_concurrent_requests", "count"),
}
# an embeddings run (--backend openai-embeddings) generates no tokens: no output throughput
REQUIRED = ("successful_requests", "duration", "request_throughput")
SGLANG_LABELS = ("Backend", "Total generated tokens (retokenized)", "Max request concurrency")

UNITS = {
    "request_throughput": "queries/s",
    "request_goodput": "queries/s",
    "output_token_throughput": "tokens/s",
    "total_token_throughput": "tokens/s",
    "peak_output_token_throughput": "tokens/s",
    "ttft": "ms",
    "tpot": "ms",
    "itl": "ms",
    "e2e_latency": "ms",
    "successful_requests": "count",
    "requests": "count",
    "errors": "count",
    "error_rate": "%",
    "input_tokens": "count",
    "output_tokens": "count",
    "peak_concurrent_requests": "count",
    "duration": "s",
}


def _stat(stat: str) -> str:
    s = stat.lower()
    return "p50" if s == "median" else s


class _Run:
    """What one summary or one result object says, collected before records are made."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.values: dict[tuple[str, str], tuple[float, str]] = {}  # (metric, stat) -> value
        self.dims: dict[str, Scalar] = {}
        self.failed: float | None = None
        self.positions: dict[int, float] = {}  # speculative decoding: acceptance per position

    def put(self, metric: str, stat: str, value: float, unit: str, line: int | None) -> None:
        if not math.isfinite(value):
            raise ParseError(TOOL, f"{self.where}: {metric} is not finite", line=line)
        key = (metric, stat)
        old = self.values.get(key)
        if old is not None and old[0] != value:
            # "Median" and "P50" are the same number; a second, other value is not
            raise ParseError(TOOL, f"{self.where}: two values for {metric} {stat}", line=line)
        self.values[key] = (value, unit)

    def concurrency(self, raw: str, line: int | None) -> None:
        if raw in ("None", "none", "null", "not set", ""):
            return
        if not raw.isdigit():
            raise ParseError(TOOL, f"{self.where}: concurrency {raw!r} is not a number", line=line)
        self.dims["concurrency"] = int(raw)

    def rate(self, raw: str, line: int | None) -> None:
        if raw in ("inf", "Infinity"):
            return
        if not NUMBER.match(raw):
            raise ParseError(TOOL, f"{self.where}: request rate {raw!r} is not a number", line=line)
        self.dims["rate"] = float(raw)

    def records(self, run: int | None) -> list[Measurement]:
        missing = [m for m in REQUIRED if (m, "") not in self.values]
        if missing:
            raise ParseError(TOOL, f"{self.where}: no {', '.join(missing)}: cut or not a result")
        dims: dict[str, Scalar] = dict(self.dims)
        if run is not None:
            dims["run"] = run

        def m(metric: str, value: float, unit: str, **extra: Scalar) -> Measurement:
            return Measurement(TOOL, metric, value, unit, FrozenDims({**dims, **extra}))

        out = [
            m(metric, v, unit, **({"stat": stat} if stat else {}))
            for (metric, stat), (v, unit) in self.values.items()
        ]
        out += [
            m("spec_position_acceptance", v, "%", position=p)
            for p, v in sorted(self.positions.items())
        ]
        if self.failed is not None:
            ok = self.values[("successful_requests", "")][0]
            total = ok + self.failed
            out.append(m("requests", total, "count"))
            out.append(m("errors", self.failed, "count", kind="failed"))
            out.append(m("error_rate", 100.0 * self.failed / total if total else 0.0, "%"))
        return out


def _number(raw: str, where: str, label: str, line: int) -> float:
    if not NUMBER.match(raw):
        raise ParseError(TOOL, f"{where}: {label}: not a number: {raw!r}", line=line)
    return float(raw)


def _read_block(lines: list[str], start: int, run: _Run) -> int:
    """Read the summary whose banner is ``lines[start]``; return the index after it."""
    i = start + 1
    while i < len(lines):
        text = lines[i].strip()
        n = i + 1
        i += 1
        if CLOSE.match(text):
            return i
        if not text or RULE.match(text):
            continue
        if BANNER.match(text):
            break
        mt = LINE.match(text)
        if mt is None:
            raise ParseError(TOOL, f"{run.where}: not a result line: {text[:80]!r}", line=n)
        label, raw = mt["label"].strip(), mt["value"].strip()
        if label in SGLANG_LABELS:
            raise ParseError(TOOL, "an SGLang bench_serving summary, not vLLM's", line=n)
        lat = LATENCY.match(label)
        if lat is not None:
            value = _number(raw, run.where, label, n)
            run.put(METRIC[lat["what"].lower()], _stat(lat["stat"]), value, "ms", n)
        elif label == "Failed requests":
            run.failed = _number(raw, run.where, label, n)
        elif label == "Maximum request concurrency":
            run.concurrency(raw, n)
        elif label in ("Traffic request rate", "Request rate configured (RPS)"):
            run.rate(raw, n)
        elif label in SCALARS:
            metric, unit = SCALARS[label] or ("", "")
            run.put(metric, "", _number(raw, run.where, label, n), unit, n)
        elif label in SPEC_DECODE:
            metric, unit = SPEC_DECODE[label]
            run.put(metric, "", _number(raw, run.where, label, n), unit, n)
        elif POSITION.match(label):
            run.positions[int(label.split()[1])] = _number(raw, run.where, label, n)
        # any other label: a section vLLM or a fork added (accuracy ...)
    raise ParseError(TOOL, f"{run.where}: cut short: no closing line of '='", line=len(lines))


def parse_text(text: str) -> list[Measurement]:
    lines = text.splitlines()
    runs: list[_Run] = []
    header: dict[str, str] = {}
    i = 0
    while i < len(lines):
        text_i = lines[i].strip()
        if BANNER.match(text_i):
            run = _Run(f"result {len(runs) + 1} (line {i + 1})")
            if "concurrency" in header:
                run.concurrency(header["concurrency"], i + 1)
            if "rate" in header:
                run.rate(header["rate"], i + 1)
            header = {}
            i = _read_block(lines, i, run)
            runs.append(run)
            continue
        mt = LINE.match(text_i)
        if mt is not None:
            label, raw = mt["label"].strip(), mt["value"].strip()
            if label == "Maximum request concurrency":
                header["concurrency"] = raw
            elif label == "Traffic request rate":
                header["rate"] = raw
            elif SCALARS.get(label) is not None or LATENCY.match(label):
                # a result line with no banner above it: a summary whose head was lost
                raise ParseError(TOOL, f"{label!r} outside a result summary", line=i + 1)
        i += 1
    if not runs:
        raise ParseError(TOOL, "no 'Serving Benchmark Result' summary in the output")
    several = len(runs) > 1
    out: list[Measurement] = []
    for k, run in enumerate(runs, start=1):
        out += run.records(k if several else None)
    return out


def _json_run(doc: Mapping[str, Any], where: str) -> _Run:
    run = _Run(where)
    for key, value in doc.items():
        if value is None:
            continue
        lat = LATENCY_KEY.match(key)
        known = JSON_SCALARS.get(key)
        if lat is None and known is None and key not in ("failed", "max_concurrency",
                                                         "request_rate"):  # fmt: skip
            continue
        if key == "request_rate":
            run.rate(str(value), None)
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ParseError(TOOL, f"{where}.{key}: not a number: {value!r}"[:200])
        if key == "failed":
            run.failed = float(value)
        elif key == "max_concurrency":
            run.concurrency(str(value), None)
        elif lat is not None:
            run.put(METRIC[lat["what"]], _stat(lat["stat"]), float(value), "ms", None)
        elif known is not None:
            run.put(known[0], "", float(value), known[1], None)
    return run


def parse_json(text: str) -> list[Measurement]:
    try:
        docs = [json.loads(text)]
    except json.JSONDecodeError as whole:
        if not text.lstrip().splitlines()[0].rstrip().endswith("}"):
            line = text.count("\n", 0, whole.pos) + 1
            raise ParseError(TOOL, f"invalid or truncated JSON: {whole.msg}", line=line) from None
        docs = []  # one result per line (--append-result)
        for n, line_text in enumerate(text.splitlines(), start=1):
            if not line_text.strip():
                continue
            try:
                docs.append(json.loads(line_text))
            except json.JSONDecodeError as exc:
                raise ParseError(TOOL, f"invalid or truncated JSON: {exc.msg}", line=n) from None
    if not docs or not all(isinstance(d, dict) for d in docs):
        raise ParseError(TOOL, "the result is not a JSON object (or one per line)")
    several = len(docs) > 1
    out: list[Measurement] = []
    for k, doc in enumerate(docs, start=1):
        out += _json_run(doc, f"result {k}").records(k if several else None)
    return out


def parse(text: str) -> list[Measurement]:
    if text.lstrip().startswith("{"):
        return parse_json(text)
    return parse_text(text)


def detect(text: str) -> bool:
    head = text[:8192]
    if text.lstrip().startswith("{"):
        # with --save-detailed the per-request lists come before the latency keys
        return all(f'"{k}"' in text for k in ("mean_ttft_ms", "request_throughput", "completed"))
    return (
        any(BANNER.match(line.strip()) for line in head.splitlines())
        and "Request throughput (req/s):" in head
        and "(retokenized)" not in head
        and not re.search(r"^Backend:", head, re.MULTILINE)
    )


PARSER = Parser(
    name=TOOL,
    parse=parse,
    description="vLLM serving benchmark (vllm bench serve / benchmark_serving.py): "
    "the printed result summary or the --save-result JSON",
    detect=detect,
    traits=Traits(units=UNITS, lower_is_better=frozenset({"errors", "error_rate"})),
)
