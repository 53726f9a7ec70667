"""``aibench accept RUN [RUN ...]``: one acceptance record of the fleet, of its attempts.

The composed record is a run directory like any other: ``run.json`` (its steps are those
of the latest attempt of each step and placement; its verdicts the judgement of the
composed fleet, with the spec the attempts were judged with, its text kept in the record),
the reports and ``manifest.sha256`` (and ``manifest.sha256.sig`` when asked). Every
attempt is copied whole under ``attempts/<run id>/`` (its run.json, raw outputs,
reports and manifest), and ``inputs.accept`` in run.json lists them with the sha256 of
their run.json, the repairs (:mod:`aibench.repair.repairs`), the nodes taken out of the
contract with the reason, and what was mixed when composing was told to. ``aibench check``
judges it again from its run.json alone.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aibench.errors import UserError
from aibench.model import Run
from aibench.repair import compose as comp
from aibench.repair import repairs


@dataclass(frozen=True)
class Options:
    waived: Mapping[str, str]  # node -> reason: out of the contract
    allow_mixed: bool = False
    sign: Path | None = None
    lang: str = "en"
    signoff: Mapping[str, str] | None = None


def verified(path: Path) -> None:
    """A UserError unless ``path`` is a run directory whose files match its manifest."""
    from aibench import manifest

    if not (path / manifest.MANIFEST).is_file():
        raise UserError(f"{path}: no {manifest.MANIFEST} (not a finished run directory)")
    check = manifest.verify(path)
    if not check.ok:
        raise UserError(
            f"{path}: {len(check.changed)} changed, {len(check.missing)} missing, "
            f"{len(check.added)} added file(s) since its manifest was written",
            hint=f"aibench verify {path} names them",
        )


def compose_record(paths: Sequence[Path], output_dir: Path, opts: Options) -> tuple[Run, Path]:
    """Compose, judge, copy and write the acceptance record; its run and directory."""
    from aibench import judge, manifest, pipeline, store

    for p in paths:
        verified(p)
    attempts = comp.load_attempts(paths)
    mixed = comp.check_alike(attempts, opts.allow_mixed)
    _check_waived(attempts[-1].run, opts.waived)
    spec = comp.spec_of(attempts)
    now = datetime.now(UTC).replace(microsecond=0)
    out = store.new_run_dir(output_dir, f"{attempts[-1].run.suite}-accepted")
    for a in attempts:
        shutil.copytree(a.path, out / comp.ATTEMPTS / a.run.id, ignore=_own_attempts(a.path))
    run, _ = comp.compose(attempts, run_id=out.name, waived=opts.waived)
    record = {
        "attempts": [a.summary() for a in attempts],
        "waived": dict(opts.waived),
        "mixed": mixed,
        "rows": repairs.history(attempts, spec, now, opts.waived),
        "changes": repairs.changes(attempts),
    }
    run = run.replace(
        inputs={**run.inputs, "accept": record},
        notes=tuple(_notes(attempts, record)),
        signoff={**run.signoff, **{k: v for k, v in (opts.signoff or {}).items() if v}},
    )
    run = judge.record(run, comp.judge_composed(run, spec, now), "aibench accept")
    pipeline.store_and_report(run, out, lang=opts.lang)
    if opts.sign is not None:
        manifest.sign(out, opts.sign)
    return run, out


def _own_attempts(path: Path) -> Any:
    """A composed record's own attempts are copied one by one, not inside it."""

    def ignore(folder: str, names: list[str]) -> list[str]:
        return [comp.ATTEMPTS] if Path(folder) == path and comp.ATTEMPTS in names else []

    return ignore


def _check_waived(run: Run, waived: Mapping[str, str]) -> None:
    names = {n.get("name") for n in run.inventory.get("nodes", ()) if isinstance(n, Mapping)}
    for node, reason in waived.items():
        if node not in names:
            raise UserError(
                f"--waive {node}: not a node of the inventory {run.inventory.get('name')}"
            )
        if len(reason.strip()) < 3:
            raise UserError(f"--waive {node}: give the reason (NODE=REASON)")


def _notes(attempts: Sequence[comp.Attempt], record: Mapping[str, Any]) -> list[str]:
    """What the first page says of how the record was made."""
    listed = ", ".join(f"{a.run.id} ({_how(a)})" for a in attempts)
    notes = [
        f"composed of {len(attempts)} attempt(s), oldest first: {listed}; for each step and "
        "node or pair the latest attempt decides (attempts/ holds each one whole)"
    ]
    ids = {a.run.id for a in attempts}
    for a in attempts:
        parent = (a.run.inputs.get("parent") or {}).get("id")
        if parent and parent not in ids:
            notes.append(f"{a.run.id} is a re-test of {parent}, which is not composed here")
    notes += list(record["mixed"])
    notes += [f"WAIVED NODE {n}: out of the contract: {r}" for n, r in record["waived"].items()]
    shown = repairs.lines(record)
    notes += [f"repair: {line}" for line in shown[:10]]
    if len(shown) > 10:
        notes.append(f"repair: ... and {len(shown) - 10} more (the repairs section)")
    return notes


def _how(a: comp.Attempt) -> str:
    parent = (a.run.inputs.get("parent") or {}).get("id")
    of = f"re-test of {parent}, " if parent else ""
    return f"{of}{a.run.outcome.value} judged alone, {repairs.when(a.run.started)}"
