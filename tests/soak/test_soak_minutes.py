"""A soak whose stress-ng chunk runs over a minute, on one test-bed host over SSH: stress-ng
then spells its lengths in minutes (``61 second (1 min, 1.00 secs)``, ``... completed in
1 min, 1.10 secs`` or ``1 min`` by version), and the chunk must count as done, with its
rate sampled, not as a run killed or cut short."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from aibench.executors.select import for_node
from aibench.inventory import Inventory
from aibench.inventory_file import InventoryModel, build_inventory
from aibench.runners.stress_ng import StressNgOptions
from aibench.soak.engine import SoakOptions, load_state, run_soak
from aibench.telemetry import Store, compact
from tests.testbed.bed import TestBed

pytestmark = [pytest.mark.netns, pytest.mark.slow]

CHUNK = 61.0  # just over a minute: the shortest run stress-ng prints in minutes


def test_a_chunk_over_a_minute_is_a_finished_run(testbed_soak: TestBed, tmp_path: Path) -> None:
    if not shutil.which("stress-ng"):
        pytest.skip("stress-ng missing")
    data = testbed_soak.inventory_data()
    inv: Inventory = build_inventory(InventoryModel.model_validate(data), "inventory.yaml", data)
    node = inv.nodes[0]
    opts = SoakOptions(  # 1 % of a core: what is checked is how the length is printed
        duration=CHUNK, interval=10.0, chunk=CHUNK, stress=StressNgOptions(cpu=1, vm=0, cpu_load=1)
    )
    soak_dir = tmp_path / "soak"

    async def main() -> None:
        try:
            await run_soak(soak_dir, [node], lambda n: for_node(n, inv), opts, None)
        finally:
            await for_node(node, inv).close()

    asyncio.run(main())
    state = load_state(soak_dir)
    assert state["chunks"] == 1
    assert state["elapsed"] >= CHUNK
    (out,) = (soak_dir / "raw").glob("*.out")
    raw = out.read_text()
    assert " min" in raw  # stress-ng did print the length in minutes
    tel = compact(Store(soak_dir / "telemetry"))
    assert [e for e in tel["errors"] if e.get("source") == "stress-ng"] == []
    rates = [s for s in tel["series"] if s["node"] == node.name and s["metric"] == "bogo_ops_rate"]
    assert len(rates) == 1
    assert rates[0]["v"][0] > 0
