"""The Markdown summary for CI job pages (GitHub ``$GITHUB_STEP_SUMMARY``, GitLab).

Headline outcome, counts per outcome, the suspects of fault localization and the MLPerf
results the tools call not valid (when there are any), a table of failing checks (at most
50 rows) and the names of the artefacts. Cell text is escaped for GitHub-flavoured
Markdown tables: pipes, backslashes, HTML-significant characters and line breaks cannot
change the table.
"""

from __future__ import annotations

from aibench.model import Run, step_kinds
from aibench.reports import context, i18n
from aibench.reports.i18n import _

MAX_ROWS = 50
_ESC = str.maketrans(
    {
        "|": "\\|",
        "\\": "\\\\",
        "<": "&lt;",
        ">": "&gt;",
        "&": "&amp;",
        "`": "\\`",
        "*": "\\*",
        "_": "\\_",
        "[": "\\[",
        "]": "\\]",
        "\n": " ",
        "\r": " ",
    }
)


def cell(text: str) -> str:
    return text.translate(_ESC)


def render(run: Run, lang: str = "en") -> str:
    """The summary of ``run`` in ``lang`` (see :data:`aibench.reports.i18n.LANGUAGES`)."""
    with i18n.use(lang):
        return _render(run)


def _render(run: Run) -> str:
    lines = _head(run)
    lines += _suspects(run)
    lines += _invalid(run)
    lines += _failing(run)
    lines += [_("Artefacts:") + " " + ", ".join(f"`{a}`" for a in context.ARTEFACTS), ""]
    return "\n".join(lines)


def _head(run: Run) -> list[str]:
    """The outcome, the run's names, the counts per outcome, who judged, what to know."""
    counts = context.counts(run.verdicts)
    outcome = run.outcome
    sym = context.SYMBOL.get(outcome, "?")
    inv = str(run.inventory.get("name", "")) if hasattr(run.inventory, "get") else ""
    lines = [
        f"## {sym} aibench {cell(run.suite)}: **{cell(context.outcome_label(outcome))}**",
        "",
        _("Run `{id}` · spec {spec} · {inventory} · aibench {version}").format(
            id=cell(run.id),
            spec=cell(run.spec),
            inventory=cell(inv) or _("no inventory name"),
            version=cell(run.aibench_version),
        ),
        "",
        " · ".join(
            f"{context.SYMBOL[o]} {cell(context.outcome_label(o))} **{n}**"
            for o, n in counts.items()
        ),
        "",
    ]
    if run.partial:
        lines += [f"> **{cell(context.partial_line(run))}**", ""]
    if context.judged(run):
        lines += [_("Judged by {who}").format(who=cell(context.judged(run))), ""]
    lines += [f"> {cell(n)}" for n in run.notes if "not stored in run.json" in n]
    if run.generated:
        lines += [_("> **GENERATED DATA** — not measured on a cluster."), ""]
    return lines


def _suspects(run: Run) -> list[str]:
    found = context.suspects(run)
    if not found:
        return []
    lines = [_("### Suspects ({n})").format(n=len(found)), ""]
    lines += [
        f"- {cell(context.kind_label(x.kind))} **{cell(x.name)}**"
        + (_(": {text}").format(text=cell(x.summary)) if x.summary else "")
        for x in found[:20]
    ]
    return [*lines, ""]


def _invalid(run: Run) -> list[str]:
    """The MLPerf results the tools call not valid, and whether a check judges each."""
    if not any(tool.startswith("mlperf-") for _, tool in step_kinds(run.steps)):
        return []  # only MLPerf results have a validity of their own (and its module is big)
    from aibench.reports.sections.mlperf import invalid_results

    invalid = invalid_results(run.steps)
    if not invalid:
        return []
    covered = {e for v in run.verdicts if v.outcome.failing for e in v.evidence}
    lines = [_("### Results the tools call not valid ({n})").format(n=len(invalid)), ""]
    lines += [
        f"- ✖ {cell(text)}" + ("" if sid in covered else _(" — no check of the spec judges it"))
        for sid, text in invalid[:20]
    ]
    return [*lines, ""]


def _failing(run: Run) -> list[str]:
    """The table of failing checks (at most MAX_ROWS rows), or that none failed."""
    bad = context.failing(run)
    if not bad:
        return [_("No check failed."), ""]
    header = (
        _("outcome"),
        _("check"),
        _("benchmark"),
        _("subject"),
        _("expected"),
        _("observed"),
        _("culprits / reason"),
    )
    lines = [
        _("### Failing checks ({n})").format(n=len(bad)),
        "",
        "| " + " | ".join(header) + " |",
        "|---|---|---|---|---|---|---|",
    ]
    for v in bad[:MAX_ROWS]:
        why = ", ".join(v.culprits)
        if v.reason:
            why = f"{why}: {v.reason}" if why else v.reason
        row = (
            f"{context.SYMBOL[v.outcome]} {context.outcome_label(v.outcome)}",
            v.check,
            v.benchmark,
            context.subject(v),
            v.expected,
            context.observed(v),
            why,
        )
        lines.append("| " + " | ".join(cell(x) for x in row) + " |")
    if len(bad) > MAX_ROWS:
        lines.append(
            "\n" + _("… and {n} more in report.html / junit.xml").format(n=len(bad) - MAX_ROWS)
        )
    return [*lines, ""]
