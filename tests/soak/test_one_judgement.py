"""The soak and the telemetry are judged by the one judgement (aibench.judge.judge_run):
the series by the telemetry rows of a spec (the built-in ``soak`` and ``telemetry``
profiles), the rows recorded with the series so that a re-judge with another spec still
judges them; a GPU node soaked without GPU stress is MISSING."""

from __future__ import annotations

from pathlib import Path

import pytest

from aibench.errors import ConfigError
from aibench.judge import judge_run
from aibench.model import Outcome, Run
from aibench.telemetry import Sample, Store
from aibench.telemetry.hook import attach
from aibench.thresholds import load_spec

GPU_NODE = {"name": "g1", "executor": "local", "facts": {"gpus": {"count": 1}}}


def _run_with_series(tmp: Path, samples: list[Sample], profile: str = "telemetry") -> Run:
    Store(tmp / "telemetry").add(samples)
    inv = {"name": "t", "nodes": [GPU_NODE]}
    run = Run(id="r", suite="nightly", spec="default", inventory=inv)
    return attach(run, tmp, profile=load_spec(profile))


def _gpu(t0: float, seconds: int, mask: int) -> list[Sample]:
    out = []
    for i in range(seconds):
        t = t0 + i
        out += [
            Sample(t, "g1", "gpu", "clocks_event_mask", "gpu0", "bitmask", float(mask)),
            Sample(t, "g1", "gpu", "temp_gpu", "gpu0", "C", 70.0),
            Sample(t, "g1", "gpu", "clock_sm", "gpu0", "MHz", 1980.0),
        ]
    return out


def test_a_gpu_that_throttles_beside_a_run_gets_a_verdict(tmp_path: Path) -> None:
    # 0x40: HW thermal slowdown held for 50 s (the telemetry profile allows 30 s)
    run = _run_with_series(tmp_path, _gpu(1000.0, 10, 0) + _gpu(1010.0, 50, 0x40))
    judged = judge_run(run, load_spec("default"))
    throttle = [v for v in judged.verdicts if v.check == "soak.throttle"]
    assert [v.outcome for v in throttle] == [Outcome.FAIL]
    assert throttle[0].origin == "telemetry"
    assert throttle[0].culprits == ("g1:gpu0",)
    # the profile is in the record: a re-judge with any spec judges the series the same
    assert run.telemetry["profile"]["name"] == "telemetry"
    again = judge_run(run.replace(verdicts=judged.verdicts), load_spec("h100-ndr"))
    assert [v.outcome for v in again.verdicts if v.check == "soak.throttle"] == [Outcome.FAIL]


def test_telemetry_rows_of_the_spec_win_over_the_recorded_ones(tmp_path: Path) -> None:
    run = _run_with_series(tmp_path, _gpu(1000.0, 40, 0x40))
    soak = judge_run(run, load_spec("soak"))
    checks = {v.check for v in soak.verdicts}
    assert "soak.stress.rate" in checks  # the soak profile's row: no stress-ng ran: MISSING
    burn = [v for v in soak.verdicts if v.check == "soak.gpu_burn"]
    assert [v.outcome for v in burn] == [Outcome.MISSING]
    assert "no GPU stress" in burn[0].reason


def test_a_spec_with_neither_checks_nor_telemetry_rows_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "empty.yaml"
    bad.write_text("schema_version: 1\nname: empty\n")
    with pytest.raises(ConfigError, match="at least one check"):
        load_spec(bad)
    typo = tmp_path / "typo.yaml"
    typo.write_text(
        "schema_version: 1\nname: typo\ntelemetry:\n  - {id: soak.throttle, limits: {throtle_s: 3}}\n"
    )
    with pytest.raises(ConfigError, match="throtle_s"):
        load_spec(typo)
