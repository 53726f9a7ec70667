"""The hook for ``aibench run``: telemetry beside an execution, attached to the Run, kept in
run.json; a Run without telemetry is written exactly as before."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from aibench.executors.local import LocalExecutor
from aibench.inventory import Node
from aibench.model import Run
from aibench.telemetry import hook


def test_sampling_beside_an_execution_and_attached_to_the_run(tmp_path: Path) -> None:
    loc = LocalExecutor()

    async def main() -> None:
        async with hook.sampling(tmp_path, [Node(name="n1")], lambda n: loc, interval=0.5) as s:
            assert s is not None
            await asyncio.sleep(1.5)  # the step

    asyncio.run(main())
    run = hook.attach(Run(id="r", suite="s", spec="p"), tmp_path)
    series = {s["metric"] for s in run.telemetry["series"]}
    assert "load1" in series
    again = Run.from_dict(json.loads(json.dumps(run.to_dict())))
    assert again.telemetry == run.telemetry


def test_no_interval_no_sampler_and_no_key(tmp_path: Path) -> None:
    async def main() -> None:
        async with hook.sampling(
            tmp_path, [Node(name="n1")], lambda n: LocalExecutor(), interval=None
        ) as s:
            assert s is None

    asyncio.run(main())
    run = hook.attach(Run(id="r", suite="s", spec="p"), tmp_path)
    assert "telemetry" not in run.to_dict()
