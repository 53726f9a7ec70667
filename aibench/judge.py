"""One judgement of a run: every verdict, with its origin, and the suspects.

``aibench run``, ``aibench check``, ``aibench report --spec`` and ``aibench preflight`` all
call :func:`judge_run`; a hand-over is signed on what it returns, so there is no second
way to judge a run. A verdict comes from one of five origins (``Verdict.origin``):

``spec``
    a check of the spec (:func:`aibench.thresholds.judge`), metric or fact;
``coverage``
    the coverage a check ``require``\\ s (every node, pair or rail measured);
``consistency``
    the fleet against itself: nodes whose driver, firmware, kernel ... differ from the
    others (:mod:`aibench.preflight.consistency`);
``inventory``
    what the inventory declares (GPU count, HCAs and their rate, data directories)
    against what the preflight found (:mod:`aibench.preflight.expected`);
``history``
    regressions against earlier good runs in a history database (:mod:`aibench.history`);
``telemetry``
    the series sampled by a soak or beside a run (temperatures, clocks, throttling, fans,
    BMC events), judged by the ``telemetry`` rows of a spec (:mod:`aibench.soak.judge`):
    the spec's own (the ``soak`` profile), else the rows recorded with the series
    (``run --telemetry`` records the ``telemetry`` profile there).

The first four are recomputed from the stored steps on every judgement. History verdicts
are recomputed when a history database is given and carried over from the run otherwise;
:attr:`Judgement.history` says which. Telemetry verdicts are recomputed from the stored
series (carried over only when neither the spec nor the record has telemetry rows). So a
re-judge can never drop a class of verdicts.

:func:`record` puts a judgement into a run: the verdicts replace the run's, and the run's
record of judgements (``Run.judgements``) keeps who judged, when, with which spec (and its
sha256), and the verdicts every earlier judgement gave.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aibench.model import Outcome, Run, Verdict

HISTORY_NONE = "none"
HISTORY_CARRIED = "carried"  # history verdicts kept from the stored run
HISTORY_RECOMPUTED = "recomputed"  # judged against a history database


@dataclass(frozen=True)
class Judgement:
    """What :func:`judge_run` found: verdicts (each with its origin), suspects, notes."""

    verdicts: tuple[Verdict, ...]
    suspects: tuple[Mapping[str, Any], ...]
    notes: tuple[str, ...]  # checks that do not apply, checks not judged, history notes
    spec: str
    spec_sha256: str
    history: str = HISTORY_NONE  # none | carried | recomputed
    history_db: str = ""

    @property
    def failing(self) -> bool:
        return any(v.outcome.failing for v in self.verdicts)

    @property
    def outcome(self) -> Outcome:
        if self.failing:
            return Outcome.FAIL
        return Outcome.PASS if self.verdicts else Outcome.MISSING

    def counts(self) -> dict[str, int]:
        return dict(sorted(Counter(v.outcome.value for v in self.verdicts).items()))

    def by_origin(self) -> dict[str, int]:
        return dict(sorted(Counter(v.origin for v in self.verdicts).items()))

    def history_text(self) -> str:
        if self.history == HISTORY_RECOMPUTED:
            return f"history verdicts recomputed against {self.history_db}"
        if self.history == HISTORY_CARRIED:
            n = sum(1 for v in self.verdicts if v.origin == "history")
            return f"{n} history verdict(s) carried over from the stored run"
        return "no history"


def judge_run(
    run: Run,
    spec: Any,
    *,
    history_db: Path | None = None,
    partial: bool = False,
    facts_only: bool = False,
    now: datetime | None = None,
) -> Judgement:
    """Every verdict of ``run`` against ``spec`` (a loaded :class:`~aibench.thresholds.Spec`).

    ``partial``: only part of the suite ran (``aibench run fio``, ``--steps``); the spec's
    checks of tools and steps the run does not have are not judged, and a note says how
    many. ``facts_only``: the preflight, which judges the spec's fact checks only.
    ``history_db``: judge against this history database (the run must be recorded in it;
    ``aibench run`` records it first); without it, the run's stored history verdicts are
    carried over unchanged.
    """
    from aibench.thresholds import judge, not_applicable
    from aibench.thresholds.localize import suspect_records

    notes: list[str] = []
    if facts_only:
        spec, skipped = _facts_only(spec)
        if skipped:
            notes.append(f"{skipped} benchmark check(s) of {spec.name} not judged here")
    if partial:
        spec, skipped = applicable(spec, run)
        if skipped:
            notes.append(
                f"{skipped} check(s) of {spec.name} not judged: their steps were not selected"
            )
    verdicts: list[Verdict] = list(judge(spec, run, now=now))
    verdicts += _fleet(run)
    notes += not_applicable(spec, run)
    mode, db_text = HISTORY_NONE, ""
    if history_db is not None:
        found, history_notes = _history_verdicts(run, history_db)
        verdicts += found
        notes += history_notes
        mode, db_text = HISTORY_RECOMPUTED, str(history_db)
    else:
        carried = [v for v in run.verdicts if v.origin == "history"]
        if carried:
            verdicts += carried
            mode = HISTORY_CARRIED
    verdicts += telemetry_verdicts(run, spec)
    judged = run.replace(verdicts=tuple(verdicts))
    return Judgement(
        verdicts=tuple(verdicts),
        suspects=suspect_records(judged),
        notes=tuple(dict.fromkeys(notes)),
        spec=spec.name,
        spec_sha256=spec.sha256,
        history=mode,
        history_db=db_text,
    )


def _fleet(run: Run) -> list[Verdict]:
    """Consistency (golden config) and inventory-declared-vs-found, from the stored steps."""
    facts = run.facts
    if not facts:
        return []
    from aibench.inventory import Inventory
    from aibench.preflight import expected
    from aibench.preflight.consistency import check_results

    declared = Inventory.from_dict(run.inventory)
    return [*check_results(run.steps), *expected.check(declared, facts)]


def telemetry_verdicts(run: Run, spec: Any) -> list[Verdict]:
    """The series judged by the spec's telemetry rows, else by the rows recorded with the
    series (``Run.telemetry["profile"]``); the stored ones when there are neither."""
    from aibench.telemetry.hook import recorded_rows

    rows = list(getattr(spec, "telemetry", ())) or recorded_rows(run)
    if not rows:
        return [v for v in run.verdicts if v.origin == "telemetry"]
    from aibench.inventory import Inventory
    from aibench.soak.judge import judge_rows
    from aibench.telemetry import has_gpus

    declared = Inventory.from_dict(run.inventory)
    gpus = {n.name for n in declared.nodes if has_gpus(n)}
    return judge_rows(run.telemetry, [n.name for n in declared.nodes], gpus, rows)


def _history_verdicts(run: Run, db: Path) -> tuple[list[Verdict], list[str]]:
    """A FAIL per regression outside the noise band of the last good runs (a WARN that
    says what changed when the key environment changed), and the history's notes."""
    from aibench.history import History

    findings, _ = History(db).regressions(run.id)
    out: list[Verdict] = []
    notes: list[str] = []
    for f in findings:
        if not f.regression:
            notes.append(f.text)
            continue
        out.append(
            Verdict(
                check=f"regression:{f.series}",
                outcome=Outcome.WARN if f.env_changed else Outcome.FAIL,
                subject=tuple(n for n in f.series.rsplit("|", 1)[-1].split("+") if n),
                description="against the history of earlier good runs",
                expected=f"{f.band[0]:.4g} .. {f.band[1]:.4g} {f.unit}",
                observed=f.value,
                unit=f.unit,
                reference=f.baseline_median,
                aggregate="median",
                reason=f.text,
                benchmark=f.series.split("|", 1)[0],
                origin="history",
            )
        )
    return out, notes


def _facts_only(spec: Any) -> tuple[Any, int]:
    kept = tuple(c for c in spec.checks if c.fact is not None)
    return dataclasses.replace(spec, checks=kept), len(spec.checks) - len(kept)


def applicable(spec: Any, run: Run) -> tuple[Any, int]:
    """The spec's checks that can apply to a run of part of a suite, and how many were
    dropped: metric checks of a tool or step the run does not have, and node-fact checks
    when no preflight ran. A full suite run judges every check, so a missing step is
    MISSING there."""
    tools = {s.tool for s in run.steps}
    names = {s.step for s in run.steps}
    keep = []
    for c in spec.checks:
        if c.select is not None:
            steps = c.select.step
            wanted = [steps] if isinstance(steps, str) else list(steps or [])
            ok = c.select.tool in tools and (not wanted or bool(names & set(wanted)))
        else:
            ok = c.fact is None or c.fact.source == "environment" or "preflight" in tools
        if ok:
            keep.append(c)
    return dataclasses.replace(spec, checks=tuple(keep)), len(spec.checks) - len(keep)


def record(run: Run, judgement: Judgement, by: str, *, at: str = "") -> Run:
    """``run`` with ``judgement`` as its verdicts, suspects and spec; the run's record of
    judgements gains an entry, and the judgement it replaces keeps its verdicts there.

    A run stored before judgements were recorded gets an entry for its stored verdicts
    first (``by``: "stored run"), so that nothing judged before is lost.
    """
    at = at or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    past = [dict(j) for j in run.judgements]
    if run.verdicts and not past:
        past.append(_entry(run.verdicts, "stored run", run.spec, run.spec_sha256, "", ""))
    if past and "verdicts" not in past[-1]:
        past[-1]["verdicts"] = [v.to_dict() for v in run.verdicts]
    entry = _entry(
        judgement.verdicts,
        by,
        judgement.spec,
        judgement.spec_sha256,
        at,
        judgement.history_text(),
    )
    notes = [*run.notes, *(n for n in judgement.notes if n not in run.notes)]
    return run.replace(
        verdicts=judgement.verdicts,
        suspects=judgement.suspects,
        spec=judgement.spec,
        spec_sha256=judgement.spec_sha256,
        notes=tuple(notes),
        judgements=(*past, entry),
    )


def _entry(
    verdicts: Sequence[Verdict], by: str, spec: str, sha: str, at: str, history: str
) -> dict[str, Any]:
    counts = Counter(v.outcome.value for v in verdicts)
    failing = any(v.outcome.failing for v in verdicts)
    entry: dict[str, Any] = {
        "by": by,
        "at": at,
        "spec": spec,
        "spec_sha256": sha,
        "outcome": "FAIL" if failing else ("PASS" if verdicts else "MISSING"),
        "counts": dict(sorted(counts.items())),
        "origins": dict(sorted(Counter(v.origin for v in verdicts).items())),
    }
    if history:
        entry["history"] = history
    return entry


def stored_spec(run_dir: Path, run: Run) -> Any:
    """The spec a stored run was judged with: the path its run-config.json names (a spec
    file given to ``aibench run``), else the built-in profile of that name; a UserError
    says to give ``--spec`` when neither loads."""
    import json

    from aibench.errors import ConfigError, UserError
    from aibench.store import RUN_CONFIG
    from aibench.thresholds import load_spec

    try:
        cfg = json.loads((run_dir / RUN_CONFIG).read_text())
    except (OSError, ValueError):
        cfg = {}
    named = cfg.get("spec") if isinstance(cfg, dict) else None
    for candidate in (named, run.spec or "default"):
        if not candidate:
            continue
        try:
            return load_spec(str(candidate))
        except (UserError, ConfigError):
            continue
    raise UserError(
        f"{run_dir}: the spec it was judged with ({run.spec or 'none'}) cannot be loaded",
        hint="give it with --spec NAME|FILE",
    )


def partial_run(run_dir: Path) -> bool:
    """Whether the run in ``run_dir`` ran part of its suite (``run-config.json`` names a
    tool or steps): a re-judge then leaves out the checks of what was not selected."""
    import json

    from aibench.store import RUN_CONFIG

    try:
        cfg = json.loads((run_dir / RUN_CONFIG).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(cfg, dict) and bool(cfg.get("tool") or cfg.get("steps"))
