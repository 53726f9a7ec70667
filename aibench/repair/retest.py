"""``aibench retest RUN``: run again only what a run did not pass.

The parent is a run directory or a composed record. Its suite, spec and inventory are
those of its record (the suite's and the spec's text as it kept them, checked against
their sha256; the inventory file of its run-config.json where that is still there, or one
given, since the record keeps no SSH settings). Before planning, the preflight step of the
suite (else the built-in preflight) reads every node's facts again: a node whose hardware
identity changed since the parent (:mod:`aibench.repair.identity`) runs every per-node
step again. The plan (:mod:`aibench.repair.planning`) runs through the pipeline's stages
as any run does; the new run's record names its parent (run id and the sha256 of its
run.json) and keeps the plan with the reasons. Judged alone, a re-test covers only part
of the fleet; what counts is the fleet composed of the parent's attempts and this one
(:mod:`aibench.repair.compose`), which :func:`composed_outcome` judges.
"""

from __future__ import annotations

import dataclasses
import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aibench.errors import UserError
from aibench.model import Fact, Run
from aibench.repair import identity, planning
from aibench.repair.compose import Attempt, compose, judge_composed, load_attempts


@dataclass(frozen=True)
class Parent:
    """The run a re-test repairs: its record, its attempts, its suite, spec, inventory."""

    path: Path
    run: Run
    sha256: str
    attempts: tuple[Attempt, ...]
    suite: Any  # the whole suite, as the record kept it
    spec: Any
    inventory: Any

    def record(self) -> dict[str, str]:
        return {"id": self.run.id, "run_json_sha256": self.sha256, "path": str(self.path)}


def load_parent(path: Path, inventory: str | None = None) -> Parent:
    """The parent run of a re-test, with what it was run and judged with."""
    from aibench.judge import stored_spec
    from aibench.manifest import sha256_file
    from aibench.store import RUN_JSON, load_run

    run = load_run(path)
    where = str(path / RUN_JSON)
    return Parent(
        path=path,
        run=run,
        sha256=sha256_file(path / RUN_JSON),
        attempts=tuple(load_attempts([path])),
        suite=recorded_suite(run, where),
        spec=stored_spec(run, run.spec_sha256, where),
        inventory=_inventory(run, path, inventory),
    )


def recorded_suite(run: Run, where: str) -> Any:
    """The whole suite from the record's copy of its file (checked against its sha256)."""
    from aibench.suite import load_suite

    kept = run.inputs.get("suite") or {}
    text = kept.get("text")
    if not isinstance(text, str) or not text:
        raise UserError(f"{where}: the record holds no copy of its suite's file")
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / f"{kept.get('name') or run.suite}.yaml"
        p.write_text(text, encoding="utf-8")
        suite = load_suite(str(p))
    if kept.get("sha256") and suite.sha256 != kept["sha256"]:
        raise UserError(
            f"{where}: the record's copy of suite {run.suite} does not match its sha256"
        )
    return dataclasses.replace(suite, source=f"{run.suite} (as recorded in {where})")


def _inventory(run: Run, path: Path, given: str | None) -> Any:
    """The inventory to reach the nodes: ``given``, else the file of the parent's
    run-config.json where it is still there, else the record's (local nodes only)."""
    from aibench.inventory import Inventory
    from aibench.store import RUN_CONFIG

    if given:
        from aibench.inventory_file import load_inventory

        return load_inventory(Path(given))
    try:
        cfg = json.loads((path / RUN_CONFIG).read_text())
    except (OSError, ValueError):
        cfg = {}
    file = cfg.get("inventory") if isinstance(cfg, dict) else None
    if isinstance(file, str) and Path(file).is_file():
        from aibench.inventory_file import load_inventory

        return load_inventory(Path(file))
    recorded = Inventory.from_dict(run.inventory)
    if any(n.executor != "local" for n in recorded.nodes):
        raise UserError(
            f"{path}: the record keeps no SSH or Slurm settings of its inventory",
            hint="give the inventory file with --inventory FILE",
        )
    return recorded


@dataclass(frozen=True)
class Identity:
    """What the preflight read now says of each node against the parent's facts."""

    changed: dict[str, list[identity.Change]]
    notes: tuple[str, ...] = ()


def probe_identity(parent: Parent, where: Path) -> Identity:
    """Every node's preflight facts read now, against the parent's: node -> changes."""
    from aibench.pipeline import execute, select_steps
    from aibench.plan import build_plan
    from aibench.suite import load_suite

    own = [s.name for s in parent.suite.steps if s.tool == "preflight" and s.model.enabled]
    suite = parent.suite if own else load_suite("preflight")
    probe = select_steps(suite, steps=own[0]) if own else suite
    done = execute(build_plan(probe, parent.inventory), where, environment_facts=False)
    if done.interrupted:
        raise KeyboardInterrupt
    before = identity.identities(parent_facts(parent.run))
    now = identity.identities([f for r in done.results for f in r.facts])
    notes = [f"{n}: unreachable, identity not read ({why})" for n, why in done.unreachable.items()]
    notes += [
        f"{n}: the parent holds no preflight facts of it, identity not compared"
        for n in (x.name for x in parent.inventory.nodes)
        if n not in before and n not in done.unreachable
    ]
    return Identity(identity.changes(before, now), tuple(notes))


def parent_facts(run: Run) -> list[Fact]:
    return [f for s in run.steps for f in s.facts]


def make_plan(parent: Parent, found: Identity) -> planning.RetestPlan:
    nodes = [n.name for n in parent.inventory.nodes]
    plan = planning.plan_retest(parent.run, parent.spec, parent.suite, nodes, found.changed)
    plan.notes += found.notes
    return plan


def build(parent: Parent, rplan: planning.RetestPlan) -> tuple[Any, Any]:
    """The pipeline's inputs (the suite narrowed to the steps re-tested, partial) and the
    plan: a step run whole as the suite places it, the others on their groups only,
    packed into rounds in which no node appears twice."""
    from aibench.pipeline import Inputs, select_steps
    from aibench.placement import pack
    from aibench.plan import Plan, build_plan, select_nodes

    suite = parent.suite
    names = [s for s in rplan.steps if _runnable(rplan.steps[s], suite, parent.inventory)]
    if not names:
        raise UserError(
            f"{parent.path}: nothing to re-test (every verdict passed, no node changed)"
        )
    narrowed = select_steps(suite, steps=",".join(names))
    inputs = Inputs(
        narrowed,
        parent.inventory,
        parent.spec,
        partial=True,
        whole_steps=tuple((s.name, s.tool) for s in suite.steps),
    )
    base = build_plan(narrowed, parent.inventory)
    steps = []
    for ps in base.steps:
        item = rplan.steps[ps.name]
        if not item.whole:
            allowed = {n.name for n in select_nodes(ps.step, parent.inventory, suite)}
            groups = [g for g in item.groups if set(g) <= allowed]
            ps = dataclasses.replace(ps, schedule=pack(groups))
        steps.append(ps)
    return inputs, Plan(suite=narrowed, inventory=parent.inventory, steps=tuple(steps))


def _runnable(item: planning.StepPlan, suite: Any, inventory: Any) -> bool:
    from aibench.plan import select_nodes

    if item.whole:
        return True
    step = next(s for s in suite.steps if s.name == item.step)
    allowed = {n.name for n in select_nodes(step, inventory, suite)}
    return any(set(g) <= allowed for g in item.groups)


def record_inputs(run: Run, parent: Parent, rplan: planning.RetestPlan) -> Run:
    """The re-test's record names its parent and keeps its plan with the reasons."""
    inputs = dict(run.inputs)
    inputs["parent"] = parent.record()
    inputs["retest"] = rplan.to_dict()
    notes = [
        f"a re-test of {parent.run.id} (run.json sha256 {parent.sha256[:16]}): judged alone it "
        "covers only what it ran; aibench accept composes the fleet's record",
        *run.notes,
    ]
    return run.replace(inputs=inputs, notes=tuple(notes))


def composed_outcome(parent: Parent, run: Run, run_dir: Path) -> Any:
    """The fleet's judgement with this re-test composed after the parent's attempts."""
    from aibench.manifest import sha256_file

    mine = Attempt(run, run_dir, sha256_file(run_dir / "run.json"))
    attempts: Sequence[Attempt] = [*parent.attempts, mine]
    composed, _ = compose(attempts, run_id=f"{run.id}+composed", relocate=False)
    now = datetime.now(UTC).replace(microsecond=0)
    return judge_composed(composed, parent.spec, now)
