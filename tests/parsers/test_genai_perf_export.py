"""GenAI-Perf's profile_export_genai_perf.json, read by the aiperf parser as exported."""

from __future__ import annotations

import json

import pytest

from aibench.errors import ParseError
from aibench.parsers import aiperf, detect
from tests.golden import FIXTURES

A = FIXTURES / "aiperf"
NAMES = [
    "genai-perf-24.12_profile_export_kserve_streaming_c100.json",
    "genai-perf-24.12_profile_export_kserve_c100.json",
]
BLOCKS = {"ttft": "time_to_first_token", "itl": "inter_token_latency",
          "e2e_latency": "request_latency"}  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_every_block_figure_is_the_exported_one(name: str) -> None:
    text = (A / name).read_text()
    doc = json.loads(text)
    assert detect(text) == ["aiperf"]
    recs = aiperf.parse(text)
    got = {(r.metric, r.dims.get("stat")): r.value for r in recs}
    assert got[("request_throughput", None)] == doc["request_throughput"]["avg"]
    assert got[("output_token_throughput", None)] == doc["output_token_throughput"]["avg"]
    for metric, key in BLOCKS.items():
        if key not in doc:
            assert not [r for r in recs if r.metric == metric]
            continue
        for stat, k in (("mean", "avg"), ("p50", "p50"), ("p90", "p90"), ("p99", "p99")):
            assert got[(metric, stat)] == doc[key][k]
    dims = dict(recs[0].dims)
    cfg = doc["input_config"]
    assert dims == {"api": "kserve", "streaming": cfg["streaming"], "load": "concurrency",
                    "concurrency": 100}  # fmt: skip
    assert not [r for r in recs if r.metric in ("requests", "error_rate")]  # not exported


def test_a_document_of_neither_tool_names_both_forms() -> None:
    doc = json.loads((A / NAMES[0]).read_text())
    del doc["input_config"]["service_kind"]
    with pytest.raises(ParseError, match=r"GenAI-Perf.s profile_export_genai_perf\.json"):
        aiperf.parse(json.dumps(doc))
