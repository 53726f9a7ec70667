"""The report's per-node preflight table, from facts the real preflight runner collected.

Three nodes are collected on this machine through the local executor with the test-only
PATH folders of tests/preflight, whose nvidia-smi, ibstat, dcgmi (and dmesg) print real
captures: gpu01 and gpu02 see the healthy H100 node's ibstat, gpu03 the A100 node's
ibstat that ends in ibpanic (8 HCAs at 200 Gbit/s, older firmware) and a dmesg that is
refused. The report must mark exactly gpu03's differing values, in text and by highlight.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

import pytest

from aibench.executors.local import LocalExecutor
from aibench.inventory import Inventory, Node
from aibench.model import Fact, Run, StepResult
from aibench.preflight import environment_from_facts
from aibench.preflight_run import collect
from aibench.reports import html as html_report
from aibench.reports.sections import preflight as section
from aibench.suite import load_suite

PREFLIGHT_TESTS = Path(__file__).resolve().parents[1] / "preflight"
FAKEBIN = PREFLIGHT_TESTS / "fakebin"
DMESG_DENIED = PREFLIGHT_TESTS / "fakebin-dmesg-denied"


def _collect(
    mp: pytest.MonkeyPatch, tmp: Path, names: list[str], path: list[Path], **env: str
) -> list[StepResult]:
    with mp.context() as m:
        m.setenv("PATH", os.pathsep.join([*map(str, path), os.environ["PATH"]]))
        for k, v in env.items():
            m.setenv(k, v)
        inv = Inventory(
            name="t",
            nodes=tuple(Node(name=n, address="127.0.0.1", executor="local") for n in names),
        )
        ex = LocalExecutor()
        results, unreachable = collect(load_suite("preflight"), inv, tmp, lambda n: ex)
    assert not unreachable
    return results


@pytest.fixture(scope="module")
def steps(tmp_path_factory: pytest.TempPathFactory) -> list[StepResult]:
    tmp = tmp_path_factory.mktemp("preflight")
    with pytest.MonkeyPatch.context() as mp:
        healthy = _collect(mp, tmp / "a", ["gpu01", "gpu02"], [FAKEBIN])
        odd = _collect(mp, tmp / "b", ["gpu03"], [DMESG_DENIED, FAKEBIN], FAKE_IBSTAT="failed")
    return healthy + odd


@pytest.fixture(scope="module")
def page(steps: list[StepResult], tmp_path_factory: pytest.TempPathFactory) -> str:
    facts = [f for s in steps for f in s.facts]
    run = Run(
        id="preflight-3",
        suite="preflight",
        spec="preflight",
        steps=tuple(steps),
        environment=environment_from_facts(facts),
    )
    return html_report.render(run, tmp_path_factory.mktemp("out"))


def _table(html: str) -> dict[str, list[str]]:
    sec = html.split("<h2>Preflight (node facts)")[1].split("</section>")[0]
    table = sec.split("<caption>Per-node preflight facts")[1].split("</table>")[0]
    head = re.findall(r"<th>(.*?)</th>", table.split("</thead>")[0])
    assert head == ["fact", "gpu01", "gpu02", "gpu03", "most nodes"]
    rows = {}
    for tr in table.split("<tbody>")[1].split("<tr>")[1:]:
        cells = re.findall(r"<td[^>]*>(.*?)</td>", tr)
        rows[cells[0]] = cells[1:]
    return rows


def test_the_table_names_the_facts_that_decide_a_handover(page: str) -> None:
    rows = _table(page)
    assert rows["GPU driver"] == ["590.48.01"] * 4
    assert rows["CUDA"] == ["13.1"] * 4
    assert rows["GPUs"] == ["1"] * 4
    assert rows["GPU model"] == ["NVIDIA H100 80GB HBM3"] * 4
    assert rows["ECC mode"] == ["Enabled"] * 4
    assert rows["ECC uncorrected (aggregate)"] == ["0"] * 4
    assert rows["DCGM diag"] == ["fail"] * 4  # the capture's GPU Memory test failed
    for label in ("kernel", "vm.swappiness", "fio version", "iperf3 version", "Xid events"):
        assert label in rows


def test_only_the_odd_node_is_marked_with_the_majority_beside_it(page: str) -> None:
    rows = _table(page)
    assert rows["HCAs"] == ["9", "9", "≠ 8", "9"]
    assert rows["HCA rate (Gbit/s)"] == [
        "400 ×8, 200 ×1",
        "400 ×8, 200 ×1",
        "≠ 200 ×8",
        "400 ×8, 200 ×1",
    ]
    assert rows["HCA firmware"][2] == "≠ 20.41.1000"
    assert rows["HCA firmware"][3] == "28.41.1000, 32.38.3056"
    # dmesg refused on gpu03: absent is not 0, and it stands out
    assert rows["Xid events"] == ["0", "0", "≠ absent", "0"]
    marked = {label for label, cells in rows.items() for c in cells[:3] if c.startswith("≠")}
    assert marked == {
        "HCAs",
        "HCA port state",
        "HCA rate (Gbit/s)",
        "HCA firmware",
        "Xid events",
        "Xid codes",
    }
    assert all(not c.startswith("≠") for label, cells in rows.items() for c in cells[:2])
    # the highlight is on exactly the marked cells
    sec = page.split("<caption>Per-node preflight facts")[1].split("</table>")[0]
    flagged = re.findall(r'<td class="flag">(.*?)</td>', sec)
    assert flagged
    assert all(c.startswith("≠ ") for c in flagged)
    assert len(flagged) == sum(c.startswith("≠") for cells in rows.values() for c in cells)
    assert "(3 nodes, 1 with an odd value)" in sec


def test_the_failed_hca_step_and_absent_facts_are_stated(page: str) -> None:
    sec = page.split("<h2>Preflight (node facts)")[1].split("</section>")[0]
    assert "✖ 1 preflight steps failed: preflight/gpu03.hca/r0: ibstat: exit code 255" in sec
    assert "dmesg: read kernel buffer failed: Operation not permitted" in sec


def facts_of(steps: list[StepResult], node: str) -> list[Fact]:
    return [f for s in steps for f in s.facts if node in f.nodes]


def test_many_nodes_list_only_the_odd_ones_under_the_majority_row(steps: list[StepResult]) -> None:
    """400 copies of gpu01's facts and one of gpu03's, under other names."""
    fleet = [replace(f, nodes=(f"n{i:04d}",)) for i in range(400) for f in facts_of(steps, "gpu01")]
    fleet += [replace(f, nodes=("n9999",)) for f in facts_of(steps, "gpu03")]
    nodes = sorted({n for f in fleet for n in f.nodes})
    table = section.preflight_table(fleet, nodes)
    assert table is not None
    assert table.columns[0] == "node"
    assert [r[0] for r in table.rows] == ["(most nodes)", "n9999"]
    assert "400 nodes match the majority in every column and are not listed" in table.note
    hcas = table.columns.index("HCAs")
    assert table.rows[0][hcas] == "9"
    assert table.rows[1][hcas] == "≠ 8"
    assert (1, hcas) in table.flagged


def test_one_node_compares_with_nothing(steps: list[StepResult]) -> None:
    facts = facts_of(steps, "gpu01")
    table = section.preflight_table(facts, ["gpu01"])
    assert table is not None
    assert table.columns == ("fact", "gpu01")
    assert not table.flagged
    assert "nothing to compare" in table.note
