"""Reports of a GENERATED acceptance-shaped run: 1024 nodes (slow) and the shape at 8 nodes.

The 1024-node run (tests/reports/gen.py, ``dense``) has about 33,000 steps, 19,500
verdicts and 100,000 measurements; the report must stay one self-contained file under the
25 MB target (bench/report_scale.py measures time and memory as well), say that its data
is generated, and still name the bad node and the bad link on the first screen.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aibench.reports import write_all
from tests.reports.gen import make_run, write_run

MB = 10**6


def _self_contained(html: str) -> None:
    assert "http://" not in html
    assert "https://" not in html
    assert not re.search(r'\s(?:src|href)="(?!#|logs/|data:)', html)
    assert html.count("<script") == 1
    assert "default-src 'none'" in html


@pytest.mark.slow
def test_1024_node_report_is_self_contained_and_under_25_mb(tmp_path: Path) -> None:
    gen = make_run(1024, dense=True)
    write_run(gen, tmp_path)
    files = write_all(gen.run, tmp_path)
    size = files["report.html"].stat().st_size
    assert size < 25 * MB, f"report.html is {size / MB:.1f} MB"
    html = files["report.html"].read_text(encoding="utf-8")
    _self_contained(html)
    head = html.split('id="signoff"')[0]
    assert "GENERATED DATA" in html.split('id="failures"')[0]
    assert f"FAIL fio-seq-read-bw: {gen.bad_node}" in head
    a, b = gen.bad_link
    assert f"FAIL iperf3-tcp-bw: {a}&lt;-&gt;{b}" in head
    # fault localization names the link, in iperf3 and on the one slow perftest rail
    assert f"Suspect link {a}+{b} (iperf3 throughput): 1 of 1 pairs slow" in head
    assert f"Suspect link {a}+{b} (perftest bw_avg): 1 of 1 pairs slow" in head
    sus = html.split('id="suspects"')[1].split("</table>")[0]
    assert "device=mlx5_3" in sus
    assert len(re.findall(r"<tr data-outcome=", html)) == len(gen.run.verdicts)
    assert "pairwise matrix (aggregated by group: worst link between groups)" in html
    # the preflight table lists the nodes with an odd value, not all 1024
    pre = html.split("<caption>Per-node preflight facts")[1].split("</table>")[0]
    assert "(1024 nodes, 2 with an odd value)" in pre
    assert pre.count("<tr>") == 1 + 3  # header, the majority row, two odd nodes
    assert "1022 nodes match the majority in every column" in pre


def test_acceptance_shape_at_8_nodes(tmp_path: Path) -> None:
    gen = make_run(8, dense=True)
    write_run(gen, tmp_path)
    html = write_all(gen.run, tmp_path)["report.html"].read_text(encoding="utf-8")
    _self_contained(html)
    perf = html.split("<h2>perftest")[1].split("</section>")[0]
    # eight rails are one matrix: the worst rail per pair, and the table names the rail
    assert perf.count("pairwise matrix") == 1
    assert "worst of 8 rails per pair" in perf
    a, b = gen.bad_link
    assert f"<td>{a} ↔ {b}</td><td>device=mlx5_3</td><td>180.2</td>" in perf
    # repeats: the verdict is the median of three steps, each linked
    fio = re.search(
        r'<tr data-outcome="FAIL"><td class="t-FAIL">✖ FAIL</td><td>fio-seq-read-bw'
        r".*?</tr>",
        html,
        re.S,
    )
    assert fio is not None
    assert fio[0].count(">log</a>") == 3
    pre = html.split("<caption>Per-node preflight facts")[1].split("</table>")[0]
    assert "≠ 535.161.08" in pre
    assert "≠ Active ×7, Down ×1" in pre
    nccl = html.split("<h2>NCCL tests")[1].split("</section>")[0]
    assert "all_gather: busbw vs message size" in nccl
    train = html.split("<h2>MLPerf Training")[1].split("</section>")[0]
    assert "llama31_8b: 10 runs of the 10 the rules require; a valid MLPerf score." in train
    inf = html.split("<h2>MLPerf Inference")[1].split("</section>")[0]
    assert "7 of 8 LoadGen runs VALID" in inf
