"""Reports of real tool output: committed captures parsed by the real parsers.

The measurements come from real runs (see tests/fixtures/*/SOURCES.md); the verdicts are
written here (the thresholds engine is tested elsewhere), each observing one of the
parsed values, the way the engine reports them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aibench.model import Measurement, Note, Outcome, Run, StepResult, Verdict, attach
from aibench.parsers import PARSERS
from aibench.reports import write_all

FIX = Path(__file__).resolve().parent.parent / "fixtures"
CASES = {
    "nccl-tests": ("nccl-tests/v2.17.8_1node_8gpu_H100_5collectives.txt", ("h100a",)),
    "fio": ("fio/v3.16_randread_libaio_json.json", ("h100a",)),
    "iperf3": ("iperf3/v3.12_lo_tcp_P2.json", ("h100a", "h100b")),
}


def _run(tmp_path: Path) -> Run:
    steps, verdicts = [], []
    for tool, (rel, nodes) in CASES.items():
        path = FIX / rel
        if not path.is_file():
            pytest.skip(f"fixture {rel} not present")
        text = path.read_text(encoding="utf-8")
        sid = f"{tool}/{'+'.join(nodes)}/r0"
        out = f"raw/{tool}.stdout"
        (tmp_path / "raw").mkdir(exist_ok=True)
        (tmp_path / out).write_text(text, encoding="utf-8")
        recs = PARSERS.get(tool).parse(text)
        notes = tuple(r for r in recs if isinstance(r, Note))  # the tool's warnings
        found = [r for r in recs if isinstance(r, Measurement)]
        ms = attach(found, nodes=nodes, step=sid, repeat=0)
        steps.append(
            StepResult(
                sid, tool, tool, nodes, 0, "ok", stdout_path=out, measurements=ms, notes=notes
            )
        )
        pick = {"nccl-tests": "busbw", "fio": "bw", "iperf3": "throughput"}[tool]
        m = max((m for m in ms if m.metric == pick), key=lambda m: m.value)
        verdicts.append(
            Verdict(
                f"{tool}-{pick}",
                Outcome.PASS,
                nodes,
                expected=f">= 1 {m.unit}",
                observed=m.value,
                unit=m.unit,
                bounds=(1.0, None),
                evidence=(sid,),
                benchmark=tool,
            )
        )
    return Run(
        id="real",
        suite="s",
        spec="p",
        steps=tuple(steps),
        verdicts=tuple(verdicts),
        environment={"h100a": {"hostname": "h100a"}, "h100b": {"hostname": "h100b"}},
    )


def test_real_outputs_render_with_plots(tmp_path):
    run = _run(tmp_path)
    html = write_all(run, tmp_path)["report.html"].read_text()
    sec = {t: html.split(f"({t}:")[1].split("</section>")[0] for t in CASES}
    ops = {m.dims.get("op") for s in run.steps if s.tool == "nccl-tests" for m in s.measurements}
    assert len(ops - {None}) == 5
    for op in ops - {None}:
        assert f"<b>{op}: busbw vs message size</b>" in sec["nccl-tests"]
    assert sec["nccl-tests"].count("<svg") == 5
    # one fio check on one node, one iperf3 check on one pair: a chart of a single bar says
    # nothing the tables do not, and is not drawn
    assert "Checks in " not in sec["fio"]
    assert "<svg" not in sec["fio"]
    assert "Summary over nodes" in sec["fio"]
    assert "<svg" not in sec["iperf3"]
    assert "iperf3-throughput" in sec["iperf3"]
    assert len(re.findall(r'<tr data-outcome="PASS"', html)) == 3
    # the tool's own warning (nccl-tests cut the size range) is shown in its section
    assert "Reducing maxBytes to 26549638485 due to memory limitation" in sec["nccl-tests"]
