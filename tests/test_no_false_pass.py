"""No false PASS: each way a run used to pass over a failure, through the real CLI.

A step that failed and that no check reads, a run that judged nothing, a partial run, a
sweep that stopped short on one node: each is a failing verdict, the same in ``run``,
``check``, ``report`` and every twin (junit.xml, summary.md, metrics.prom).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.aibench_cli import aibench, only_run

SUITE = """\
schema_version: 1
name: mixed
settings: {{workdir: {workdir}, base_port: {port}}}
steps:
  - name: fio-read
    tool: fio
    options: {{rw: read, bs: 1M, size: 8M, runtime: 1, iodepth: 4}}
  - name: burn
    tool: gpu-burn
    options: {{duration: 2}}
  - name: tcp
    tool: iperf3
    placement: pairs
    options: {{duration: 1, streams: 1, bandwidth: 200M}}
"""

FIO_ONLY = """\
schema_version: 1
name: fio-only
checks:
  - id: fio-read-bw
    select: {tool: fio, metric: bw, step: fio-read, dims: {direction: read}}
    scope: node
    unit: MB/s
    min: 1
"""

pytestmark = pytest.mark.skipif(
    not all(Path(p).exists() for p in ("/usr/bin/fio", "/usr/bin/iperf3")),
    reason="needs fio and iperf3 (make system-packages)",
)


def _files(tmp_path: Path, port: int) -> tuple[Path, Path]:
    suite = tmp_path / "mixed.yaml"
    suite.write_text(SUITE.format(workdir=tmp_path / "scratch", port=port))
    spec = tmp_path / "fio-only.yaml"
    spec.write_text(FIO_ONLY)
    return suite, spec


def _twins(run_dir: Path) -> tuple[ET.Element, str, str]:
    junit = ET.parse(run_dir / "junit.xml").getroot()
    return junit, (run_dir / "summary.md").read_text(), (run_dir / "metrics.prom").read_text()


def test_a_failed_step_that_no_check_reads_fails_the_run_in_every_twin(tmp_path: Path) -> None:
    suite, spec = _files(tmp_path, 15741)
    runs = tmp_path / "runs"
    res = aibench(
        "run", "fio", "--suite", str(suite), "--spec", str(spec), "--output-dir", str(runs)
    )
    # fio alone: the step of another tool is not part of this (partial) run
    assert res.returncode == 0, res.stdout + res.stderr
    assert "partial run: 1 of 3 steps (fio-read): not the acceptance" in res.stderr
    assert res.stdout.startswith("PASS (partial run: 1 of 3 steps")
    res = aibench(
        "run", "--suite", str(suite), "--spec", str(spec), "--output-dir", str(runs / "whole")
    )
    assert res.returncode == 1, res.stdout + res.stderr
    assert res.stdout.startswith("FAIL: mixed against fio-only (1 ERROR, 1 PASS)"), res.stdout
    run_dir, run = only_run(runs / "whole")
    (step,) = [v for v in run.verdicts if v.origin == "step"]
    assert (step.check, step.subject, step.outcome.value) == (
        "step:burn",
        (run.steps[0].nodes[0],),
        "ERROR",
    )
    assert "gpu_burn" in step.reason
    assert "not found" in step.reason
    junit, md, prom = _twins(run_dir)
    assert junit.get("errors") == "1"
    assert "step:burn" in md
    assert "No check failed." not in md
    assert 'aibench_run_outcome{outcome="FAIL",suite="mixed"} 1' in prom
    check = aibench("check", str(run_dir))
    assert check.returncode == 1
    assert "reproduced 2 stored verdict(s)" in check.stdout
    assert aibench("report", str(run_dir), "--out", str(tmp_path / "re")).returncode == 1


def test_a_run_that_judged_nothing_fails_run_check_and_report_alike(tmp_path: Path) -> None:
    suite, spec = _files(tmp_path, 15745)
    runs = tmp_path / "runs"
    res = aibench(
        "run", "iperf3", "--suite", str(suite), "--spec", str(spec), "--output-dir", str(runs)
    )
    assert res.returncode == 1, res.stdout + res.stderr
    assert res.stdout.startswith("MISSING (partial run: 1 of 3 steps (tcp)"), res.stdout
    assert "not judged: their steps were not selected (fio-read-bw)" in res.stdout
    run_dir, run = only_run(runs)
    assert run.verdicts == ()
    assert run.outcome.value == "MISSING"
    check = aibench("check", str(run_dir))
    assert check.returncode == 1, check.stdout
    assert "MISSING: " in check.stdout
    assert "PASS" not in check.stdout.replace("PARTIAL", "")
    as_json = aibench("check", str(run_dir), "--format", "json")
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout)["outcome"] == "MISSING"
    assert aibench("report", str(run_dir), "--out", str(tmp_path / "re")).returncode == 1
    junit, md, prom = _twins(run_dir)
    assert junit.get("failures") == "1"
    assert "partial run" in (junit.get("name") or "")
    assert "partial run: 1 of 3 steps (tcp): not the acceptance of suite mixed" in md
    assert 'aibench_run_partial{suite="mixed"} 1' in prom
    html = (run_dir / "report.html").read_text()
    assert "not the acceptance of suite mixed" in html.split('id="signoff"')[0]


def test_the_default_spec_judges_the_acceptance_preflight() -> None:
    from aibench.suite import load_suite
    from aibench.thresholds import load_spec

    assert "preflight" in {s.tool for s in load_suite("acceptance").steps}
    for name, want in (
        ("default", {"tool-fio", "tool-iperf3", "no-xid-errors"}),
        ("seed-reference", {"tool-fio", "tool-iperf3"}),
    ):
        facts = {c.id for c in load_spec(name).checks if c.fact is not None}
        assert want <= facts, name


def test_shipped_node_rows_require_every_node() -> None:
    from aibench.config import builtin_names
    from aibench.thresholds import load_spec

    for name in builtin_names("profiles"):
        for c in load_spec(name).checks:
            if c.select is not None and c.scope == "node":
                assert c.require == "every_node", f"{name}: {c.id}"


def test_a_parser_that_reads_nothing_says_what_it_looked_for() -> None:
    from aibench.errors import ParseError
    from aibench.model import Note
    from aibench.parsers import Parser

    only_notes = Parser("demo", lambda text: [Note("warning", "odd", 1)], "demo JSON lines")
    with pytest.raises(ParseError, match="no measurements found: looked for demo JSON lines"):
        only_notes.parse("{}")
    empty_log = Parser("log", lambda text: [], "an event log", emits="facts", empty_ok=True)
    assert list(empty_log.parse("")) == []


def test_largest_is_the_end_of_each_nodes_own_sweep(tmp_path: Path) -> None:
    from aibench.thresholds import judge
    from tests.thresholds.helpers import NOW, m, run, step

    spec_file = tmp_path / "s.yaml"
    spec_file.write_text(
        "schema_version: 1\nname: s\nchecks:\n  - id: ar\n"
        "    select: {tool: nccl-tests, metric: busbw, largest: size_bytes}\n"
        "    unit: GB/s\n    min: 300\n"
    )
    from aibench.thresholds import load_spec

    full = [m("nccl-tests", "busbw", 360, "GB/s", (), size_bytes=2**33)]
    short = [m("nccl-tests", "busbw", 36, "GB/s", (), size_bytes=2**20)]
    steps = [step("ar", "nccl-tests", ("g1",), full), step("ar", "nccl-tests", ("g2",), short)]
    got = {
        v.subject: (v.outcome.value, v.observed)
        for v in judge(load_spec(spec_file), run(steps, ("g1", "g2")), now=NOW)
    }
    # the node whose sweep stopped at 1 MiB is judged there, not left without a verdict
    assert got == {("g1",): ("PASS", 360), ("g2",): ("FAIL", 36)}
