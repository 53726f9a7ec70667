"""The false-pass property: a run with any failure injected never yields PASS or exit 0.

Hypothesis draws runs of two to four nodes (fio on every node, iperf3 on every pair, GPU
telemetry beside them) and injects one or more failures at random: a failed step, a tool
missing on a node, an output with nothing readable, a node without any measurement, a
node's telemetry cut short, a GPU node's series absent, a regression that came with a
driver upgrade. Each run is judged (``aibench run``'s judgement), judged again from its
own record (``aibench check``) and reported (JUnit, Markdown, Prometheus): none of them
may say PASS, and the exit status must be 1. The same run without the injection passes,
so the property cannot hold by failing everything; and with every injected failure
explicitly waived it passes again. ``EXAMPLES`` runs are drawn (and the healthy and
waived twins of each).
"""

from __future__ import annotations

import dataclasses
import itertools
import xml.etree.ElementTree as ET
from datetime import date
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aibench.judge import exit_status, judge_run, record, rejudge
from aibench.model import Outcome, Run, StepResult, StepStatus
from aibench.reports import junit, markdown, prometheus
from aibench.thresholds.spec import spec_from_bytes
from tests.thresholds.helpers import m, step

EXAMPLES = 120
KINDS = (
    "failed_step",
    "missing_tool",
    "empty_output",
    "node_without_measurement",
    "telemetry_cut",
    "telemetry_absent",
    "regression_with_upgrade",
)
WAIVER = "{{reason: accepted for this test, owner: qa, expires: 2099-01-01{subjects}}}"
SPEC = """\
schema_version: 1
name: prop
checks:
  - id: fio-bw
    select: {{tool: fio, metric: bw, step: fio}}
    unit: MB/s
    min: 100
    require: every_node{fio_waiver}
  - id: tcp
    select: {{tool: iperf3, metric: throughput, step: tcp}}
    scope: pair
    unit: Gbit/s
    min: 1
    require: every_pair
telemetry:
  - id: soak.temperature.max
    source: test
    limits: {{temp_max: 90}}
  - id: soak.clock.drop
    source: test
    limits: {{clock_drop_pct: 10, baseline_s: 10}}
    nodes: gpu
step_waivers: [{step_waivers}]
"""


@dataclasses.dataclass
class Case:
    nodes: tuple[str, ...]
    injected: dict[str, str]  # kind -> the node it hit

    def spec(self, waive: bool) -> Any:
        fio_waiver = ""
        steps = []
        if waive:
            fio_waiver = "\n    waiver: " + WAIVER.format(subjects="")
            for kind in ("failed_step", "missing_tool", "empty_output"):
                if kind in self.injected:
                    name = {"failed_step": "fio", "missing_tool": "burn", "empty_output": "bw"}[
                        kind
                    ]
                    steps.append(f"{{step: {name}, " + WAIVER.format(subjects="")[1:])
        text = SPEC.format(fio_waiver=fio_waiver, step_waivers=", ".join(steps))
        return spec_from_bytes(text.encode(), "prop.yaml")


def _steps(case: Case) -> list[StepResult]:
    out = []
    for n in case.nodes:
        if case.injected.get("node_without_measurement") == n:
            continue
        failed = case.injected.get("failed_step") == n
        out.append(
            step(
                "fio",
                "fio",
                (n,),
                [] if failed else [m("fio", "bw", 500, "MB/s", (n,))],
                status=StepStatus.FAILED if failed else StepStatus.OK,
                reason="fio exited 1" if failed else "",
            )
        )
    for a, b in itertools.combinations(case.nodes, 2):
        out.append(step("tcp", "iperf3", (a, b), [m("iperf3", "throughput", 9, "Gbit/s", (a, b))]))
    if "missing_tool" in case.injected:
        n = case.injected["missing_tool"]
        out.append(
            step("burn", "gpu-burn", (n,), status=StepStatus.FAILED, reason="gpu_burn: not found")
        )
    if "empty_output" in case.injected:
        out.append(step("bw", "nvbandwidth", (case.injected["empty_output"],)))
    return out


def _series(node: str, metric: str, key: str, end: float, value: float) -> dict[str, Any]:
    ts = [float(t) for t in range(0, int(end) + 1, 5)]
    return {"node": node, "source": "gpu", "metric": metric, "key": key, "unit": "", "t": ts,
            "v": [value] * len(ts)}  # fmt: skip


def _telemetry(case: Case) -> dict[str, Any]:
    series = []
    for n in case.nodes:
        if case.injected.get("telemetry_absent") == n:
            continue
        end = 30.0 if case.injected.get("telemetry_cut") == n else 300.0
        series.append(_series(n, "temp_gpu", "gpu0", end, 60.0))
        series.append(_series(n, "clock_sm", "gpu0", end, 1980.0))
    return {"t0": "2026-12-02T10:00:00+00:00", "series": series, "events": [], "errors": []}


def make_run(case: Case) -> Run:
    inv = {
        "name": "prop",
        "nodes": [{"name": n, "facts": {"gpus": {"count": 8}}} for n in case.nodes],
    }
    return Run(
        id="prop-run",
        suite="prop",
        spec="prop",
        inventory=inv,
        steps=tuple(_steps(case)),
        telemetry=_telemetry(case),
        started="2026-12-02T10:00:00Z",
        finished="2026-12-02T10:05:00Z",
        aibench_version=__import__("aibench").__version__,
    )


def _history(tmp: Path, case: Case, run: Run) -> Path | None:
    """Five good runs of the suite, then this run with fio 40 % lower and a new driver."""
    if "regression_with_upgrade" not in case.injected:
        return None
    from aibench.history import History

    db = tmp / f"h-{abs(hash((case.nodes, tuple(case.injected))))}.sqlite"
    db.unlink(missing_ok=True)
    hist = History(db)
    healthy = make_run(Case(case.nodes, {}))
    for i in range(5):
        good = healthy.replace(
            id=f"good-{i}",
            started=f"2026-11-2{i}T10:00:00Z",
            environment={n: {"driver_version": "550.54"} for n in case.nodes},
        )
        spec = case.spec(False)
        hist.record(record(good, judge_run(good, spec), "test"))
    hit = case.injected["regression_with_upgrade"]
    slow = [
        dataclasses.replace(s, measurements=tuple(dataclasses.replace(x, value=300) for x in s.measurements))
        if s.tool == "fio" and s.nodes == (hit,)
        else s
        for s in run.steps
    ]  # fmt: skip
    upgraded = run.replace(
        steps=tuple(slow),
        environment={n: {"driver_version": "570.86"} for n in case.nodes},
    )
    hist.record(upgraded)  # as aibench run records a run before judging it
    return db, upgraded  # type: ignore[return-value]


def _outcomes(run: Run, spec: Any, tmp: Path, db: Path | None) -> list[tuple[str, Outcome, int]]:
    """The outcome and exit status each way of judging and reporting gives."""
    first = judge_run(run, spec, history_db=db)
    judged = record(run, first, "aibench run")
    again = rejudge(judged, tmp, history_db=db)
    twins = [
        ("run", first.outcome),
        ("check", again.outcome),
        ("junit", _junit(judged)),
        ("markdown", _markdown(judged)),
        ("prometheus", _prometheus(judged)),
    ]
    return [(how, o, exit_status(o)) for how, o in twins]


def _junit(run: Run) -> Outcome:
    root = ET.fromstring(junit.render(run))
    bad = int(root.get("failures", "0")) + int(root.get("errors", "0"))
    return Outcome.FAIL if bad else Outcome.PASS


def _markdown(run: Run) -> Outcome:
    head = markdown.render(run).splitlines()[0]
    return next(o for o in Outcome if f"**{o.value}**" in head or f"**{o.value.title()}" in head)


def _prometheus(run: Run) -> Outcome:
    text = prometheus.render(run)
    for o in Outcome:
        if f'aibench_run_outcome{{outcome="{o.value}",suite="prop"}} 1' in text:
            return o
    raise AssertionError("no run outcome in metrics.prom")


_HEALTHY_SEEN: set[int] = set()
cases = st.builds(
    lambda nodes, kinds, picks: Case(
        nodes, {k: nodes[p % len(nodes)] for k, p in zip(kinds, picks, strict=False)}
    ),
    st.integers(2, 4).map(lambda k: tuple(f"n{i}" for i in range(1, k + 1))),
    st.lists(st.sampled_from(KINDS), min_size=1, max_size=4, unique=True),
    st.lists(st.integers(0, 3), min_size=4, max_size=4),
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=cases)
def test_an_injected_failure_never_passes(tmp_path_factory: Any, case: Case) -> None:
    tmp = tmp_path_factory.mktemp("prop")
    run = make_run(case)
    db = None
    made = _history(tmp, case, run)
    if made is not None:
        db, run = made  # type: ignore[misc]
    if len(case.nodes) not in _HEALTHY_SEEN:  # the same run without the injection passes
        healthy = make_run(Case(case.nodes, {}))
        assert all(o is Outcome.PASS for _, o, _ in _outcomes(healthy, case.spec(False), tmp, None))
        _HEALTHY_SEEN.add(len(case.nodes))
    for how, outcome, code in _outcomes(run, case.spec(False), tmp, db):
        assert outcome is not Outcome.PASS, (how, case)
        assert code == 1, (how, case)
    if "regression_with_upgrade" in case.injected or any(
        k.startswith("telemetry") for k in case.injected
    ):
        return  # history and telemetry verdicts have no waiver of their own to draw
    waived = _outcomes(run, case.spec(True), tmp, db)
    assert all(o is Outcome.PASS for _, o, _ in waived), (waived, case)


def test_a_regression_names_the_upgrade(tmp_path: Path) -> None:
    case = Case(("n1", "n2"), {"regression_with_upgrade": "n2"})
    db, run = _history(tmp_path, case, make_run(case))  # type: ignore[misc]
    got = judge_run(run, case.spec(False), history_db=db)
    (reg,) = [v for v in got.verdicts if v.origin == "history"]
    assert reg.outcome is Outcome.FAIL
    assert "driver_version 550.54 -> 570.86" in reg.reason
    assert date.today() > date(2026, 1, 1)  # the waivers of this module hold until 2099
