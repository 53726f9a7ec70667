"""The soak judge's band checks: a BMC inlet sensor and the node's power stay within the
limits' band for the whole soak, else FAIL from the first sample outside it."""

from __future__ import annotations

from aibench.model import Outcome, Verdict
from aibench.soak.judge import Limits, judge


def _bmc(metric: str, key: str, v: list[float]) -> dict[str, object]:
    t = [float(10 * i) for i in range(len(v))]
    return {"key": key, "node": "n1", "source": "bmc", "metric": metric, "t": t, "v": v}


def _by_check(series: list[dict[str, object]], lim: Limits) -> dict[str, Verdict]:
    return {v.check: v for v in judge({"series": series}, ["n1"], lim)}


def test_inlet_within_its_band_passes_and_outside_fails_from_the_first_sample() -> None:
    lim = Limits(inlet_min=18, inlet_max=27)
    ok = _by_check([_bmc("temperature", "Inlet Temp", [22, 24, 23])], lim)["soak.inlet.band"]
    assert ok.outcome is Outcome.PASS
    assert ok.observed_text == "Inlet Temp 22-24 C"
    assert ok.expected == "18-27 C"
    hot = _by_check([_bmc("temperature", "Inlet Temp", [22, 29, 31])], lim)["soak.inlet.band"]
    assert hot.outcome is Outcome.FAIL
    assert hot.observed_text == "Inlet Temp 22-31 C, outside 18-27 C from 10 s"
    assert hot.culprits == ("n1:Inlet Temp",)


def test_power_band_only_where_the_limits_give_one() -> None:
    series = [_bmc("power", "Pwr Consumption", [900, 1500, 980])]
    assert "soak.power.band" not in _by_check(series, Limits())
    over = _by_check(series, Limits(power_max_w=1200))["soak.power.band"]
    assert over.outcome is Outcome.FAIL
    assert over.observed_text == "Pwr Consumption 900-1500 W, outside the band from 10 s"
    assert over.expected == "-inf-1200 W"
    ok = _by_check(series, Limits(power_min_w=800, power_max_w=1600))["soak.power.band"]
    assert ok.outcome is Outcome.PASS
    assert ok.unit == "W"
