"""The Grafana dashboard and the Prometheus alert rules in examples/monitoring/.

Both must speak of metrics and labels aibench actually writes (taken from a rendered
metrics.prom, not from a list kept here). The rules are checked and unit-tested by
promtool (Debian package ``prometheus``) on series made from real aibench output: a
failing nightly run fires the alerts, a passing one fires none. The dashboard's queries
are checked by promtool too, as recording rules with the Grafana variables filled in.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from aibench.model import Outcome, Run
from aibench.reports import prometheus
from tests.reports.gen import make_run

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "examples" / "monitoring" / "grafana-dashboard.json"
RULES = ROOT / "examples" / "monitoring" / "aibench-alerts.yml"
PROMTOOL = Path("/usr/bin/promtool")
# labels a scrape or the Pushgateway adds to every series
TARGET_LABELS = {"job", "instance"}
METRIC = re.compile(r"\baibench_[a-z_]+\b")
SELECTOR = re.compile(r"\b(aibench_[a-z_]+)\s*\{([^}]*)\}")
MATCHER = re.compile(r"([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)")
BY = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")


def nightly(failing: bool) -> Run:
    run = make_run(8).run.replace(suite="nightly")
    if failing:
        return run
    return run.replace(
        verdicts=tuple(v for v in run.verdicts if v.outcome in (Outcome.PASS, Outcome.WAIVED))
    )


@pytest.fixture(scope="module")
def written() -> dict[str, set[str]]:
    """Metric name -> label names, as aibench writes them for a failing nightly run."""
    text = prometheus.render(nightly(True))
    out: dict[str, set[str]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, set()).update(s.labels)
    return out


def dashboard_queries() -> Iterator[tuple[str, str, str]]:
    """(where, expr, legendFormat) of every query of the dashboard."""
    dash = json.loads(DASHBOARD.read_text())
    for p in dash["panels"]:
        for t in p["targets"]:
            yield (
                f"panel {p['id']} ({p['title']}) {t['refId']}",
                t["expr"],
                t.get("legendFormat", ""),
            )
    for v in dash["templating"]["list"]:
        if v["type"] == "query":
            yield f"variable {v['name']}", v["query"]["query"], ""


def check_names(where: str, expr: str, written: dict[str, set[str]], extra: str = "") -> None:
    names = set(METRIC.findall(expr))
    assert names, f"{where}: no aibench metric in {expr!r}"
    assert names <= set(written), f"{where}: {names - set(written)} are not written by aibench"
    labels = set().union(*(written[n] for n in names)) | TARGET_LABELS
    for name, matchers in SELECTOR.findall(expr):
        used = set(MATCHER.findall(matchers))
        assert used <= written[name] | TARGET_LABELS, (
            f"{where}: {name} has no {used - written[name]}"
        )
    for group in BY.findall(expr):
        used = {x.strip() for x in group.split(",") if x.strip()}
        assert used <= labels, f"{where}: no label {used - labels}"
    shown = set(re.findall(r"\{\{\s*(?:\$labels\.)?(\w+)\s*\}\}", extra)) - {"value"}
    assert shown <= labels, f"{where}: shows labels {shown - labels}"


def test_dashboard_is_a_current_grafana_dashboard(written: dict[str, set[str]]) -> None:
    dash = json.loads(DASHBOARD.read_text())
    assert dash["schemaVersion"] >= 39  # Grafana 10.4 and later
    assert dash["uid"]
    assert dash["title"]
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    kinds = {p["type"] for p in dash["panels"]}
    assert kinds <= {"stat", "bargauge", "table", "timeseries"}
    for p in dash["panels"]:
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert set(p["gridPos"]) == {"x", "y", "w", "h"}
        assert p["gridPos"]["x"] + p["gridPos"]["w"] <= 24
        assert p["targets"], p["title"]
    for where, expr, legend in dashboard_queries():
        check_names(where, expr, written, legend)
    used = set().union(*(METRIC.findall(e) for _, e, _ in dashboard_queries()))
    # what the issue asks for: verdict counts by check, per-node bandwidths, trends
    assert {"aibench_checks", "aibench_check_observed", "aibench_check_problems"} <= used


def test_rules_name_what_aibench_writes(written: dict[str, set[str]]) -> None:
    rules = yaml.safe_load(RULES.read_text())
    alerts = [r for g in rules["groups"] for r in g["rules"]]
    assert any(r["alert"] == "AibenchNightlyAcceptanceFailed" for r in alerts)
    for r in alerts:
        texts = " ".join(str(v) for v in r.get("annotations", {}).values())
        check_names(r["alert"], r["expr"], written, texts)


needs_promtool = pytest.mark.skipif(
    not PROMTOOL.exists(), reason="needs promtool (Debian package prometheus)"
)


@needs_promtool
def test_promtool_checks_the_rules_and_the_dashboard_queries(tmp_path: Path) -> None:
    res = subprocess.run([PROMTOOL, "check", "rules", RULES], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    fill = {"$suite": "nightly", "$check": ".*", "$__rate_interval": "5m", "$__range": "30d"}
    records = []
    for i, (_where, expr, _legend) in enumerate(dashboard_queries()):
        if expr.startswith("label_values("):  # a Grafana function, not PromQL
            expr = re.sub(r"label_values\((.*),\s*\w+\)$", r"\1", expr)
        for k, v in fill.items():
            expr = expr.replace(k, v)
        records.append({"record": f"aibench_dashboard_query_{i}", "expr": expr})
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": records}]}))
    res = subprocess.run([PROMTOOL, "check", "rules", path], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def series(run: Run, timestamp: float | None = None) -> list[dict[str, str]]:
    """promtool input series: every sample aibench writes for ``run``, held for 2 hours."""
    out = []
    for fam in text_string_to_metric_families(prometheus.render(run)):
        for s in fam.samples:
            value = s.value
            if timestamp is not None and s.name == "aibench_run_finished_timestamp_seconds":
                value = timestamp
            labels = ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(s.labels.items()))
            out.append({"series": f"{s.name}{{{labels}}}", "values": f"{value:g}x120"})
    return out


@needs_promtool
def test_alerts_fire_for_a_failing_nightly_run_and_not_for_a_passing_one(tmp_path: Path) -> None:
    bad = nightly(True)
    failing = [v for v in bad.verdicts if v.outcome.failing]
    assert failing
    subjects = sorted({(v.check, ",".join(v.subject) or "(run)") for v in failing})
    per_check: dict[str, int] = {}
    for v in failing:
        per_check[v.check] = per_check.get(v.check, 0) + 1
    fired = [
        {
            "eval_time": "10m",
            "alertname": "AibenchNightlyAcceptanceFailed",
            "exp_alerts": [
                {
                    "exp_labels": {"severity": "critical", "suite": "nightly", "outcome": "FAIL"},
                    "exp_annotations": {
                        "summary": "aibench nightly run ended FAIL",
                        "description": "The latest nightly run did not pass. The failing checks"
                        " are in AibenchCheckFailing; the run directory's report.html names"
                        " the nodes and links.",
                    },
                }
            ],
        },
        {
            "eval_time": "10m",
            "alertname": "AibenchCheckFailing",
            "exp_alerts": [
                {
                    "exp_labels": {"severity": "warning", "suite": "nightly", "check": check},
                    "exp_annotations": {
                        "summary": f"aibench check {check} failing ({n} verdicts)",
                        "description": f"{n} verdict(s) of {check} are FAIL, MISSING or ERROR"
                        " in the latest nightly run.",
                    },
                }
                for check, n in sorted(per_check.items())
            ],
        },
        {
            "eval_time": "10m",
            "alertname": "AibenchSubjectFailing",
            "exp_alerts": [
                {
                    "exp_labels": {
                        "severity": "warning",
                        "suite": "nightly",
                        "check": check,
                        "subject": subject,
                    },
                    "exp_annotations": {"summary": f"aibench {check} fails on {subject}"},
                }
                for check, subject in subjects
            ],
        },
        {"eval_time": "10m", "alertname": "AibenchNightlyNotRun", "exp_alerts": []},
    ]
    quiet = [
        {"eval_time": "10m", "alertname": name, "exp_alerts": []}
        for name in (
            "AibenchNightlyAcceptanceFailed",
            "AibenchCheckFailing",
            "AibenchSubjectFailing",
            "AibenchNightlyNotRun",
        )
    ]
    stale = [
        {
            "eval_time": "31h",
            "alertname": "AibenchNightlyNotRun",
            "exp_alerts": [
                {
                    "exp_labels": {"severity": "warning", "suite": "nightly"},
                    "exp_annotations": {"summary": "no aibench nightly run for 1d 7h 0m 0s"},
                }
            ],
        }
    ]
    good = nightly(False)
    tests = {
        "rule_files": [str(RULES)],
        "evaluation_interval": "1m",
        "tests": [
            {"interval": "1m", "input_series": series(bad), "alert_rule_test": fired},
            {"interval": "1m", "input_series": series(good), "alert_rule_test": quiet},
            {
                "interval": "1h",
                "input_series": [
                    s
                    for s in series(good, timestamp=0.0)
                    if s["series"].startswith("aibench_run_finished")
                ],
                "alert_rule_test": stale,
            },
        ],
    }
    path = tmp_path / "alerts-test.yml"
    path.write_text(yaml.safe_dump(tests, sort_keys=False))
    res = subprocess.run([PROMTOOL, "test", "rules", path], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
