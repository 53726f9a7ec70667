"""Suspect nodes and links (fault localization) in the failures-first block and the banner.

The suspects are what :func:`aibench.thresholds.localize.localize` finds in the pairwise
iperf3 values of a generated run (one slow link, one node whose links are all slow), stored
the way run.json holds them (mappings) or as the localization's own objects.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from aibench.model import Run
from aibench.reports import context
from aibench.reports import html as html_report
from aibench.thresholds.localize import localize, pair_values
from tests.reports.gen import make_run, write_run


def _with_suspects(run: Run, suspects: list[Any]) -> Run:
    if "suspects" in {f.name for f in dataclasses.fields(Run)}:
        return run.replace(suspects=suspects)

    @dataclasses.dataclass(frozen=True)
    class RunWithSuspects(Run):  # until Run carries the field itself
        suspects: tuple[Any, ...] = ()

    return RunWithSuspects(
        **{f.name: getattr(run, f.name) for f in dataclasses.fields(Run)}, suspects=tuple(suspects)
    )


def _found(run: Run) -> list[Any]:
    values = pair_values(run.measurements, tool="iperf3", metric="bw")
    return localize(values)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, Path]:
    gen = make_run(12)
    run = gen.run
    # all links of gpu0007 slow as well: a node, beside the generator's one bad link
    steps = []
    for s in run.steps:
        if s.tool == "iperf3" and "gpu0007" in s.nodes:
            ms = tuple(dataclasses.replace(m, value=40.0) for m in s.measurements)
            s = dataclasses.replace(s, measurements=ms)
        steps.append(s)
    run = run.replace(steps=tuple(steps))
    d = tmp_path_factory.mktemp("suspects")
    write_run(dataclasses.replace(gen, run=run), d)
    return run, d


def test_localization_finds_the_node_and_the_link(generated: tuple[Run, Path]) -> None:
    run, _ = generated
    found = {(s.kind, s.name) for s in _found(run)}
    assert found == {("node", "gpu0007"), ("link", "gpu0002+gpu0003")}


@pytest.mark.parametrize("form", ["mapping", "object", "tool-pair"])
def test_suspects_are_shown_first_with_their_evidence(
    generated: tuple[Run, Path], form: str
) -> None:
    run, d = generated
    found = _found(run)
    stored: list[Any]
    if form == "mapping":
        stored = [
            {"tool": "iperf3", "metric": "bw", "unit": "Gbit/s", **dataclasses.asdict(s)}
            for s in found
        ]
    elif form == "object":
        stored = list(found)
    else:
        stored = [("iperf3", s) for s in found]
    html = html_report.render(_with_suspects(run, stored), d)
    banner = html.split('id="signoff"')[0]
    assert "Suspect node gpu0007: 2 of 2 pairs slow, at 43% of the fleet median" in banner
    assert "Suspect link gpu0002+gpu0003: 1 of 1 pairs slow" in banner
    block = html.split('id="failures"')[1].split('id="checks"')[0]
    sus = block.split('id="suspects"')[1].split("</table>")[0]
    # before the first failing check
    assert block.index('id="suspects"') < block.index('<article class="failure')
    assert "<b>gpu0007</b>" in sus
    assert "gpu0002 ↔ gpu0003: 31.5" in sus
    assert "gpu0006 ↔ gpu0007: 40" in sus
    if form != "object":
        assert "<td>iperf3" in sus


def test_no_suspects_no_block(generated: tuple[Run, Path]) -> None:
    run, d = generated
    assert context.suspects(run) == []
    assert context.suspects(_with_suspects(run, [])) == []
    html = html_report.render(run, d)
    assert 'id="suspects"' not in html
    assert "Suspect " not in html.split('id="signoff"')[0]


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
    html = html_report.render(_with_suspects(run, bad), d)
    assert "<script>x()" not in html
    assert "&lt;script&gt;x()&lt;/script&gt;" in html
    assert "<img src=x" not in html


def test_the_ci_summary_lists_the_suspects(generated: tuple[Run, Path]) -> None:
    from aibench.reports import markdown

    run, _ = generated
    md = markdown.render(_with_suspects(run, list(_found(run))))
    block = md.split("### Suspects (2)")[1].split("###")[0]
    assert "- node **gpu0007**: 2 of 2 pairs slow, at 43% of the fleet median" in block
    assert "- link **gpu0002+gpu0003**: 1 of 1 pairs slow" in block
    assert "### Suspects" not in markdown.render(run)
