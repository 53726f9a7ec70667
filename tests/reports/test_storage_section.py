"""The shared storage section, on the records of a real capture: fio's client/server JSON
from four GlusterFS clients, one of them (10.213.9.3) held to 3 % of a CPU, named after
their nodes by the fio-cluster runner as a run would."""

from __future__ import annotations

import html as htmllib
import re
from pathlib import Path

from aibench.model import Measurement, Outcome, Run, StepResult, Verdict
from aibench.reports import html as html_report
from aibench.runners.base import Output
from aibench.runners.fio_cluster import RUNNER
from tests.runners.helpers import FIXTURES, node, plan

CAPTURE = FIXTURES / "fio-cluster" / "v3.33_glusterfs_4clients_checkpoint_one_throttled.json"
NODES = [node(f"gl-h{i}", f"10.213.9.{i}") for i in range(1, 5)]


def text_of(page: str) -> str:
    page = re.sub(r"<svg.*?</svg>", "", page, flags=re.S)
    return re.sub(r"\s+", " ", htmllib.unescape(re.sub(r"<[^>]+>", " ", page)))


def test_section_names_the_slow_client_and_states_the_checkpoint_time(tmp_path: Path) -> None:
    # the capture's servers listened on 18765..18768, as this plan's do
    (inv,) = plan("fio-cluster", {"kind": "checkpoint", "size": "64M"}, NODES, step="ckpt")
    out = Output(CAPTURE.read_text(), "", 0, tmp_path)
    ms = tuple(r for r in RUNNER.collect(inv, out) if isinstance(r, Measurement))
    ms = tuple(Measurement(m.tool, m.metric, m.value, m.unit, m.dims, m.nodes, "ckpt") for m in ms)
    step = StepResult(inv.step_id, "ckpt", "fio-cluster", inv.nodes, 0, "ok", measurements=ms)
    slow = Verdict(
        "client-read", Outcome.WARN, ("gl-h3",), culprits=("gl-h3",),
        reason="far below the fleet median", benchmark="fio-cluster",
    )  # fmt: skip
    run = Run(id="r", suite="s", spec="p", steps=(step,), verdicts=(slow,))
    sec = text_of(html_report.render(run, tmp_path).split("Shared storage (fio client/server)")[-1])
    # aggregate beside the clients, per direction; the slowest client is gl-h3 in both
    assert re.search(r"ckpt write 4 46\.4 11\.6 .* gl-h3", sec), sec[:600]
    assert re.search(r"ckpt read 4 75 18\.8 .* gl-h3", sec), sec[:600]
    assert "Slow client: gl-h3 (client-read: far below the fleet median)" in sec
    # 7e10 parameters x 14 bytes = 980 GB at fio's aggregate write of 45267 KiB/s
    assert "Checkpoint write of 7e+10 parameters x 14 bytes (980.0 GB) from 4 clients" in sec
    assert f"{70e9 * 14 / (45267 * 1024):,.0f} s" in sec
