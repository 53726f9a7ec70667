"""metrics.prom and `aibench metrics`: every output read back by prometheus_client's parser.

The 1024-node bound (under 2 MB and 20,000 series) is checked on the generated
acceptance-shaped run of tests/reports/gen.py; bench/report_scale.py states it too.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from aibench.model import Outcome, Run, Verdict
from aibench.reports import prometheus
from aibench.store import save_run
from tests.aibench_cli import aibench
from tests.ports import free_port
from tests.reports.gen import make_run

MB = 10**6
PUSHGATEWAY = Path("/usr/bin/prometheus-pushgateway")


def parse(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """name -> [(labels, value)], checking that no series appears twice."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in seen, f"duplicate series {key}"
            seen.add(key)
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def one(samples: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float:
    got = [v for lab, v in samples[name] if all(lab.get(k) == x for k, x in labels.items())]
    assert len(got) == 1, (name, labels, got)
    return got[0]


def test_metrics_prom_parses_and_has_no_run_id(rendered) -> None:
    text = rendered.files["metrics.prom"].read_text()
    samples = parse(text)
    run = rendered.gen.run
    assert all(lab["suite"] == run.suite for fam in samples.values() for lab, _ in fam)
    assert run.id not in text
    assert "aibench_measurement" not in samples  # per-measurement series are an option
    assert one(samples, "aibench_run_finished_timestamp_seconds") == 1796211730.0
    assert one(samples, "aibench_run_outcome", outcome="FAIL") == 1
    assert one(samples, "aibench_run_outcome", outcome="PASS") == 0
    assert one(samples, "aibench_run_generated") == 1
    per_check = Counter(v.check for v in run.verdicts)
    for check, n in per_check.items():
        got = [v for lab, v in samples["aibench_checks"] if lab["check"] == check]
        assert len(got) == len(Outcome)
        assert sum(got) == n
    bad = [v for v in run.verdicts if v.outcome is Outcome.FAIL]
    for v in bad:
        assert (
            one(samples, "aibench_check_problems", check=v.check, subject=",".join(v.subject)) >= 1
        )
    node = rendered.gen.bad_node
    assert one(samples, "aibench_check_problems", check="fio-seq-read-bw", subject=node) == 1
    observed = one(samples, "aibench_check_observed", check="fio-seq-read-bw", subject=node)
    fio_bad = next(v for v in bad if v.check == "fio-seq-read-bw")
    assert observed == fio_bad.observed
    assert one(samples, "aibench_check_bound", check="fio-seq-read-bw", bound="min") == 5000


def test_a_fail_among_passes_of_one_check_and_subject_survives() -> None:
    def v(outcome: Outcome, observed: float) -> Verdict:
        return Verdict(
            "rail-bw", outcome, ("a", "b"), observed=observed, unit="Gbit/s", bounds=(300, None)
        )

    run = Run(
        id="r1",
        suite="nightly",
        spec="p",
        verdicts=(v(Outcome.PASS, 390.0), v(Outcome.FAIL, 180.2), v(Outcome.PASS, 391.0)),
    )
    samples = parse(prometheus.render(run))
    assert one(samples, "aibench_checks", check="rail-bw", outcome="FAIL") == 1
    assert one(samples, "aibench_checks", check="rail-bw", outcome="PASS") == 2
    assert one(samples, "aibench_check_problems", subject="a,b", outcome="FAIL") == 1
    assert one(samples, "aibench_check_observed", subject="a,b") == 180.2  # the worst rail
    assert one(samples, "aibench_run_outcome", outcome="FAIL") == 1
    # a run id never becomes a label, so the next night continues the same series
    again = parse(prometheus.render(run.replace(id="r2")))
    assert again == samples


def test_hostile_label_values_are_escaped_and_read_back(hostile) -> None:
    text = hostile.files["metrics.prom"].read_text()
    parse(text)
    check = 'we"ird\\chk\nx'
    out = prometheus.render(
        Run(id="r", suite="s", spec="p", verdicts=(Verdict(check, Outcome.FAIL),))
    )
    assert 'check="we\\"ird\\\\chk\\nx"' in out
    assert one(parse(out), "aibench_check_problems", outcome="FAIL") == 1
    assert {lab["check"] for lab, _ in parse(out)["aibench_checks"]} == {check}
    assert prometheus.label_name("9 bad-name") == "_9_bad_name"
    assert prometheus.label_name("__x") == "x__x"


def test_per_measurement_series_are_an_option(rendered) -> None:
    run = rendered.gen.run
    samples = parse(prometheus.render(run, measurements=True))
    ms = samples["aibench_measurement"]
    assert len(ms) == len(run.measurements)
    a, b = rendered.gen.bad_link
    hits = [
        v
        for lab, v in ms
        if lab.get("pair") == f"{a},{b}"
        and lab["tool"] == "iperf3"
        and lab["metric"] == "throughput"
        and lab.get("side") == "receiver"
        and lab.get("reverse") == "False"
    ]
    assert 31500000000.0 in hits


@pytest.mark.parametrize("hostile", [False, True])
def test_the_text_is_what_prometheus_client_writes(hostile: bool) -> None:
    """render writes the exposition itself: byte for byte prometheus_client's
    generate_latest of the same families, plain and hostile names, with every measurement
    and with values that Prometheus spells its own way (Inf, NaN, 1e+06 and up)."""
    from prometheus_client import generate_latest

    run = make_run(8, hostile=hostile).run
    odd = (float("inf"), float("-inf"), float("nan"), 1234567.0, 1e22, 5e-324, -2.5e7, 0.0)
    verdicts = tuple(
        Verdict(f'odd"{i}\\\n', Outcome.FAIL, (f"n{i}",), observed=x, unit="u", bounds=(1.0, None))
        for i, x in enumerate(odd)
    )
    run = run.replace(verdicts=run.verdicts + verdicts)
    for measurements in (False, True):
        ours = prometheus.render(run, measurements=measurements)
        theirs = generate_latest(prometheus.registry(run, measurements=measurements))
        assert ours.encode("utf-8") == theirs
    for spelled in ("NaN", "+Inf", "-Inf", "1.234567e+06", "1e+22"):
        assert spelled in ours


@pytest.mark.slow
def test_1024_nodes_under_2_mb_and_20k_series() -> None:
    gen = make_run(1024, dense=True)
    text = prometheus.render(gen.run)
    samples = parse(text)
    series = sum(len(v) for v in samples.values())
    size = len(text.encode())
    print(f"metrics.prom at 1024 nodes: {size / MB:.2f} MB, {series} series")
    assert size < 2 * MB
    assert series < 20_000
    assert one(samples, "aibench_check_problems", check="fio-seq-read-bw", subject=gen.bad_node)


# ------------------------------------------------------------------ aibench metrics


@pytest.fixture
def pushgateway(tmp_path: Path) -> Iterator[str]:
    if not PUSHGATEWAY.exists():
        pytest.skip("needs prometheus-pushgateway (make system-packages)")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = (tmp_path / "pushgateway.log").open("w")
    proc = subprocess.Popen(
        # Debian's build keeps what was pushed in /var/lib/prometheus by default, so a
        # gateway started here would serve every earlier one's groups: in memory only
        [str(PUSHGATEWAY), f"--web.listen-address=127.0.0.1:{port}", "--persistence.file="],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{url}/-/ready", timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError((tmp_path / "pushgateway.log").read_text())
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


def _scrape(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as r:
        text = r.read().decode()
    return {k: v for k, v in parse(text).items() if k.startswith("aibench_")}


def _stored(tmp_path: Path, run: Run) -> Path:
    d = tmp_path / run.id
    d.mkdir()
    save_run(run, d)
    return d


def test_push_to_a_real_pushgateway_replaces_the_group(pushgateway: str, tmp_path: Path) -> None:
    failing = Run(
        id="n1",
        suite="nightly",
        spec="p",
        started="2026-12-02T01:00:00Z",
        finished="2026-12-02T01:20:00Z",
        verdicts=(
            Verdict("tcp", Outcome.FAIL, ("a", "b"), observed=40.0, unit="Gbit/s"),
            Verdict("tcp", Outcome.PASS, ("a", "c"), observed=94.0, unit="Gbit/s"),
        ),
    )
    res = aibench("metrics", str(_stored(tmp_path, failing)), "--pushgateway", pushgateway)
    assert res.returncode == 0, res.stderr
    got = _scrape(pushgateway)
    assert one(got, "aibench_run_outcome", outcome="FAIL", job="aibench", suite="nightly") == 1
    assert one(got, "aibench_check_problems", subject="a,b", outcome="FAIL") == 1
    assert one(got, "aibench_run_finished_timestamp_seconds") == 1796174400.0
    fixed = failing.replace(
        id="n2",
        verdicts=(Verdict("tcp", Outcome.PASS, ("a", "b"), observed=93.0, unit="Gbit/s"),),
    )
    res = aibench("metrics", str(_stored(tmp_path, fixed)), "--pushgateway", pushgateway)
    assert res.returncode == 0, res.stderr
    got = _scrape(pushgateway)
    assert one(got, "aibench_run_outcome", outcome="PASS") == 1
    assert "aibench_check_problems" not in got  # the recovered pair is gone, not stale
    assert one(got, "aibench_check_observed", subject="a,b") == 93.0


def test_metrics_command_file_stdout_and_unreachable_gateway(tmp_path: Path) -> None:
    run = Run(id="x", suite="s", spec="p", verdicts=(Verdict("c", Outcome.PASS),))
    d = _stored(tmp_path, run)
    out = tmp_path / "textfile" / "aibench.prom"
    out.parent.mkdir()
    res = aibench("metrics", str(d), "-o", str(out), "--measurements")
    assert res.returncode == 0, res.stderr
    assert parse(out.read_text()) == parse(aibench("metrics", str(d), "--measurements").stdout)
    assert [p.name for p in out.parent.iterdir()] == ["aibench.prom"]  # no temporary left
    res = aibench("metrics", str(d), "--pushgateway", f"http://127.0.0.1:{free_port()}")
    assert res.returncode == 3
    assert res.stderr.startswith("aibench: error: cannot push to the Pushgateway at http://127")
    assert len(res.stderr.strip().splitlines()) == 1
    res = aibench("metrics", str(d), "--pushgateway", "file:///etc/passwd")
    assert res.returncode == 2
    assert "not an http(s) URL" in res.stderr
    assert json.loads((d / "run.json").read_text())["id"] == "x"
