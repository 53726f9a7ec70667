"""The Markdown summary for CI job pages (GitHub ``$GITHUB_STEP_SUMMARY``, GitLab).

Headline outcome, counts per outcome, the suspects of fault localization and the MLPerf
results the tools call not valid (when there are any), a table of failing checks (at most
50 rows) and the names of the artefacts. Cell text is escaped for GitHub-flavoured
Markdown tables: pipes, backslashes, HTML-significant characters and line breaks cannot
change the table.
"""

from __future__ import annotations

from aibench.model import Run
from aibench.reports import context

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


def render(run: Run) -> str:
    counts = context.counts(run.verdicts)
    outcome = run.outcome
    sym = context.SYMBOL.get(outcome, "?")
    inv = str(run.inventory.get("name", "")) if hasattr(run.inventory, "get") else ""
    lines = [
        f"## {sym} aibench {cell(run.suite)}: **{outcome.value}**",
        "",
        f"Run `{cell(run.id)}` · spec {cell(run.spec)} · "
        f"{cell(inv) or 'no inventory name'} · aibench {cell(run.aibench_version)}",
        "",
        " · ".join(f"{context.SYMBOL[o]} {o.value} **{n}**" for o, n in counts.items()),
        "",
    ]
    if context.judged(run):
        lines += [f"Judged by {cell(context.judged(run))}", ""]
    lines += [f"> {cell(n)}" for n in run.notes if "not stored in run.json" in n]
    if run.generated:
        lines += ["> **GENERATED DATA** — not measured on a cluster.", ""]
    found = context.suspects(run)
    if found:
        lines += [f"### Suspects ({len(found)})", ""]
        lines += [
            f"- {cell(x.kind)} **{cell(x.name)}**" + (f": {cell(x.summary)}" if x.summary else "")
            for x in found[:20]
        ]
        lines.append("")
    from aibench.reports.sections.mlperf import invalid_results

    invalid = invalid_results(run.steps)
    if invalid:
        covered = {e for v in run.verdicts if v.outcome.failing for e in v.evidence}
        lines += [f"### Results the tools call not valid ({len(invalid)})", ""]
        lines += [
            f"- ✖ {cell(text)}" + ("" if sid in covered else " — no check of the spec judges it")
            for sid, text in invalid[:20]
        ]
        lines.append("")
    bad = context.failing(run)
    if bad:
        lines += [
            f"### Failing checks ({len(bad)})",
            "",
            "| outcome | check | benchmark | subject | expected | observed | culprits / reason |",
            "|---|---|---|---|---|---|---|",
        ]
        for v in bad[:MAX_ROWS]:
            why = ", ".join(v.culprits)
            if v.reason:
                why = f"{why}: {v.reason}" if why else v.reason
            lines.append(
                "| "
                + " | ".join(
                    cell(x)
                    for x in (
                        f"{context.SYMBOL[v.outcome]} {v.outcome.value}",
                        v.check,
                        v.benchmark,
                        context.subject(v),
                        v.expected,
                        context.observed(v),
                        why,
                    )
                )
                + " |"
            )
        if len(bad) > MAX_ROWS:
            lines.append(f"\n… and {len(bad) - MAX_ROWS} more in report.html / junit.xml")
        lines.append("")
    else:
        lines += ["No check failed.", ""]
    lines += ["Artefacts: " + ", ".join(f"`{a}`" for a in context.ARTEFACTS), ""]
    return "\n".join(lines)
