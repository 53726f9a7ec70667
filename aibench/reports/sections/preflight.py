"""Preflight section: node facts, absent facts first (the table of all facts is the BOM)."""

from __future__ import annotations

from aibench.reports.sections import Section, SectionInput, SectionOutput, Table, measurement_table

MAX_ROWS = 300


def render(si: SectionInput) -> SectionOutput:
    facts = [f for s in si.steps for f in s.facts]
    absent = [f for f in facts if f.absent]
    tables = []
    if absent:
        rows = tuple(
            (", ".join(f.nodes), f.source, f.name, f.reason or "(absent)")
            for f in absent[:MAX_ROWS]
        )
        tables.append(
            Table(
                "Absent facts",
                ("node", "source", "fact", "reason"),
                rows,
                f"showing {MAX_ROWS} of {len(absent)}" if len(absent) > MAX_ROWS else "",
            )
        )
    notes = (
        f"{len(facts)} facts from {len(si.steps)} steps; {len(absent)} absent. "
        "Their values are in the environment section below.",
    )
    if si.measurements:
        tables.append(measurement_table(si.measurements))
    return SectionOutput(tables=tuple(tables), notes=notes)


SECTION = Section("preflight", "Preflight (node facts)", render)
