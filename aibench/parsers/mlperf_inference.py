"""MLPerf Inference LoadGen logs: ``mlperf_log_summary.txt`` and ``mlperf_log_detail.txt``.

Two parsers, one tool (``mlperf-inference``). Tested on published results of MLPerf
Inference v0.5, v1.0, v4.1 and v5.1 (resnet/resnet50 Server, SingleStream and v1.0
MultiStream; gptj-99 SingleStream; llama2-70b-99 Offline and Server; dlrm-v2 Server;
TEST01 compliance runs; accuracy-mode summaries; a truncated INVALID summary)
and on logs written by mlcommons-loadgen 6.0.17 (Offline, Server, SingleStream,
MultiStream, token latencies, INVALID runs, a run with a LoadGen error).

**mlperf-inference-summary** reads ``mlperf_log_summary.txt``. Emits Facts ``sut_name``,
``scenario``, ``mode`` (normalized: LoadGen v0.5 "Performance" is ``PerformanceOnly``),
``result_validity`` (VALID / INVALID), one bool Fact per "... satisfied : Yes/NO" line
(``min_duration_met``, ``min_queries_met``, ``perf_constraints_met``,
``early_stopping_met``), ``failed_constraints`` (the names of those that are NO, comma
separated; only when INVALID), ``recommendation`` (LoadGen's advice, when given).
Measurements (dims ``scenario`` and ``mode`` on each; ``percentile`` where it applies):

* ``samples_per_second``, ``completed_samples_per_second``,
  ``scheduled_samples_per_second`` (samples/s); ``tokens_per_second``,
  ``completed_tokens_per_second``, ``tps_with_loadgen_overhead``,
  ``tps_without_loadgen_overhead`` (tokens/s); ``qps_with_loadgen_overhead``,
  ``qps_without_loadgen_overhead`` (queries/s);
* ``latency`` (ns, dims percentile; the scenario's primary percentile is the same record
  as the one in the stats block), ``latency_min``, ``latency_max``, ``latency_mean``;
  ``ttft`` / ``ttft_min`` / ``ttft_max`` / ``ttft_mean`` (first-token latency) and
  ``tpot`` / ``tpot_min`` / ``tpot_max`` / ``tpot_mean`` (time per output token), ns;
* ``early_stopping_latency``, ``early_stopping_ttft``, ``early_stopping_tpot`` (ns, dims
  percentile: LoadGen's early-stopping estimates);
* from the test parameters: ``target_qps`` (queries/s), ``target_latency``,
  ``target_ttft``, ``target_tpot`` (ns; only when not 0, since 0 means "not set"),
  ``min_duration`` (ms), ``min_query_count`` and ``samples_per_query`` (count);
* ``warnings`` and ``errors`` (count) from the closing "N warnings encountered" lines.

LoadGen 1.x MultiStream summaries carry ``Samples per query`` as the result
(``samples_per_query``) and two latency blocks with the same keys: the "Per-query
latency:" block is ``latency*``, as in the single block of later MultiStream summaries
(so ``latency`` p99 is the per-query latency MultiStream is judged on), and the
"Per-sample latency:" block is ``sample_latency*``. Beware: the detail log names these
the other way round (``latency`` per sample, ``query_latency`` per query), as LoadGen's
keys do. The "Intervals between each IssueQuery" percentiles are not latencies and are
skipped. When the test parameters say
``WARNING: sample_concatenate_permutation was set to true`` (LoadGen 5.x), the
``samples_per_query`` setting is not what ran and is not reported.

An accuracy-mode summary has no results block: it gives Facts only (``result_validity``
None with the reason, ``warnings_encountered`` and ``errors_encountered`` as bools) and no
error. Lines the parser does not know are skipped (newer LoadGen versions add lines);
a known line whose number cannot be read is a ParseError.

**mlperf-inference-detail** reads ``mlperf_log_detail.txt``: the ``:::MLLOG`` form
(LoadGen 1.0 and later) and the older plaintext form (``"pid": N, "tid": N, "ts": Nns :
key : value``). From the MLLOG form: the ``result_*`` keys as Measurements, named like
the summary's (``result_completed_samples_per_sec`` is ``completed_samples_per_second``,
``result_90.00_percentile_latency_ns`` is ``latency`` with percentile 90.0,
``result_first_token_*`` is ``ttft*``, ``result_time_per_output_token_*`` is ``tpot``,
``result_time_to_output_token_min`` is ``tpot_min``, MultiStream's
``result_*_per_query_latency_ns`` is ``query_latency`` (the latency MultiStream is
judged on, which the summary calls ``latency``; the detail's ``latency`` is per sample),
``result_query_count`` and ``result_overlatency_query_count`` are counts; units from the
key: ``_ns`` is ns, per-sec keys samples/s, token throughput tokens/s); unknown numeric
``result_*`` keys keep their name without the ``result_`` prefix, with unit ``count``
only when the name ends in ``_count`` and are otherwise skipped (a unit is never
guessed). Facts: ``scenario``, ``mode`` (effective_*), ``sut_name``,
``loadgen_version``, ``result_validity``, the ``*_met`` constraints,
``early_stopping_result`` texts, ``recommendation`` (result_invalid_reason, when not
empty), ``first_error`` (the first message whose metadata says is_error, value None with
a reason when there is none). Measurements ``errors`` and ``warnings`` count the
messages flagged is_error / is_warning; ``log_problems`` (count) and a ``log_problem``
Fact appear only when some ``:::MLLOG`` lines could not be decoded (a cut log).
``result_token_throughput`` is skipped: LoadGen 4.1 logs it in tokens per nanosecond
without saying so (8.1e-09 beside 29488 tokens/s with overhead).
From the plaintext form (LoadGen 0.5, no result keys): Facts ``scenario``, ``mode``,
``sut_name``, ``loadgen_version``, ``first_error``; Measurements ``errors`` and
``warnings`` (lines whose message starts with ERROR / WARNING).
"""

from __future__ import annotations

import re

from aibench.errors import ParseError
from aibench.model import Fact, FrozenDims, Measurement
from aibench.parsers import Parser, Record
from aibench.parsers._mlperf_loadgen import TOOL, constraint_name, mode, percentile
from aibench.parsers._mlperf_mllog import Event, number
from aibench.parsers._mlperf_mllog import read as read_mllog

# ---------------------------------------------------------------------------- summary

_BANNER = "MLPerf Results Summary"
_KV = re.compile(r"^\s*(.+?)\s*:\s*(.*?)\s*$")
_SATISFIED = re.compile(r"^\s*(.+?)\s+satisfied\s*:\s*(\S+)\s*$", re.I)
_PCT = r"(\d+(?:\.\d+)?)(?:th)?"
_ES_BLOCK = re.compile(r"^(?:(TTFT|TPOT)\s+)?Early Stopping Result:\s*$")
_ES_EST = re.compile(r"^\s*\*\s*Early stopping " + _PCT + r" percentile estimate:\s*(\S+)\s*$")
_COUNT_LINE = re.compile(r"^\s*(No|\d+)\s+(warnings?|errors?)\s+encountered", re.I)

# key (after the colon split) -> (metric, unit); percentile keys are handled by regex
_SUMMARY_KEYS: dict[str, tuple[str, str]] = {
    "samples per second": ("samples_per_second", "samples/s"),
    "samples per query": ("samples_per_query", "count"),
    "tokens per second": ("tokens_per_second", "tokens/s"),
    "completed samples per second": ("completed_samples_per_second", "samples/s"),
    "scheduled samples per second": ("scheduled_samples_per_second", "samples/s"),
    "completed tokens per second": ("completed_tokens_per_second", "tokens/s"),
    "qps w/ loadgen overhead": ("qps_with_loadgen_overhead", "queries/s"),
    "qps w/o loadgen overhead": ("qps_without_loadgen_overhead", "queries/s"),
    "tps w/ loadgen overhead": ("tps_with_loadgen_overhead", "tokens/s"),
    "tps w/o loadgen overhead": ("tps_without_loadgen_overhead", "tokens/s"),
    "min latency (ns)": ("latency_min", "ns"),
    "max latency (ns)": ("latency_max", "ns"),
    "mean latency (ns)": ("latency_mean", "ns"),
    "min first token latency (ns)": ("ttft_min", "ns"),
    "max first token latency (ns)": ("ttft_max", "ns"),
    "mean first token latency (ns)": ("ttft_mean", "ns"),
    "min time per output token (ns)": ("tpot_min", "ns"),
    "max time per output token (ns)": ("tpot_max", "ns"),
    "mean time per output token (ns)": ("tpot_mean", "ns"),
    "min time to output token (ns)": ("tpot_min", "ns"),
    "max time to output token (ns)": ("tpot_max", "ns"),
    "mean time to output token (ns)": ("tpot_mean", "ns"),
}
_PCT_KEYS = (
    (re.compile(r"^" + _PCT + r" percentile latency \(ns\)$"), "latency"),
    (re.compile(r"^" + _PCT + r" first token percentile latency \(ns\)$"), "ttft"),
    (re.compile(r"^" + _PCT + r" percentile first token latency \(ns\)$"), "ttft"),
    (re.compile(r"^" + _PCT + r" percentile time (?:to|per) output token \(ns\)$"), "tpot"),
)
# test parameters: key -> (metric, unit, skip when zero)
_PARAMS: dict[str, tuple[str, str, bool]] = {
    "target_qps": ("target_qps", "queries/s", True),
    "target_latency (ns)": ("target_latency", "ns", True),
    "ttft_latency (ns)": ("target_ttft", "ns", True),
    "tpot_latency (ns)": ("target_tpot", "ns", True),
    "min_duration (ms)": ("min_duration", "ms", False),
    "min_query_count": ("min_query_count", "count", False),
    "samples_per_query": ("samples_per_query", "count", False),
}
_ES_METRIC = {
    "": "early_stopping_latency",
    "TTFT": "early_stopping_ttft",
    "TPOT": "early_stopping_tpot",
}


def _fact(name: str, value: str | bool | None, reason: str = "") -> Fact:
    return Fact(source=TOOL, name=name, value=value, reason=reason)


class _Summary:
    """Reads a summary line by line, in the section each line is in, and accumulates its
    records without duplicates."""

    def __init__(self, n_lines: int) -> None:
        self.facts: list[Record] = []
        self.pending: list[tuple[int, str, str, float, dict[str, float]]] = []
        self.seen: dict[tuple[str, tuple[tuple[str, float], ...]], float] = {}
        self.scenario = ""
        self.mode = ""
        self.section = "head"
        # LoadGen 1.x MultiStream prints a "Per-query latency:" block AND a "Per-sample
        # latency:" block with the same keys: per-query stays ``latency*`` (as in the one
        # block of newer MultiStream summaries), per-sample is ``sample_latency*``.
        self.block = ""
        self.params_at = n_lines + 1
        self.concatenated = False  # LoadGen 5.x: the samples_per_query setting is not what ran
        self.es_kind: str | None = None
        self.recommendations: list[str] = []
        self.in_recs = False
        self.validity: str | None = None
        self.constraints: list[tuple[str, bool]] = []

    def measure(self, line: int, metric: str, unit: str, raw: str, **dims: float) -> None:
        v = number(raw)
        if v is None:
            raise ParseError(TOOL, f"{metric}: cannot read the number {raw!r}", line=line)
        key = (metric, tuple(sorted(dims.items())))
        if key in self.seen and self.seen[key] == v:
            return  # the primary metric repeated in the stats block
        self.seen[key] = v
        self.pending.append((line, metric, unit, v, dims))

    def line(self, n: int, raw: str) -> None:
        """One line: a section heading, the closing counts, a results line, a key: value."""
        ln = raw.rstrip()
        st = ln.strip()
        if not st.strip("="):  # blank, or a rule of "=" only
            return
        if _BANNER in ln:
            self.section = "results"
            return
        if st == "Additional Stats":
            self.section, self.es_kind, self.in_recs = "stats", None, False
            return
        if st == "Test Parameters Used":
            self.section, self.es_kind, self.in_recs = "params", None, False
            self.params_at = n
            return
        # _COUNT_LINE needs "No" or a digit first (st is ln without its leading blanks)
        cm = _COUNT_LINE.match(ln) if st[0] in "Nn" or st[0].isdecimal() else None
        if cm:
            k = 0 if cm.group(1).lower() == "no" else int(cm.group(1))
            metric = "warnings" if cm.group(2).lower().startswith("warning") else "errors"
            self.measure(n, metric, "count", str(k))
            return
        if self.section == "results" and self.results_line(n, ln, st):
            return
        kv = _kv(ln)
        if kv is not None:
            self.key_value(n, ln, *kv)

    def results_line(self, n: int, ln: str, st: str) -> bool:
        """A line of the results section that is no key: value (early stopping estimates,
        recommendations, constraints satisfied); whether it was one."""
        esm = _ES_BLOCK.match(st) if "Early Stopping Result:" in st else None
        if esm:
            self.es_kind, self.in_recs = (esm.group(1) or ""), False
            return True
        if st == "Recommendations:":
            self.in_recs, self.es_kind = True, None
            return True
        if st.startswith("*") or ln.startswith(" "):
            # bullet lines and their continuations belong to the current block
            if self.in_recs:
                self.recommendations.append(st.lstrip("*").strip())
                return True
            if self.es_kind is not None:
                em = _ES_EST.match(ln)
                if em:
                    metric = _ES_METRIC[self.es_kind]
                    self.measure(n, metric, "ns", em.group(2), percentile=percentile(em.group(1)))
                return True
        sat = _SATISFIED.match(ln)
        if sat:
            ok = sat.group(2).lower() == "yes"
            if sat.group(2).lower() not in ("yes", "no"):
                raise ParseError(TOOL, f"cannot read {sat.group(2)!r} as Yes/NO", line=n)
            self.constraints.append((constraint_name(sat.group(1)), ok))
            return True
        return False

    def key_value(self, n: int, ln: str, key: str, val: str) -> None:
        lk = key.lower()
        section = self.section
        if section in ("head", "results") and lk in ("sut name", "scenario", "mode", "result is"):
            if lk == "sut name":
                self.facts.append(_fact("sut_name", val))
            elif lk == "scenario":
                self.scenario = val
            elif lk == "mode":
                self.mode = mode(val)
            else:
                self.validity = val
            return
        if section == "stats" and lk in ("per-query latency", "per-sample latency"):
            self.block = lk.split()[0]
            return
        if section == "params":
            self.parameter(n, ln, key, val)
            return
        sample_block = section == "stats" and self.block == "per-sample"
        if lk in _SUMMARY_KEYS:
            metric, unit = _SUMMARY_KEYS[lk]
            if sample_block and metric.startswith("latency"):
                metric = "sample_" + metric
            self.measure(n, metric, unit, val)
            return
        for rx, metric in _PCT_KEYS if key[:1].isdecimal() else ():  # they start with \d
            pm = rx.match(key)
            if pm:
                if sample_block and metric == "latency":
                    metric = "sample_latency"
                self.measure(n, metric, "ns", val, percentile=percentile(pm.group(1)))
                break

    def parameter(self, n: int, ln: str, key: str, val: str) -> None:
        """A line of the test parameters used."""
        if ln.startswith("WARNING: sample_concatenate_permutation"):
            self.concatenated = True
            return
        p = _PARAMS.get(key.lower())
        if p is not None:
            v = number(val)
            if v is None:
                raise ParseError(TOOL, f"{key}: cannot read the number {val!r}", line=n)
            if not (p[2] and v == 0):
                self.measure(n, p[0], p[1], val)

    def records(self) -> list[Record]:
        """The facts (scenario, mode, validity, constraints, recommendations), then the
        measurements."""
        validity = self.validity
        if validity is None:
            raise ParseError(
                TOOL, "no 'Result is' line: the summary is cut or not a LoadGen summary"
            )
        if self.concatenated:
            self.pending = [
                p
                for p in self.pending
                if not (p[1] == "samples_per_query" and p[0] > self.params_at)
            ]
        facts: list[Record] = [
            _fact("scenario", self.scenario or None, "" if self.scenario else "no Scenario line"),
            _fact("mode", self.mode or None, "" if self.mode else "no Mode line"),
            *self.facts,
            _fact("result_validity", validity),
        ]
        facts += [_fact(name, ok) for name, ok in self.constraints]
        if validity.upper() == "INVALID":
            failed = [name for name, ok in self.constraints if not ok]
            if failed:
                facts.append(_fact("failed_constraints", ", ".join(failed)))
            else:
                reason = "INVALID, but no constraint says NO"
                facts.append(_fact("failed_constraints", None, reason))
        if self.recommendations:
            text = " ".join(r for r in self.recommendations if r)
            facts.append(_fact("recommendation", text))
        return facts + self.measurements()

    def measurements(self) -> list[Record]:
        base: dict[str, str | float] = {}
        if self.scenario:
            base["scenario"] = self.scenario
        if self.mode:
            base["mode"] = self.mode
        plain = FrozenDims(base)  # shared by the records without their own dims
        return [
            Measurement(TOOL, m, v, u, FrozenDims({**base, **d}) if d else plain)
            for _line, m, u, v, d in self.pending
        ]


def _kv(ln: str) -> tuple[str, str] | None:
    """``_KV.match(ln).groups()`` for a line without trailing blanks, with string methods:
    the key runs to the blanks before the first ":" after its first character (if the
    line's first character is that ":", the key is the blank before it, as the regex's
    backtracking has it), the value is the rest after the ":" and its leading blanks."""
    body = ln.lstrip()
    w = len(ln) - len(body)
    c = ln.find(":", w + 1)
    if c >= 0:
        return ln[w : len(ln[:c].rstrip())], ln[c + 1 :].lstrip()
    if w and body[:1] == ":":
        return ln[w - 1 : w], body[1:].lstrip()
    return None


def parse_summary(text: str) -> list[Record]:
    lines = text.splitlines()
    if not any(_BANNER in ln for ln in lines):
        return _summary_without_results(lines)
    s = _Summary(len(lines))
    for n, raw in enumerate(lines, start=1):
        s.line(n, raw)
    return s.records()


def _summary_without_results(lines: list[str]) -> list[Record]:
    """An accuracy-mode summary: only the closing warning/error lines."""
    counts: dict[str, int] = {}
    for ln in lines:
        cm = _COUNT_LINE.match(ln)
        if cm:
            k = 0 if cm.group(1).lower() == "no" else int(cm.group(1))
            counts["warnings" if cm.group(2).lower().startswith("warning") else "errors"] = k
    if not counts:
        raise ParseError(TOOL, "no 'MLPerf Results Summary' and no warning/error lines")
    out: list[Record] = [
        _fact(
            "result_validity",
            None,
            "no results block (an accuracy-mode summary: accuracy is judged from "
            "mlperf_log_accuracy.json)",
        )
    ]
    for kind in ("warnings", "errors"):
        if kind in counts:
            out.append(_fact(f"{kind}_encountered", counts[kind] > 0))
    return out


def detect_summary(text: str) -> bool:
    head = text[:4000]
    if _BANNER in head:
        return True
    body = [ln for ln in head.splitlines() if ln.strip()]
    return 0 < len(body) <= 4 and all(_COUNT_LINE.match(ln) for ln in body)


# ---------------------------------------------------------------------------- detail

_RESULT_PCT = (
    (re.compile(r"^result_first_token_" + _PCT + r"_percentile_latency_ns$"), "ttft"),
    (re.compile(r"^result_time_per_output_token_" + _PCT + r"_percentile_ns$"), "tpot"),
    (re.compile(r"^result_" + _PCT + r"_percentile_per_query_latency_ns$"), "query_latency"),
    (re.compile(r"^result_" + _PCT + r"_percentile_latency_ns$"), "latency"),
)
_RESULT_KEYS: dict[str, tuple[str, str]] = {
    "result_samples_per_second": ("samples_per_second", "samples/s"),
    "result_completed_samples_per_sec": ("completed_samples_per_second", "samples/s"),
    "result_scheduled_samples_per_sec": ("scheduled_samples_per_second", "samples/s"),
    "result_tokens_per_second": ("tokens_per_second", "tokens/s"),
    "result_completed_tokens_per_second": ("completed_tokens_per_second", "tokens/s"),
    "result_token_throughput_with_loadgen_overhead": ("tps_with_loadgen_overhead", "tokens/s"),
    "result_qps_with_loadgen_overhead": ("qps_with_loadgen_overhead", "queries/s"),
    "result_qps_without_loadgen_overhead": ("qps_without_loadgen_overhead", "queries/s"),
    "result_min_latency_ns": ("latency_min", "ns"),
    "result_max_latency_ns": ("latency_max", "ns"),
    "result_mean_latency_ns": ("latency_mean", "ns"),
    "result_first_token_min_latency_ns": ("ttft_min", "ns"),
    "result_first_token_max_latency_ns": ("ttft_max", "ns"),
    "result_first_token_mean_latency_ns": ("ttft_mean", "ns"),
    "result_time_to_output_token_min": ("tpot_min", "ns"),
    "result_time_to_output_token_max": ("tpot_max", "ns"),
    "result_time_to_output_token_mean": ("tpot_mean", "ns"),
    "result_min_query_latency_ns": ("query_latency_min", "ns"),
    "result_max_query_latency_ns": ("query_latency_max", "ns"),
    "result_mean_query_latency_ns": ("query_latency_mean", "ns"),
    "result_query_count": ("query_count", "count"),
    "result_overlatency_query_count": ("overlatency_query_count", "count"),
}
_RESULT_SKIP = {"result_token_throughput"}  # tokens per ns, unlabelled (see docstring)
_RESULT_FACTS = {
    "result_min_duration_met": "min_duration_met",
    "result_min_queries_met": "min_queries_met",
    "result_perf_constraints_met": "perf_constraints_met",
    "early_stopping_met": "early_stopping_met",
}
_PLAIN = re.compile(r'^"pid":\s*\d+,\s*"tid":\s*\d+,\s*"ts":\s*\d+ns\s*:\s?(.*)$')


def _bool(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no"):
        return value.strip().lower() in ("true", "yes")
    return None


def parse_detail(text: str) -> list[Record]:
    if ":::MLLOG" in text:
        return _detail_mllog(text)
    if _PLAIN.search(text.split("\n", 1)[0]) or any(
        _PLAIN.match(ln) for ln in text.splitlines()[:50]
    ):
        return _detail_plain(text)
    raise ParseError(TOOL, "neither :::MLLOG lines nor the plaintext detail form")


def _detail_mllog(text: str) -> list[Record]:
    events, problems, _marked = read_mllog(text)
    if not events:
        first = problems[0] if problems else None
        raise ParseError(TOOL, "no readable :::MLLOG line", line=first.line if first else None)
    first_value: dict[str, object] = {}
    for ev in events:
        first_value.setdefault(ev.key, ev.value)
    base, facts = _detail_head(first_value)
    meas: list[Record] = []
    errors = warnings = 0
    first_error: str | None = None
    for ev in events:
        if ev.metadata.get("is_error") is True:
            errors += 1
            if first_error is None:
                first_error = f"{ev.key}: {ev.value}"
        if ev.metadata.get("is_warning") is True:
            warnings += 1
        _detail_event(ev, base, facts, meas)
    if first_error is None:
        facts.append(_fact("first_error", None, "no message flagged is_error"))
    else:
        facts.append(_fact("first_error", first_error))
    meas.append(
        Measurement(tool=TOOL, metric="errors", value=errors, unit="count", dims=FrozenDims(base))
    )
    meas.append(
        Measurement(
            tool=TOOL, metric="warnings", value=warnings, unit="count", dims=FrozenDims(base)
        )
    )
    if problems:
        meas.append(
            Measurement(
                tool=TOOL,
                metric="log_problems",
                value=len(problems),
                unit="count",
                dims=FrozenDims(base),
            )
        )
        facts.append(_fact("log_problem", f"line {problems[0].line}: {problems[0].reason}"))
    return facts + meas


def _detail_head(first_value: dict[str, object]) -> tuple[dict[str, str | float], list[Record]]:
    """The dims every measurement carries (scenario, mode) and the facts of the run: the
    scenario, mode, SUT, LoadGen version and the result's validity."""
    scen = first_value.get("effective_scenario") or first_value.get("requested_scenario")
    tmode = first_value.get("effective_test_mode") or first_value.get("requested_test_mode")
    scen_s = scen if isinstance(scen, str) else ""
    mode_s = mode(tmode) if isinstance(tmode, str) else ""
    base: dict[str, str | float] = {}
    if scen_s:
        base["scenario"] = scen_s
    if mode_s:
        base["mode"] = mode_s
    facts: list[Record] = [
        _fact("scenario", scen_s or None, "" if scen_s else "no effective_scenario key"),
        _fact("mode", mode_s or None, "" if mode_s else "no effective_test_mode key"),
    ]
    for key, name in (("sut_name", "sut_name"), ("loadgen_version", "loadgen_version")):
        v = first_value.get(key)
        if isinstance(v, str):
            facts.append(_fact(name, v))
    rv = first_value.get("result_validity")
    if isinstance(rv, str):
        facts.append(_fact("result_validity", rv))
    else:
        facts.append(
            _fact("result_validity", None, "no result_validity key (accuracy mode or cut log)")
        )
    return base, facts


def _detail_event(
    ev: Event, base: dict[str, str | float], facts: list[Record], meas: list[Record]
) -> None:
    """One event's record, if it is a result: a fact (constraints, early stopping, why
    invalid) or a measurement (``result_*``)."""
    if ev.key in _RESULT_FACTS:
        b = _bool(ev.value)
        facts.append(_fact(_RESULT_FACTS[ev.key], b, "" if b is not None else f"{ev.value!r}"))
        return
    if ev.key.startswith("early_stopping_") and ev.key.endswith("_result"):
        if isinstance(ev.value, str) and ev.value.strip():
            facts.append(_fact(ev.key, " ".join(ev.value.split())))
        return
    if ev.key == "result_invalid_reason":
        if isinstance(ev.value, str) and ev.value.strip():
            facts.append(_fact("recommendation", " ".join(ev.value.split())))
        return
    if not ev.key.startswith("result_") or ev.key in _RESULT_SKIP or ev.key == "result_validity":
        return
    m = _result_measurement(ev.key, ev.value, ev.line, base)
    if m is not None:
        meas.append(m)


def _result_measurement(
    key: str, value: object, line: int, base: dict[str, str | float]
) -> Measurement | None:
    metric: str | None = None
    unit = ""
    dims = dict(base)
    if key in _RESULT_KEYS:
        metric, unit = _RESULT_KEYS[key]
    else:
        for rx, name in _RESULT_PCT:
            pm = rx.match(key)
            if pm:
                metric, unit = name, "ns"
                dims["percentile"] = percentile(pm.group(1))
                break
    if metric is None:
        if key.endswith("_count"):
            metric, unit = key[len("result_") :], "count"
        else:
            return None  # a unit is never guessed
    v = number(value)
    if v is None:
        raise ParseError(TOOL, f"{key}: not a number: {value!r}", line=line)
    return Measurement(tool=TOOL, metric=metric, value=v, unit=unit, dims=FrozenDims(dims))


def _plain_lines(text: str) -> tuple[dict[str, str], list[str], int]:
    """A plaintext detail log's first value of each key, its ERROR messages and the number
    of its WARNING lines (lines that are not a log line continue a multi-line value)."""
    first: dict[str, str] = {}
    errors: list[str] = []
    warnings = 0
    for ln in text.splitlines():
        m = _PLAIN.match(ln)
        if not m:
            continue  # continuation lines of multi-line values (git log, file hashes)
        msg = m.group(1)
        kv = _KV.match(msg)
        if kv:
            first.setdefault(kv.group(1), kv.group(2))
        up = msg.lstrip().upper()
        if up.startswith("ERROR"):
            errors.append(msg.strip())
        elif up.startswith("WARNING"):
            warnings += 1
    return first, errors, warnings


def _detail_plain(text: str) -> list[Record]:
    first, errors, warnings = _plain_lines(text)
    scen = first.get("Scenario")
    tmode = mode(first["Test mode"]) if "Test mode" in first else None
    sut = first.get("System Under Test (SUT) name")
    version = first.get("version")
    base: dict[str, str | float] = {}
    if scen:
        base["scenario"] = scen
    if tmode:
        base["mode"] = tmode
    facts: list[Record] = [
        _fact("scenario", scen, "" if scen else "no Scenario line"),
        _fact("mode", tmode, "" if tmode else "no Test mode line"),
    ]
    if sut:
        facts.append(_fact("sut_name", sut))
    if version:
        facts.append(_fact("loadgen_version", version))
    facts.append(
        _fact("result_validity", None, "the plaintext detail log (LoadGen 0.5) has no result keys")
    )
    if errors:
        facts.append(_fact("first_error", errors[0]))
    else:
        facts.append(_fact("first_error", None, "no ERROR line"))
    counts = [
        Measurement(tool=TOOL, metric=name, value=n, unit="count", dims=FrozenDims(base))
        for name, n in (("errors", len(errors)), ("warnings", warnings))
    ]
    return facts + counts


def detect_detail(text: str) -> bool:
    head = text[:20000]
    if ":::MLLOG" in head and '"mlperf::logging"' in head:
        return True
    return bool(_PLAIN.match(head.split("\n", 1)[0])) and "LoadgenVersionInfo" in head


PARSER = [
    Parser(
        name="mlperf-inference-summary",
        parse=parse_summary,
        description="MLPerf Inference LoadGen mlperf_log_summary.txt",
        detect=detect_summary,
    ),
    Parser(
        name="mlperf-inference-detail",
        parse=parse_detail,
        description="MLPerf Inference LoadGen mlperf_log_detail.txt (:::MLLOG or v0.5 plaintext)",
        detect=detect_detail,
    ),
]
