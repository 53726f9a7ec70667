"""The soak judge's comparisons against the start of a series (SM clock, stress-ng rate):
a series that ends within its first ``baseline_s`` is MISSING, never judged."""

from __future__ import annotations

from aibench.model import Outcome
from aibench.soak.judge import Limits, judge


def _series(metric: str, source: str, t: list[float], v: list[float]) -> dict[str, object]:
    return {"key": "gpu0", "node": "n1", "source": source, "metric": metric, "t": t, "v": v}


def test_a_series_within_its_baseline_is_missing_and_a_longer_one_judged() -> None:
    lim = Limits(baseline_s=10)
    short = {
        "series": [
            _series("clock_sm", "nvidia-smi", [0, 5], [1980, 1980]),
            _series("bogo_ops_rate", "stress-ng", [0, 5], [100, 100]),
        ]
    }
    by = {v.check: v for v in judge(short, ["n1"], lim)}
    for check in ("soak.clock.drop", "soak.stress.rate"):
        assert by[check].outcome is Outcome.MISSING
        assert by[check].observed_text == "gpu0: too short a series"
    longer = {
        "series": [
            _series("clock_sm", "nvidia-smi", [0, 5, 15, 20], [1980, 1980, 1400, 1400]),
            _series("bogo_ops_rate", "stress-ng", [0, 5, 15, 20], [100, 100, 99, 98]),
        ]
    }
    by = {v.check: v for v in judge(longer, ["n1"], lim)}
    assert by["soak.clock.drop"].outcome is Outcome.FAIL
    assert by["soak.clock.drop"].culprits == ("n1:gpu0",)
    assert by["soak.stress.rate"].outcome is Outcome.PASS
