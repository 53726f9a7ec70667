"""The soak engine with GPUs stood in for by replays of real captures: gpu-burn on every GPU
node beside stress-ng (one node's capture is all OK, the other's has 16 FAULTY GPUs), an
nvidia-smi loop whose clocks are held down by a HW thermal slowdown from its 5th row; the
judge names the faulty node's GPUs and the throttled GPU with their times."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from aibench.executors.local import LocalExecutor
from aibench.inventory import Node
from aibench.model import Outcome
from aibench.runners.gpu_burn import GpuBurnOptions
from aibench.runners.stress_ng import StressNgOptions
from aibench.soak.engine import SoakOptions, run_soak
from aibench.soak.judge import Limits, judge
from aibench.telemetry import Store, compact
from tests.runners.helpers import FIXTURES, PROGRAMS, wrapper

pytestmark = pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng not installed")


def test_gpu_burn_and_throttling_judged_per_gpu(tmp_path: Path) -> None:
    replay = PROGRAMS / "gpu_tool_replay.py"
    nodes = []
    for name, fixture in (("ok", "a100x8-doubles-tc-ok.log"), ("bad", "issue12-16gpu-faulty.txt")):
        d = tmp_path / f"burn-{name}"
        wrapper(
            d,
            "gpu_burn",
            replay,
            "--fixture",
            str(FIXTURES / "gpu-burn" / fixture),
            "--binary",
            "gpu_burn",
        )
        nodes.append(Node(name=name, facts={"gpus": {"count": 8}, "gpu_burn_dir": str(d)}))
    smi = wrapper(
        tmp_path / "smi", "nvidia-smi", PROGRAMS / "nvidia_smi_replay.py", "--throttle-after", "4"
    )
    opts = SoakOptions(
        duration=8,
        chunk=4,
        interval=0.5,
        gpu_binary=str(smi),
        stress=StressNgOptions(cpu=1, cpu_load=10, vm=0),
        gpu_burn=GpuBurnOptions(duration=1),
    )
    loc = LocalExecutor()
    state = asyncio.run(run_soak(tmp_path / "soak", nodes, lambda n: loc, opts))
    assert state["chunks"] == 2
    tel = compact(Store(tmp_path / "soak" / "telemetry"))
    verdicts = judge(tel, ["ok", "bad"], Limits(baseline_s=3, throttle_s=1.0))
    by = {(v.subject[0], v.check): v for v in verdicts}
    assert by[("ok", "soak.gpu_burn")].outcome is Outcome.PASS
    bad = by[("bad", "soak.gpu_burn")]
    assert bad.outcome is Outcome.FAIL
    assert "bad:gpu0" in bad.culprits
    assert "gpu15" in bad.observed_text
    thr = by[("ok", "soak.throttle")]
    assert thr.outcome is Outcome.FAIL
    assert thr.culprits == ("ok:gpu0",)
    assert " from " in thr.observed_text
    assert by[("ok", "soak.temperature.max")].outcome is Outcome.PASS

    # the report section: failing nodes first, throttling shaded, parts named
    from aibench.model import Run
    from aibench.reports.sections import SectionInput
    from aibench.reports.sections.soak import SECTION

    run = Run(id="r", suite="soak", spec="soak", verdicts=tuple(verdicts), telemetry=tel)
    out = SECTION.render(SectionInput("soak", run, (), tuple(verdicts), ()))
    assert [p.title.split(":")[0] for p in out.plots] == ["bad", "ok"]
    assert "FAILS" in out.plots[0].caption
    assert "<svg" in out.plots[0].svg
    parts = out.tables[0].rows
    assert ("bad", "gpu0", "soak.gpu_burn") in {r[:3] for r in parts}
    assert ("ok", "gpu0", "soak.throttle") in {r[:3] for r in parts}
