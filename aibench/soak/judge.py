"""Judging a soak on its series: each check names the node, the part and the time it failed.

Input: the compact telemetry (:func:`aibench.telemetry.compact`) and :class:`Limits` (from
the ``telemetry`` rows of a spec, :func:`limits_of`: the built-in ``soak`` and ``telemetry``
profiles; each row carries its guide section as ``source``). :func:`judge_rows` judges
exactly a spec's rows; :func:`aibench.judge.judge_run` calls it.
Checks, each a Verdict per node (``subject`` the node, ``culprits`` ``node`` or ``node:part``,
``observed_text`` says when, in seconds from the soak's start):

* ``soak.temperature.max`` / ``soak.temperature.p99``: GPU (``temp_gpu``), host (``temp``:
  thermal zones, lm-sensors) and BMC (``temperature``) temperatures against ``temp_max``,
  except the BMC sensors matching ``inlet_sensors``, which have the inlet band.
* ``soak.inlet.band``: BMC inlet temperature within [inlet_min, inlet_max] (guide §3.3).
* ``soak.clock.drop``: GPU SM clock median after the first ``baseline_s`` against the first
  ``baseline_s``; FAIL when it fell by more than ``clock_drop_pct``.
* ``soak.throttle``: a clocks-event bit other than GPU idle (0x1) and SW power cap (0x4)
  held for longer than ``throttle_s`` seconds.
* ``soak.stress.rate``: the stress-ng rate of a node against its own first ``baseline_s``;
  FAIL when it fell below ``rate_min_pct`` % (a host throttled by its cgroup, a CPU
  clocking down).
* ``soak.power.band``: BMC power readings within [power_min_w, power_max_w] when given
  (guide §3.3: 3000-5000 W for an 8-GPU server).
* ``soak.fan.floor``: BMC fan readings (RPM) not below ``fan_min_rpm`` (guide §6.1).
* ``soak.bmc.events``: no new BMC event of a type in ``event_types`` (Fan, Power Supply,
  Memory ...) during the soak (events present at the first read are not new).
* ``soak.ecc``: no increase of a GPU's uncorrected ECC count (guide §7.2).
* ``soak.gpu_burn``: gpu-burn found no GEMM error and no FAULTY GPU in any chunk.

A check with no series for a node is MISSING for it, never PASS.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any

from aibench.model import Outcome, Verdict
from aibench.stats import percentile

IGNORED_CLOCK_EVENTS = 0x1 | 0x4  # gpu_idle, sw_power_cap


@dataclass(frozen=True)
class Limits:
    temp_max: float = 90.0
    temp_p99: float = 87.0
    inlet_min: float = 20.0
    inlet_max: float = 35.0
    inlet_sensors: tuple[str, ...] = ("inlet", "intake", "ambient")
    baseline_s: float = 60.0
    clock_drop_pct: float = 10.0
    throttle_s: float = 30.0
    rate_min_pct: float = 50.0
    power_min_w: float | None = None
    power_max_w: float | None = None
    fan_min_rpm: float = 500.0
    event_types: tuple[str, ...] = ("Fan", "Power Supply", "Power Unit", "Memory", "Cooling Device")


def limit_names() -> set[str]:
    return {f.name for f in fields(Limits)}


def limits_of(rows: Iterable[Any]) -> tuple[Limits, dict[str, str]]:
    """The limits and, per check, its source (the guide section) from a spec's
    ``telemetry`` rows (:class:`aibench.thresholds.spec.TelemetryRow`)."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for row in rows:
        for k, v in row.limits.items():
            values[k] = tuple(v) if isinstance(v, list) else v
        sources[row.id] = row.source
    return Limits(**values), sources


# The rows that read a part the inventory declares: a node that declares it and gave no
# series of it is MISSING on the row, never silently absent.
GPU_ROWS = {
    "soak.throttle": "clocks-event",
    "soak.clock.drop": "SM clock",
    "soak.ecc": "uncorrected ECC",
    "soak.gpu_burn": "gpu-burn (no GPU stress ran)",
}
BMC_ROWS = {
    "soak.fan.floor": "BMC fan",
    "soak.bmc.events": "BMC event log",
    "soak.inlet.band": "BMC inlet temperature",
    "soak.power.band": "BMC power",
}
COVERAGE_MIN = 0.9  # a node's series must reach this share of the sampled window


@dataclass(frozen=True)
class Window:
    """What the series of a judgement must cover: the seconds from the first sample to
    the run's end, and the nodes the inventory declares a BMC for."""

    span_s: float | None = None
    bmc_nodes: Collection[str] = ()


def judge_rows(
    tel: Mapping[str, Any],
    nodes: Iterable[str],
    gpu_nodes: Collection[str],
    rows: Iterable[Any],
    window: Window | None = None,
) -> list[Verdict]:
    """The verdicts of a spec's telemetry rows: only the rows' checks, a ``nodes: gpu``
    row only on ``gpu_nodes``. A row of a part the node declares (its GPUs, its BMC)
    with no series is MISSING; a node whose series stop before ``COVERAGE_MIN`` of the
    window has its passing rows MISSING with the gap named; the sampler's errors of a
    node are a WARN of their own."""
    rows = list(rows)
    lim, src = limits_of(rows)
    scope = {r.id: r.nodes for r in rows}
    win = window or Window()
    bmc = set(win.bmc_nodes) | _read_from(tel, "bmc")
    out: list[Verdict] = []
    for node in nodes:
        wanted = {c for c, where in scope.items() if where == "all" or node in gpu_nodes}
        found = [v for v in judge(tel, [node], lim, src) if v.check in wanted]
        found += _undeclared_gaps(node, wanted, found, node in gpu_nodes, node in bmc, lim, src)
        found = _covered(tel, node, found, win.span_s)
        out += found + _sampler_errors(tel, node)
    return out


def _read_from(tel: Mapping[str, Any], source: str) -> set[str]:
    """The nodes the sampler read, or tried to read, ``source`` of: a BMC it was given
    and could not read is declared all the same."""
    items = [*tel.get("series", []), *tel.get("errors", [])]
    return {str(x.get("node")) for x in items if x.get("source") == source}


def _undeclared_gaps(
    node: str,
    wanted: Collection[str],
    found: Iterable[Verdict],
    gpus: bool,
    bmc: bool,
    lim: Limits,
    src: Mapping[str, str],
) -> list[Verdict]:
    """MISSING for each wanted row of a declared part that gave no verdict."""
    have = {v.check for v in found}
    parts = {**(GPU_ROWS if gpus else {}), **(BMC_ROWS if bmc else {})}
    if lim.power_min_w is None and lim.power_max_w is None:
        parts.pop("soak.power.band", None)
    return [
        _v(c, Outcome.MISSING, node, f"no {what} series from a node that declares it", src=src)
        for c, what in sorted(parts.items())
        if c in wanted and c not in have
    ]


def _covered(
    tel: Mapping[str, Any], node: str, found: list[Verdict], span_s: float | None
) -> list[Verdict]:
    """``found`` as it stands when the node's series cover the window; else each passing
    verdict MISSING, naming where its series stop (a node that stopped answering)."""
    if not span_s:
        return found
    ends = [s["t"][-1] for s in _series(tel, node=node) if s["t"]]
    last = max(ends) if ends else 0.0
    if last >= COVERAGE_MIN * span_s:
        return found
    gap = (
        f"series of {node} stop at {last:g} s of the {span_s:g} s sampled "
        f"({100 * last / span_s:.0f} %, need {100 * COVERAGE_MIN:.0f} %)"
    )
    return [
        v
        if v.outcome.failing
        else dataclasses.replace(
            v, outcome=Outcome.MISSING, reason=f"{gap}; {v.observed_text}", culprits=(node,)
        )
        for v in found
    ]


def _sampler_errors(tel: Mapping[str, Any], node: str) -> list[Verdict]:
    """A WARN naming how often the sampler failed to read the node, and the first reason."""
    errs = [e for e in tel.get("errors", []) if e.get("node") == node]
    if not errs:
        return []
    first = errs[0]
    text = (
        f"{len(errs)} sampler error(s); first at {first.get('t', 0):g} s "
        f"({first.get('source', '?')}): {first.get('reason', '')}"
    ).rstrip(": ")
    return [_v("telemetry.sampler", Outcome.WARN, node, text, culprits=(node,))]


def _series(tel: Mapping[str, Any], **match: str) -> list[dict[str, Any]]:
    return [s for s in tel.get("series", []) if all(s.get(k) == v for k, v in match.items())]


def _v(
    check: str,
    outcome: Outcome,
    node: str,
    text: str,
    *,
    culprits: Iterable[str] = (),
    observed: float | None = None,
    unit: str = "",
    expected: str = "",
    src: Mapping[str, str] | None = None,
    samples: int = 0,
) -> Verdict:
    """One soak verdict about ``node``; its description is the check's source in the
    soak profile (``src``: check -> guide section)."""
    return Verdict(
        check=check,
        outcome=outcome,
        subject=(node,),
        description=(src or {}).get(check, ""),
        expected=expected,
        observed=observed,
        observed_text=text,
        unit=unit,
        culprits=tuple(culprits),
        benchmark="soak",
        origin="telemetry",
        samples=samples,
        reason=text if outcome is not Outcome.PASS else "",
    )


def _first_over(s: Mapping[str, Any], bad: Any) -> float | None:
    for t, v in zip(s["t"], s["v"], strict=True):
        if bad(v):
            return float(t)
    return None


def judge(
    tel: Mapping[str, Any],
    nodes: Iterable[str],
    limits: Limits | None = None,
    sources: Mapping[str, str] | None = None,
) -> list[Verdict]:
    lim = limits or Limits()
    src = dict(sources or {})
    out: list[Verdict] = []
    for node in nodes:
        out += _temperatures(tel, node, lim, src)
        out += _clock_and_throttle(tel, node, lim, src)
        out += _stress_rate(tel, node, lim, src)
        out += _bmc(tel, node, lim, src)
        out += _gpu_burn(tel, node, src)
    return out


def _gpu_burn(tel: Mapping[str, Any], node: str, src: Mapping[str, str]) -> list[Verdict]:
    series = _series(tel, node=node, source="gpu-burn")
    if not series:
        return []
    bad = []
    for s in series:
        if s["metric"] in ("errors", "faulty"):
            when = _first_over(s, lambda v: v != 0)
            if when is not None:
                bad.append((when, s["key"], s["metric"], max(s["v"], key=abs)))
    bad.sort()
    text = "; ".join(f"{k} {m} {v:g} at {t:g} s" for t, k, m, v in bad)
    return [
        _v(
            "soak.gpu_burn",
            Outcome.FAIL if bad else Outcome.PASS,
            node,
            text or "no GEMM error, no faulty GPU",
            culprits=sorted({f"{node}:{k}" for _, k, _, _ in bad}),
            unit="count",
            expected="0 errors, no FAULTY GPU",
            src=src,
        )
    ]


def _is_inlet(name: str, lim: Limits) -> bool:
    return any(k in name.lower() for k in lim.inlet_sensors)


def _temperatures(
    tel: Mapping[str, Any], node: str, lim: Limits, src: Mapping[str, str]
) -> list[Verdict]:
    temps = [
        s for s in _series(tel, node=node) if s["metric"] in ("temp_gpu", "temperature", "temp")
    ]
    parts = [s for s in temps if not (s["metric"] == "temperature" and _is_inlet(s["key"], lim))]
    inlets = [s for s in temps if s["metric"] == "temperature" and _is_inlet(s["key"], lim)]
    if not parts:
        out = [
            _v(
                "soak.temperature.max",
                Outcome.MISSING,
                node,
                "no temperature series",
                src=src,
            )
        ]
    else:
        out = [_temperature_max(parts, node, lim, src), _temperature_p99(parts, node, lim, src)]
    return out + [_inlet_band(s, node, lim, src) for s in inlets]


def _temperature_max(
    parts: list[dict[str, Any]], node: str, lim: Limits, src: Mapping[str, str]
) -> Verdict:
    """The hottest part's peak against the limit, with when it first went over."""
    worst = max(parts, key=lambda s: max(s["v"]))
    peak = max(worst["v"])
    when = _first_over(worst, lambda v: v > lim.temp_max)
    ok = when is None
    return _v(
        "soak.temperature.max",
        Outcome.PASS if ok else Outcome.FAIL,
        node,
        f"{worst['key']} peaked at {peak:g} C"
        + ("" if ok else f", above {lim.temp_max:g} C from {when:g} s"),
        culprits=() if ok else (f"{node}:{worst['key']}",),
        observed=peak,
        unit="C",
        expected=f"<= {lim.temp_max:g} C",
        src=src,
        samples=sum(len(s["v"]) for s in parts),
    )


def _temperature_p99(
    parts: list[dict[str, Any]], node: str, lim: Limits, src: Mapping[str, str]
) -> Verdict:
    """The highest 99th percentile of any part's temperature against the limit."""
    p99s = [(percentile(s["v"], 99), s) for s in parts]
    p, s = max(p99s, key=lambda x: x[0])
    ok = p <= lim.temp_p99
    return _v(
        "soak.temperature.p99",
        Outcome.PASS if ok else Outcome.FAIL,
        node,
        f"{s['key']} p99 {p:.1f} C",
        culprits=() if ok else (f"{node}:{s['key']}",),
        observed=round(p, 2),
        unit="C",
        expected=f"<= {lim.temp_p99:g} C",
        src=src,
    )


def _inlet_band(s: Mapping[str, Any], node: str, lim: Limits, src: Mapping[str, str]) -> Verdict:
    """An inlet sensor stays within the band of air the node is meant to breathe."""
    lo, hi = lim.inlet_min, lim.inlet_max
    return _in_band(s, node, "soak.inlet.band", lo, hi, "C", f"outside {lo:g}-{hi:g} C", src)


def _in_band(
    s: Mapping[str, Any],
    node: str,
    check: str,
    lo: float,
    hi: float,
    unit: str,
    outside: str,
    src: Mapping[str, str],
) -> Verdict:
    """A series stays within ``lo``-``hi`` for the whole soak; else FAIL from the first
    sample outside (``outside`` says how that reads)."""
    when = _first_over(s, lambda v: not lo <= v <= hi)
    ok = when is None
    return _v(
        check,
        Outcome.PASS if ok else Outcome.FAIL,
        node,
        f"{s['key']} {min(s['v']):g}-{max(s['v']):g} {unit}"
        + ("" if ok else f", {outside} from {when:g} s"),
        culprits=() if ok else (f"{node}:{s['key']}",),
        unit=unit,
        expected=f"{lo:g}-{hi:g} {unit}",
        src=src,
    )


def _baseline_split(
    s: Mapping[str, Any], baseline: float
) -> tuple[list[float], list[tuple[float, float]]]:
    t0 = s["t"][0] if s["t"] else 0.0
    base = [v for t, v in zip(s["t"], s["v"], strict=True) if t - t0 <= baseline]
    rest = [(t, v) for t, v in zip(s["t"], s["v"], strict=True) if t - t0 > baseline]
    return base, rest


def _against_start(
    check: str,
    series: list[dict[str, Any]],
    node: str,
    lim: Limits,
    src: Mapping[str, str],
    out: list[Verdict],
) -> Iterator[tuple[dict[str, Any], float, list[tuple[float, float]]]]:
    """Each series with its median over the first ``baseline_s`` and the samples after; a
    series too short for both gets a MISSING verdict of ``check`` in ``out`` instead."""
    for s in series:
        base, rest = _baseline_split(s, lim.baseline_s)
        if not base or not rest:
            why = f"{s['key']}: too short a series"
            out.append(_v(check, Outcome.MISSING, node, why, src=src))
            continue
        yield s, statistics.median(base), rest


def _clock_and_throttle(
    tel: Mapping[str, Any], node: str, lim: Limits, src: Mapping[str, str]
) -> list[Verdict]:
    out = _clock_drop(tel, node, lim, src)
    out += [
        _throttle(s, node, lim, src) for s in _series(tel, node=node, metric="clocks_event_mask")
    ]
    out += [_ecc(s, node, src) for s in _series(tel, node=node, metric="ecc_uncorrected")]
    return out


def _clock_drop(
    tel: Mapping[str, Any], node: str, lim: Limits, src: Mapping[str, str]
) -> list[Verdict]:
    """Each GPU's median SM clock after the start against its median over the start."""
    out: list[Verdict] = []
    clocks = [_while_loaded(tel, node, s) for s in _series(tel, node=node, metric="clock_sm")]
    for s in [s for s in clocks if not s["t"]]:
        why = f"{s['key']} was never at work while sampled: its clocks under load are unknown"
        out.append(_v("soak.clock.drop", Outcome.WARN, node, why, src=src))
    clocks = [s for s in clocks if s["t"]]
    for s, ref, rest in _against_start("soak.clock.drop", clocks, node, lim, src, out):
        later = statistics.median(v for _, v in rest)
        drop = 100.0 * (ref - later) / ref if ref else 0.0
        ok = drop <= lim.clock_drop_pct
        first = (
            next((t for t, v in rest if 100.0 * (ref - v) / ref > lim.clock_drop_pct), None)
            if ref
            else None
        )
        out.append(
            _v(
                "soak.clock.drop",
                Outcome.PASS if ok else Outcome.FAIL,
                node,
                f"{s['key']} SM clock {later:g} MHz against {ref:g} MHz at the start "
                f"({drop:.1f} % lower)"
                + ("" if ok or first is None else f", first below at {first:g} s"),
                culprits=() if ok else (f"{node}:{s['key']}",),
                observed=round(drop, 2),
                unit="%",
                expected=f"<= {lim.clock_drop_pct:g} % lower",
                src=src,
            )
        )
    return out


LOADED_UTIL = 10.0  # % GPU use at or above which a sample counts as the GPU at work


def _while_loaded(tel: Mapping[str, Any], node: str, s: dict[str, Any]) -> dict[str, Any]:
    """The samples of a GPU's clock series taken while the GPU was at work: not flagged
    idle by its clocks-event mask (bit 0x1) and, where use was sampled, at least
    ``LOADED_UTIL`` % busy. A GPU that went idle between steps drops its clocks by
    design; that is not a clock drop."""
    idle: set[float] = set()
    for other in _series(tel, node=node, key=s["key"]):
        if other["metric"] == "clocks_event_mask":
            idle |= {t for t, v in zip(other["t"], other["v"], strict=True) if int(v) & 0x1}
        elif other["metric"] == "util_gpu":
            idle |= {t for t, v in zip(other["t"], other["v"], strict=True) if v < LOADED_UTIL}
    if not idle:
        return s
    kept = [(t, v) for t, v in zip(s["t"], s["v"], strict=True) if t not in idle]
    return {**s, "t": [t for t, _ in kept], "v": [v for _, v in kept]}


def _throttle(s: Mapping[str, Any], node: str, lim: Limits, src: Mapping[str, str]) -> Verdict:
    """The longest span a GPU's clocks were held down for a reason other than idle or the
    software power cap."""
    start: float | None = None
    longest, at = 0.0, None
    for t, v in zip(s["t"], s["v"], strict=True):
        if int(v) & ~IGNORED_CLOCK_EVENTS:
            start = t if start is None else start
            if t - start > longest:
                longest, at = t - start, start
        else:
            start = None
    ok = longest <= lim.throttle_s
    return _v(
        "soak.throttle",
        Outcome.PASS if ok else Outcome.FAIL,
        node,
        f"{s['key']}: clocks held down (not idle, not power cap) for {longest:g} s"
        + ("" if at is None else f" from {at:g} s"),
        culprits=() if ok else (f"{node}:{s['key']}",),
        observed=longest,
        unit="s",
        expected=f"<= {lim.throttle_s:g} s",
        src=src,
    )


def _ecc(s: Mapping[str, Any], node: str, src: Mapping[str, str]) -> Verdict:
    """A GPU's uncorrected ECC count does not rise during the soak."""
    first = next((t for t, v in zip(s["t"], s["v"], strict=True) if v > s["v"][0]), None)
    ok = first is None
    return _v(
        "soak.ecc",
        Outcome.PASS if ok else Outcome.FAIL,
        node,
        f"{s['key']}: uncorrected ECC {s['v'][0]:g} -> {s['v'][-1]:g}"
        + ("" if ok else f", rose at {first:g} s"),
        culprits=() if ok else (f"{node}:{s['key']}",),
        observed=s["v"][-1] - s["v"][0],
        unit="count",
        expected="no increase",
        src=src,
    )


def _stress_rate(
    tel: Mapping[str, Any], node: str, lim: Limits, src: Mapping[str, str]
) -> list[Verdict]:
    series = _series(tel, node=node, source="stress-ng", metric="bogo_ops_rate")
    if not series:
        return [
            _v(
                "soak.stress.rate",
                Outcome.MISSING,
                node,
                "no stress-ng rate was measured",
                src=src,
            )
        ]
    out: list[Verdict] = []
    for s, ref, rest in _against_start("soak.stress.rate", series, node, lim, src, out):
        low = [(t, v) for t, v in rest if ref and 100.0 * v / ref < lim.rate_min_pct]
        worst = min(v for _, v in rest)
        ok = not low
        pct = 100.0 * worst / ref if ref else 0.0
        out.append(
            _v(
                "soak.stress.rate",
                Outcome.PASS if ok else Outcome.FAIL,
                node,
                f"stress-ng {s['key']} rate fell to {pct:.0f} % of its first {lim.baseline_s:g} s"
                + ("" if ok else f" from {low[0][0]:g} s"),
                culprits=() if ok else (f"{node}:cpu",),
                observed=round(pct, 1),
                unit="%",
                expected=f">= {lim.rate_min_pct:g} % of the start",
                src=src,
            )
        )
    return out


def _bmc(tel: Mapping[str, Any], node: str, lim: Limits, src: Mapping[str, str]) -> list[Verdict]:
    if not _series(tel, node=node, source="bmc"):
        return []  # no BMC in the inventory for this node: nothing to judge here
    fans = _series(tel, node=node, source="bmc", metric="fan")
    out: list[Verdict] = []
    if not fans:
        out.append(
            _v(
                "soak.fan.floor",
                Outcome.MISSING,
                node,
                "no fan reading from the BMC",
                src=src,
            )
        )
    out += [_fan_floor(s, node, lim, src) for s in fans]
    out += _power_band(tel, node, lim, src)
    out.append(_bmc_events(tel, node, lim, src))
    return out


def _fan_floor(s: Mapping[str, Any], node: str, lim: Limits, src: Mapping[str, str]) -> Verdict:
    """A fan never spins below the floor."""
    when = _first_over(s, lambda v: v < lim.fan_min_rpm)
    ok = when is None
    return _v(
        "soak.fan.floor",
        Outcome.PASS if ok else Outcome.FAIL,
        node,
        f"{s['key']} {min(s['v']):g}-{max(s['v']):g} RPM"
        + ("" if ok else f", below {lim.fan_min_rpm:g} RPM from {when:g} s"),
        culprits=() if ok else (f"{node}:{s['key']}",),
        observed=min(s["v"]),
        unit="RPM",
        expected=f">= {lim.fan_min_rpm:g} RPM",
        src=src,
    )


def _power_band(
    tel: Mapping[str, Any], node: str, lim: Limits, src: Mapping[str, str]
) -> list[Verdict]:
    """The node's power, as its BMC reads it, within the band the limits give (none when
    they give no bound)."""
    if lim.power_min_w is None and lim.power_max_w is None:
        return []
    lo = lim.power_min_w if lim.power_min_w is not None else float("-inf")
    hi = lim.power_max_w if lim.power_max_w is not None else float("inf")
    return [
        _in_band(s, node, "soak.power.band", lo, hi, "W", "outside the band", src)
        for s in _series(tel, node=node, source="bmc", metric="power")
    ]


def _bmc_events(tel: Mapping[str, Any], node: str, lim: Limits, src: Mapping[str, str]) -> Verdict:
    """No new BMC event of the watched types (fan, power, memory...) during the soak; the
    events already there at the first read do not count."""
    new = [
        e
        for e in tel.get("events", [])
        if e.get("node") == node
        and not e.get("first_read")
        and e.get("sensor_type") in lim.event_types
    ]
    ok = not new
    text = "; ".join(f"{e['sensor_type']} {e['sensor']}: {e['event']} at {e['t']:g} s" for e in new)
    return _v(
        "soak.bmc.events",
        Outcome.PASS if ok else Outcome.FAIL,
        node,
        text or "no new fan, power or memory event",
        culprits=[f"{node}:{e['sensor_type']} {e['sensor']}".strip() for e in new],
        observed=float(len(new)),
        unit="count",
        expected="no new event",
        src=src,
    )
