"""fio ``--output-format=json`` (and ``json+``), every schema generation.

Generations handled (see the fio parser's docstring for the metrics):

* fio 2.1.x: ``usr_cp``/``sys_cp``, no ``job options`` in some captures, latencies in
  microseconds under ``slat``/``clat``/``lat``, ``io_bytes`` in KiB;
* fio 2.2-2.x: same latency schema, ``job options`` present, ``io_bytes`` in KiB;
* fio 3.x: latencies in nanoseconds under ``slat_ns``/``clat_ns``/``lat_ns``,
  ``io_bytes`` in bytes beside ``io_kbytes``, a ``sync`` section from 3.x on.

``json+`` adds ``bins`` histograms to the latency objects: they are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from operator import itemgetter
from typing import Any

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement, Scalar
from aibench.parsers._fio_common import (
    DIRECTIONS,
    TOOL,
    frozen,
    number,
    option_dims,
    percentile_key,
    percentile_table,
    with_percentile,
)
from aibench.parsers._util import json_document

_first = itemgetter(0)
_EXACT = 2**53  # ints up to this convert to float exactly and never overflow


def _latency(
    section: Mapping[str, Any], key: str, line: int
) -> tuple[Mapping[str, Any], str] | None:
    """The latency object ``key`` (slat/clat/lat) of a direction and its unit."""
    obj = section.get(f"{key}_ns")
    if isinstance(obj, Mapping):
        return obj, "ns"
    obj = section.get(key)
    if isinstance(obj, Mapping):
        return obj, "us"
    if obj is not None or section.get(f"{key}_ns") is not None:
        raise ParseError(TOOL, f"{key} latency is not an object", line=line)
    return None


def _has_samples(lat: Mapping[str, Any], what: str, line: int) -> bool:
    if "N" in lat:
        return number(lat["N"], f"{what}.N", line) > 0
    # Old schemas have no sample count: an all-zero object means "not measured".
    return any(number(lat.get(k, 0), f"{what}.{k}", line) != 0 for k in ("min", "max", "mean"))


def _percentiles(
    lat: Mapping[str, Any], unit: str, dims: FrozenDims, what: str, line: int
) -> list[Measurement]:
    pct = lat.get("percentile")
    if pct is None:
        return []
    if not isinstance(pct, Mapping):
        raise ParseError(TOOL, f"{what}.percentile is not an object", line=line)
    found: list[tuple[float, float]] = []
    for key, raw in pct.items():
        p = percentile_key(key, what, line)
        if p <= 0.0:
            continue  # fio 2.x writes an unused "0.00": 0 slot
        if type(raw) is int and -_EXACT <= raw <= _EXACT:  # number()'s result, sooner
            value = float(raw)
        else:
            value = number(raw, f"{what}.percentile[{key}]", line)
        found.append((p, value))
    found.sort(key=_first)  # stable, as the records were sorted before
    table = percentile_table(dims)
    return [
        Measurement(TOOL, "clat_percentile", v, unit, with_percentile(dims, p, table))
        for p, v in found
    ]


def _has_io(section: Mapping[str, Any], direction: str, line: int) -> bool:
    """Whether a direction did IO. ``total_ios`` is not enough: an IO that failed at
    once is counted there with no bytes and no runtime."""
    if direction == "sync":
        lat = section.get("lat_ns", section.get("lat"))
        n = lat.get("N", 0) if isinstance(lat, Mapping) else 0
        return number(section.get("total_ios", 0), "sync.total_ios", line) > 0 or (
            number(n, "sync.lat.N", line) > 0
        )
    return any(
        number(section.get(k, 0), f"{direction}.{k}", line) != 0
        for k in ("io_bytes", "iops", "runtime")
    )


def _num(section: Mapping[str, Any], key: str, direction: str, line: int) -> float:
    value = section.get(key)
    if type(value) is float and value - value == 0.0:  # finite: what number() returns as is
        return value
    return number(value, f"{direction}.{key}", line)


def _direction(
    section: Mapping[str, Any], direction: str, base: Mapping[str, Scalar], line: int
) -> list[Measurement]:
    if not _has_io(section, direction, line):
        return []
    dims = frozen({**base, "direction": direction})
    out: list[Measurement] = []
    if direction != "sync":
        out.append(Measurement(TOOL, "bw", _num(section, "bw", direction, line), "KiB/s", dims))
        out.append(Measurement(TOOL, "iops", _num(section, "iops", direction, line), "IOPS", dims))
        io = _num(section, "io_bytes", direction, line)
        if "io_kbytes" not in section:
            io *= 1024  # fio 2.x: "io_bytes" holds KiB
        out.append(Measurement(TOOL, "io_bytes", io, "B", dims))
        out.append(
            Measurement(TOOL, "runtime", _num(section, "runtime", direction, line), "ms", dims)
        )
    for key in ("lat", "clat", "slat"):
        found = _latency(section, key, line)
        if found is None:
            continue
        lat, unit = found
        what = f"{direction}.{key}"
        if not _has_samples(lat, what, line):
            continue
        out.append(
            Measurement(
                TOOL, f"{key}_mean", number(lat.get("mean"), f"{what}.mean", line), unit, dims
            )
        )
        if key == "lat" and "stddev" in lat:
            out.append(
                Measurement(
                    TOOL, "lat_stdev", number(lat["stddev"], f"{what}.stddev", line), unit, dims
                )
            )
        # The sync section reports one latency (the sync call) with its percentiles.
        if key == "clat" or (direction == "sync" and key == "lat"):
            out.extend(_percentiles(lat, unit, dims, what, line))
    return out


def _disk_util(disks: Any, line: int) -> list[Measurement]:
    """``disk_util`` (%, dims ``device``): fio's per-device utilisation, as its "Disk stats"
    print it (a device fio could not see, an md array's members ... as listed)."""
    if not isinstance(disks, list):
        raise ParseError(TOOL, '"disk_util" is not a list', line=line)
    out = []
    for i, d in enumerate(disks):
        if not isinstance(d, Mapping) or not isinstance(d.get("name"), str):
            raise ParseError(TOOL, f"disk_util[{i}] has no device name", line=line)
        util = number(d.get("util"), f"disk_util[{i}].util", line)
        out.append(Measurement(TOOL, "disk_util", util, "%", FrozenDims({"device": d["name"]})))
    return out


def parse_json(text: str) -> list[Measurement]:
    doc, first = json_document(TOOL, text)
    if not isinstance(doc, Mapping) or not isinstance(doc.get("jobs"), list):
        raise ParseError(TOOL, 'JSON document has no "jobs" list', line=first)
    glob = doc.get("global options", {})
    if not isinstance(glob, Mapping):
        raise ParseError(TOOL, '"global options" is not an object', line=first)
    records: list[Measurement] = []
    failures: list[str] = []
    for i, job in enumerate(doc["jobs"]):
        if not isinstance(job, Mapping):
            raise ParseError(TOOL, f"jobs[{i}] is not an object", line=first)
        name = job.get("jobname")
        if not isinstance(name, str):
            raise ParseError(TOOL, f"jobs[{i}] has no jobname", line=first)
        opts = job.get("job options", {})
        if not isinstance(opts, Mapping):
            raise ParseError(TOOL, f"jobs[{i}] job options is not an object", line=first)
        base: dict[str, Scalar] = {"job": name, **option_dims({**glob, **opts}, first)}
        err = number(job.get("error", 0), f"jobs[{i}].error", first)
        for direction in DIRECTIONS:
            section = job.get(direction)
            if section is None:
                continue
            if not isinstance(section, Mapping):
                raise ParseError(TOOL, f"jobs[{i}].{direction} is not an object", line=first)
            records.extend(_direction(section, direction, base, first))
        if err != 0:
            failures.append(f"job {name!r} error={int(err)}")
    records.extend(_disk_util(doc.get("disk_util", []), first))
    if failures:
        lead = [ln.strip() for ln in text[: text.find("{")].splitlines() if ln.strip()]
        reason = "; ".join(lead + failures)
        line = 1 if lead else first
        raise ToolFailure(TOOL, reason, line=line, partial=list(records))
    return records
