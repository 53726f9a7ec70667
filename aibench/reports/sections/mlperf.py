"""MLPerf sections: validity first, then the numbers.

Inference: one row per LoadGen run (step, node, repeat) with the scenario, the primary
metric (the runner's ``primary_metric`` Fact), ``VALID`` / ``INVALID`` (the summary's
``result_validity``) and, when INVALID, the failing constraint(s) by name
(``failed_constraints``, else the ``*_met`` Facts that are False) with what LoadGen advises
(``recommendation``, or the early-stopping verdict text). A run whose harness failed says
so with the step's reason. Plots of each metric per run when there are several.

Training: one row per run (Facts and Measurements with dim ``run_index``): time to train,
the run's ``status`` (run_stop), the compliance checker's verdict and its first complaint;
one row per benchmark result: runs made, runs the rules require (``runs_required``), the
olympic ``score`` and whether it is a valid MLPerf score (``score_valid`` and its reason).
Time to train per run is plotted (with earlier runs when history is given); runs that did
not converge or failed compliance are hatched.

These rows come from what the tools logged, whatever the spec checks:
:func:`invalid_results` lists the INVALID ones for the failures block and the banner.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aibench.model import Fact, FactValue, Measurement, StepResult
from aibench.reports import context, plots
from aibench.reports.i18n import N_, _, ngettext
from aibench.reports.sections import (
    Plot,
    Section,
    SectionInput,
    SectionOutput,
    Table,
    by_series,
    convert,
    lower_bounds,
    measurement_table,
)

INFERENCE = "mlperf-inference"
TRAINING = "mlperf-training"
VALID = N_("✔ VALID")
INVALID = N_("✖ INVALID")


def duration(value: float, unit: str) -> str:
    """A time in the unit a person reads it in: ms below a second, s below 2 min, else min."""
    s = convert(value, unit, "s")
    if s is None:
        return f"{context.fmt_number(value)} {unit}"
    if s < 1:
        return f"{context.fmt_number(s * 1000)} ms"
    if s < 120:
        return f"{context.fmt_number(s)} s"
    return f"{context.fmt_number(s / 60)} min"


def _facts(step: StepResult, **dims: object) -> dict[str, Fact]:
    """name -> Fact of the step whose dims include ``dims`` (the first one of a name)."""
    out: dict[str, Fact] = {}
    for f in step.facts:
        if all(f.dims.get(k) == v for k, v in dims.items()) and f.name not in out:
            out[f.name] = f
    return out


def _value(f: Fact | None) -> FactValue:
    return None if f is None else f.value


# ---- inference ----------------------------------------------------------------------


@dataclass(frozen=True)
class InferenceResult:
    step: StepResult
    scenario: str
    primary: str
    valid: bool | None  # None: no result was stated
    failed: tuple[str, ...]  # the constraints that are not met
    advice: str  # LoadGen's recommendation or early-stopping text; a failed step's reason

    @property
    def result(self) -> str:
        if self.valid is True:
            return _(VALID)
        if self.valid is False:
            return _(INVALID)
        return _("? no result")

    @property
    def text(self) -> str:
        """One line: 'offline/n1/r0 Offline: INVALID (min_duration_met not met)'."""
        why = _(" ({names} not met)").format(names=", ".join(self.failed)) if self.failed else ""
        return f"{self.step.step_id} {self.scenario or '?'}: {self.result.split(' ', 1)[1]}{why}"


def inference_results(steps: Sequence[StepResult]) -> list[InferenceResult]:
    out = []
    for s in steps:
        if s.tool != INFERENCE:
            continue
        f = _facts(s)
        validity = _value(f.get("result_validity"))
        valid = None if validity is None else str(validity).upper() == "VALID"
        failed_text = _value(f.get("failed_constraints"))
        failed = (
            tuple(x.strip() for x in str(failed_text).split(",") if x.strip())
            if (failed_text)
            else ()
        )
        if valid is False and not failed:
            failed = tuple(n for n, x in f.items() if n.endswith("_met") and x.value is False)
        advice = str(_value(f.get("recommendation")) or "")
        if not advice and valid is False:
            advice = " ".join(
                str(x.value)
                for n, x in f.items()
                if n.startswith("early_stopping_") and n.endswith("_result") and x.value
            )
        if valid is None:
            why = f.get("result_validity") or f.get("result")
            advice = s.reason or (why.reason if why is not None else "") or _("no summary was read")
        primary = str(_value(f.get("primary_metric")) or "")
        if not primary and s.measurements:
            primary = _("(no primary metric for this scenario)")
        out.append(
            InferenceResult(
                step=s,
                scenario=str(_value(f.get("scenario")) or ""),
                primary=primary,
                valid=valid,
                failed=failed,
                advice=advice,
            )
        )
    return out


def _inference_table(results: Sequence[InferenceResult]) -> Table:
    rows = []
    flagged = set()
    for i, r in enumerate(results):
        rows.append(
            (
                r.step.step_id,
                ", ".join(r.step.nodes),
                r.scenario or "?",
                r.primary or _("(none)"),
                r.result,
                "✖ " + ", ".join(r.failed) if r.failed else ("—" if r.valid else ""),
                r.advice,
            )
        )
        if r.valid is not True:
            flagged.add((i, 4))
        if r.failed:
            flagged.add((i, 5))
    return Table(
        _("Results per scenario (LoadGen's own verdict)"),
        (
            _("step"),
            _("node"),
            _("scenario"),
            _("primary metric"),
            _("result"),
            _("failed constraint(s)"),
            _("LoadGen says / why"),
        ),
        tuple(rows),
        flagged=frozenset(flagged),
    )


def inference(si: SectionInput) -> SectionOutput:
    steps = tuple(si.steps)  # a few LoadGen runs, looked up for each bar
    results = inference_results(steps)
    tables = [_inference_table(results)] if results else []
    bad = [r for r in results if r.valid is not True]
    notes = []
    if results:
        notes.append(
            _("{valid} of {total} LoadGen runs VALID").format(
                valid=len(results) - len(bad), total=len(results)
            )
            + (
                _("; not valid: {runs}").format(runs="; ".join(r.text for r in bad[:6]))
                if bad
                else ""
            )
            + _(".")
        )
    out_plots: list[Plot] = []
    for (label, unit), ms in sorted(by_series(si.measurements).items()):
        if len(ms) > 1 and label.split(" [")[0] in PRIMARY_METRICS:
            svg = plots.bars(
                [f"{m.step} {'+'.join(m.nodes)} r{m.repeat}" for m in ms],
                [m.value for m in ms],
                unit=unit,
                bounds=lower_bounds(list(si.verdicts), unit),
                bad=[
                    f"{m.step} {'+'.join(m.nodes)} r{m.repeat}"
                    for m in ms
                    if any(r.valid is False and r.step.step_id == _sid(m, steps) for r in results)
                ],
            )
            out_plots.append(Plot(label, svg, _("hatched: an INVALID run")))
    tables.append(measurement_table(si.measurements))
    return SectionOutput(plots=tuple(out_plots), tables=tuple(tables), notes=tuple(notes))


PRIMARY_METRICS = frozenset(
    {
        "samples_per_second",
        "tokens_per_second",
        "completed_samples_per_second",
        "completed_tokens_per_second",
    }
)


def _sid(m: Measurement, steps: Sequence[StepResult]) -> str:
    for s in steps:
        if s.step == m.step and s.nodes == m.nodes and s.repeat == m.repeat:
            return s.step_id
    return ""


# ---- training -----------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingRun:
    index: int
    ttt: Measurement | None
    status: str
    compliance: FactValue
    complaint: str

    @property
    def counted(self) -> bool:
        return self.compliance == "passed" and self.status == "success"


@dataclass(frozen=True)
class TrainingResult:
    step: StepResult
    benchmark: str
    runs: tuple[TrainingRun, ...]
    runs_required: FactValue
    runs_reason: str
    score: Measurement | None
    score_valid: FactValue
    score_reason: str
    checker: str

    @property
    def valid(self) -> bool:
        return self.score_valid is True

    @property
    def text(self) -> str:
        why = f" ({self.score_reason})" if self.score_reason else ""
        return f"{self.step.step_id} {self.benchmark}: " + _("not a valid MLPerf score") + why


def training_results(steps: Sequence[StepResult]) -> list[TrainingResult]:
    return [_training_result(s) for s in steps if s.tool == TRAINING and _from_runner(s)]


def _training_result(s: StepResult) -> TrainingResult:
    """One training step: its runs, and the benchmark's score and whether it is valid."""
    per = [f for f in s.facts if "benchmark" in f.dims]
    benchmark = str(
        next((f.dims["benchmark"] for f in per), None)
        or next((f.value for f in s.facts if f.name == "benchmark" and f.value), "?")
    )
    f = _facts(s, benchmark=benchmark)
    rr = f.get("runs_required")
    sv = f.get("score_valid")
    score = next(
        (
            m
            for m in s.measurements
            if m.metric == "score" and m.dims.get("benchmark", benchmark) == benchmark
        ),
        None,
    )
    checker = _value(_facts(s).get("mlperf_logging_version"))
    return TrainingResult(
        step=s,
        benchmark=benchmark,
        runs=tuple(_training_runs(s)),
        runs_required=_value(rr),
        runs_reason=rr.reason if rr is not None else "",
        score=score,
        score_valid=_value(sv),
        score_reason=(sv.reason if sv is not None else "")
        or ("" if sv is not None else s.reason or _("the runner stated no score validity")),
        checker=str(checker) if checker else "",
    )


def _training_runs(s: StepResult) -> list[TrainingRun]:
    """Each run of the step (``run_index``): its time to train, status and compliance."""
    dims = [x.dims for x in s.facts] + [m.dims for m in s.measurements]
    indices = sorted({int(d["run_index"]) for d in dims if isinstance(d.get("run_index"), int)})
    runs = []
    for k in indices:
        f = _facts(s, run_index=k)
        ttt = next(
            (
                m
                for m in s.measurements
                if m.metric == "time_to_train" and m.dims.get("run_index") == k
            ),
            None,
        )
        comp = f.get("compliance")
        status = _value(f.get("status"))
        runs.append(
            TrainingRun(
                index=k,
                ttt=ttt,
                status=str(status) if status is not None else _("(no status)"),
                compliance=_value(comp),
                complaint=comp.reason if comp is not None else _("no compliance check"),
            )
        )
    return runs


def _from_runner(s: StepResult) -> bool:
    """The step holds the training runner's records (per-run dims, the score facts)."""
    dims = [x.dims for x in s.facts] + [m.dims for m in s.measurements]
    return any("run_index" in d for d in dims) or any(
        f.name in ("score_valid", "runs_required") for f in s.facts
    )


def _compliance_text(r: TrainingRun) -> str:
    if r.compliance == "passed":
        return _("✔ passed")
    if r.compliance == "failed":
        return _("✖ failed")
    return _("? not checked ({why})").format(why=r.complaint) if r.complaint else _("? not checked")


def _run_rows(
    results: Sequence[TrainingResult],
) -> tuple[list[tuple[str, ...]], set[tuple[int, int]]]:
    """One row per run, and the cells flagged (a run that did not succeed or comply)."""
    rows: list[tuple[str, ...]] = []
    flags: set[tuple[int, int]] = set()
    for t in results:
        for r in t.runs:
            i = len(rows)
            rows.append(
                (
                    t.step.step_id,
                    t.benchmark,
                    str(r.index),
                    duration(r.ttt.value, r.ttt.unit) if r.ttt else _("(no time)"),
                    r.status if r.status == "success" else f"✖ {r.status}",
                    _compliance_text(r),
                    r.complaint if r.compliance != "passed" else "",
                )
            )
            if r.status != "success":
                flags.add((i, 4))
            if r.compliance != "passed":
                flags.add((i, 5))
    return rows, flags


def _score_rows(
    results: Sequence[TrainingResult],
) -> tuple[list[tuple[str, ...]], set[tuple[int, int]]]:
    """One row per benchmark result (runs, score, validity), and the cells flagged (a score
    that is not a valid MLPerf score)."""
    rows: list[tuple[str, ...]] = []
    flags: set[tuple[int, int]] = set()
    for t in results:
        i = len(rows)
        required = t.runs_required
        rows.append(
            (
                t.step.step_id,
                t.benchmark,
                str(len(t.runs)),
                str(required) if required is not None else f"? ({t.runs_reason or _('unknown')})",
                duration(t.score.value, t.score.unit) if t.score else _("(no score)"),
                _("✔ valid") if t.valid else _("✖ not valid"),
                t.score_reason if not t.valid else "",
                t.checker,
            )
        )
        if not t.valid:
            flags.add((i, 5))
    return rows, flags


def _training_tables(results: Sequence[TrainingResult]) -> list[Table]:
    run_rows, run_flags = _run_rows(results)
    score_rows, score_flags = _score_rows(results)
    return [
        Table(
            _(
                "Benchmark results (MLPerf scoring: drop the fastest and slowest run, average "
                "the rest)"
            ),
            (
                _("step"),
                _("benchmark"),
                _("runs"),
                _("runs the rules require"),
                _("score"),
                _("MLPerf score"),
                _("why not valid"),
                "mlperf-logging",
            ),
            tuple(score_rows),
            flagged=frozenset(score_flags),
        ),
        Table(
            _("Runs: time to train and the compliance checker's verdict"),
            (
                _("step"),
                _("benchmark"),
                _("run"),
                _("time to train"),
                _("run_stop status"),
                _("compliance"),
                _("checker's first complaint"),
            ),
            tuple(run_rows),
            flagged=frozenset(run_flags),
        ),
    ]


def _per_run(si: SectionInput) -> dict[tuple[str, str], list[tuple[str, float, bool]]]:
    """(benchmark, unit) -> (label, time to train, counted) over history and this run."""
    out: dict[tuple[str, str], list[tuple[str, float, bool]]] = {}
    for run in (*si.history, si.run):
        steps = si.steps if run is si.run else [s for s in run.steps if s.tool == si.tool]
        for t in training_results(steps):
            for r in t.runs:
                if r.ttt is None:
                    continue
                label = _("{step} run {index}").format(step=t.step.step, index=r.index)
                if si.history:
                    label = f"{run.id} r{r.ttt.repeat}.{r.index}"
                out.setdefault((t.benchmark, r.ttt.unit), []).append(
                    (label, r.ttt.value, r.counted)
                )
        for s in steps:  # records without the runner's facts: the measurements alone
            if _from_runner(s):
                continue
            for m in s.measurements:
                if m.metric == "time_to_train":
                    key = (str(m.dims.get("benchmark", m.metric)), m.unit)
                    out.setdefault(key, []).append((f"{run.id} r{m.repeat}", m.value, True))
    return out


def _ttt_plots(si: SectionInput) -> list[Plot]:
    """Time to train per run, one plot per benchmark and unit; runs not counted hatched."""
    out_plots: list[Plot] = []
    for (label, unit), pts in sorted(_per_run(si).items()):
        svg = plots.bars(
            [p[0] for p in pts],
            [p[1] for p in pts],
            unit=unit,
            bounds=lower_bounds(list(si.verdicts), unit),
            bad=[p[0] for p in pts if not p[2]],
            ylabel=_("time to train ({unit})").format(unit=unit),
        )
        out_plots.append(
            Plot(
                _("{benchmark}: time to train per run").format(benchmark=label),
                svg,
                _(
                    "lower is better; hatched: did not converge or failed compliance; dashed "
                    "line: the spec's bound"
                ),
            )
        )
    return out_plots


def _plain_ttt_table(si: SectionInput, results: Sequence[TrainingResult]) -> Table | None:
    """The times to train of steps without the runner's facts (measurements alone)."""
    runner_steps = {t.step.step_id for t in results}
    plain = [
        m
        for s in si.steps
        if s.step_id not in runner_steps
        for m in s.measurements
        if m.metric == "time_to_train"
    ]
    if not plain:
        return None
    rows = tuple(
        (m.step, str(m.dims.get("benchmark", "")), f"r{m.repeat}", duration(m.value, m.unit))
        for m in plain
    )
    return Table(
        _("Time to train"),
        (_("step"), _("benchmark"), _("run"), _("time to train")),
        rows,
    )


def _score_note(t: TrainingResult) -> str:
    """Runs made of those required, and whether the score is a valid MLPerf score."""
    return ngettext(
        "{benchmark}: {n} run of the {required} the rules require; ",
        "{benchmark}: {n} runs of the {required} the rules require; ",
        len(t.runs),
    ).format(benchmark=t.benchmark, n=len(t.runs), required=t.runs_required or "?") + (
        _("a valid MLPerf score.")
        if t.valid
        else _("not a valid MLPerf score ({why}).").format(why=t.score_reason)
    )


def training(si: SectionInput) -> SectionOutput:
    results = training_results(si.steps)
    out_plots = _ttt_plots(si)
    tables = _training_tables(results) if results else []
    plain = _plain_ttt_table(si, results)
    if plain is not None:
        tables.append(plain)
    notes = [_score_note(t) for t in results]
    rest = [m for m in si.measurements if m.metric not in ("time_to_train", "score")]
    if rest:
        tables.append(measurement_table(rest, _("Other measurements from the logs")))
    return SectionOutput(plots=tuple(out_plots), tables=tuple(tables), notes=tuple(notes))


def invalid_results(steps: Sequence[StepResult]) -> list[tuple[str, str]]:
    """(step_id, one line) for each INVALID inference run and each invalid training score."""
    out = [(r.step.step_id, r.text) for r in inference_results(steps) if r.valid is False]
    out += [(t.step.step_id, t.text) for t in training_results(steps) if not t.valid]
    return out


SECTION = [
    Section(TRAINING, N_("MLPerf Training"), training, history_steps=True),
    Section(INFERENCE, N_("MLPerf Inference"), inference),
]
