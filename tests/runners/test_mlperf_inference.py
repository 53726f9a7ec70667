"""MLPerf Inference runner: argv tables, and real LoadGen runs of a tiny CPU SUT.

The SUT (tests/programs/loadgen_sut.py) is driven by the real mlcommons-loadgen; the
runner launches it, collects LoadGen's own logs, and the parsers read them.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from aibench.errors import ConfigError
from aibench.model import Fact, Measurement, StepResult, StepStatus
from aibench.runners.base import Slot
from tests.runners.helpers import PROGRAMS, node, plan, run, suite_of

SUT = [
    sys.executable,
    str(PROGRAMS / "loadgen_sut.py"),
    "--output-dir",
    "{output_dir}",
    "--scenario",
    "{scenario}",
    "--mode",
    "{mode}",
    "--min-duration-ms",
    "500",
]


def test_placeholders_are_filled_and_the_output_dir_made_first() -> None:
    o = {
        "command": ["run.sh", "--out={output_dir}", "{scenario}", "{mode}", "r{run_index}"],
        "scenario": "Server",
        "env": {"OMP_NUM_THREADS": "4"},
    }
    (inv,) = plan("mlperf-inference", o, [node("n1")], Slot(repeat=1, workdir="/w"), "inf")
    d = "/w/mlperf-inference/inf/n1.r1"
    assert list(inv.client.argv) == ["run.sh", f"--out={d}", "Server", "PerformanceOnly", "r1"]
    assert dict(inv.client.env) == {"OMP_NUM_THREADS": "4"}
    assert [s.argv for s in inv.setup] == [
        ("mkdir", "-p", d),
        ("rm", "-f", f"{d}/mlperf_log_summary.txt", f"{d}/mlperf_log_detail.txt"),
    ]
    assert inv.artifacts == (f"{d}/mlperf_log_summary.txt", f"{d}/mlperf_log_detail.txt")


def test_one_invocation_per_node() -> None:
    o = {"command": ["h", "{output_dir}"], "scenario": "Offline", "shared_dir": "/data/lg"}
    invs = plan("mlperf-inference", o, [node("a"), node("b")], step="inf")
    d = "/data/lg/mlperf-inference/inf"
    assert [(i.nodes, i.client.argv) for i in invs] == [
        (("a",), ("h", f"{d}/a.r0")),
        (("b",), ("h", f"{d}/b.r0")),
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"command": ["h", "{outdir}"], "scenario": "Offline"}, "unknown placeholder"),
        ({"command": ["h", "{output_dir"], "scenario": "Offline"}, "unbalanced brace"),
        ({"command": [], "scenario": "Offline"}, "at least 1"),
        ({"command": ["h"], "scenario": "offline"}, "scenario"),
        ({"command": ["h"]}, "required"),
    ],
)
def test_bad_options(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        plan("mlperf-inference", options, [node("n")])


def run_sut(tmp_path: Path, scenario: str, *extra: str) -> StepResult:
    options = {"command": [*SUT, *extra], "scenario": scenario}
    suite = suite_of("mlperf-inference", options, workdir=tmp_path / "w")
    (res,) = run(tmp_path / "run", suite, [node("ws", "127.0.0.1")])
    return res


def facts(res: StepResult) -> dict[str, Any]:
    return {f.name: f.value for f in res.facts if isinstance(f, Fact)}


@pytest.mark.parametrize(
    ("scenario", "metric", "unit"),
    [("Offline", "samples_per_second", "samples/s"), ("SingleStream", "latency", "ns")],
)
def test_real_loadgen_run_is_collected_parsed_and_valid(
    tmp_path: Path, scenario: str, metric: str, unit: str
) -> None:
    res = run_sut(tmp_path, scenario)
    assert res.status is StepStatus.OK, res.reason
    f = facts(res)
    assert f["scenario"] == scenario
    assert f["result_validity"] == "VALID"
    assert f["result"] == "VALID"
    assert f["loadgen_version"].startswith("6.")  # from the detail log
    primary = [m for m in res.measurements if m.metric == metric]
    assert primary
    assert all(m.unit == unit and m.value > 0 for m in primary)
    assert f["primary_metric"].startswith(metric)
    # the logs are kept in the step's raw folder, and the numbers are LoadGen's own
    raw = tmp_path / "run" / "raw" / "s"
    summary = (raw / "ws.r0.mlperf_log_summary.txt").read_text()
    assert (raw / "ws.r0.mlperf_log_detail.txt").is_file()
    if scenario == "Offline":
        line = next(ln for ln in summary.splitlines() if ln.startswith("Samples per second"))
        (sps,) = [m for m in res.measurements if m.metric == "samples_per_second"]
        assert sps.value == float(line.split(":")[1])
        assert sps.value < 20_000  # the SUT's ceiling: at least 50 us per sample
    assert all(isinstance(m, Measurement) and m.nodes == ("ws",) for m in res.measurements)


def test_expected_qps_below_the_real_rate_is_invalid_and_says_which_constraint(
    tmp_path: Path,
) -> None:
    res = run_sut(tmp_path, "Offline", "--expected-qps", "1000")
    assert res.status is StepStatus.OK, res.reason  # an INVALID run is a result, not a crash
    f = facts(res)
    assert f["result_validity"] == "INVALID"
    assert f["failed_constraints"] == "min_duration_met"
    assert f["result"] == "INVALID: min_duration_met not satisfied"
    assert "Increase expected QPS" in f["recommendation"]


def test_a_harness_that_fails_gives_its_last_words(tmp_path: Path) -> None:
    res = run_sut(tmp_path, "Offline", "--no-such-flag")
    assert res.status is StepStatus.FAILED
    assert "exit code 2" in res.reason
    assert "unrecognized arguments: --no-such-flag" in res.reason


def test_a_server_run_too_short_for_early_stopping_is_invalid_and_says_so(tmp_path: Path) -> None:
    """Server at 500 queries/s for 0.5 s: about 250 queries, fewer than early stopping needs."""
    res = run_sut(tmp_path, "Server", "--server-qps", "500")
    assert res.status is StepStatus.OK, res.reason
    f = facts(res)
    assert f["scenario"] == "Server"
    # early stopping is never met this short; on a loaded machine the latency bound may be
    # missed as well, and LoadGen then names both
    assert f["result"].startswith("INVALID: ")
    assert f["result"].endswith("early_stopping_met not satisfied")
    assert "early_stopping_met" in f["failed_constraints"]
    assert f["primary_metric"].startswith("completed_samples_per_second = ")


def test_multistream_reports_its_p99_query_latency(tmp_path: Path) -> None:
    """MultiStream (8 samples a query): the primary metric is the 99th percentile latency.

    Whether 0.5 s holds enough queries for early stopping depends on the machine's load,
    so validity is not asserted, only that it is stated and explained.
    """
    res = run_sut(tmp_path, "MultiStream")
    assert res.status is StepStatus.OK, res.reason
    f = facts(res)
    assert f["scenario"] == "MultiStream"
    (p99,) = [
        m for m in res.measurements if m.metric == "latency" and m.dims.get("percentile") == 99.0
    ]
    assert p99.unit == "ns"
    assert f["primary_metric"] == f"latency p99 = {p99.value:g} ns"
    assert f["result"] == "VALID" or f["result"].startswith("INVALID: ")
    assert f["result_validity"] in ("VALID", "INVALID")
