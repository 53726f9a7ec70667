"""Telemetry samples on disk as they arrive, and their compact form for run.json.

Every sample is one JSON line appended to ``<dir>/samples.jsonl`` (``{"t": epoch seconds,
"node", "source", "metric", "key", "unit", "v"}``), every BMC event to ``events.jsonl`` and
every sampler problem to ``errors.jsonl``, each flushed at once: an interrupted run keeps
its series, and a resumed one appends to the same files, so the series stay continuous.

:func:`compact` turns the files into the run.json form: ``{"t0": ISO time of the first
sample, "series": [{"node", "source", "metric", "key", "unit", "t": [seconds since t0],
"v": [values]}], "events": [...], "errors": [...]}``; times to 0.1 s, values to 4
significant digits, a few tens of bytes per sample.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Sample:
    t: float  # epoch seconds
    node: str
    source: str  # host | gpu | bmc | <tool>
    metric: str  # temp_gpu, power, clock_sm, cpu_busy, fan ...
    key: str  # the part: "gpu0", "Fan 1", "cpu" ...
    unit: str
    v: float


def _round(v: float) -> float:
    return float(f"{v:.4g}")


class Store:
    """Append-only files under ``directory``; safe to call from several threads."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def _append(self, name: str, rows: Iterable[Mapping[str, Any]]) -> None:
        lines = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows)
        if not lines:
            return
        with self._lock, (self.dir / name).open("a") as f:
            f.write(lines)
            f.flush()

    def add(self, samples: Iterable[Sample]) -> None:
        self._append(
            "samples.jsonl",
            (
                {
                    "t": round(s.t, 2),
                    "node": s.node,
                    "source": s.source,
                    "metric": s.metric,
                    "key": s.key,
                    "unit": s.unit,
                    "v": _round(s.v),
                }
                for s in samples
            ),
        )

    def event(self, t: float, node: str, source: str, **fields: Any) -> None:
        self._append("events.jsonl", [{"t": round(t, 2), "node": node, "source": source, **fields}])

    def error(self, t: float, node: str, source: str, reason: str) -> None:
        self._append(
            "errors.jsonl",
            [{"t": round(t, 2), "node": node, "source": source, "reason": reason[:300]}],
        )

    def rows(self, name: str) -> list[dict[str, Any]]:
        p = self.dir / name
        if not p.exists():
            return []
        out = []
        for line in p.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut by an interruption: the rest stays readable
        return out

    def known_events(self) -> set[tuple[str, str]]:
        """(node, event key) of the events already recorded (a resumed run skips them)."""
        return {(r["node"], r.get("key", "")) for r in self.rows("events.jsonl")}


def compact(store: Store) -> dict[str, Any]:
    rows = store.rows("samples.jsonl")
    if not rows:
        return {
            "t0": None,
            "series": [],
            "events": store.rows("events.jsonl"),
            "errors": store.rows("errors.jsonl"),
        }
    t0 = min(r["t"] for r in rows)
    series: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for r in sorted(rows, key=lambda r: r["t"]):
        k = (r["node"], r["source"], r["metric"], r["key"])
        s = series.setdefault(
            k,
            {
                "node": k[0],
                "source": k[1],
                "metric": k[2],
                "key": k[3],
                "unit": r["unit"],
                "t": [],
                "v": [],
            },
        )
        s["t"].append(round(r["t"] - t0, 1))
        s["v"].append(r["v"])

    def rel(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{**e, "t": round(e["t"] - t0, 1)} for e in items]

    return {
        "t0": datetime.fromtimestamp(t0, UTC).isoformat(timespec="seconds"),
        "series": list(series.values()),
        "events": rel(store.rows("events.jsonl")),
        "errors": rel(store.rows("errors.jsonl")),
    }
