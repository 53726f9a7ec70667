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
    others (:mod:`aibench.consistency`);
``inventory``
    what the inventory declares (GPU count, HCAs and their rate, data directories)
    against what the preflight found (:mod:`aibench.preflight.expected`);
``history``
    regressions against earlier good runs in a history database (:mod:`aibench.history`);
``step``
    a step that failed, timed out, found its tool missing, could not reach its node or
    read nothing in its output, and that no failing verdict above blames
    (:mod:`aibench.thresholds.steps`);
``telemetry``
    the series sampled by a soak or beside a run (temperatures, clocks, throttling, fans,
    BMC events), judged by the ``telemetry`` rows of a spec (:mod:`aibench.soak.judge`):
    the spec's own (the ``soak`` profile), else the rows recorded with the series
    (``run --telemetry`` records the ``telemetry`` profile there).

The first four and ``step`` are recomputed from the stored steps on every judgement.
History verdicts are recomputed when a history database is given and carried over from
the run otherwise;
:attr:`Judgement.history` says which. Telemetry verdicts are recomputed from the stored
series with the spec's telemetry rows, else the rows recorded with the series (carried
over when there are neither). Every other verdict is carried over by rule
(:data:`RECOMPUTED`): origins are the closed set :data:`aibench.model.ORIGINS`, and a
stored verdict of an origin outside it is an error. So a re-judge can never drop a
verdict by omission. A history that cannot judge a stored history verdict (empty, too
few baseline runs, not a history database) turns it into MISSING with the reason.

:func:`record` puts a judgement into a run: the verdicts replace the run's, and the run's
record of judgements (``Run.judgements``) keeps who judged, when, as of which instant
(waivers are judged on that day), with which spec (its sha256; the spec's text is kept
in ``Run.inputs["specs"]``), and the verdicts every earlier judgement gave.
:func:`basis` reads back what the run's verdict was judged with, so that ``aibench
check RUN`` reproduces it from the run directory alone. A judgement made with another
spec, at another instant or against a history database is labelled a new judgement
(:attr:`Judgement.label`).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aibench.errors import EXIT_CHECKS_FAILED, EXIT_OK, UserError
from aibench.instants import as_given
from aibench.instants import iso as iso  # both stay importable from here
from aibench.instants import parse_instant as parse_instant
from aibench.model import ORIGINS, Outcome, Run, Verdict, overall, step_kinds

HISTORY_NONE = "none"
HISTORY_CARRIED = "carried"  # history verdicts kept from the stored run
HISTORY_RECOMPUTED = "recomputed"  # judged against a history database

# Origins recomputed from the stored steps on every judgement; "history" too when a
# history database is given. A verdict of any other origin is carried over unchanged.
RECOMPUTED = frozenset({"spec", "coverage", "consistency", "inventory", "step"})


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
    as_of: str = ""  # the instant judged at (waivers: its day), ISO 8601 with its offset
    facts_only: bool = False
    partial: bool = False
    spec_text: str = ""  # the spec's file as loaded, kept in the run's record
    label: str = ""  # "" or "new judgement: <why>" when it is not the stored one's basis

    @property
    def outcome(self) -> Outcome:
        return overall(self.verdicts)

    @property
    def failing(self) -> bool:
        return self.outcome.failing

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


def exit_status(outcome: Outcome) -> int:
    """The exit code of an outcome of :func:`aibench.model.overall`, for every command
    that judges or reports a run: 1 when it fails (FAIL, or MISSING: nothing judged)."""
    return EXIT_CHECKS_FAILED if outcome.failing else EXIT_OK


def differences(stored: Sequence[Verdict], judged: Sequence[Verdict]) -> list[str]:
    """A line per verdict that a judgement does not reproduce: one whose outcome or
    observed value differs from the stored one, one stored and no longer given, one
    given and not stored. Empty: every stored verdict reproduced."""

    def key(v: Verdict) -> tuple[str, str, tuple[str, ...]]:
        return (v.origin, v.check, tuple(v.subject))

    def seen(v: Verdict) -> str:
        value = f"{v.observed:.6g} {v.unit}".strip() if v.observed is not None else ""
        return f"{v.outcome.value} {value or v.observed_text}".strip()

    before: dict[Any, list[str]] = {}
    for v in stored:
        before.setdefault(key(v), []).append(seen(v))
    after: dict[Any, list[str]] = {}
    for v in judged:
        after.setdefault(key(v), []).append(seen(v))
    out = []
    for k in sorted(set(before) | set(after)):
        was, now = sorted(before.get(k, [])), sorted(after.get(k, []))
        if was != now:
            what = f"{k[1]} [{'+'.join(k[2]) or '-'}]"
            out.append(f"{what}: stored {'; '.join(was) or 'none'}, now {'; '.join(now) or 'none'}")
    return out


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
    checks of steps that the suite has but that were not selected are not judged, and a
    note says how many. ``facts_only``: the preflight, which judges the spec's fact checks
    only. ``history_db``: judge against this history database (the run must be recorded
    in it; ``aibench run`` records it first); without it, the run's stored history
    verdicts are carried over unchanged. ``now``: the instant judged at (default: now);
    waivers are judged on its day.
    """
    from aibench.thresholds import judge, not_applicable
    from aibench.thresholds.localize import suspect_records

    when = (now or datetime.now(UTC)).replace(microsecond=0)
    whole_spec = spec
    spec, notes = _judged_part(spec, run, partial=partial, facts_only=facts_only)
    verdicts: list[Verdict] = [*judge(spec, run, now=when), *_fleet(run)]
    notes += not_applicable(spec, run)
    recomputed = set(RECOMPUTED)
    mode, db_text = HISTORY_NONE, ""
    if history_db is not None:
        found, history_notes = _history_verdicts(run, history_db)
        verdicts += found
        notes += history_notes
        recomputed.add("history")
        mode, db_text = HISTORY_RECOMPUTED, str(history_db)
    verdicts += _step_outcomes(run, verdicts, whole_spec, when)
    series = telemetry_verdicts(run, spec)
    if series is not None:
        verdicts += series
        recomputed.add("telemetry")
    carried = carry(run, recomputed)
    if any(v.origin == "history" for v in carried):
        mode = HISTORY_CARRIED
    verdicts += carried
    judged = run.replace(verdicts=tuple(verdicts))
    return Judgement(
        verdicts=tuple(verdicts),
        suspects=suspect_records(judged),
        notes=tuple(dict.fromkeys(notes)),
        spec=spec.name,
        spec_sha256=spec.sha256,
        history=mode,
        history_db=db_text,
        as_of=as_given(when),  # with the offset it was given: judged on that local day
        facts_only=facts_only,
        partial=partial,
        spec_text=getattr(whole_spec, "text", ""),
        label=_label(run, spec.sha256, as_given(when), db_text),
    )


def _judged_part(spec: Any, run: Run, *, partial: bool, facts_only: bool) -> tuple[Any, list[str]]:
    """The part of ``spec`` this judgement judges (its fact checks only for the preflight,
    the checks of the selected steps only for a partial run), with a note for each part
    left out."""
    notes = []
    if facts_only:
        spec, skipped = _facts_only(spec)
        if skipped:
            notes.append(f"{skipped} benchmark check(s) of {spec.name} not judged here")
    if partial:
        whole = spec
        spec, skipped = applicable(spec, run)
        if skipped:
            kept = {c.id for c in spec.checks}
            left = [c.id for c in whole.checks if c.id not in kept]
            shown = ", ".join(left[:8]) + (", ..." if len(left) > 8 else "")
            notes.append(
                f"{skipped} check(s) of {spec.name} not judged: their steps were not "
                f"selected ({shown})"
            )
    return spec, notes


def _step_outcomes(run: Run, judged: Sequence[Verdict], spec: Any, when: datetime) -> list[Verdict]:
    """A verdict per step that failed or read nothing and that no failing verdict of
    ``judged`` blames (:mod:`aibench.thresholds.steps`), under the spec's step waivers."""
    from aibench.thresholds.steps import step_verdicts

    waivers = getattr(spec, "step_waivers", ())
    return step_verdicts(run.steps, judged, waivers, when.date())


def carry(run: Run, recomputed: set[str]) -> list[Verdict]:
    """The stored verdicts a judgement keeps: every one whose origin it does not
    recompute. An origin outside :data:`~aibench.model.ORIGINS` is an error, never
    dropped."""
    kept = []
    for v in run.verdicts:
        if v.origin not in ORIGINS:
            raise UserError(
                f"run {run.id}: verdict {v.check} has origin {v.origin!r}, which this "
                f"aibench does not know ({', '.join(ORIGINS)})",
                hint="judge it with the aibench version that wrote it",
            )
        if v.origin not in recomputed:
            kept.append(v)
    return kept


def _label(run: Run, sha: str, as_of: str, history_db: str) -> str:
    """ "" when a judgement has the stored verdict's basis (or is the run's first one);
    else "new judgement: " and what differs."""
    if not run.judgements and (run.inputs or not run.verdicts or not run.spec_sha256):
        return ""
    last = dict(run.judgements[-1]) if run.judgements else {"spec_sha256": run.spec_sha256}
    why = []
    stored = str(last.get("spec_sha256", ""))
    if sha != stored:
        why.append(f"spec sha256 {sha[:12]} differs from the stored {stored[:12] or 'none'}")
    elif sha not in run.inputs.get("specs", {}):
        why.append("the run's record holds no copy of the spec it was judged with")
    if last.get("as_of") and last["as_of"] != as_of:
        why.append(f"as of {as_of} instead of {last['as_of']}")
    if history_db:
        why.append(f"history recomputed against {history_db}")
    why += _version_change(run, last)
    return "new judgement: " + "; ".join(why) if why else ""


def _version_change(run: Run, last: Mapping[str, Any]) -> list[str]:
    """Another aibench judges with other parsers' records and other rules: its judgement
    of a stored run is a new one, and says which versions."""
    from aibench import __version__

    then = str(last.get("aibench_version") or run.aibench_version or "")
    if then and then != __version__:
        return [f"aibench {__version__} instead of {then}"]
    return []


def _fleet(run: Run) -> list[Verdict]:
    """Consistency (golden config) and inventory-declared-vs-found, from the stored steps."""
    facts = run.facts
    if not facts:
        return []
    from aibench.consistency import check_results
    from aibench.inventory import Inventory
    from aibench.preflight import expected
    from aibench.tools import traits

    declared = Inventory.from_dict(run.inventory)
    declares = traits("preflight").declares
    return [*check_results(run.steps), *expected.check(declared, facts, declares)]


def telemetry_verdicts(run: Run, spec: Any) -> list[Verdict] | None:
    """The series judged by the spec's telemetry rows, else by the rows recorded with the
    series (``Run.telemetry["profile"]``); None when there are neither (the stored
    telemetry verdicts are then carried over)."""
    rows = list(getattr(spec, "telemetry", ())) or _recorded_rows(run)
    if not rows:
        return None
    from aibench.inventory import Inventory
    from aibench.soak.judge import Window, judge_rows
    from aibench.telemetry import has_gpus

    declared = Inventory.from_dict(run.inventory)
    gpus = {n.name for n in declared.nodes if has_gpus(n)}
    window = Window(
        span_s=_sampled_span(run),
        bmc_nodes={n.name for n in declared.nodes if n.facts.get("bmc")},
    )
    return judge_rows(run.telemetry, [n.name for n in declared.nodes], gpus, rows, window)


def _sampled_span(run: Run) -> float | None:
    """Seconds from the first sample to the end of the run: what every node's series
    must cover (None when the run recorded no end or no sample)."""
    t0 = (run.telemetry or {}).get("t0")
    if not t0 or not run.finished:
        return None
    try:
        span = (parse_instant(run.finished) - parse_instant(str(t0))).total_seconds()
    except UserError:
        return None
    return span if span > 0 else None


def _recorded_rows(run: Run) -> list[Any]:
    """The telemetry rows recorded with a run's series (none: an older run)."""
    from aibench.thresholds.spec import TelemetryRow

    prof = (run.telemetry or {}).get("profile") or {}
    return [TelemetryRow.model_validate(r) for r in prof.get("rows", [])]


def _history_verdicts(run: Run, db: Path) -> tuple[list[Verdict], list[str]]:
    """A FAIL per regression outside the noise band of the last good runs of the suite
    (naming what changed when the key environment changed), a MISSING per series that
    vanished, each with its baseline, and the history's notes. A stored history verdict
    that the history cannot judge again is MISSING with the reason; one now inside the
    band is named in a note."""
    from aibench.history import History

    status: dict[str, str] = {}
    try:
        findings, notes = History(db).regressions(run.id, status=status)
    except UserError as exc:
        reason = f"history cannot judge regressions: {exc}"
        return [_missing(v, reason) for v in _stored_history(run)], [reason]
    out = [_regression(f) for f in findings if f.regression]
    notes = [f.text for f in findings if not f.regression] + notes
    found = {v.check for v in out}
    for v in _stored_history(run):
        if v.check in found:
            continue
        series = v.check.removeprefix("regression:")
        if series in status and not status[series]:
            notes.append(f"{v.check}: inside the band of {db} now (was {v.outcome.value})")
            continue
        why = status.get(series) or (notes[0] if notes else f"{db} has no point of {series}")
        out.append(_missing(v, f"history {db} cannot judge it: {why}"))
    return out, notes


def _stored_history(run: Run) -> list[Verdict]:
    return [v for v in run.verdicts if v.origin == "history"]


def _missing(v: Verdict, reason: str) -> Verdict:
    return dataclasses.replace(v, outcome=Outcome.MISSING, reason=reason)


def _regression(f: Any) -> Verdict:
    """A regression FAILs whether or not the environment changed (a driver, NCCL or
    firmware roll-out is when a nightly must fail); its reason names what changed. A
    series the baseline had and this run lost is MISSING, with that baseline."""
    return Verdict(
        check=f"regression:{f.series}",
        outcome=Outcome.MISSING if f.vanished else Outcome.FAIL,
        subject=tuple(n for n in f.series.rsplit("|", 1)[-1].split("+") if n),
        description="against the history of earlier good runs",
        expected=f"{f.band[0]:.4g} .. {f.band[1]:.4g} {f.unit}",
        observed=None if f.vanished else f.value,
        unit=f.unit,
        reference=f.baseline_median,
        aggregate="median",
        reason=f.text,
        benchmark=f.series.split("|", 1)[0],
        origin="history",
        baseline={
            "runs": list(f.baseline_runs),
            "n": len(f.baseline_runs),
            "median": f.baseline_median,
            "spread": f.spread,
            "band": list(f.band),
            "unit": f.unit,
        },
    )


def _facts_only(spec: Any) -> tuple[Any, int]:
    kept = tuple(c for c in spec.checks if c.fact is not None)
    return dataclasses.replace(spec, checks=kept), len(spec.checks) - len(kept)


def applicable(spec: Any, run: Run) -> tuple[Any, int]:
    """The spec's checks that can apply to a run of part of a suite, and how many were
    dropped: only checks of steps (tools, the preflight) that the whole suite has and
    that were not selected. A check naming a step or tool the suite does not have at all
    is judged (MISSING), as in a full run. A run stored without its suite's steps
    (before schema 1.2) drops every check of what it did not run."""
    ran = _Targets.of(step_kinds(run.steps))
    suite_steps = (run.inputs.get("suite") or {}).get("steps")
    whole = _Targets.of(tuple(x) for x in suite_steps) if suite_steps else None
    keep = [c for c in spec.checks if ran.has(c) or (whole is not None and not whole.has(c))]
    return dataclasses.replace(spec, checks=tuple(keep)), len(spec.checks) - len(keep)


@dataclass(frozen=True)
class _Targets:
    tools: frozenset[str]
    names: frozenset[str]

    @classmethod
    def of(cls, steps: Any) -> _Targets:
        pairs = [(str(n), str(t)) for n, t in steps]
        return cls(frozenset(t for _, t in pairs), frozenset(n for n, _ in pairs))

    def has(self, c: Any) -> bool:
        """Whether check ``c`` measures something these steps have."""
        if c.select is not None:
            steps = c.select.step
            wanted = [steps] if isinstance(steps, str) else list(steps or [])
            return c.select.tool in self.tools and (not wanted or bool(self.names & set(wanted)))
        return c.fact is None or c.fact.source == "environment" or "preflight" in self.tools


def record(run: Run, judgement: Judgement, by: str, *, at: str = "") -> Run:
    """``run`` with ``judgement`` as its verdicts, suspects and spec; the run's record of
    judgements gains an entry, and the judgement it replaces keeps its verdicts there.
    The spec's text joins the run's record (``inputs["specs"]``, by sha256).

    A run stored before judgements were recorded gets an entry for its stored verdicts
    first (``by``: "stored run"), so that nothing judged before is lost.
    """
    at = at or iso(datetime.now(UTC))
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
    entry.update(_basis_entry(judgement))
    notes = [*run.notes, *(n for n in judgement.notes if n not in run.notes)]
    return run.replace(
        verdicts=judgement.verdicts,
        suspects=judgement.suspects,
        spec=judgement.spec,
        spec_sha256=judgement.spec_sha256,
        notes=tuple(notes),
        judgements=(*past, entry),
        inputs=_with_spec(run.inputs, judgement),
    )


def _basis_entry(judgement: Judgement) -> dict[str, Any]:
    from aibench import __version__

    entry: dict[str, Any] = {"as_of": judgement.as_of, "aibench_version": __version__}
    if judgement.facts_only:
        entry["facts_only"] = True
    if judgement.partial:
        entry["partial"] = True
    if judgement.history_db:
        entry["history_db"] = judgement.history_db
    if judgement.label:
        entry["label"] = judgement.label
    return entry


def _with_spec(inputs: Mapping[str, Any], judgement: Judgement) -> dict[str, Any]:
    out = dict(inputs)
    specs = dict(out.get("specs") or {})
    if judgement.spec_text and judgement.spec_sha256 not in specs:
        specs[judgement.spec_sha256] = {"name": judgement.spec, "text": judgement.spec_text}
    if specs:
        out["specs"] = specs
    return out


def _entry(
    verdicts: Sequence[Verdict], by: str, spec: str, sha: str, at: str, history: str
) -> dict[str, Any]:
    counts = Counter(v.outcome.value for v in verdicts)
    entry: dict[str, Any] = {
        "by": by,
        "at": at,
        "spec": spec,
        "spec_sha256": sha,
        "outcome": overall(verdicts).value,
        "counts": dict(sorted(counts.items())),
        "origins": dict(sorted(Counter(v.origin for v in verdicts).items())),
    }
    if history:
        entry["history"] = history
    return entry


@dataclass(frozen=True)
class Basis:
    """What a stored run's verdict was judged with, read back from its record."""

    spec: Any  # aibench.thresholds.Spec, from the text the record keeps
    as_of: datetime
    facts_only: bool
    partial: bool


def basis(run: Run, where: str, *, spec: Any = None) -> Basis:
    """The basis of the run's verdict (its last judgement): the spec from the record's
    copy (verified against its sha256), the instant, facts-only and partial. ``spec``
    (a loaded Spec) replaces the stored one: a new judgement when its sha256 differs.
    A run whose record holds no copy of its spec needs ``spec`` (a UserError says so);
    no spec is ever loaded by name or from the path it once had."""
    last = dict(run.judgements[-1]) if run.judgements else {}
    sha = str(last.get("spec_sha256") or run.spec_sha256)
    if spec is None:
        spec = stored_spec(run, sha, where)
    as_of = last.get("as_of") or run.finished or run.started
    return Basis(
        spec=spec,
        as_of=parse_instant(as_of, f"{where}: as_of") if as_of else datetime.now(UTC),
        facts_only=bool(last.get("facts_only", last.get("by") == "aibench preflight")),
        partial=bool(last.get("partial")) or _selected_part(run),
    )


def rejudge(
    run: Run,
    run_dir: Path,
    *,
    spec: Any = None,
    history_db: Path | None = None,
    now: datetime | None = None,
) -> Judgement:
    """A stored run judged again on its :func:`basis` (``spec`` replacing the stored one),
    with ``history_db`` for the history verdicts, as of ``now`` or the stored instant:
    what ``aibench check`` and ``aibench report --spec`` both do."""
    b = basis(run, str(run_dir / "run.json"), spec=spec)
    if history_db is not None and not history_db.is_file():
        raise UserError(f"--history {history_db}: no such history database")
    return judge_run(
        run,
        b.spec,
        history_db=history_db,
        partial=b.partial or partial_run(run_dir),
        facts_only=b.facts_only,
        now=now or b.as_of,
    )


def stored_spec(run: Run, sha: str, where: str) -> Any:
    """The spec with this sha256 from the run's record (``inputs["specs"]``)."""
    from aibench.thresholds.spec import spec_from_bytes

    kept = (run.inputs.get("specs") or {}).get(sha)
    if not isinstance(kept, Mapping) or not isinstance(kept.get("text"), str):
        version = run.aibench_version or "an older aibench"
        raise UserError(
            f"{where}: the record holds no copy of the spec it was judged with "
            f"({run.spec or 'none'}, sha256 {sha[:12] or 'none'}; written by {version})",
            hint="give the spec with --spec NAME|FILE: that is a new judgement",
        )
    spec = spec_from_bytes(kept["text"].encode("utf-8"), f"{where}: spec {sha[:12]}")
    if spec.sha256 != sha:
        raise UserError(f"{where}: the stored copy of spec {sha[:12]} does not match its sha256")
    return spec


def _selected_part(run: Run) -> bool:
    suite = run.inputs.get("suite") or {}
    steps, selected = suite.get("steps") or [], suite.get("selected")
    return isinstance(selected, list) and len(selected) < len(steps)


def partial_run(run_dir: Path) -> bool:
    """Whether the run in ``run_dir`` ran part of its suite (``run-config.json`` names a
    tool or steps): how a run stored before schema 1.2 says so."""
    import json

    from aibench.manifest import open_inside
    from aibench.store import RUN_CONFIG

    try:
        with open_inside(run_dir, RUN_CONFIG) as f:  # never through a link
            cfg = json.loads(f.read())
    except (OSError, ValueError):
        return False
    return isinstance(cfg, dict) and bool(cfg.get("tool") or cfg.get("steps"))
