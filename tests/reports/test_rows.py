"""report.html's two large tables, built in Python (:mod:`aibench.reports.rows`), are the
markup the template's loops made, byte for byte: the loops are kept here as the reference
and both are rendered from the same run, in both languages, with values that need escaping
in every cell a run fills."""

from __future__ import annotations

import dataclasses
import functools
import re
from pathlib import Path

import pytest

from aibench.model import Outcome, Run, StepStatus
from aibench.reports import context, html, i18n, rows
from tests.reports.gen import make_run

# the template's loops as they were (report.html.j2 before the rows moved to Python)
REFERENCE = """<tbody>
{% set log_label = _("log") %}
{% for v in verdicts %}
<tr data-outcome="{{ v.outcome.value }}"><td class="t-{{ v.outcome.value }}">{{ symbol[v.outcome] }} {{ label(v.outcome) }}</td><td>{{ v.check }}{% if v.description %}<div class="muted small">{{ v.description }}</div>{% endif %}</td><td>{{ v.benchmark }}</td><td>{{ subject(v) }}</td><td>{{ v.expected }}</td><td data-v="{{ v.observed if v.observed is not none else '' }}">{{ observed(v) }}</td><td>{{ v.reason }}{% if v.culprits %} <b>{{ v.culprits|join(', ') }}</b>{% endif %}{% if v.waiver %} <span class="muted">{{ _("waiver:") }} {{ v.waiver.get('reason', '') }}{% if v.waiver.get('expires') %} ({{ _("expires %(date)s", date=v.waiver.get('expires')) }}){% endif %}</span>{% endif %}</td><td>{% for e in v.evidence[:3] %}{% if e in step_index %}<a href="#step-{{ step_index[e] }}">{{ log_label }}</a>{% endif %}{% if not loop.last %} {% endif %}{% endfor %}</td></tr>
{% endfor %}
</tbody>
<tbody>
{% for s in steps %}
<tr id="step-{{ loop.index }}"{% if not s.ok %} class="bad"{% endif %}><td>{{ loop.index }}</td><td class="mono">{{ s.step_id }}</td><td>{{ s.tool }}{% if s.tool_version %} <span class="muted">{{ s.tool_version }}</span>{% endif %}</td><td>{% if s.nodes|length <= 4 %}{{ s.nodes|join(', ') }}{% else %}{{ ngettext("%(num)d node", "%(num)d nodes", s.nodes|length) }}{% endif %}</td><td>{% if s.ok %}{{ status(s.status) }}{% else %}<b>✖ {{ status(s.status) }}</b>{% if s.reason %}: {{ s.reason }}{% endif %}{% endif %}</td><td>{{ s.started }}</td><td>{{ s.duration_s|num }}</td><td>{% set out, err = s.stdout_path|href, s.stderr_path|href %}{% if out %}<a href="{{ out }}">stdout</a>{% endif %} {% if err %}<a href="{{ err }}">stderr</a>{% endif %}</td></tr>
{% endfor %}
</tbody>
"""

PAYLOAD = "<script>alert('x')</script> & \"q\""


def _planted(run: Run) -> Run:
    """The run with a payload in every text a verdict or step row shows, a waiver with and
    without an expiry, a step on more than four nodes, a failed step with a reason."""
    v0, v1, v2, *rest = run.verdicts
    verdicts = [
        dataclasses.replace(
            v0, check=PAYLOAD, description=PAYLOAD, benchmark=PAYLOAD, expected=PAYLOAD,
            reason=PAYLOAD, culprits=(PAYLOAD, "n1"), observed_text=PAYLOAD,
            waiver={"reason": PAYLOAD, "expires": PAYLOAD}, outcome=Outcome.WAIVED,
        ),
        dataclasses.replace(v1, waiver={"reason": "known"}, observed=None, subject=()),
        dataclasses.replace(v2, evidence=("missing-step", *v2.evidence), subject=tuple("abcdefgh")),
        *rest,
    ]  # fmt: skip
    s0, s1, *others = run.steps
    steps = [
        dataclasses.replace(
            s0, step_id=PAYLOAD, tool=PAYLOAD, tool_version=PAYLOAD, started=PAYLOAD,
            reason=PAYLOAD, status=StepStatus.FAILED, nodes=tuple(f"n{i}" for i in range(9)),
            stdout_path="../outside", stderr_path=f"logs/{PAYLOAD}",
        ),
        dataclasses.replace(s1, nodes=(PAYLOAD,), tool_version=""),
        *others,
    ]  # fmt: skip
    return run.replace(verdicts=tuple(verdicts), steps=tuple(steps))


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("planted", [False, True], ids=["generated", "planted"])
def test_rows_equal_the_template_loops(lang: str, planted: bool) -> None:
    run = make_run(8, dense=True).run
    if planted:
        run = _planted(run)
    with i18n.use(lang) as translations:
        env = html._environment(translations)
        env.filters["num"] = context.fmt_number  # the old loops' filters
        env.filters["href"] = html._href
        label = functools.cache(context.outcome_label)
        status = functools.cache(context.status_label)
        step_index = {s.step_id: i for i, s in enumerate(run.steps, 1)}
        want = env.from_string(REFERENCE).render(
            verdicts=run.verdicts, steps=run.steps, step_index=step_index, label=label,
            status=status, symbol=context.SYMBOL, subject=context.subject,
            observed=context.observed,
        )  # fmt: skip
        got = (
            "<tbody>\n"
            + "".join(rows.check_rows(run.verdicts, step_index, label))
            + "</tbody>\n<tbody>\n"
            + "".join(rows.log_rows(run.steps, status, html._href))
            + "</tbody>"  # (jinja drops a template's last newline)
        )
    assert got == want
    if planted:
        assert "<script>" not in got
        assert got.count("&lt;script&gt;") >= 10


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_page_written_in_pieces_is_the_page_rendered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lang: str
) -> None:
    """report.html is written a piece at a time (the rows a few thousand at a time, the
    template generated, not rendered whole): the file holds exactly what ``render`` gives,
    whatever the size of the pieces."""
    run = make_run(8, dense=True).run
    whole = html.render(run, tmp_path, lang=lang)
    monkeypatch.setattr(rows, "CHUNK", 7)  # many pieces for the 8 nodes' rows
    assert list(rows._chunked(map(str, range(15)), 7)) == ["0123456", "78910111213", "14"]
    written = html.write(run, tmp_path, lang=lang)
    assert written == tmp_path / "report.html"
    plots = re.compile(r"(?<=[\"#])p\d+-")  # each plot's ids: a counter of the process
    assert plots.sub("p-", written.read_text(encoding="utf-8")) == plots.sub("p-", whole)
    assert whole.count('<tr id="step-') == len(run.steps)


def test_the_banner_names_each_culprit_once_in_order() -> None:
    """A failing check's banner line names its culprits once each, the first five, and
    how many more (a coverage verdict of all pairs may name hundreds of thousands)."""
    pairs = [f"n{i}+n{i + 1}" for i in range(40_000)]
    coverage = dataclasses.replace(
        make_run(4).run.verdicts[0],
        check="iperf3-tcp.coverage",
        outcome=Outcome.FAIL,
        culprits=tuple(pairs),
    )
    again = dataclasses.replace(coverage, culprits=("n2+n3", "n0+n1", "late"))
    run = Run(id="r", suite="s", spec="x", verdicts=(coverage, again))
    (line,) = html._headline(run)
    assert line.endswith(": n0+n1, n1+n2, n2+n3, n3+n4, n4+n5 and 39996 more"), line
