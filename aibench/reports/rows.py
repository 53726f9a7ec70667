"""The two tables of report.html that grow with the run: every check's verdict and every
step's raw logs, one row each.

A 1024-node acceptance run has about 20,000 verdicts and 33,000 steps, four times that at
4096 nodes; as template loops these rows were most of the template's time (an escaped
``Markup`` made for each of the half-million values). Here each row is joined from its
escaped cells in one expression. The markup is the template's, byte for byte: every value
read from the run goes through :func:`markupsafe.escape`, as the template's autoescape
sends it, and the translated fixed text is used as the template's gettext gives it (not
escaped, numbers put in with ``%``). ``tests/reports/test_rows.py`` renders both tables
both ways and compares.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from markupsafe import Markup, escape

from aibench.model import Outcome, StepResult, StepStatus, Verdict
from aibench.reports import context
from aibench.reports.i18n import _, ngettext


def _e(value: Any) -> str:
    return str(escape(value))


# rows joined into one piece of the page: report.html is written a piece at a time
CHUNK = 2000


def _chunked(rows: Iterable[str], size: int = CHUNK) -> Iterator[Markup]:
    """``rows`` (escaped markup) joined ``size`` at a time."""
    it = iter(rows)
    while part := list(itertools.islice(it, size)):
        yield Markup("".join(part))  # noqa: S704 - every row is escaped by its maker


def check_rows(
    verdicts: Iterable[Verdict],
    step_index: Mapping[str, int],
    label: Callable[[Outcome], str],
) -> Iterator[Markup]:
    """The ``<tr>`` of each verdict in the checks table, one per line, a few thousand rows
    to a piece."""
    return _chunked(_check_rows(verdicts, step_index, label))


def _check_rows(
    verdicts: Iterable[Verdict],
    step_index: Mapping[str, int],
    label: Callable[[Outcome], str],
) -> Iterator[str]:
    log = _("log")
    waiver_label = _("waiver:")
    for v in verdicts:
        oc = v.outcome.value
        described = f'<div class="muted small">{_e(v.description)}</div>' if v.description else ""
        data_v = "" if v.observed is None else _e(v.observed)
        reason = _e(v.reason)
        if v.culprits:
            reason += f" <b>{', '.join(map(_e, v.culprits))}</b>"
        if v.waiver:
            reason += f' <span class="muted">{waiver_label} {_e(v.waiver.get("reason", ""))}'
            if v.waiver.get("expires"):
                expires = _("expires %(date)s") % {"date": _e(v.waiver.get("expires"))}
                reason += f" ({expires})"
            reason += "</span>"
        links = " ".join(
            f'<a href="#step-{step_index[e]}">{log}</a>' if e in step_index else ""
            for e in v.evidence[:3]
        )
        yield (
            f'<tr data-outcome="{oc}"><td class="t-{oc}">{_e(context.SYMBOL[v.outcome])} '
            f"{_e(label(v.outcome))}</td><td>{_e(v.check)}{described}</td>"
            f"<td>{_e(v.benchmark)}</td><td>{_e(context.subject(v))}</td>"
            f'<td>{_e(v.expected)}</td><td data-v="{data_v}">{_e(context.observed(v))}</td>'
            f"<td>{reason}</td><td>{links}</td></tr>\n"
        )


def log_rows(
    steps: Iterable[StepResult],
    status: Callable[[StepStatus], str],
    href: Callable[[str], str],
) -> Iterator[Markup]:
    """The ``<tr>`` of each step in the raw-log appendix, one per line (``id="step-N"``, N
    from 1: the checks table links to these), a few thousand rows to a piece, made as the
    steps are read."""
    return _chunked(_log_rows(steps, status, href))


def _log_rows(
    steps: Iterable[StepResult],
    status: Callable[[StepStatus], str],
    href: Callable[[str], str],
) -> Iterator[str]:
    for i, s in enumerate(steps, 1):
        version = f' <span class="muted">{_e(s.tool_version)}</span>' if s.tool_version else ""
        if len(s.nodes) <= 4:
            nodes = ", ".join(map(_e, s.nodes))
        else:
            n = len(s.nodes)
            nodes = ngettext("%(num)d node", "%(num)d nodes", n) % {"num": n}
        if s.ok:
            state = _e(status(s.status))
        else:
            state = f"<b>✖ {_e(status(s.status))}</b>" + (f": {_e(s.reason)}" if s.reason else "")
        bad = "" if s.ok else ' class="bad"'
        stdout, stderr = href(s.stdout_path), href(s.stderr_path)
        links = (f'<a href="{_e(stdout)}">stdout</a>' if stdout else "") + " "
        links += f'<a href="{_e(stderr)}">stderr</a>' if stderr else ""
        yield (
            f'<tr id="step-{i}"{bad}><td>{i}</td>'
            f'<td class="mono">{_e(s.step_id)}</td><td>{_e(s.tool)}{version}</td>'
            f"<td>{nodes}</td><td>{state}</td><td>{_e(s.started)}</td>"
            f"<td>{_e(context.fmt_number(s.duration_s))}</td><td>{links}</td></tr>\n"
        )
