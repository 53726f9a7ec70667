"""The telemetry sampler beside a real workload: host probe (shell loop on the node), GPU
probe (a replay of a real nvidia-smi loop), BMC (the real ipmitool against ipmi_sim);
failures recorded, never raised; an interrupted sampler resumed keeps one continuous series."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from aibench.executors.local import LocalExecutor
from aibench.inventory import Node
from aibench.telemetry import Sampler
from tests import bmcsim
from tests.runners.helpers import PROGRAMS, wrapper

PASSWORD = "Tel-Secret-77"
PORT = 19831


def _bmc(port: int = PORT) -> dict[str, object]:
    return {
        "address": "127.0.0.1",
        "protocol": "ipmi",
        "port": port,
        "username": "admin",
        "password_env": "AIBENCH_TEST_TEL_PW",
        "cipher_suite": 3,
        "timeout": 2,
    }


async def _sample(sampler: Sampler, seconds: float, during=None) -> None:
    await sampler.start()
    try:
        if during is not None:
            await asyncio.sleep(seconds / 2)
            await asyncio.to_thread(during)
            await asyncio.sleep(seconds / 2)
        else:
            await asyncio.sleep(seconds)
    finally:
        await sampler.stop()


def _series(c: dict, node: str, metric: str, key: str | None = None) -> dict:
    found = [
        s
        for s in c["series"]
        if s["node"] == node and s["metric"] == metric and (key is None or s["key"] == key)
    ]
    assert found, (
        f"no {metric} series for {node}: {[(s['node'], s['metric']) for s in c['series']]}"
    )
    return found[0]


@pytest.mark.skipif(not bmcsim.available(), reason="ipmi_sim/ipmitool not installed")
def test_host_gpu_and_bmc_series_with_an_event_injected_while_sampling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIBENCH_TEST_TEL_PW", PASSWORD)
    bin_dir = tmp_path / "bin"
    wrapper(bin_dir, "nvidia-smi", PROGRAMS / "nvidia_smi_replay.py", "--throttle-after", "3")
    nodes = [Node(name="n1", facts={"gpus": {"count": 1}, "bmc": _bmc()})]
    loc = LocalExecutor()
    with bmcsim.SimBmc(tmp_path / "bmc", "127.0.0.1", PORT, "admin", PASSWORD) as sim:
        sim.add_sel("Memory", 5, 0x00)  # there before the watch: not a new event
        s = Sampler(
            tmp_path / "tel",
            nodes,
            lambda n: loc,
            interval=0.5,
            bmc_interval=0.5,
            gpu_binary=str(bin_dir / "nvidia-smi"),
        )

        def fail_fan() -> None:
            sim.set_sensor(3, 0)
            sim.add_sel("Fan", 3, 0x02)

        # 4 s after the failure: on a loaded machine one lanplus read can take seconds
        asyncio.run(_sample(s, 8.0, fail_fan))
    c = s.compact()
    assert len(_series(c, "n1", "cpu_busy")["v"]) >= 3
    temps = _series(c, "n1", "temp_gpu", "gpu0")
    assert len(temps["v"]) >= 4
    assert set(temps["v"]) <= {55.0, 56.0}  # the captured loop's values
    mask = _series(c, "n1", "clocks_event_mask", "gpu0")["v"]
    assert mask[0] == 0
    assert mask[-1] == 64
    fan = _series(c, "n1", "fan", "Fan 1")
    assert fan["v"][0] == 9000
    assert fan["v"][-1] == 0
    events = {(e["sensor_type"], e["event"]): e for e in c["events"]}
    assert events[("Memory", "Correctable ECC")]["first_read"] is True
    fan_event = events[("Fan", "Lower Critical going low")]
    assert fan_event["first_read"] is False
    assert fan_event["t"] > 0
    text = "".join(p.read_text() for p in (tmp_path / "tel").rglob("*") if p.is_file())
    assert PASSWORD not in text + json.dumps(c)


def test_probe_failures_are_recorded_not_raised(tmp_path: Path) -> None:
    nodes = [
        Node(
            name="n1",
            facts={
                "gpus": {"count": 8},
                "bmc": {**_bmc(19899), "password_env": "AIBENCH_UNSET_PW"},
            },
        )
    ]
    loc = LocalExecutor()
    s = Sampler(
        tmp_path / "tel",
        nodes,
        lambda n: loc,
        interval=0.5,
        gpu_binary=str(tmp_path / "no-such-nvidia-smi"),
    )
    asyncio.run(_sample(s, 1.5))
    c = s.compact()
    reasons = {e["source"]: e["reason"] for e in c["errors"]}
    assert "probe did not start" in reasons["gpu"]
    assert "AIBENCH_UNSET_PW is not set" in reasons["bmc"]
    assert _series(c, "n1", "load1")["v"]  # the host probe went on


def test_an_interrupted_sampler_resumed_continues_the_same_series(tmp_path: Path) -> None:
    nodes = [Node(name="n1")]
    loc = LocalExecutor()
    d = tmp_path / "tel"
    asyncio.run(_sample(Sampler(d, nodes, lambda n: loc, interval=0.5), 1.6))
    first = _series(Sampler(d, nodes, lambda n: loc).compact(), "n1", "load1")
    asyncio.run(_sample(Sampler(d, nodes, lambda n: loc, interval=0.5), 1.6))
    both = _series(Sampler(d, nodes, lambda n: loc).compact(), "n1", "load1")
    assert both["t"][: len(first["t"])] == first["t"]
    assert len(both["t"]) > len(first["t"])
    assert both["t"] == sorted(both["t"])
    assert len(set(both["t"])) == len(both["t"])
