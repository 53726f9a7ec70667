"""The acceptance record of a fleet, composed of its attempts.

An attempt is a run directory: the first acceptance run, a re-test, or a record composed
before (whose own attempts, copied under its ``attempts/``, are taken instead). For each
suite step and placement (the node, the pair, the fleet) the latest attempt that ran it
decides: its results, every repeat of them, are the composed record's. What the composed
record is judged on is those results, over the composed fleet, with the spec of the
attempts: fleet-relative checks (outliers, consistency, coverage) see the fleet as it is
now. Each earlier attempt stays in the record (:func:`repairs`): the verdicts of the
fleet after each attempt, and the hardware changes a re-test found.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from aibench.errors import UserError
from aibench.model import Run, StepResult

ATTEMPTS = "attempts"  # the folder of a composed record that holds its attempts


@dataclass(frozen=True)
class Attempt:
    """One run of the fleet: its record, where its files are, the sha256 of its run.json."""

    run: Run
    path: Path
    sha256: str

    def summary(self) -> dict[str, Any]:
        parent = dict(self.run.inputs.get("parent") or {})
        return {
            "id": self.run.id,
            "run_json_sha256": self.sha256,
            "started": self.run.started,
            "finished": self.run.finished,
            "outcome": self.run.outcome.value,
            "spec": self.run.spec,
            "spec_sha256": self.run.spec_sha256,
            "inventory_sha256": inventory_sha256(self.run),
            **({"parent": parent} if parent else {}),
        }


def inventory_sha256(run: Run) -> str:
    """The sha256 of the run's inventory as recorded: its name and nodes (not the path of
    the file it was read from), as JSON with sorted keys."""
    import hashlib

    inv = {k: run.inventory.get(k) for k in ("name", "nodes")}
    text = json.dumps(inv, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def load_attempts(paths: Sequence[Path]) -> list[Attempt]:
    """The attempts of ``paths`` (a composed record gives its own attempts), each once,
    oldest first (by start; the order given breaks a tie)."""
    from aibench.manifest import sha256_file
    from aibench.store import RUN_JSON, load_run

    found: dict[str, Attempt] = {}
    order: list[str] = []
    for path in paths:
        run = load_run(path)
        accept = run.inputs.get("accept")
        inner = (
            [
                (path / ATTEMPTS / str(a["id"]), str(a["run_json_sha256"]))
                for a in accept["attempts"]
            ]
            if isinstance(accept, Mapping)
            else [(path, "")]
        )
        for where, recorded in inner:
            sub = run if where == path else load_run(where)
            sha = sha256_file(where / RUN_JSON)
            if recorded and sha != recorded:
                raise UserError(
                    f"{where / RUN_JSON}: sha256 {sha[:12]} differs from the {recorded[:12]} "
                    f"its composed record {path} lists"
                )
            seen = found.get(sub.id)
            if seen is not None and seen.sha256 != sha:
                raise UserError(f"run {sub.id} is given twice, with different run.json files")
            if seen is None:
                found[sub.id] = Attempt(sub, where, sha)
                order.append(sub.id)
    return sorted(found.values(), key=lambda a: (a.run.started, order.index(a.run.id)))


def latest_steps(
    attempts: Sequence[Attempt], waived: Mapping[str, str]
) -> dict[tuple[str, tuple[str, ...]], int]:
    """(step, nodes) -> the index of the latest attempt that ran it (waived nodes' out)."""
    latest: dict[tuple[str, tuple[str, ...]], int] = {}
    for i, a in enumerate(attempts):
        for s in a.run.steps:
            if not waived.keys() & set(s.nodes):
                latest[(s.step, s.nodes)] = i
    return latest


def compose(
    attempts: Sequence[Attempt],
    *,
    run_id: str,
    waived: Mapping[str, str] | None = None,
    relocate: bool = True,
) -> tuple[Run, dict[str, int]]:
    """The composed run of ``attempts`` (not judged) and, per step id, the attempt it came
    from. ``waived``: node -> reason, nodes taken out of the contract (their steps and
    pairs are left out, and the inventory no longer lists them). ``relocate``: the raw
    outputs' paths point into ``attempts/<id>/`` (where :mod:`aibench.repair.accept`
    copies each attempt)."""
    from aibench import __version__

    if not attempts:
        raise UserError("nothing to compose: give at least one run directory")
    waived = dict(waived or {})
    latest = latest_steps(attempts, waived)
    steps: list[StepResult] = []
    source: dict[str, int] = {}
    for i, a in enumerate(attempts):
        for s in a.run.steps:
            if latest.get((s.step, s.nodes)) == i:
                steps.append(_moved(s, a.run.id) if relocate else s)
                source[s.step_id] = i
    root, last = attempts[0].run, attempts[-1].run
    run = Run(
        id=run_id,
        suite=last.suite,
        suite_sha256=root.suite_sha256,
        spec=last.spec,
        spec_sha256=last.spec_sha256,
        started=root.started,
        finished=last.finished,
        aibench_version=__version__,
        inventory=_without(last.inventory, waived),
        environment=_environment(attempts, waived),
        steps=tuple(steps),
        signoff=dict(last.signoff),
        inputs={"suite": dict(root.inputs.get("suite") or {})},
    )
    return run, source


def _moved(s: StepResult, run_id: str) -> StepResult:
    def into(p: str) -> str:
        return f"{ATTEMPTS}/{run_id}/{p}" if p else p

    return dataclasses.replace(s, stdout_path=into(s.stdout_path), stderr_path=into(s.stderr_path))


def _without(inventory: Mapping[str, Any], waived: Mapping[str, str]) -> dict[str, Any]:
    out = dict(inventory)
    nodes = out.get("nodes")
    if isinstance(nodes, list):
        out["nodes"] = [
            n for n in nodes if not (isinstance(n, Mapping) and n.get("name") in waived)
        ]
    return out


def _environment(attempts: Sequence[Attempt], waived: Mapping[str, str]) -> dict[str, Any]:
    """Each node's facts from the latest attempt that ran something on it."""
    env: dict[str, Any] = {}
    for a in attempts:
        ran = {n for s in a.run.steps for n in s.nodes}
        for node, facts in a.run.environment.items():
            if node in waived:
                continue
            if node in ran or node not in env or node.startswith("_"):
                env[node] = facts
    return env


def check_alike(attempts: Sequence[Attempt], allow_mixed: bool) -> list[str]:
    """A UserError when the attempts were judged with different specs, ran different
    suites or are of different inventories; with ``allow_mixed``, the sentences that say
    so instead."""
    lines = []
    specs = {a.run.spec_sha256 for a in attempts}
    if len(specs) > 1:
        named = ", ".join(f"{a.run.id}: {a.run.spec} {a.run.spec_sha256[:12]}" for a in attempts)
        lines.append(
            f"the attempts were judged with different specs ({named}); judged here "
            f"with the latest, {attempts[-1].run.spec} {attempts[-1].run.spec_sha256[:12]}"
        )
    suites = {a.run.suite_sha256 for a in attempts}
    if len(suites) > 1:
        named = ", ".join(f"{a.run.id}: {a.run.suite} {a.run.suite_sha256[:12]}" for a in attempts)
        lines.append(f"the attempts ran different suites ({named})")
    inventories = {inventory_sha256(a.run) for a in attempts}
    if len(inventories) > 1:
        named = ", ".join(f"{a.run.id}: {inventory_sha256(a.run)[:12]}" for a in attempts)
        lines.append(
            f"the attempts are of different inventories ({named}); composed over the latest one's"
        )
    if lines and not allow_mixed:
        raise UserError(
            "cannot compose: " + "; ".join(lines),
            hint="compose them anyway with --allow-mixed: the first page then says so",
        )
    return [f"MIXED: {line}" for line in lines]


def judge_composed(run: Run, spec: Any, now: datetime) -> Any:
    """The composed run judged as any run is (aibench.judge), over the composed fleet."""
    from aibench.judge import basis, judge_run

    partial = basis(run, run.id, spec=spec).partial
    return judge_run(run, spec, partial=partial, now=now)


def spec_of(attempts: Sequence[Attempt]) -> Any:
    """The spec the latest attempt was judged with, from its record's copy."""
    from aibench.judge import stored_spec

    last = attempts[-1]
    return stored_spec(last.run, last.run.spec_sha256, str(last.path / "run.json"))
