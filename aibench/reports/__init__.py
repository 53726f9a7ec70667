"""Reports: HTML acceptance report, JUnit XML, Markdown summary, Prometheus metrics, manifest.

:func:`write_all` is what the pipeline calls once ``run.json`` and the raw logs are on
disk. It writes ``report.html``, ``junit.xml``, ``summary.md`` and ``metrics.prom`` into
the run directory, then ``manifest.sha256`` last, covering every file there (see
:mod:`aibench.manifest`). All four formats are rendered from the same ``Run``; heavy
libraries (jinja2, matplotlib) are imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from aibench.model import Run

REPORT = "report.html"
JUNIT = "junit.xml"
SUMMARY = "summary.md"
METRICS = "metrics.prom"


def _write(path: Path, text: str) -> Path:
    from aibench.textio import write_atomic

    return write_atomic(path, text)


def write_all(
    run: Run, run_dir: Path, history: Sequence[Run] = (), lang: str | None = "en"
) -> dict[str, Path]:
    """Render every report of ``run`` into ``run_dir``; return name -> path.

    ``history`` (optional, oldest first or in any order) are earlier runs of the same
    suite; when given the HTML report draws trend lines. ``lang`` (``en``, ``zh``; None
    is ``en``) is the language of report.html and summary.md; junit.xml and metrics.prom
    are for machines and stay English.
    """
    from aibench import manifest
    from aibench.reports import html, i18n, junit, markdown, prometheus

    lang = i18n.check(lang or "en")
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    out = {
        REPORT: html.write(run, run_dir, history, lang, REPORT),
        JUNIT: junit.write(run, run_dir / JUNIT),
        SUMMARY: _write(run_dir / SUMMARY, markdown.render(run, lang)),
        METRICS: _write(run_dir / METRICS, prometheus.render(run)),
    }
    out[manifest.MANIFEST] = manifest.write(run_dir)
    return out
