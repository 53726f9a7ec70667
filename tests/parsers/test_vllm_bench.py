"""vllm-bench-serve: what the golden fixtures do not show on their own."""

from __future__ import annotations

import pytest

from aibench import tools
from aibench.errors import ParseError
from aibench.parsers import vllm_bench
from tests.golden import FIXTURES

DIR = FIXTURES / "vllm-bench-serve"
C32 = (DIR / "benchmark_serving_c32_2runs.txt").read_text(encoding="utf-8")
RUNS3 = (DIR / "benchmark_serving_gptoss120b_3runs.txt").read_text(encoding="utf-8")
JSON = (DIR / "save_result_910b3_32prompts.json").read_text(encoding="utf-8")

# The head of an SGLang bench_serving summary (WILLIAM-qmul/SGLang-dLoRA,
# sglang+dLoRA/lora/migration_ilp/dlora_results.md): the same banner, other lines.
SGLANG = """============ Serving Benchmark Result ============
Backend:                                 sglang    
Traffic request rate:                    2.0       
Successful requests:                     996       
Benchmark duration (s):                  264.25    
Total input tokens:                      342460    
Total generated tokens:                  218257    
Total generated tokens (retokenized):    103837    
Request throughput (req/s):              3.77      
"""  # noqa: W291


def test_every_run_of_a_log_is_its_own_record_set() -> None:
    recs = vllm_bench.parse(RUNS3)
    thr = {r.dims["run"]: r.value for r in recs if r.metric == "request_throughput"}
    assert thr == {1: 0.43, 2: 0.46, 3: 0.57}
    p99 = [r.value for r in recs if r.metric == "ttft" and r.dims.get("stat") == "p99"]
    assert p99 == [298431.09, 321387.81, 324563.23]


def test_the_concurrency_printed_before_the_summary_is_a_dim() -> None:
    recs = vllm_bench.parse(C32)
    assert {r.dims["concurrency"] for r in recs} == {32}
    assert all("rate" not in r.dims for r in recs)  # rate inf: no rate dim


def test_a_summary_whose_banner_is_lost_is_an_error_not_one_run_less() -> None:
    lines = RUNS3.splitlines()
    second = [i for i, line in enumerate(lines) if "Serving Benchmark Result" in line][1]
    with pytest.raises(ParseError, match="outside a result summary"):
        vllm_bench.parse("\n".join(lines[:second] + lines[second + 1 :]))


def test_a_known_line_with_a_broken_number_is_an_error() -> None:
    with pytest.raises(ParseError, match="Mean TTFT"):
        vllm_bench.parse(C32.replace("7279.56", "7279.5x"))


def test_two_different_medians_are_an_error() -> None:
    text = RUNS3.replace(
        "Median TTFT (ms):                        10239.00  \n",
        "Median TTFT (ms):                        10239.00  \n"
        "P50 TTFT (ms):                           10240.00  \n",
    )
    with pytest.raises(ParseError, match="two values for ttft p50"):
        vllm_bench.parse(text)


def test_sglang_summaries_are_not_read_as_vllm() -> None:
    assert not vllm_bench.detect(SGLANG)
    with pytest.raises(ParseError, match="SGLang"):
        vllm_bench.parse(SGLANG + "=" * 50 + "\n")


def test_the_result_json_failed_key_gives_errors_and_error_rate() -> None:
    text = JSON.replace('"completed": 32,', '"completed": 30,\n    "failed": 2,')
    recs = {(r.metric, r.dims.get("kind")): r.value for r in vllm_bench.parse(text)}
    assert recs[("requests", None)] == 32
    assert recs[("errors", "failed")] == 2
    assert recs[("error_rate", None)] == pytest.approx(6.25)


def test_no_errors_are_invented_when_vllm_does_not_report_them() -> None:
    metrics = {r.metric for r in vllm_bench.parse(JSON)} | {r.metric for r in vllm_bench.parse(C32)}
    assert not metrics & {"errors", "error_rate", "requests"}


def test_a_result_json_without_throughput_is_an_error() -> None:
    with pytest.raises(ParseError, match="request_throughput"):
        vllm_bench.parse(JSON.replace('"request_throughput"', '"request_throughput_x"'))


def test_units_are_declared_for_every_metric_emitted() -> None:
    units = tools.traits("vllm-bench-serve").units
    for text in (C32, RUNS3, JSON):
        for r in vllm_bench.parse(text):
            assert units[r.metric] == r.unit
    assert not tools.higher_is_better("vllm-bench-serve", "errors", "count")


def test_a_detailed_result_is_detected_past_its_per_request_lists() -> None:
    """--save-detailed writes the per-request lists (ttfts, itls ...) before the latency
    keys, which may then start far past the head of the file."""
    detailed = JSON.replace(
        '"total_input_tokens"', '"ttfts": [' + "0.5, " * 4000 + '0.5],\n    "total_input_tokens"'
    )
    assert vllm_bench.detect(detailed)
    assert vllm_bench.parse(detailed) == vllm_bench.parse(JSON)
