"""The HTML acceptance report: one self-contained file, readable offline and on paper.

``render(run, run_dir, history=()) -> str``. Jinja2 with autoescape on for every value;
plots are inline SVG made by :mod:`aibench.reports.plots`; CSS and the small vanilla JS
(filter and sort of the checks table, opening folded parts before printing) are inlined.
The page fetches nothing: a Content-Security-Policy allows no network source at all and
only the report's own script (by its sha256), so even an injected ``<script>`` would not
run. Order: verdict banner, sign-off, failures, checks table, per-benchmark sections,
history (when given), environment / bill of materials, raw log index.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import functools
import hashlib
import statistics
from array import array
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from aibench.model import (
    Lazy,
    Measurement,
    Outcome,
    Run,
    StepResult,
    StepSource,
    StepStatus,
    Verdict,
    step_kinds,
)
from aibench.reports import context, i18n, rows
from aibench.reports.i18n import _, ngettext

if TYPE_CHECKING:
    import jinja2

TEMPLATE = "report.html.j2"


def _asset(name: str) -> str:
    return (resources.files("aibench.reports") / "templates" / name).read_text(encoding="utf-8")


def _href(rel: str) -> str:
    ok = context.safe_relpath(rel)
    return quote(ok, safe="/") if ok else ""


def _sections(run: Run, history: Sequence[Run]) -> list[dict[str, Any]]:
    from aibench.reports.sections import SectionInput, notes_table, section_for

    steps, measurements = _by_tool(run)
    if run.inputs.get("accept"):  # a composed record (aibench accept): its repairs first
        steps, measurements = {"repairs": (), **steps}, {"repairs": (), **measurements}
    for v in run.verdicts:
        if v.benchmark and v.benchmark not in steps:
            steps[v.benchmark], measurements[v.benchmark] = (), ()
    out = []
    for tool in list(steps):
        section = section_for(tool)
        si = SectionInput(
            tool=tool,
            run=run,
            measurements=measurements.pop(tool),
            verdicts=tuple(v for v in run.verdicts if v.benchmark == tool),
            steps=steps.pop(tool),
            history=tuple(history),
        )
        result = section.render(si)
        warned = notes_table(si.steps)
        if warned is not None:  # next to the numbers they qualify
            result = dataclasses.replace(result, tables=(warned, *result.tables))
        c = context.counts(si.verdicts)
        out.append(
            {
                "tool": tool,
                "title": _(section.title),
                "out": result,
                "counts": c,
                "steps": len(si.steps),
                "measurements": len(si.measurements),
            }
        )
    return out


def _by_tool(run: Run) -> tuple[dict[str, Sequence[StepResult]], dict[str, Sequence[Measurement]]]:
    """The steps and the measurements of each tool, in the order the tools first ran, in
    one pass over the steps. The steps of a run read from disk (a StepSource) stay there:
    a tool's are the indices of its steps (8 bytes a step), read again by each pass a
    section makes, and its measurements are read with them."""
    if isinstance(run.steps, StepSource):
        return _on_disk(run.steps)
    steps: dict[str, list[StepResult]] = {}
    measurements: dict[str, list[Measurement]] = {}
    for s in run.steps:
        if s.tool not in steps:
            steps[s.tool], measurements[s.tool] = [], []
        steps[s.tool].append(s)
        measurements[s.tool] += s.measurements
    return {t: tuple(v) for t, v in steps.items()}, {t: tuple(v) for t, v in measurements.items()}


def _on_disk(
    source: StepSource,
) -> tuple[dict[str, Sequence[StepResult]], dict[str, Sequence[Measurement]]]:
    indices: dict[str, array[int]] = {}
    counts: dict[str, int] = {}
    for i, s in enumerate(source):
        if s.tool not in indices:
            indices[s.tool], counts[s.tool] = array("q"), 0
        indices[s.tool].append(i)
        counts[s.tool] += len(s.measurements)
    steps: dict[str, Sequence[StepResult]] = {}
    measurements: dict[str, Sequence[Measurement]] = {}
    for tool, picked in indices.items():
        steps[tool] = of_tool = source.subset(picked)
        measurements[tool] = Lazy(functools.partial(_measurements, of_tool), counts[tool])
    return steps, measurements


def _measurements(steps: Iterable[StepResult]) -> Iterator[Measurement]:
    for s in steps:
        yield from s.measurements


def _history_plots(run: Run, history: Sequence[Run]) -> list[Any]:
    from aibench.reports import plots
    from aibench.reports.sections import Plot

    if not history:
        return []
    runs = sorted((*history, run), key=lambda r: (r.started, r.id))
    per_check: dict[tuple[str, str], dict[str, float]] = {}
    for r in runs:
        vals: dict[tuple[str, str], list[float]] = {}
        for v in r.verdicts:
            if v.observed is not None:
                vals.setdefault((v.check, v.unit), []).append(v.observed)
        for key, samples in vals.items():
            per_check.setdefault(key, {})[r.started[:16] or r.id] = statistics.median(samples)
    out = []
    current = {(v.check, v.unit) for v in run.verdicts}
    by_unit: dict[str, dict[str, tuple[list[str], list[float]]]] = {}
    for (check, unit), pts in sorted(per_check.items()):
        if (check, unit) in current and len(pts) > 1:
            xs = sorted(pts)
            by_unit.setdefault(unit, {})[check] = (xs, [pts[x] for x in xs])
    for unit, series in sorted(by_unit.items()):
        chunk = dict(list(series.items())[:8])
        out.append(
            Plot(
                _("History: checks in {unit}").format(unit=unit or _("plain numbers")),
                plots.trend(chunk, ylabel=_("median over subjects ({unit})").format(unit=unit)),
                ngettext(
                    "{n} run, oldest first; median of each check over its subjects",
                    "{n} runs, oldest first; median of each check over its subjects",
                    len(runs),
                ).format(n=len(runs)),
            )
        )
    return out


def _failure_rows(run: Run, run_dir: Path, limit: int = 100) -> list[dict[str, Any]]:
    shown = context.failing(run)[:limit]
    steps = context.steps_by_id(run, {e for v in shown for e in v.evidence})
    rows = []
    for v in shown:
        rel, tail = context.evidence_excerpt(run_dir, v, steps)
        rows.append(
            {
                "v": v,
                "log": rel,
                "href": _href(rel),
                "tail": tail,
                "subject": context.subject(v, 12),
                "observed": context.observed(v),
            }
        )
    return rows


def _unjudged(run: Run) -> list[dict[str, Any]]:
    """Results the tools themselves call invalid (MLPerf), and whether a failing check
    of the spec already covers them (one of its evidence steps is the result's step)."""
    if not any(tool.startswith("mlperf-") for _, tool in step_kinds(run.steps)):
        return []  # only MLPerf results have a validity of their own (and its module is big)
    from aibench.reports.sections import mlperf

    covered = {e for v in run.verdicts if v.outcome.failing for e in v.evidence}
    invalid = mlperf.invalid_results(run.steps)
    index = step_numbers(run, {sid for sid, _text in invalid})
    return [
        {"text": text, "judged": sid in covered, "step": index.get(sid)} for sid, text in invalid
    ]


def step_numbers(run: Run, ids: Collection[str]) -> dict[str, int]:
    """The number (from 1) of each step of ``ids`` in the raw-log appendix, by step id:
    only those, the steps of a large run are many."""
    if not ids:
        return {}
    return {s.step_id: i for i, s in enumerate(run.steps, 1) if s.step_id in ids}


def _notices(run: Run, unjudged: Sequence[dict[str, Any]]) -> list[str]:
    """Banner lines beside the checks: the suspects of fault localization, and results the
    tools call not valid that no failing check covers."""
    lines = [context.partial_line(run)] if run.partial else []
    found = context.suspects(run)
    for s in found[:5]:
        tool = f" ({s.source.split(':', 1)[0]})" if s.source else ""
        lines.append(
            _("Suspect {kind} {name}").format(kind=context.kind_label(s.kind), name=s.name)
            + tool
            + (_(": {text}").format(text=s.summary) if s.summary else "")
        )
    if len(found) > 5:
        lines.append(_("… and {n} more suspects (failures block)").format(n=len(found) - 5))
    loose = [u for u in unjudged if not u["judged"]]
    if loose:
        lines.append(
            _("Not valid, and no check of the spec judges it: {text}").format(text=loose[0]["text"])
            + (_(" (and {n} more)").format(n=len(loose) - 1) if len(loose) > 1 else "")
        )
    return lines


def _headline(run: Run) -> list[str]:
    """Short sentences for the banner: which check, which node, which link."""
    bad = context.failing(run)
    lines = []
    by_check: dict[str, list[Verdict]] = {}
    for v in bad:
        by_check.setdefault(v.check, []).append(v)
    shown_checks = list(by_check.items())
    if len(shown_checks) > 8:
        shown_checks = shown_checks[:6]
    for check, vs in shown_checks:
        named = dict.fromkeys(c for v in vs for c in v.culprits or v.subject or (_("whole run"),))
        who = list(named)  # each once, in order: a coverage verdict may name 500,000 pairs
        shown = ", ".join(who[:5]) + (
            _(" and {n} more").format(n=len(who) - 5) if len(who) > 5 else ""
        )
        lines.append(f"{context.outcome_label(vs[0].outcome)} {check}: {shown}")
    rest = len(by_check) - len(shown_checks)
    if rest:
        lines.append(
            ngettext("… and {n} more failing check", "… and {n} more failing checks", rest).format(
                n=rest
            )
        )
    return lines


def render(run: Run, run_dir: Path, history: Sequence[Run] = (), lang: str = "en") -> str:
    """The report of ``run`` in ``lang`` (see :data:`aibench.reports.i18n.LANGUAGES`)."""
    _restart_ids()
    with i18n.use(lang) as translations:
        return "".join(_render(run, run_dir, history, lang, translations))


def _restart_ids() -> None:
    """The same run, the same bytes: a report's plots are numbered from 1."""
    from aibench.reports import plots

    plots.restart_ids()


def write(
    run: Run,
    run_dir: Path,
    history: Sequence[Run] = (),
    lang: str = "en",
    name: str = "report.html",
) -> Path:
    """:func:`render` written to ``run_dir/name`` (atomically) a piece at a time: the page
    of a run of millions of steps is never held whole."""
    from aibench.textio import write_atomic_with

    _restart_ids()
    with i18n.use(lang) as translations:
        pieces = _render(run, run_dir, history, lang, translations)
        return write_atomic_with(run_dir / name, lambda f: f.writelines(pieces))


class _QuietCache:
    """Jinja2's file-system bytecode cache (a private per-user folder in the temporary
    directory, files keyed by the template's name and checked against its source), for
    which a cache that cannot be written is no error: the template is compiled again."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def set_bucket(self, bucket: Any) -> None:
        with contextlib.suppress(OSError):
            self.inner.set_bucket(bucket)


def _bytecode_cache() -> Any:
    """Compiling the report template is a tenth of a second of every run; the compiled
    code is kept between runs (``AIBENCH_NO_TEMPLATE_CACHE=1``: compile every time)."""
    import os

    import jinja2

    if os.environ.get("AIBENCH_NO_TEMPLATE_CACHE"):
        return None
    try:
        return _QuietCache(jinja2.FileSystemBytecodeCache())
    except (OSError, RuntimeError):  # no private cache folder can be had: compile
        return None


def _sections_with_svg(run: Run, history: Sequence[Run]) -> list[dict[str, Any]]:
    """The tools' sections, their plots' SVG marked as markup (made by aibench's own
    plotting, every text in it escaped there)."""
    from markupsafe import Markup

    sections = _sections(run, history)
    for s in sections:
        s["out"] = s["out"].__class__(
            plots=tuple(p.__class__(p.title, Markup(p.svg), p.caption) for p in s["out"].plots),  # noqa: S704
            tables=s["out"].tables,
            notes=s["out"].notes,
        )
    return sections


def _history_with_svg(run: Run, history: Sequence[Run]) -> list[dict[str, Any]]:
    from markupsafe import Markup

    return [
        {"title": p.title, "svg": Markup(p.svg), "caption": p.caption}  # noqa: S704
        for p in _history_plots(run, history)
    ]


def _environment(translations: Any) -> jinja2.Environment:
    """The report's jinja2 environment: autoescaped, strict, translated."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("aibench.reports", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.i18n"],
        bytecode_cache=_bytecode_cache(),
    )
    env.install_gettext_translations(translations, newstyle=True)  # type: ignore[attr-defined]
    return env


def _large_tables(
    run: Run,
    verdicts: Sequence[Verdict],
    label: Callable[[Outcome], str],
    status: Callable[[StepStatus], str],
) -> dict[str, Any]:
    """The rows of the two tables that grow with the run (:mod:`aibench.reports.rows`), and
    the step numbers by which the checks and the failures link to the raw logs."""
    linked = {e for v in verdicts for e in v.evidence[:8]}  # the checks' and the failures'
    step_index = step_numbers(run, linked)
    return {
        "step_index": step_index,
        "check_rows": rows.check_rows(verdicts, step_index, label),
        "log_rows": rows.log_rows(run.steps, status, _href),
    }


def _environment_tables(run: Run) -> dict[str, Any]:
    """The environment of the run: the facts per node (open when at most 64 nodes), their
    summary with each key's most common value, and what else the run recorded."""
    nodes, keys, table, env_summary = context.environment(run)
    return {
        "env_nodes": nodes,
        "env_keys": keys,
        "env_table": table,
        "env_summary": env_summary,
        "env_open": len(nodes) <= 64,
        "env_extra": context.extra_environment(run),
        "modal": {k.key: k.modal for k in env_summary},
    }


def _parties(run: Run, n_env_nodes: int) -> dict[str, Any]:
    """Whom the report is between: the cluster (and its node count), the vendor and the
    customer, as signed off, else as the inventory names them."""
    inv = run.inventory if isinstance(run.inventory, dict) else dict(run.inventory)
    return {
        "inventory_name": str(run.signoff.get("cluster") or inv.get("name", "")),
        "vendor": str(run.signoff.get("vendor") or inv.get("vendor", "")),
        "customer": str(run.signoff.get("customer") or inv.get("customer", "")),
        "n_nodes": len(inv.get("nodes", [])) or n_env_nodes,
    }


def _script() -> dict[str, str]:
    """The report's script, and its SHA-256 for the page's Content-Security-Policy."""
    script = _asset("report.js")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return {"script": script, "script_hash": digest}


def _render(
    run: Run, run_dir: Path, history: Sequence[Run], lang: str, translations: Any
) -> Iterator[str]:
    env = _environment(translations)
    environment = _environment_tables(run)
    run_sha, run_sha_how = context.run_digest(run, run_dir)
    rank = {o: i for i, o in enumerate(context.OUTCOME_ORDER)}
    verdicts = sorted(run.verdicts, key=lambda v: (rank[v.outcome], v.benchmark, v.check))
    sections = _sections_with_svg(run, history)
    unjudged = _unjudged(run)
    hist = _history_with_svg(run, history)
    template = env.get_template(TEMPLATE)
    # each label looked up once per render (in its language), not once per row
    label = functools.cache(context.outcome_label)
    status = functools.cache(context.status_label)
    return template.generate(
        html_lang=i18n.HTML_LANG[lang],
        label=label,
        kind=context.kind_label,
        absent=_("(absent)"),
        run=run,
        outcome=run.outcome,
        Outcome=Outcome,
        counts=context.counts(run.verdicts),
        symbol=context.SYMBOL,
        headline=_headline(run),
        notices=_notices(run, unjudged),
        unjudged=unjudged,
        suspects=context.suspects(run),
        failures=_failure_rows(run, run_dir),
        n_failing=len(context.failing(run)),
        verdicts=verdicts,
        sections=sections,
        history=hist,
        **environment,
        run_sha=run_sha,
        run_sha_how=run_sha_how,
        judged=context.judged(run),
        **_parties(run, len(environment["env_nodes"])),
        steps=run.steps,
        **_large_tables(run, verdicts, label, status),
        css=_asset("report.css"),
        **_script(),
        artefacts=context.ARTEFACTS,
    )
