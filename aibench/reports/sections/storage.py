"""Shared storage section (fio client/server, the ``fio-cluster`` tool): the aggregate of
all clients beside the clients themselves for every step and client count (a scaling
sweep reads down its rows), the slowest client named, the metadata rates of each phase,
and the time to write and restore the checkpoint the step names."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable

from aibench.model import Measurement, Outcome
from aibench.reports import context
from aibench.reports.i18n import N_, _
from aibench.reports.sections import (
    Plot,
    Section,
    SectionInput,
    SectionOutput,
    Table,
    checked_plots,
)

_MB = 1024 / 1e6  # KiB/s -> MB/s
_METADATA = ("create", "stat", "delete")


def _fmt(x: float) -> str:
    return context.fmt_number(x)


def _grouped(
    ms: Iterable[Measurement], metric: str
) -> dict[tuple[str, str, str, int], list[Measurement]]:
    out: dict[tuple[str, str, str, int], list[Measurement]] = defaultdict(list)
    for m in ms:
        if m.metric == metric:
            key = (m.step, str(m.dims.get("job", "")), str(m.dims.get("direction", "")),
                   int(m.dims.get("clients", 1) or 1))  # fmt: skip
            out[key].append(m)
    return out


def _throughput(si: SectionInput) -> Table | None:
    rows = []
    for (step, job, direction, n), ms in sorted(_grouped(si.measurements, "bw").items()):
        if job in _METADATA:
            continue
        agg = [m.value for m in ms if m.dims.get("client") == "all"]
        per = {str(m.dims.get("client")): m.value for m in ms if m.dims.get("client") != "all"}
        if not agg or not per:
            continue
        slow = min(per, key=lambda c: per[c])
        rows.append((step, direction, str(n), _fmt(statistics.median(agg) * _MB),
                     _fmt(min(per.values()) * _MB), _fmt(statistics.median(per.values()) * _MB),
                     _fmt(max(per.values()) * _MB), slow))  # fmt: skip
    if not rows:
        return None
    cols = (_("step"), _("direction"), _("clients"), _("aggregate MB/s"),
            _("min"), _("median"), _("max"), _("slowest client"))  # fmt: skip
    return Table(_("Aggregate of all clients and each client's share"), cols, tuple(rows))


def _metadata(si: SectionInput) -> Table | None:
    p99 = _grouped((m for m in si.measurements if m.dims.get("percentile") == 99.0),
                   "clat_percentile")  # fmt: skip
    rows = []
    for key, ms in sorted(_grouped(si.measurements, "iops").items()):
        step, job, _d, n = key
        agg = [m.value for m in ms if m.dims.get("client") == "all"]
        if job not in _METADATA or not agg:
            continue
        lat = [m.value / 1e6 for m in p99.get(key, [])]
        rows.append((step, job, str(n), _fmt(statistics.median(agg)),
                     _fmt(max(lat)) if lat else "-"))  # fmt: skip
    if not rows:
        return None
    cols = (_("step"), _("phase"), _("clients"), _("files/s"), _("p99 ms (slowest client)"))
    return Table(_("Metadata operations"), cols, tuple(rows))


def _checkpoint_notes(si: SectionInput) -> list[str]:
    notes = []
    for m in si.measurements:
        if m.metric not in ("checkpoint_write_s", "checkpoint_read_s"):
            continue
        size = float(m.dims.get("model_params", 0) or 0) * float(
            m.dims.get("bytes_per_param", 0) or 0
        )
        what = _("write") if m.metric == "checkpoint_write_s" else _("restore")
        notes.append(
            _(
                "Checkpoint {what} of {params} parameters x {per} bytes ({gb} GB) from {n} "
                "clients at the measured aggregate: {s} s"
            ).format(
                what=what,
                params=_fmt(float(m.dims.get("model_params", 0) or 0)),
                per=_fmt(float(m.dims.get("bytes_per_param", 0) or 0)),
                gb=_fmt(size / 1e9),
                n=m.dims.get("clients", ""),
                s=_fmt(m.value),
            )
        )
    return notes


def _outlier_notes(si: SectionInput) -> list[str]:
    return [
        _("Slow client: {nodes} ({check}: {reason})").format(
            nodes=", ".join(v.culprits), check=v.check, reason=v.reason
        )
        for v in si.verdicts
        if v.outcome is Outcome.WARN and v.culprits
    ]


def render(si: SectionInput) -> SectionOutput:
    plots: list[Plot] = checked_plots(si)
    tables = tuple(t for t in (_throughput(si), _metadata(si)) if t is not None)
    notes = (*_outlier_notes(si), *_checkpoint_notes(si))
    return SectionOutput(plots=tuple(plots), tables=tables, notes=notes)


SECTION = Section("fio-cluster", N_("Shared storage (fio client/server)"), render)
