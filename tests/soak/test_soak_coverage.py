"""A soak is judged on the series it needed, not on the ones that happened to come.

Each case was a PASS before: a GPU node whose GPU probe and BMC reads failed for the whole
soak, a node that stopped answering minutes into a long soak, a p99 above the hottest
sample, a GPU that went idle between steps read as a clock drop.
"""

from __future__ import annotations

from typing import Any

from aibench.model import Outcome
from aibench.soak.judge import Window, judge_rows
from aibench.thresholds import load_spec

ROWS = load_spec("soak").telemetry


def series(node: str, source: str, metric: str, key: str, ts: list[float], vs: list[float]) -> dict[str, Any]:  # fmt: skip
    return {"node": node, "source": source, "metric": metric, "key": key, "unit": "", "t": ts, "v": vs}  # fmt: skip


def host(node: str, end: float) -> list[dict[str, Any]]:
    ts = [float(t) for t in range(0, int(end) + 1, 10)]
    return [
        series(node, "host", "temp", "zone0", ts, [50.0] * len(ts)),
        series(node, "stress-ng", "bogo_ops_rate", "cpu", ts, [1000.0] * len(ts)),
    ]


def by(verdicts: list[Any], node: str) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for v in verdicts:
        if v.subject == (node,):
            out.setdefault(v.check, []).append(v)
    return out


def test_a_gpu_node_whose_probes_failed_all_soak_is_missing_on_every_gpu_and_bmc_row() -> None:
    tel = {
        "t0": "2026-12-05T00:00:00+00:00",
        "series": host("g1", 600),
        "events": [],
        "errors": [
            {"t": 1.0, "node": "g1", "source": "gpu", "reason": "nvidia-smi: not found"},
            {"t": 2.0, "node": "g1", "source": "bmc", "reason": "connection refused"},
        ],
    }
    got = by(judge_rows(tel, ["g1"], {"g1"}, ROWS, Window(span_s=600)), "g1")
    for row in ("soak.throttle", "soak.clock.drop", "soak.ecc", "soak.gpu_burn"):
        assert [v.outcome for v in got[row]] == [Outcome.MISSING], row
    for row in ("soak.fan.floor", "soak.bmc.events", "soak.inlet.band"):
        assert [v.outcome for v in got[row]] == [Outcome.MISSING], row
    (errors,) = got["telemetry.sampler"]
    assert errors.outcome is Outcome.WARN
    assert "2 sampler error(s)" in errors.observed_text


def test_a_node_that_stopped_answering_is_missing_with_the_gap_named() -> None:
    tel = {"t0": "2026-12-05T00:00:00+00:00", "series": host("n1", 240) + host("n2", 14400)}
    verdicts = judge_rows(tel, ["n1", "n2"], set(), ROWS, Window(span_s=14400))
    stopped, healthy = by(verdicts, "n1"), by(verdicts, "n2")
    assert {v.outcome for vs in stopped.values() for v in vs} == {Outcome.MISSING}
    assert "stop at 240 s of the 14400 s sampled (2 %, need 90 %)" in stopped["soak.stress.rate"][0].reason  # fmt: skip
    assert {v.outcome for vs in healthy.values() for v in vs} == {Outcome.PASS}


def test_the_p99_is_never_above_the_hottest_sample() -> None:
    ts = [float(t) for t in range(20)]
    vs = [60.0] * 18 + [80.0, 86.9]
    tel = {"series": [series("n1", "host", "temp", "zone0", ts, vs)]}
    (p99,) = by(judge_rows(tel, ["n1"], set(), ROWS), "n1")["soak.temperature.p99"]
    assert p99.observed is not None
    assert p99.observed <= max(vs)
    assert p99.outcome is Outcome.PASS  # an extrapolating quantile read 92.4 here: a false FAIL


def test_a_gpu_that_went_idle_between_steps_is_not_a_clock_drop() -> None:
    ts = [float(t) for t in range(0, 600, 5)]
    busy = [t < 120 or t >= 360 for t in ts]  # at work, idle between two steps, at work
    clock = [1980.0 if b else 345.0 for b in busy]
    util = [95.0 if b else 0.0 for b in busy]
    tel = {
        "series": [
            series("g1", "gpu", "clock_sm", "gpu0", ts, clock),
            series("g1", "gpu", "util_gpu", "gpu0", ts, util),
        ]
    }
    (drop,) = by(judge_rows(tel, ["g1"], {"g1"}, ROWS), "g1")["soak.clock.drop"]
    assert drop.outcome is Outcome.PASS, drop.reason
    assert drop.observed == 0.0
