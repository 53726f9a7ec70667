"""Prometheus metrics of a run: text exposition format 0.0.4.

For node-exporter's textfile collector (``metrics.prom``, ``aibench metrics -o FILE``) and
for a Pushgateway (``aibench metrics --pushgateway URL``). All metrics are gauges; every
series carries the ``suite`` label and none carries a run id: a run is a point in time,
given by the ``*_timestamp_seconds`` gauges, so that nightly runs of one suite continue the
same series.

The text is written here, byte for byte what prometheus_client's ``generate_latest`` writes
for the same families (a test holds the two side by side): importing prometheus_client,
with the HTTP server and client it brings, was a twentieth of a second of every run.
:func:`push` still sends through prometheus_client.

Always written (low cardinality, bounded by checks × subjects):

* ``aibench_run_info{suite,spec,cluster,aibench_version}`` 1.
* ``aibench_run_started_timestamp_seconds{suite}``, ``aibench_run_finished_timestamp_seconds``
  and ``aibench_run_duration_seconds`` (Unix time; when known).
* ``aibench_run_outcome{suite,outcome}``: 1 for the run's outcome, 0 for the other two of
  PASS, FAIL, MISSING (the set is stable, so ``== 1`` alerts work).
* ``aibench_run_generated{suite}``: 1 when the data were generated, not measured.
* ``aibench_run_steps{suite,status}``: tool invocations per status (ok, failed, timeout,
  unreachable, not_run; zeros included).
* ``aibench_checks{suite,check,benchmark,outcome}``: verdicts per check and outcome, all
  six outcomes (zeros included).
* ``aibench_check_problems{suite,check,subject,outcome}``: verdicts per check and subject
  (node ``gpu01``, pair ``gpu01,gpu02``, or ``(run)`` for a check of the whole run) whose
  outcome is not PASS. Each outcome is counted, never merged: a FAIL among PASSes of the same check
  and subject is a sample of its own.
* ``aibench_check_observed{suite,check,subject,unit}``: the observed value. When a check
  has several verdicts for one subject (one per HCA rail, say), the value of the worst:
  the most severe outcome, then the one nearest its bound (lowest against a minimum,
  highest against a maximum).
* ``aibench_check_bound{suite,check,bound,unit}``: a check's ``min``/``max`` bound, when
  all its verdicts share it (threshold lines in a dashboard).

With ``measurements=True`` also ``aibench_measurement{suite,tool,metric,unit,step,node|
pair|nodes,<dims>,repeat}``: one series per measurement (a 1024-node acceptance run has
over 100,000). Dimension names are sanitized to ``[a-zA-Z_][a-zA-Z0-9_]*`` and prefixed
``dim_`` where they would shadow a fixed label; a label set that still repeats gets a
``sample`` label (1, 2, ...) so no series is duplicated.

:func:`push` sends the same metrics to a Pushgateway (HTTP PUT: the group ``job`` /
``suite`` is replaced as a whole, so subjects that recovered disappear). Tested with
prometheus-pushgateway 1.5.1 and prometheus_client 0.26.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, cast

from aibench.errors import CannotRunError, UserError
from aibench.model import Outcome, Run, StepStatus, Verdict

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric
    from prometheus_client.registry import Collector, CollectorRegistry

_NAME = re.compile(r"[^a-zA-Z0-9_]")
_FIXED = frozenset(
    {"suite", "tool", "metric", "unit", "step", "node", "pair", "nodes", "repeat", "sample"}
)
RUN_OUTCOMES = (Outcome.PASS, Outcome.FAIL, Outcome.MISSING)
# most severe first: the observed value shown for a subject is the worst verdict's
SEVERITY = {
    Outcome.ERROR: 0,
    Outcome.MISSING: 0,
    Outcome.FAIL: 0,
    Outcome.WARN: 1,
    Outcome.WAIVED: 2,
    Outcome.PASS: 3,
}


def label_name(name: str) -> str:
    """A dimension name as a Prometheus label name (never reserved, never empty)."""
    n = _NAME.sub("_", name)
    if not n or n[0].isdigit():
        n = "_" + n
    if n.startswith("__"):
        n = "x" + n
    return n


def _timestamp(text: str) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass
class Family:
    """One metric family (all are gauges): its name, help text, label names and samples
    (labels, value)."""

    name: str
    doc: str
    labels: Sequence[str] = ()
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)

    def add_metric(self, values: Sequence[str], value: float) -> None:
        """A sample with the family's labels set to ``values`` (in their order)."""
        self.samples.append((dict(zip(self.labels, values, strict=True)), value))

    def add_sample(self, labels: dict[str, str], value: float) -> None:
        self.samples.append((labels, value))


WHOLE_RUN = "(run)"  # the subject of a check of the whole run (host names have no parentheses)


def _subject(v: Verdict) -> str:
    # an empty label value is no label at all in Prometheus: name the whole run instead
    return ",".join(v.subject) or WHOLE_RUN


def _worse(a: Verdict, b: Verdict) -> bool:
    """Whether ``a`` is worse than ``b`` (both with an observed value)."""
    if SEVERITY[a.outcome] != SEVERITY[b.outcome]:
        return SEVERITY[a.outcome] < SEVERITY[b.outcome]
    assert a.observed is not None
    assert b.observed is not None
    if a.bounds[0] is not None:
        return a.observed < b.observed
    if a.bounds[1] is not None:
        return a.observed > b.observed
    return False


def run_families(run: Run) -> Iterator[Family]:
    """The run-level gauges."""
    s = run.suite
    info = Family(
        "aibench_run_info",
        "1, labelled with the run's suite, spec, cluster and aibench version.",
        ["suite", "spec", "cluster", "aibench_version"],
    )
    cluster = str(run.inventory.get("name", "")) if isinstance(run.inventory, Mapping) else ""
    info.add_metric([s, run.spec, cluster, run.aibench_version], 1)
    yield info
    started, finished = _timestamp(run.started), _timestamp(run.finished)
    for name, value, doc in (
        ("aibench_run_started_timestamp_seconds", started, "When the run started (Unix time)."),
        ("aibench_run_finished_timestamp_seconds", finished, "When the run ended (Unix time)."),
    ):
        if value is not None:
            g = Family(name, doc, ["suite"])
            g.add_metric([s], value)
            yield g
    if started is not None and finished is not None:
        g = Family("aibench_run_duration_seconds", "Wall time of the run.", ["suite"])
        g.add_metric([s], finished - started)
        yield g
    g = Family(
        "aibench_run_outcome", "1 for the run's outcome, 0 for the others.", ["suite", "outcome"]
    )
    for o in RUN_OUTCOMES:
        g.add_metric([s, o.value], 1 if run.outcome is o else 0)
    yield g
    g = Family(
        "aibench_run_partial",
        "1 when the run ran part of its suite or inventory: not the suite's acceptance.",
        ["suite"],
    )
    g.add_metric([s], 1 if run.partial else 0)
    yield g
    g = Family("aibench_run_generated", "1 when the data were generated, not measured.", ["suite"])
    g.add_metric([s], 1 if run.generated else 0)
    yield g
    g = Family("aibench_run_steps", "Tool invocations per status.", ["suite", "status"])
    statuses = {st: 0 for st in StepStatus}
    for step in run.steps:
        statuses[step.status] += 1
    for st, n in statuses.items():
        g.add_metric([s, st.value], n)
    yield g


@dataclass
class CheckTally:
    """The verdicts of a run tallied per check: counts per (check, benchmark) and outcome,
    problems per (check, subject, outcome), the worst verdict with a value per (check,
    subject), and the bounds each check was judged against."""

    counts: dict[tuple[str, str], dict[Outcome, int]] = field(default_factory=dict)
    problems: dict[tuple[str, str, Outcome], int] = field(default_factory=dict)
    worst: dict[tuple[str, str], Verdict] = field(default_factory=dict)
    bounds: dict[str, set[tuple[float | None, float | None, str]]] = field(default_factory=dict)

    @classmethod
    def of(cls, verdicts: Iterable[Verdict]) -> CheckTally:
        t = cls()
        for v in verdicts:
            per = t.counts.setdefault((v.check, v.benchmark), dict.fromkeys(Outcome, 0))
            per[v.outcome] += 1
            subject = _subject(v)
            if v.outcome is not Outcome.PASS:
                key = (v.check, subject, v.outcome)
                t.problems[key] = t.problems.get(key, 0) + 1
            if v.observed is not None:
                old = t.worst.get((v.check, subject))
                if old is None or _worse(v, old):
                    t.worst[(v.check, subject)] = v
                t.bounds.setdefault(v.check, set()).add((v.bounds[0], v.bounds[1], v.unit))
        return t


def check_families(run: Run) -> Iterator[Family]:
    """Verdict counts per check, problems per subject, observed values and bounds."""
    s = run.suite
    t = CheckTally.of(run.verdicts)
    g = Family(
        "aibench_checks",
        "Verdicts per check and outcome.",
        ["suite", "check", "benchmark", "outcome"],
    )
    for (check, bench), per in t.counts.items():
        for o, n in per.items():
            g.add_metric([s, check, bench, o.value], n)
    yield g
    g = Family(
        "aibench_check_problems",
        "Verdicts other than PASS per check, subject and outcome.",
        ["suite", "check", "subject", "outcome"],
    )
    for (check, subject, o), n in t.problems.items():
        g.add_metric([s, check, subject, o.value], n)
    yield g
    g = Family(
        "aibench_check_observed",
        "The value a check observed per subject (the worst verdict's), in its unit.",
        ["suite", "check", "subject", "unit"],
    )
    for (check, subject), v in t.worst.items():
        assert v.observed is not None  # only verdicts with a value are kept in worst
        g.add_metric([s, check, subject, v.unit], v.observed)
    yield g
    g = Family(
        "aibench_check_bound",
        "A check's min or max bound, in its unit.",
        ["suite", "check", "bound", "unit"],
    )
    for check, found in t.bounds.items():
        if len(found) != 1:
            continue  # bounds differ between subjects: no one line to draw
        lo, hi, unit = next(iter(found))
        for name, value in (("min", lo), ("max", hi)):
            if value is not None:
                g.add_metric([s, check, name, unit], value)
    yield g


def measurement_family(run: Run) -> Family:
    """One series per measurement (the ``measurements`` option)."""
    fam = Family("aibench_measurement", "Every measurement of the run, in its unit.")
    used: dict[tuple[tuple[str, str], ...], int] = {}
    for m in (m for s in run.steps for m in s.measurements):  # not a list of them all
        lab: dict[str, str] = {
            "suite": run.suite,
            "tool": m.tool,
            "metric": m.metric,
            "unit": m.unit,
            "step": m.step,
        }
        if len(m.nodes) == 1:
            lab["node"] = m.nodes[0]
        elif len(m.nodes) == 2:
            lab["pair"] = ",".join(m.nodes)
        elif m.nodes:
            lab["nodes"] = str(len(m.nodes))
        for k, val in m.dims.items():
            name = label_name(k)
            if name in _FIXED or name in lab:
                name = f"dim_{name}"
            lab[name] = str(val)
        lab["repeat"] = str(m.repeat)
        key = tuple(lab.items())
        n = used.get(key, 0)
        used[key] = n + 1
        if n:
            lab["sample"] = str(n)
        fam.add_sample(lab, m.value)
    return fam


class _Collector:
    def __init__(self, families: Iterable[Metric]) -> None:
        self._families = list(families)

    def collect(self) -> Iterator[Metric]:
        return iter(self._families)

    def describe(self) -> list[Metric]:
        return []  # nothing to check at registration; collect() is the whole content


def families(run: Run, *, measurements: bool = False) -> list[Family]:
    """Every family of the run's metrics, in the order they are written."""
    fams = [*run_families(run), *check_families(run)]
    if measurements:
        fams.append(measurement_family(run))
    return fams


def registry(run: Run, *, measurements: bool = False) -> CollectorRegistry:
    """A prometheus_client registry holding the run's metrics (and nothing else: no
    process metrics)."""
    from prometheus_client import CollectorRegistry
    from prometheus_client.core import Metric as PromMetric

    fams: list[Metric] = []
    for f in families(run, measurements=measurements):
        fam = PromMetric(f.name, f.doc, "gauge")
        for labels, value in f.samples:
            fam.add_sample(f.name, labels, value)
        fams.append(fam)
    reg = CollectorRegistry(auto_describe=False)
    # duck-typed, so that importing this module does not import prometheus_client
    reg.register(cast("Collector", _Collector(fams)))
    return reg


def render(run: Run, *, measurements: bool = False) -> str:
    """The text exposition (format 0.0.4) of the run's metrics."""
    out: list[str] = []
    for f in families(run, measurements=measurements):
        doc = f.doc.replace("\\", r"\\").replace("\n", r"\n")
        out.append(f"# HELP {f.name} {doc}\n# TYPE {f.name} gauge\n")
        out.extend(_sample_line(f.name, labels, value) for labels, value in f.samples)
    return "".join(out)


def _sample_line(name: str, labels: Mapping[str, str], value: float) -> str:
    """``name{label="value",...} value``: labels sorted by name, values escaped."""
    if not labels:
        return f"{name} {go_float(value)}\n"
    inner = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
    return f"{name}{{{inner}}} {go_float(value)}\n"


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def go_float(value: float) -> str:
    """A sample value as Prometheus writes it: ``+Inf``, ``-Inf``, ``NaN``, else Python's
    shortest repr, with Go's exponent form for positive values of 1e6 and up that
    Python writes out (``1234567.0`` -> ``1.234567e+06``)."""
    d = float(value)
    if math.isinf(d):
        return "+Inf" if d > 0 else "-Inf"
    if math.isnan(d):
        return "NaN"
    text = repr(d)
    dot = text.find(".")
    if d > 0 and dot > 6:
        mantissa = f"{text[0]}.{text[1:dot]}{text[dot + 1 :]}".rstrip("0.")
        return f"{mantissa}e+0{dot - 1}"
    return text


def push(
    run: Run,
    url: str,
    *,
    job: str = "aibench",
    measurements: bool = False,
    timeout: float = 30.0,
) -> None:
    """Replace the group ``job``/``suite`` on the Pushgateway at ``url`` with this run."""
    from urllib.error import URLError
    from urllib.parse import urlsplit

    from prometheus_client import push_to_gateway

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UserError(
            f"--pushgateway {url}: not an http(s) URL", hint="e.g. http://pushgateway:9091"
        )
    grouping = {"suite": run.suite}
    try:
        push_to_gateway(
            url,
            job=job,
            registry=registry(run, measurements=measurements),
            grouping_key=grouping,
            timeout=timeout,
        )
    except (URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise CannotRunError(f"cannot push to the Pushgateway at {url}: {reason}") from None
