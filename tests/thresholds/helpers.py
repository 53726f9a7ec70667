"""Builders for runs judged in these tests: the records are made here, in memory."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aibench.model import Fact, FrozenDims, Measurement, Run, StepResult, StepStatus
from aibench.thresholds import Spec, load_spec

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


def m(
    tool: str,
    metric: str,
    value: float,
    unit: str,
    nodes: Sequence[str],
    *,
    step: str = "s",
    repeat: int = 0,
    **dims: Any,
) -> Measurement:
    return Measurement(tool, metric, value, unit, FrozenDims(dims), tuple(nodes), step, repeat)


def step(
    name: str,
    tool: str,
    nodes: Sequence[str],
    measurements: Iterable[Measurement] = (),
    *,
    repeat: int = 0,
    status: StepStatus = StepStatus.OK,
    reason: str = "",
    facts: Iterable[Fact] = (),
) -> StepResult:
    ms = tuple(
        Measurement(x.tool, x.metric, x.value, x.unit, x.dims, tuple(nodes), name, repeat)
        for x in measurements
    )
    return StepResult(
        step_id=f"{name}/{'+'.join(nodes)}/r{repeat}",
        step=name,
        tool=tool,
        nodes=tuple(nodes),
        repeat=repeat,
        status=status,
        measurements=ms,
        facts=tuple(facts),
        reason=reason,
    )


def run(
    steps: Iterable[StepResult],
    nodes: Sequence[str] = ("n1",),
    *,
    labels: Mapping[str, Mapping[str, str]] | None = None,
    environment: Mapping[str, Any] | None = None,
    rid: str = "r1",
    started: str = "2026-12-02T10:00:00Z",
) -> Run:
    inv = {
        "name": "t",
        "nodes": [{"name": n, "labels": dict((labels or {}).get(n, {}))} for n in nodes],
    }
    return Run(
        id=rid,
        suite="t",
        spec="t",
        inventory=inv,
        steps=tuple(steps),
        environment=dict(environment or {}),
        started=started,
    )


def spec_from(tmp: Path, text: str, name: str = "spec.yaml") -> Spec:
    p = tmp / name
    p.write_text(text, encoding="utf-8")
    return load_spec(str(p))


HEADER = "schema_version: 1\nname: t\nchecks:\n"


def replace_execution(monkeypatch: Any, results: Sequence[StepResult]) -> None:
    """Make ``aibench run`` skip running anything and take ``results`` as what its steps
    produced (no node facts collected): the planning, judging and storing stay real."""
    from aibench import envfacts, orchestrator

    async def no_execute(ex: object) -> None:
        return None

    async def no_facts(ex: object, raw: Path) -> dict[str, object]:
        return {}

    monkeypatch.setattr(orchestrator, "execute", no_execute)
    monkeypatch.setattr(orchestrator.Execution, "results_log", lambda self: list(results))
    monkeypatch.setattr(envfacts, "collect", no_facts)
