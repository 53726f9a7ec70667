"""Judging real tool outputs: captured fio and iperf3 JSON, parsed by the real parsers.

The outputs are the committed parser fixtures (tests/fixtures/<tool>/, sources in their
SOURCES.md); the run around them is assembled here as the orchestrator would.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aibench.model import Measurement, Outcome, StepResult, StepStatus, attach
from aibench.parsers import parse
from aibench.thresholds import judge, load_spec
from tests.thresholds.helpers import NOW, run

FIX = Path(__file__).resolve().parent.parent / "fixtures"


def _step(
    name: str, tool: str, fixture: str, nodes: tuple[str, ...], repeat: int = 0
) -> StepResult:
    records = parse(tool, (FIX / tool / fixture).read_text(encoding="utf-8"))
    ms = attach(
        [r for r in records if isinstance(r, Measurement)],
        nodes=nodes,
        step=name,
        repeat=repeat,
    )
    return StepResult(
        f"{name}/{'+'.join(nodes)}/r{repeat}",
        name,
        tool,
        nodes,
        repeat,
        StepStatus.OK,
        measurements=ms,
    )


def test_real_outputs_against_the_default_spec() -> None:
    steps = [
        _step("fio-rand-read", "fio", "v3.16_randread_libaio_json.json", ("vm",)),
        _step("iperf3-tcp", "iperf3", "v3.12_lo_tcp_bidir.json", ("vm", "vm")),
    ]
    vs = judge(load_spec("default"), run(steps, ("vm",)), now=NOW)
    got = {v.check: v for v in vs}
    assert got["iperf3-tcp-throughput"].outcome is Outcome.PASS
    # one --bidir test: each check reads its own direction's receiver
    assert got["iperf3-tcp-throughput"].observed == pytest.approx(5.8814684622639355)
    assert got["iperf3-tcp-reverse-throughput"].outcome is Outcome.PASS
    assert got["iperf3-tcp-reverse-throughput"].observed == pytest.approx(6.823503807743488)
    # this captured run was made on a slow disk: 114 IOPS is below the 2000 IOPS floor
    assert got["fio-rand-read-iops"].outcome is Outcome.FAIL
    assert got["fio-rand-read-iops"].observed == pytest.approx(113.964339)
    assert got["fio-rand-read-iops"].culprits == ("vm",)
    # steps the suite did not run are MISSING, never PASS
    assert got["fio-seq-read-bw"].outcome is Outcome.MISSING
    assert "no fio step named fio-seq-read" in got["fio-seq-read-bw"].reason


def test_real_tool_failure_is_error() -> None:
    failed = StepResult(
        "iperf3-tcp/a+b/r0",
        "iperf3-tcp",
        "iperf3",
        ("a", "b"),
        0,
        StepStatus.FAILED,
        reason="error - unable to connect to server: No route to host",
    )
    vs = judge(load_spec("default"), run([failed], ("a", "b")), now=NOW)
    (v,) = [v for v in vs if v.check == "iperf3-tcp-throughput"]
    assert v.outcome is Outcome.ERROR
    assert "No route to host" in v.reason
