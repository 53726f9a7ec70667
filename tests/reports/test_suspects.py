"""Suspect nodes and links (fault localization) in the failures-first block and the banner.

The suspects are what ``aibench run`` stores in run.json (:func:`suspect_records` of
aibench.thresholds.localize) for a generated run whose pairwise iperf3 results have one
slow link and one node whose links are all slow; they are read from run.json as they are
stored, and (for other writers) from the localization's own objects.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from aibench.model import Run
from aibench.reports import context, markdown
from aibench.reports import html as html_report
from aibench.thresholds.localize import run_suspects, suspect_records
from tests.reports.gen import make_run, write_run


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, Path]:
    gen = make_run(12)
    steps = []
    for s in gen.run.steps:  # every link of gpu0007 slow as well: a node suspect
        if s.tool == "iperf3" and "gpu0007" in s.nodes:
            ms = tuple(dataclasses.replace(m, value=40e9) for m in s.measurements)
            s = dataclasses.replace(s, measurements=ms)
        steps.append(s)
    run = gen.run.replace(steps=tuple(steps))
    run = run.replace(suspects=suspect_records(run))
    d = tmp_path_factory.mktemp("suspects")
    write_run(dataclasses.replace(gen, run=run), d)
    # what the report reads is what run.json holds
    stored = Run.from_dict(json.loads((d / "run.json").read_text()))
    assert stored.suspects == run.suspects
    return stored, d


def test_localization_finds_the_node_and_the_link(generated: tuple[Run, Path]) -> None:
    run, _ = generated
    found = {(s["tool"], s["kind"], s["name"]) for s in run.suspects}
    assert found == {
        ("iperf3", "node", "gpu0007"),
        ("iperf3", "link", "gpu0002+gpu0003"),
        ("perftest", "link", "gpu0002+gpu0003"),
    }


def _check(html: str, tool_column: bool = True) -> None:
    banner = html.split('id="signoff"')[0]
    where = "iperf3 throughput" if tool_column else "iperf3"
    assert f"Suspect node gpu0007 ({where}): 2 of 2 pairs slow, at 43% of the fleet" in banner
    assert f"Suspect link gpu0002+gpu0003 ({where}): 1 of 1 pairs slow" in banner
    block = html.split('id="failures"')[1].split('id="checks"')[0]
    sus = block.split('id="suspects"')[1].split("</table>")[0]
    # before the first failing check
    assert block.index('id="suspects"') < block.index('<article class="failure')
    assert "<b>gpu0007</b>" in sus
    assert "gpu0002 ↔ gpu0003: 31.5 Gbit/s" in sus
    assert "gpu0006 ↔ gpu0007: 40 Gbit/s" in sus
    if tool_column:
        assert "<td>iperf3 throughput: iperf3-tcp reverse=False streams=8 protocol=tcp</td>" in sus


def test_stored_suspects_are_shown_first_with_their_evidence(generated: tuple[Run, Path]) -> None:
    run, d = generated
    _check(html_report.render(run, d))


def test_localization_objects_are_read_as_well(generated: tuple[Run, Path]) -> None:
    run, d = generated
    pairs: list[Any] = run_suspects(run)
    _check(html_report.render(run.replace(suspects=pairs), d), tool_column=False)


def test_no_suspects_no_block(generated: tuple[Run, Path]) -> None:
    run, d = generated
    run = run.replace(suspects=())
    assert context.suspects(run) == []
    html = html_report.render(run, d)
    assert 'id="suspects"' not in html
    assert "Suspect " not in html.split('id="signoff"')[0]
    assert "### Suspects" not in markdown.render(run)


def test_suspect_text_is_escaped(generated: tuple[Run, Path]) -> None:
    run, d = generated
    bad = [
        {
            "kind": "node",
            "name": "<script>x()</script>",
            "text": "<img src=x onerror=y>",
            "evidence": [["<b>", "n2", 1.0]],
        }
    ]
    html = html_report.render(run.replace(suspects=bad), d)
    assert "<script>x()" not in html
    assert "&lt;script&gt;x()&lt;/script&gt;" in html
    assert "<img src=x" not in html


def test_the_ci_summary_lists_the_suspects(generated: tuple[Run, Path]) -> None:
    run, _ = generated
    block = markdown.render(run).split("### Suspects (3)")[1].split("###")[0]
    assert "- node **gpu0007**: 2 of 2 pairs slow, at 43% of the fleet median" in block
    assert "- link **gpu0002+gpu0003**: 1 of 1 pairs slow" in block


def test_readable_rates() -> None:
    assert context.readable(31.5e9, "bit/s") == "31.5 Gbit/s"
    assert context.readable(940.0, "Mbit/s") == "940.0 Mbit/s"
    assert context.readable(2500.0, "MB/s") == "2.5 GB/s"
    assert context.readable(12.0, "IOPS") == "12 IOPS"
