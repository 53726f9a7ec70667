"""Robust statistics: fleet outliers by median and MAD, repeat summaries."""

from __future__ import annotations

import pytest

from aibench.stats import aggregate, mad, percentile
from aibench.thresholds.outliers import fleet_outliers, summarize


def test_flags_only_the_far_slow_one() -> None:
    values = {f"n{i}": 100.0 + (i % 5) * 0.5 for i in range(20)}
    values["n7"] = 80.0
    values["n8"] = 98.5  # a little slow: inside the noise
    flags = fleet_outliers(values)
    assert list(flags) == ["n7"]
    assert flags["n7"].drop == pytest.approx(0.2, abs=0.01)
    assert "below the fleet median" in flags["n7"].text


def test_lower_is_better_and_tight_fleets() -> None:
    lat = {f"n{i}": 2.0 for i in range(10)} | {"slow": 2.5, "fast": 1.5}
    flags = fleet_outliers(lat, higher_is_better=False)
    assert list(flags) == ["slow"]  # MAD is 0: flagged by the drop alone
    assert "above the fleet median" in flags["slow"].text
    assert fleet_outliers({"a": 1.0, "b": 0.1, "c": 1.0}) == {}  # too few to judge


def test_summarize_marks_unstable() -> None:
    s = summarize([100.0, 101.0, 99.0])
    assert (s.median, s.low, s.high, s.unstable) == (100.0, 99.0, 101.0, False)
    assert summarize([100.0, 150.0, 60.0]).unstable
    assert "UNSTABLE" in summarize([100.0, 150.0, 60.0]).text


def test_stats() -> None:
    assert percentile([1, 2, 3, 4, 5], 90) == pytest.approx(4.6)
    assert aggregate("p10", [10, 20]) == pytest.approx(11)
    assert mad([1, 1, 1, 10]) == 0.0
    assert mad([1, 2, 3]) == pytest.approx(1.4826)
