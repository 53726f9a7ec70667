"""What each attempt found, kept in the composed record: the repairs.

For each check and subject that did not pass in some attempt, the outcome of the fleet
after each attempt that measured it again (or after which it changed), oldest first, and
the hardware changes the re-tests found on its nodes: ``abt-h2 FAIL on 2026-12-03, disk
firmware 1.0→1.1, PASS on 2026-12-04``. The fleet after attempt *i* is the composition of
the attempts up to *i* (:func:`aibench.repair.compose.compose`), judged with the same
spec as of the same instant as the whole record, so that a row changes only where a
result did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from aibench.model import Verdict
from aibench.repair.compose import Attempt, compose, judge_composed

Key = tuple[str, tuple[str, ...]]


def history(
    attempts: Sequence[Attempt], spec: Any, now: datetime, waived: Mapping[str, str]
) -> list[dict[str, Any]]:
    """Rows ``{check, subject, attempts: [{run, date, outcome, observed, unit}], final}`` of
    every check and subject that was not passed after some attempt."""
    rows: dict[Key, list[dict[str, Any]]] = {}
    for i in range(len(attempts)):
        run, source = compose(attempts[: i + 1], run_id="prefix", waived=waived, relocate=False)
        judged = judge_composed(run, spec, now)
        for v in judged.verdicts:
            key = (v.check, tuple(v.subject))
            seen = rows.get(key)
            mine = any(source.get(e) == i for e in v.evidence)
            if seen is None or mine or seen[-1]["outcome"] != v.outcome.value:
                rows.setdefault(key, []).append(_entry(attempts[i], v))
    out = []
    for (check, subject), entries in rows.items():
        if any(e["failing"] for e in entries):
            out.append(
                {
                    "check": check,
                    "subject": list(subject),
                    "attempts": entries,
                    "final": entries[-1]["outcome"],
                }
            )
    return out


def when(started: str) -> str:
    """``2026-12-03 14:05``: the start of an attempt, to the minute (UTC)."""
    return started[:16].replace("T", " ")


def _entry(a: Attempt, v: Verdict) -> dict[str, Any]:
    return {
        "run": a.run.id,
        "date": when(a.run.started),
        "outcome": v.outcome.value,
        "failing": v.outcome.failing,
        "observed": v.observed,
        "unit": v.unit,
    }


def changes(attempts: Sequence[Attempt]) -> list[dict[str, Any]]:
    """The hardware changes each re-test found against its parent: ``{node, run, date,
    changes: [{fact, before, after}]}``."""
    out = []
    for a in attempts:
        found = (a.run.inputs.get("retest") or {}).get("changed") or {}
        for node, items in sorted(found.items()):
            out.append(
                {
                    "node": node,
                    "run": a.run.id,
                    "date": when(a.run.started),
                    "changes": [{k: str(c[k]) for k in ("fact", "before", "after")} for c in items],
                }
            )
    return out


def lines(repairs: Mapping[str, Any]) -> list[str]:
    """One line per subject and check: ``abt-h2 fio.bw: FAIL on 2026-12-03 (run ...),
    disk.firmware 1.0→1.1, PASS on 2026-12-04 (run ...)``."""
    changed: dict[str, list[dict[str, Any]]] = {}
    for c in repairs.get("changes", ()):
        changed.setdefault(c["node"], []).append(c)
    out = []
    for row in repairs.get("rows", ()):
        nodes = [n for n in row["subject"] if "=" not in n]
        parts = []
        for e in row["attempts"]:
            for n in nodes:
                for c in changed.get(n, ()):
                    if c["run"] == e["run"]:
                        parts += [
                            f"{n} {x['fact']} {x['before']}→{x['after']}" for x in c["changes"]
                        ]
            seen = "" if e["observed"] is None else f" {e['observed']:.4g} {e['unit']}"
            parts.append(f"{e['outcome']}{seen} on {e['date']} ({e['run']})")
        who = "+".join(nodes) or "fleet"
        out.append(f"{who} {row['check']}: " + ", ".join(dict.fromkeys(parts)))
    return out
