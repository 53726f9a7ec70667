"""MLPerf Inference LoadGen parsers: summary and detail, checked against each other."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from aibench import units
from aibench.errors import ParseError
from aibench.model import Fact, Measurement
from aibench.parsers import detect
from aibench.parsers.mlperf_inference import parse_detail, parse_summary

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SUM = FIXTURES / "mlperf-inference-summary"
DET = FIXTURES / "mlperf-inference-detail"
Records = list[Measurement | Fact]

# captured pairs: the summary and the detail log of the same LoadGen run
PAIRS = sorted(
    p.name[: -len("_mlperf_log_summary.txt")] for p in SUM.glob("loadgen6_*_summary.txt")
)


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def facts(recs: Records) -> dict[str, object]:
    return {r.name: r.value for r in recs if isinstance(r, Fact)}


def values(recs: Records) -> dict[tuple[str, float | None], float]:
    out: dict[tuple[str, float | None], float] = {}
    for r in recs:
        if isinstance(r, Measurement):
            pct = r.dims.get("percentile")
            key = (r.metric, float(pct) if isinstance(pct, int | float) else None)
            assert key not in out, f"duplicate {key}"
            out[key] = r.value
    return out


def test_server_invalid_names_the_failing_constraints() -> None:
    recs = parse_summary(text(SUM / "loadgen6_PySUT_Server_INVALID_latency_mlperf_log_summary.txt"))
    f = facts(recs)
    assert f["result_validity"] == "INVALID"
    assert f["perf_constraints_met"] is False
    assert f["min_duration_met"] is True
    assert f["failed_constraints"] == "perf_constraints_met, early_stopping_met"
    assert f["recommendation"] == "Reduce target QPS to improve latency."


def test_head_only_invalid_summary_names_min_duration() -> None:
    recs = parse_summary(
        text(SUM / "loadgen_PySUT_Offline_INVALID_min_duration_summary_head_only.txt")
    )
    assert facts(recs)["failed_constraints"] == "min_duration_met"
    assert values(recs) == {("samples_per_second", None): 1.21305}


def test_offline_llm_samples_and_tokens_per_second() -> None:
    recs = parse_summary(
        text(SUM / "v4.1_NVIDIA_H200x8_llama2-70b-99_Offline_VALID_mlperf_log_summary.txt")
    )
    v = values(recs)
    assert v[("samples_per_second", None)] == 107.477
    assert v[("tokens_per_second", None)] == 31302.7
    tps = next(r for r in recs if isinstance(r, Measurement) and r.metric == "tokens_per_second")
    assert tps.unit == "tokens/s"
    assert tps.dims == {"scenario": "Offline", "mode": "PerformanceOnly"}


def test_singlestream_primary_percentile_is_one_record() -> None:
    recs = parse_summary(
        text(SUM / "v4.1_ConnectTech_Orin_gptj-99_SingleStream_VALID_mlperf_log_summary.txt")
    )
    v = values(recs)  # asserts there are no duplicates
    assert v[("latency", 90.0)] == 4079418411
    assert v[("early_stopping_latency", 90.0)] == 4145572039
    assert v[("early_stopping_latency", 99.0)] == 4996607198
    assert v[("latency_max", None)] == 5022440738


def test_v05_performance_mode_is_normalized() -> None:
    recs = parse_summary(text(SUM / "v0.5_NVIDIA_T4x20_resnet_Server_VALID_mlperf_log_summary.txt"))
    assert facts(recs)["mode"] == "PerformanceOnly"
    assert values(recs)[("scheduled_samples_per_second", None)] == 103532.13


@pytest.mark.parametrize(
    "name",
    [
        "v4.1_NVIDIA_H200x8_llama2-70b-99_Offline_accuracy_mode_mlperf_log_summary.txt",
        "loadgen6_PySUT_Offline_accuracy_mlperf_log_summary.txt",
    ],
)
def test_accuracy_summary_gives_facts_only(name: str) -> None:
    recs = parse_summary(text(SUM / name))
    assert recs
    assert all(isinstance(r, Fact) for r in recs)
    assert facts(recs)["result_validity"] is None


def test_cut_summary_is_a_parse_error() -> None:
    head = text(SUM / "loadgen6_PySUT_Server_VALID_mlperf_log_summary.txt").split("Result is")[0]
    with pytest.raises(ParseError, match="Result is"):
        parse_summary(head)


def test_unreadable_number_is_a_parse_error_with_its_line() -> None:
    src = text(SUM / "loadgen6_PySUT_Offline_mlperf_log_summary.txt").replace("45790.4", "45,790.4")
    with pytest.raises(ParseError) as ei:
        parse_summary(src)
    assert ei.value.line == 7


@pytest.mark.parametrize("junk", ["", "hello\n", "Result is : VALID\n"])
def test_not_a_summary(junk: str) -> None:
    with pytest.raises(ParseError):
        parse_summary(junk)


@pytest.mark.parametrize("case", PAIRS)
def test_summary_and_detail_of_one_run_agree(case: str) -> None:
    s = parse_summary(text(SUM / f"{case}_mlperf_log_summary.txt"))
    d = parse_detail(text(DET / f"{case}_mlperf_log_detail.txt"))
    fs, fd = facts(s), facts(d)
    if fs["result_validity"] is None:  # accuracy mode: no results in either log
        assert fd["result_validity"] is None
        assert fs["warnings_encountered"] is (values(d)[("warnings", None)] > 0)
        assert fs["errors_encountered"] is (values(d)[("errors", None)] > 0)
        return
    for name in (
        "scenario",
        "mode",
        "result_validity",
        "min_duration_met",
        "min_queries_met",
        "perf_constraints_met",
        "early_stopping_met",
    ):
        assert fs.get(name) == fd.get(name), name
    vs, vd = values(s), values(d)
    shared = set(vs) & set(vd)
    assert {("warnings", None), ("errors", None), ("latency_max", None)} <= shared
    for key in shared:
        # the summary rounds rates to 2 decimals, the detail log to 6 significant digits
        assert math.isclose(vs[key], vd[key], rel_tol=1e-4, abs_tol=0.01), key


def test_detail_counts_errors_and_names_the_first() -> None:
    recs = parse_detail(
        text(DET / "loadgen6_PySUT_MultiStream_INVALID_error_mlperf_log_detail.txt")
    )
    v = values(recs)
    assert v[("errors", None)] == 1
    assert v[("warnings", None)] == 1
    first = facts(recs)["first_error"]
    assert isinstance(first, str)
    assert first.startswith("error_runtime: Ending early: Ran out of generated queries")
    assert v[("query_latency", 99.0)] == 50114


def test_detail_llm_server_token_metrics() -> None:
    recs = parse_detail(text(DET / "v4.1_NVIDIA_H200x8_llama2-70b-99_Server_mlperf_log_detail.txt"))
    v = values(recs)
    assert v[("ttft", 99.0)] == 452744202
    assert v[("tpot", 50.0)] == 124285539
    assert v[("completed_tokens_per_second", None)] == 29228.2
    assert v[("warnings", None)] == 0
    assert facts(recs)["first_error"] is None
    # tokens per ns without a unit in its name: never reported as tokens/s
    assert not any(
        isinstance(r, Measurement) and r.unit == "tokens/s" and r.value < 1 for r in recs
    )


def test_detail_resnet_server_warnings_match_the_summary_count() -> None:
    recs = parse_detail(text(DET / "v4.1_NVIDIA_H200x8_resnet50_Server_mlperf_log_detail.txt"))
    summary = parse_summary(
        text(SUM / "v4.1_NVIDIA_H200x8_resnet50_Server_VALID_mlperf_log_summary.txt")
    )
    assert values(recs)[("warnings", None)] == values(summary)[("warnings", None)] == 9
    assert values(recs)[("completed_samples_per_second", None)] == 632229


def test_plaintext_detail_v05() -> None:
    recs = parse_detail(
        text(DET / "v0.5_NVIDIA_T4x20_resnet_Server_mlperf_log_detail_plaintext_format.txt")
    )
    f = facts(recs)
    assert f["scenario"] == "Server"
    assert f["mode"] == "PerformanceOnly"
    assert f["loadgen_version"] == ".5a1 @ 61220457de"
    assert values(recs) == {("errors", None): 0, ("warnings", None): 1}


def test_cut_detail_line_is_reported() -> None:
    src = text(DET / "loadgen6_PySUT_Server_VALID_mlperf_log_detail.txt").splitlines()
    i = next(n for n, ln in enumerate(src) if '"result_max_latency_ns"' in ln)
    src[i] = src[i][:40]
    recs = parse_detail("\n".join(src))
    assert values(recs)[("log_problems", None)] == 1
    assert ("latency_max", None) not in values(recs)
    assert facts(recs)["log_problem"] == f"line {i + 1}: invalid or cut :::MLLOG JSON"


@pytest.mark.parametrize("junk", ["", "hello\n", ":::MLLOG {broken\n"])
def test_not_a_detail_log(junk: str) -> None:
    with pytest.raises(ParseError):
        parse_detail(junk)


@pytest.mark.parametrize(
    ("folder", "parser"), [(SUM, "mlperf-inference-summary"), (DET, "mlperf-inference-detail")]
)
def test_every_fixture_is_detected_and_uses_known_units(folder: Path, parser: str) -> None:
    fn = parse_summary if parser.endswith("summary") else parse_detail
    for path in sorted(folder.glob("*.txt")):
        src = text(path)
        assert detect(src) == [parser], path.name
        for r in fn(src):
            if isinstance(r, Measurement):
                assert units.is_known(r.unit), (path.name, r.metric)
                assert "scenario" in r.dims, (path.name, r.metric)
                assert r.tool == "mlperf-inference"
            else:
                assert r.source == "mlperf-inference"


def test_v10_multistream_per_query_and_per_sample_blocks_are_told_apart() -> None:
    # LoadGen 1.0 MultiStream prints both blocks with the same keys: per-query stays
    # latency (what later summaries print alone), per-sample is sample_latency;
    # "Samples per query" is that scenario's result.
    recs = parse_summary(
        text(
            SUM / "v1.0_NVIDIA_AGX_Xavier_resnet50_MultiStream_old_samples_per_query_metric"
            "_mlperf_log_summary.txt"
        )
    )
    v = values(recs)  # asserts that no metric appears twice under the same dims
    assert v[("latency", 99.0)] == 48637796
    assert v[("sample_latency", 99.0)] == 48424468
    assert v[("sample_latency_min", None)] == 44877689
    assert ("latency_min", None) not in v  # the per-query block has no min/max/mean
    assert v[("samples_per_query", None)] == 96
    # the "Intervals between each IssueQuery" percentiles (all 1) are not latencies
    assert 1.0 not in {
        r.value for r in recs if isinstance(r, Measurement) and "latency" in r.metric
    }


def test_newer_multistream_single_block_is_still_latency() -> None:
    recs = parse_summary(
        text(SUM / "loadgen6_PySUT_MultiStream_INVALID_error_mlperf_log_summary.txt")
    )
    assert ("latency", 99.0) in values(recs)
    assert not [r for r in recs if isinstance(r, Measurement) and r.metric.startswith("sample_")]


def test_concatenated_samples_per_query_setting_is_not_reported() -> None:
    name = (
        "v5.1_ASUSTeK_AMD_llama2-70b-99_Offline_per_gpu_sample_concatenate_permutation_WARNING"
        "_mlperf_log_summary.txt"
    )
    recs = parse_summary(text(SUM / name))
    v = values(recs)
    assert ("samples_per_query", None) not in v  # 3000 is the setting, not what ran
    assert v[("samples_per_second", None)] == 15.9912
    assert v[("tokens_per_second", None)] == 4163.89
    assert v[("warnings", None)] == 1
    plain = parse_summary(text(SUM / name).replace("WARNING: sample_concatenate_permutation", "x"))
    assert values(plain)[("samples_per_query", None)] == 3000


def test_llm_server_summary_ttft_tpot_v41() -> None:
    recs = parse_summary(
        text(SUM / "v4.1_NVIDIA_H200x8_llama2-70b-99_Server_VALID_TTFT_TPOT_mlperf_log_summary.txt")
    )
    v = values(recs)
    assert v[("completed_tokens_per_second", None)] == 29228.22
    assert v[("ttft", 99.0)] == 452744202
    assert v[("tpot", 99.0)] == 146040006
    assert v[("target_ttft", None)] == 2e9
    assert v[("target_tpot", None)] == 2e8
    assert facts(recs)["early_stopping_met"] is True


def test_real_multistream_summary_latency_is_the_detail_query_latency() -> None:
    # a real MultiStream run (8 samples per query): per-sample and per-query latencies
    # differ; the summary's latency is per query, the detail's latency per sample
    name = "v5.1_HPE_ML30_RTX4000Ada_retinanet_MultiStream"
    s = values(parse_summary(text(SUM / f"{name}_mlperf_log_summary.txt")))
    d = values(parse_detail(text(DET / f"{name}_mlperf_log_detail.txt")))
    assert s[("latency", 99.0)] == d[("query_latency", 99.0)] == 29959756
    assert d[("latency", 99.0)] == 29863862  # per sample
    assert s[("latency_min", None)] == d[("query_latency_min", None)] == 28400158
    assert s[("early_stopping_latency", 99.0)] == 29964648


_PCT_KEY = re.compile(
    r'"key": "result_(first_token_|time_per_output_token_)?(\d+\.\d+)_percentile_'
    r'(per_query_latency_ns|latency_ns|ns)", "value": (\d+)'
)
_PCT_METRIC = {
    ("", "latency_ns"): "latency",
    ("", "per_query_latency_ns"): "query_latency",
    ("first_token_", "latency_ns"): "ttft",
    ("time_per_output_token_", "ns"): "tpot",
}


@pytest.mark.parametrize(
    "path", sorted(p for p in DET.glob("*.txt") if ":::MLLOG" in text(p)), ids=lambda p: p.name
)
def test_every_percentile_key_of_a_detail_log_is_a_latency_record(path: Path) -> None:
    """``result_99.00_percentile_latency_ns`` and the other percentile keys, as logged,
    from the v1.0 round (LoadGen .5a1) to LoadGen 6."""
    raw = text(path)
    printed = _PCT_KEY.findall(raw)
    if "PerformanceOnly" in raw and '"result_validity"' in raw:
        assert printed, "a performance run's detail log prints its percentiles"
    try:
        recs = parse_detail(raw)
    except ParseError:
        pytest.fail(f"{path.name} not read")
    got = values(recs)
    for prefix, pct, tail, value in printed:
        metric = _PCT_METRIC[(prefix, tail)]
        assert got[(metric, float(pct))] == float(value), (metric, pct)
