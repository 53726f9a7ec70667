"""Step verdicts: every step outcome of a run is judged, not only the steps a check reads.

A step that failed (its tool exited non-zero, timed out, its node could not be reached,
the tool was missing) or that finished without a single record its parser could read
gets a verdict of origin ``step``: ERROR, naming the step, the node(s) and the tool's own
reason. So a failure that no check of the spec selects still fails the run, and shows in
every twin. No step verdict is given where a failing verdict of the spec already names
the step in its evidence (the failure is blamed there), and the spec's ``step_waivers``
can waive one explicitly, with a reason, an owner and a last day, like any waiver.

The invocations of a step on one subject are judged together (``failed in 2 of 3
repeats``); the invocations an interruption left unrun are one verdict per step.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date

from aibench.model import Outcome, StepResult, StepStatus, Verdict

CHECK_PREFIX = "step:"


@dataclass
class _Subject:
    """What one step did on one subject: its invocations, the failed ones, and why."""

    tool: str
    ids: list[str] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)
    why: str = ""


@dataclass
class Outcomes:
    """One pass over a run's steps keeps, per (step, nodes), the invocations and those
    that failed; per step, how many were not run. Then :meth:`verdicts`."""

    subjects: dict[tuple[str, tuple[str, ...]], _Subject] = field(default_factory=dict)
    not_run: dict[str, list[str]] = field(default_factory=dict)  # step -> [tool, reason, n]

    def add(self, s: StepResult) -> None:
        if s.status is StepStatus.NOT_RUN:
            entry = self.not_run.setdefault(s.step, [s.tool, s.reason, "0"])
            entry[2] = str(int(entry[2]) + 1)
            return
        key = (s.step, tuple(s.nodes))
        subj = self.subjects.get(key)
        if subj is None:
            subj = self.subjects[key] = _Subject(s.tool)
        subj.ids.append(s.step_id)
        why = problem(s)
        if why:
            subj.bad.append(s.step_id)
            subj.why = subj.why or why

    def verdicts(self, blamed: set[str]) -> list[Verdict]:
        out = []
        for (step, nodes), subj in sorted(self.subjects.items()):
            if not subj.bad or any(i in blamed for i in subj.bad):
                continue
            of = f" in {len(subj.bad)} of {len(subj.ids)} invocations" if len(subj.ids) > 1 else ""
            out.append(_verdict(step, subj.tool, nodes, f"{subj.why}{of}", subj.bad))
        for step, (tool, reason, n) in sorted(self.not_run.items()):
            why = f"{n} invocation(s) not run" + (f": {reason}" if reason else "")
            out.append(_verdict(step, tool, (), why, []))
        return out


def problem(s: StepResult) -> str:
    """Why an invocation that ran counts as failed ("" when it did not fail)."""
    if s.status is not StepStatus.OK:
        return f"{s.status.value}: {s.reason or 'no reason recorded'}"
    if not s.measurements and not s.facts:
        return f"{s.tool} finished but its output held no record that could be read"
    return ""


def _verdict(step: str, tool: str, nodes: tuple[str, ...], why: str, ids: Sequence[str]) -> Verdict:
    where = f" on {'+'.join(nodes)}" if nodes else ""
    return Verdict(
        check=f"{CHECK_PREFIX}{step}",
        outcome=Outcome.ERROR,
        subject=nodes,
        description=f"the {tool} step {step} ran to the end and its output was read",
        expected="ran and read",
        observed_text=why,
        culprits=nodes,
        evidence=tuple(sorted(ids)[:3]),
        reason=f"step {step} ({tool}){where}: {why}",
        benchmark=tool,
        origin="step",
    )


def step_verdicts(
    steps: Iterable[StepResult],
    judged: Sequence[Verdict],
    waivers: Sequence[object] = (),
    today: date | None = None,
) -> list[Verdict]:
    """An ERROR per step and subject that failed or read nothing (see the module), unless
    a failing verdict of ``judged`` names its failed invocations in its evidence;
    ``waivers`` (the spec's ``step_waivers``) waive them on ``today``."""
    outcomes = Outcomes()
    for s in steps:
        outcomes.add(s)
    blamed = {e for v in judged if v.outcome.failing for e in v.evidence}
    found = outcomes.verdicts(blamed)
    if not waivers:
        return found
    from aibench.thresholds.engine import waive

    day = today or date.today()
    out = []
    for v in found:
        step = v.check.removeprefix(CHECK_PREFIX)
        rule = next((w for w in waivers if getattr(w, "step", None) == step), None)
        out.append(waive(rule, v, day) if rule is not None else v)
    return out
