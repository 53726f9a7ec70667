"""What a re-test runs: the steps and subjects each verdict that did not pass rests on.

Pure: a run (its verdicts and steps), the spec it was judged with, its suite and the
nodes whose hardware identity changed go in; per suite step, the groups to run again and
why each, come out (:class:`RetestPlan`).

* A step placed on each node (``each``) runs again on the nodes a verdict names.
* A step of pairs (``pairs``, ``ring``, ``sample``, ``groups``) runs the failed pair again
  as it ran (client, server), and each of its ends against a known-good control partner in
  the same role (``a--c`` and ``c--b``): the new figures say which end is at fault. A node
  named alone runs against the control partner both ways.
* A step over the fleet (``all``, ``sweep``), a check of scope ``fleet`` (the fleet's
  aggregate), or a verdict that names no node, runs whole.
* A node whose identity changed runs every per-node step of the suite again.

A verdict's steps are those its check selects (``select.step``, else every step of its
tool); a fact, consistency or inventory verdict rests on the preflight steps; any other
(a failed step's verdict, a history verdict) on the steps of its evidence, else of its
benchmark.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aibench.model import Run, Verdict
from aibench.repair.identity import Change

PER_NODE = frozenset({"each"})
PAIRS = frozenset({"pairs", "ring", "sample", "groups"})
FLEET_ORIGINS = frozenset({"consistency", "inventory"})

Group = tuple[str, ...]


@dataclass
class StepPlan:
    """One suite step of a re-test: the groups to run (each with its reasons), or the
    whole step (``whole``: its reasons)."""

    step: str
    tool: str
    kind: str  # node | pair | fleet
    groups: dict[Group, list[str]] = field(default_factory=dict)
    whole: list[str] = field(default_factory=list)

    def add(self, group: Group, why: str) -> None:
        reasons = self.groups.setdefault(group, [])
        if why not in reasons:
            reasons.append(why)

    def add_control(self, group: Group, why: str) -> None:
        """A control pair: where the same two nodes already run (either way round), the
        reason joins that run."""
        same = next((g for g in self.groups if set(g) == set(group)), group)
        self.add(same, why)

    def run_whole(self, why: str) -> None:
        if why not in self.whole:
            self.whole.append(why)


@dataclass
class RetestPlan:
    """The steps of a re-test, in the suite's order, and what it found on the way."""

    steps: dict[str, StepPlan]
    not_passed: int
    changed: Mapping[str, Sequence[Change]]
    good: list[str] = field(default_factory=list)  # fit to be a control partner, in order
    notes: list[str] = field(default_factory=list)
    # control pairs, added after every failed pair (a failed pair runs as it ran)
    controls: list[tuple[StepPlan, Group, str]] = field(default_factory=list)

    @property
    def control(self) -> str | None:
        """The first control partner (a pair that holds it takes the next one)."""
        return self.good[0] if self.good else None

    def control_for(self, group: Group) -> str | None:
        return next((n for n in self.good if n not in group), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "not_passed": self.not_passed,
            "control": self.good[:2],
            "changed": {n: [c.to_dict() for c in cs] for n, cs in self.changed.items()},
            "steps": [
                {
                    "step": s.step,
                    "tool": s.tool,
                    "kind": s.kind,
                    "whole": list(s.whole),
                    "groups": [{"nodes": list(g), "why": list(w)} for g, w in s.groups.items()],
                }
                for s in self.steps.values()
            ],
            "notes": list(self.notes),
        }


def kind_of(placement: str) -> str:
    if placement in PER_NODE:
        return "node"
    return "pair" if placement in PAIRS else "fleet"


def step_kinds(suite: Any) -> dict[str, tuple[str, str]]:
    """step name -> (tool, node | pair | fleet) of every enabled step of ``suite``."""
    from aibench.runners import RUNNERS

    out = {}
    for s in suite.steps:
        if s.model.enabled:
            placement = s.model.placement or RUNNERS.get(s.tool).default_placement
            out[s.name] = (s.tool, kind_of(placement))
    return out


def plan_retest(
    run: Run,
    spec: Any,
    suite: Any,
    nodes: Sequence[str],
    changed: Mapping[str, Sequence[Change]] | None = None,
) -> RetestPlan:
    """The re-test of ``run`` (judged with ``spec``) over the suite's steps; ``nodes``:
    the inventory's node names in order; ``changed``: node -> its identity changes."""
    changed = dict(changed or {})
    kinds = step_kinds(suite)
    failing = [v for v in run.verdicts if v.outcome.failing]
    steps_by_id = {
        s.step_id: (s.step, s.nodes) for s in run.steps if s.step_id in _evidence(failing)
    }
    bad = suspects(failing, changed)
    good = [n for n in nodes if n not in bad]
    plan = RetestPlan(steps={}, not_passed=len(failing), changed=changed, good=good)
    checks = {c.id: c for c in getattr(spec, "checks", ())}
    for v in failing:
        why = reason(v)
        names = steps_of(v, checks, kinds, steps_by_id)
        if not names:
            plan.notes.append(f"{why}: no step of the suite measures it, nothing runs again")
        for name in names:
            tool, kind = kinds[name]
            item = plan.steps.setdefault(name, StepPlan(name, tool, kind))
            if _fleet_scope(v, checks):
                item.run_whole(why)
            else:
                _place(item, v, why, steps_by_id, plan)
    for item, group, why in plan.controls:
        item.add_control(group, why)
    for node, found in changed.items():
        why = f"{node} changed since the parent: " + "; ".join(c.text for c in found)
        for name, (tool, kind) in kinds.items():
            if kind == "node":
                plan.steps.setdefault(name, StepPlan(name, tool, kind)).add((node,), why)
    order = list(kinds)
    plan.steps = dict(sorted(plan.steps.items(), key=lambda kv: order.index(kv[0])))
    return plan


def _fleet_scope(v: Verdict, checks: Mapping[str, Any]) -> bool:
    """Whether ``v`` judges the fleet as a whole (a check of scope fleet): its steps run
    whole, whatever nodes it names."""
    check = checks.get(v.check)
    return check is not None and getattr(check, "scope", "") == "fleet"


def reason(v: Verdict) -> str:
    """``iperf3.bw FAIL on a+b (observed 0.93 Gbit/s)``: a verdict in a few words."""
    who = ", ".join("+".join(g) for g in subjects(v)[:3]) or "the fleet"
    seen = f" (observed {v.observed:.4g} {v.unit})" if v.observed is not None else ""
    if v.observed is None and v.reason:
        seen = f" ({v.reason[:80]})"
    return f"{v.check} {v.outcome.value} on {who}{seen}"


def _evidence(verdicts: Iterable[Verdict]) -> set[str]:
    return {e for v in verdicts for e in v.evidence}


def subjects(v: Verdict) -> list[Group]:
    """The nodes and pairs a verdict is about: its subject (rail dims left out), else its
    culprits (``a+b`` a pair, ``node:rail`` a node)."""
    own = tuple(n for n in v.subject if "=" not in n)
    if own:
        return [own]
    out: list[Group] = []
    for c in v.culprits:
        out.append(tuple(c.split("+")) if "+" in c else (c.split(":", 1)[0],))
    return out


def suspects(failing: Sequence[Verdict], changed: Mapping[str, Any]) -> set[str]:
    """Nodes not fit to be a control partner: those a failing verdict names alone, those
    in more than one failing pair, and those whose identity changed."""
    alone: set[str] = set(changed)
    in_pairs: dict[str, int] = {}
    for v in failing:
        for g in subjects(v):
            if len(set(g)) == 1:
                alone.add(g[0])
            else:
                for n in set(g):
                    in_pairs[n] = in_pairs.get(n, 0) + 1
    return alone | {n for n, k in in_pairs.items() if k > 1}


def steps_of(
    v: Verdict,
    checks: Mapping[str, Any],
    kinds: Mapping[str, tuple[str, str]],
    steps_by_id: Mapping[str, tuple[str, Group]],
) -> list[str]:
    """The suite steps ``v`` rests on (see the module's docstring)."""
    check = checks.get(v.check) or checks.get(v.check.removesuffix(".coverage"))
    if check is not None and check.select is not None:
        wanted = check.select.step
        names = [wanted] if isinstance(wanted, str) else list(wanted or [])
        return [
            n
            for n, (tool, _) in kinds.items()
            if tool == check.select.tool and (not names or n in names)
        ]
    if (check is not None and check.fact is not None) or v.origin in FLEET_ORIGINS:
        return [n for n, (tool, _) in kinds.items() if tool == "preflight"]
    found = [steps_by_id[e][0] for e in v.evidence if e in steps_by_id]
    if found:
        return [n for n in kinds if n in found]
    return [n for n, (tool, _) in kinds.items() if tool == v.benchmark]


def _place(
    item: StepPlan,
    v: Verdict,
    why: str,
    steps_by_id: Mapping[str, tuple[str, Group]],
    plan: RetestPlan,
) -> None:
    """Put ``v``'s subjects into ``item`` as the step's kind wants them."""
    groups = subjects(v)
    if item.kind == "fleet" or not groups:
        item.run_whole(why)
        return
    for g in groups:
        if item.kind == "node":
            for n in dict.fromkeys(g):
                item.add((n,), why)
        elif len(set(g)) > 1:
            _pair(item, _as_run(g, item.step, steps_by_id), why, plan)
        else:
            _node_pairs(item, g[0], v, why, steps_by_id, plan)


def _as_run(pair: Group, step: str, steps_by_id: Mapping[str, tuple[str, Group]]) -> Group:
    """The pair as the step ran it (client, server), where the evidence says."""
    for name, nodes in steps_by_id.values():
        if name == step and set(nodes) == set(pair) and len(nodes) == len(pair):
            return nodes
    return pair


def _pair(item: StepPlan, pair: Group, why: str, plan: RetestPlan) -> None:
    item.add(pair, why)
    a, b = pair[0], pair[1]
    control = plan.control_for(pair)
    if control is None:
        _no_control(plan, item.step, pair)
        return
    plan.controls.append((item, (a, control), f"control: {a} against {control}, for {why}"))
    plan.controls.append((item, (control, b), f"control: {control} against {b}, for {why}"))


def _node_pairs(
    item: StepPlan,
    node: str,
    v: Verdict,
    why: str,
    steps_by_id: Mapping[str, tuple[str, Group]],
    plan: RetestPlan,
) -> None:
    """A node named alone in a step of pairs: its pairs of the evidence again, and the
    node against the control partner, both ways."""
    for e in v.evidence:
        name, nodes = steps_by_id.get(e, ("", ()))
        if name == item.step and node in nodes:
            item.add(nodes, why)
    control = plan.control_for((node,))
    if control is None:
        _no_control(plan, item.step, (node,))
        return
    plan.controls.append((item, (node, control), f"control: {node} against {control}, for {why}"))
    plan.controls.append((item, (control, node), f"control: {control} against {node}, for {why}"))


def _no_control(plan: RetestPlan, step: str, group: Group) -> None:
    plan.notes.append(
        f"{step} {'--'.join(group)}: no known-good control partner (every node is suspect)"
    )


def plan_lines(plan: RetestPlan, parent: str, sha: str) -> list[str]:
    """The plan as ``aibench retest --dry-run`` prints it."""
    lines = [
        f"retest of {parent} (run.json sha256 {sha[:16]}): {plan.not_passed} verdict(s) "
        f"not passed, {len(plan.changed)} node(s) changed"
        + (f"; control partners {', '.join(plan.good[:2])}" if plan.good else "")
    ]
    for node, found in plan.changed.items():
        lines.append(f"  changed {node}: " + "; ".join(c.text for c in found))
    for s in plan.steps.values():
        lines.append(f"step {s.step} ({s.tool}, {_KIND_WORDS[s.kind]})")
        if s.whole:
            lines.append("  whole step: " + "; ".join(s.whole[:3]) + _more(s.whole, 3))
            continue
        for g, why in s.groups.items():
            lines.append(f"  {'--'.join(g):<28} " + "; ".join(why[:2]) + _more(why, 2))
    lines += [f"note: {n}" for n in dict.fromkeys(plan.notes)]
    if not plan.steps:
        lines.append("nothing to run again: every verdict passed and no node changed")
    return lines


_KIND_WORDS = {"node": "per node", "pair": "pairs", "fleet": "whole fleet"}


def _more(items: Sequence[str], shown: int) -> str:
    return f" (+{len(items) - shown} more)" if len(items) > shown else ""
