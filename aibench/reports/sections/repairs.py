"""The repairs of a composed acceptance record (``aibench accept``): its attempts, what
failed in each and what passed in the end, the hardware changes the re-tests found, and
the nodes taken out of the contract. Read from ``run.inputs["accept"]``
(:mod:`aibench.repair.accept`); a run that is not a composed record has no such section.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aibench.reports import context
from aibench.reports.sections import MAX_ROWS, Section, SectionInput, SectionOutput, Table


def render(si: SectionInput) -> SectionOutput:
    record = si.run.inputs.get("accept")
    if not isinstance(record, Mapping):
        return SectionOutput(notes=("not a composed record: no repairs",))
    tables = [_attempts(record), _rows(record)]
    if record.get("changes"):
        tables.append(_changes(record))
    if record.get("waived"):
        tables.append(
            Table(
                caption="Nodes taken out of the contract",
                columns=("node", "reason"),
                rows=tuple((n, r) for n, r in record["waived"].items()),
            )
        )
    notes = tuple(str(m) for m in record.get("mixed", ()))
    return SectionOutput(tables=tuple(t for t in tables if t is not None), notes=notes)


def _attempts(record: Mapping[str, Any]) -> Table:
    rows = []
    for a in record.get("attempts", ()):
        parent = a.get("parent") or {}
        rows.append(
            (
                str(a["id"]),
                str(a.get("started", "")),
                str(a.get("outcome", "")),
                str(parent.get("id", "")) or "-",
                str(a.get("run_json_sha256", ""))[:16],
            )
        )
    return Table(
        caption="Attempts, oldest first (each one whole under attempts/)",
        columns=("run", "started", "outcome judged alone", "re-test of", "run.json sha256"),
        rows=tuple(rows),
    )


def _rows(record: Mapping[str, Any]) -> Table:
    rows: list[tuple[str, ...]] = []
    flagged = set()
    for row in record.get("rows", ()):
        steps = []
        for e in row["attempts"]:
            seen = (
                "" if e["observed"] is None else f" {context.fmt_number(e['observed'])} {e['unit']}"
            )
            steps.append(f"{e['outcome']}{seen} on {e['date']} ({e['run']})")
        if row["final"] in ("FAIL", "MISSING", "ERROR"):
            flagged.add((len(rows), 3))
        subject = "+".join(n for n in row["subject"] if "=" not in n) or "fleet"
        rows.append((subject, row["check"], " → ".join(steps), row["final"]))
    return Table(
        caption="What did not pass in some attempt, and what it is now",
        columns=("subject", "check", "attempts", "now"),
        rows=tuple(rows[:MAX_ROWS]),
        note=f"showing {MAX_ROWS} of {len(rows)}" if len(rows) > MAX_ROWS else "",
        flagged=frozenset(flagged),
    )


def _changes(record: Mapping[str, Any]) -> Table:
    rows = [
        (c["node"], c["date"], c["run"], x["fact"], f"{x['before']} → {x['after']}")
        for c in record.get("changes", ())
        for x in c["changes"]
    ]
    return Table(
        caption="Hardware changes the re-tests found (each node ran every per-node step again)",
        columns=("node", "date", "found by", "fact", "change"),
        rows=tuple(rows[:MAX_ROWS]),
    )


SECTION = Section("repairs", "Repairs", render)
