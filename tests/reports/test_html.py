"""The HTML report's content, order, escaping and self-containment (no browser needed)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from aibench.model import Measurement, Outcome, Run, StepResult, Verdict
from aibench.registry import DuplicateNameError
from aibench.reports import html as html_report
from aibench.reports import write_all
from aibench.reports.sections import SECTIONS, Section, SectionOutput
from tests.reports.gen import make_run, write_run


def test_sections_appear_in_the_contracted_order(rendered):
    html = rendered.html
    marks = [
        'id="verdict"',
        'id="signoff"',
        'id="failures"',
        'id="checks"',
        'id="sec-1"',
        'id="environment"',
        'id="logs"',
    ]
    pos = [html.index(m) for m in marks]
    assert pos == sorted(pos)


def test_banner_answers_which_check_node_and_link(rendered):
    head = rendered.html.split('id="signoff"')[0]
    a, b = rendered.gen.bad_link
    assert '<span class="sym" aria-hidden="true">✖</span> FAIL</div>' in head
    assert f"FAIL fio-seq-read-bw: {rendered.gen.bad_node}</li>" in head
    assert f"FAIL iperf3-tcp-bw: {a}&lt;-&gt;{b}</li>" in head
    assert "ERROR <b>1</b>" in head
    assert "MISSING <b>1</b>" in head
    assert "WAIVED <b>1</b>" in head
    assert "GENERATED DATA" in rendered.html.split('id="failures"')[0]


def test_signoff_block(rendered):
    block = rendered.html.split('id="signoff"')[1].split('id="failures"')[0]
    for text in (
        "acme-h100-pod",
        "Example Integrator",
        "Example Research Lab",
        "h100-ndr",
        "ab" * 32,
        "acceptance",
        "20261202-101500-acceptance",
        "Signature",
    ):
        assert text in block
    import hashlib

    digest = hashlib.sha256((rendered.run_dir / "run.json").read_bytes()).hexdigest()
    assert digest in block


def test_failures_show_expected_observed_culprits_and_log_tail(rendered):
    block = rendered.html.split('id="failures"')[1].split('id="checks"')[0]
    assert block.count('<article class="failure') == sum(
        v.outcome.failing for v in rendered.gen.run.verdicts
    )
    assert "3100.0 MB/s" in block
    assert "&gt;= 5000 MB/s" in block
    assert "READ: bw=3100MB/s" in block  # from the raw log of the evidence step
    assert "RuntimeError: CUDA error: out of memory" in block  # the failed step's log
    assert 'href="logs/fio-seqread_gpu0003_r0.stdout"' in block


def test_checks_table_lists_every_verdict(rendered):
    rows = re.findall(r'<tr data-outcome="([A-Z]+)"', rendered.html)
    assert len(rows) == len(rendered.gen.run.verdicts)
    assert rows[0] == "FAIL"
    assert rows[-1] == "PASS"


def test_every_benchmark_has_a_section_with_a_plot(rendered):
    html = rendered.html
    for title in (
        "fio (storage)",
        "iperf3 (TCP/UDP bandwidth)",
        "perftest (RDMA",
        "NCCL tests",
        "MLPerf Training",
        "Preflight",
    ):
        assert f"<h2>{title}" in html
    for tool in ("fio", "iperf3", "perftest", "nccl-tests", "mlperf-training"):
        sec = html.split(f"<h2>{_title(html, tool)}")[1].split("</section>")[0]
        assert "<svg" in sec, tool
    assert "all_reduce: busbw vs message size" in html
    assert "pairwise matrix" in html


def _title(html: str, tool: str) -> str:
    m = re.search(r"<h2>([^<]*) <span class=\"muted small\">\(" + re.escape(tool) + ":", html)
    assert m, tool
    return m[1]


def test_environment_highlights_values_that_differ(rendered):
    env = rendered.html.split('id="environment"')[1].split('id="logs"')[0]
    assert "1 of 18 keys differ across nodes" in env
    assert '<td class="diff">≠ 535.161.08</td>' in env
    assert f"<b>535.161.08</b>: {rendered.gen.bad_node}" in env


def test_appendix_links_every_raw_log_relatively(rendered):
    logs = rendered.html.split('id="logs"')[1]
    hrefs = re.findall(r'href="([^"]+)"', logs)
    assert len(hrefs) == len(rendered.gen.run.steps)
    for h in hrefs:
        assert (rendered.run_dir / h).is_file()


def test_self_contained_no_urls_and_valid_svg(rendered):
    html = rendered.html
    assert "http://" not in html
    assert "https://" not in html
    assert "//" not in re.sub(
        r"<script>.*?</script>|<style>.*?</style>", "", html, flags=re.S
    ).replace("<!--", "")
    assert not re.search(r'\s(?:src|href)="(?!#|logs/|data:)', html)
    svgs = re.findall(r"<svg\b.*?</svg>", html, re.S)
    assert len(svgs) >= 8
    ids: list[str] = []
    for svg in svgs:
        root = ET.fromstring(svg.replace("xlink:href", "href"))
        assert not [e for e in root.iter() if e.tag in ("script", "foreignObject")]
        ids += [e.get("id") for e in root.iter() if e.get("id")]
    assert len(ids) == len(set(ids)), "element ids collide between plots"
    assert "Content-Security-Policy" in html
    assert "default-src 'none'" in html


def test_hostile_values_are_escaped_everywhere(hostile):
    html = hostile.html
    assert "<script>document.title" not in html
    assert 'onerror="' not in html
    assert html.count("<script") == 1
    assert "&lt;script&gt;document.title=&#39;PWNED&#39;&lt;/script&gt;" in html
    for svg in re.findall(r"<svg\b.*?</svg>", html, re.S):
        ET.fromstring(svg.replace("xlink:href", "href"))  # still well-formed
    md = hostile.files["summary.md"].read_text()
    assert "<script>" not in md
    assert "<img" not in md


def test_log_paths_outside_the_run_dir_are_neither_read_nor_linked(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-LINE\n")
    step = StepResult(
        "s/n1/r0",
        "s",
        "fio",
        ("n1",),
        0,
        "failed",
        stdout_path="../secret.txt",
        stderr_path=str(secret),
    )
    v = Verdict("c", Outcome.ERROR, ("n1",), evidence=("s/n1/r0",), benchmark="fio")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    html = html_report.render(
        Run(id="r", suite="s", spec="p", steps=(step,), verdicts=(v,)), run_dir
    )
    assert "TOP-SECRET-LINE" not in html
    assert 'secret.txt"' not in html


def test_unknown_tool_gets_the_generic_section(tmp_path):
    ms = tuple(
        Measurement("stream", "triad", 100.0 + i, "GB/s", nodes=(f"n{i}",)) for i in range(3)
    )
    steps = tuple(
        StepResult(
            f"stream/n{i}/r0", "stream", "stream", (f"n{i}",), 0, "ok", measurements=(ms[i],)
        )
        for i in range(3)
    )
    run = Run(
        id="r",
        suite="s",
        spec="p",
        steps=steps,
        verdicts=(Verdict("triad", Outcome.PASS, benchmark="stream"),),
    )
    html = html_report.render(run, tmp_path)
    sec = html.split("<h2>stream")[1].split("</section>")[0]
    assert "triad" in sec
    assert "102" in sec
    assert "<svg" in sec


def test_empty_run_says_it_proves_nothing(tmp_path):
    html = html_report.render(Run(id="r", suite="s", spec="p"), tmp_path)
    assert "MISSING" in html
    assert "this run proves nothing" in html


def test_duplicate_section_names_are_refused():
    with pytest.raises(DuplicateNameError):
        SECTIONS.add(Section("fio", "again", lambda si: SectionOutput()), "test")
    assert {
        "fio",
        "iperf3",
        "iperf2",
        "perftest",
        "nccl-tests",
        "mlperf-training",
        "mlperf-inference",
        "preflight",
    } <= set(SECTIONS.names())


def test_history_draws_trend_lines(tmp_path):
    old = [
        make_run(4, seed=s).run.replace(id=f"old{s}", started=f"2026-11-2{s}T10:00:00Z")
        for s in (1, 2)
    ]
    gen = make_run(4)
    write_run(gen, tmp_path)
    html = html_report.render(gen.run, tmp_path, history=old)
    hist = html.split('id="history"')[1].split("</section>")[0]
    assert hist.count("<svg") >= 2
    assert "3 runs" in hist


def test_large_run_aggregates_the_heatmap_and_stays_small(tmp_path):
    gen = make_run(300)
    write_run(gen, tmp_path)
    files = write_all(gen.run, tmp_path)
    html = files["report.html"].read_text()
    assert "pairwise matrix (aggregated by group: worst link between groups)" in html
    assert files["report.html"].stat().st_size < 5_000_000
    assert len(re.findall(r"<tr data-outcome=", html)) == len(gen.run.verdicts)


def test_heatmap_of_256_nodes_names_the_bad_link_and_stays_small():
    import math

    from aibench.reports import plots

    n = 256
    labels = [f"gpu{i + 1:04d}" for i in range(n)]
    m = [[94.0 if r != c else math.nan for c in range(n)] for r in range(n)]
    m[100][200] = 20.0
    svg = plots.heatmap(labels, m, unit="Gbit/s", marks=[(100, 200)])
    assert "gpu0101 ↔ gpu0201" in svg
    assert ">gpu0001<" in svg
    assert len(svg) < 1_000_000
    ET.fromstring(svg.replace("xlink:href", "href"))
