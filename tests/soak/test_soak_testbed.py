"""A 2-minute soak on the test-bed hosts: stress-ng on all four at once over SSH, telemetry
every 2 s, BMCs inside the hosts' namespaces (two ipmi_sim read with the real ipmitool over
lanplus, two Redfish services by sushy-static over HTTPS). A fan fails on h2 a third of the
way in; h3's processes are limited to 1 % of a core by its cgroup after the restart. The
soak is interrupted at half time and resumed: the series run on, h2 and h3 FAIL with the
time their part failed, h1 and h4 PASS; no BMC password anywhere in the soak's files."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from aibench.executors.select import for_node
from aibench.inventory import Inventory
from aibench.inventory_file import InventoryModel, build_inventory
from aibench.model import Outcome
from aibench.runners.stress_ng import StressNgOptions
from aibench.soak.engine import SoakOptions, load_state, run_soak
from aibench.soak.judge import Limits, judge
from aibench.telemetry import Store, compact
from tests import bmcsim, redfishsim
from tests.testbed import net
from tests.testbed.bed import TestBed

pytestmark = [pytest.mark.netns, pytest.mark.slow]

IPMI_PW, RF_PW = "Soak-Ipmi-Pw-1", "Soak-Rf-Pw-2"
CGROUP = Path("/sys/fs/cgroup/cpu/aibench-soak-test")


def _sushy(h: net.Host, d: Path) -> subprocess.Popen[bytes]:
    p, _, _ = redfishsim.start(d, h.address, 8443, prefix=("ip", "netns", "exec", h.netns))
    return p


def _throttle(h: net.Host) -> None:
    """Every process of the host (its sshd and what runs under it) into a cgroup limited to
    1 % of one core, the least the kernel grants (cgroup v2 cpu.max, else v1 cfs quota).
    Its stress-ng, which asks for 10 % of a core, falls to about a tenth of its start, half
    the 20 % bar, while the other hosts, whose 10 % the machine's other work hardly slows,
    stay near their start. (A higher load would widen that gap and cost the suite about a
    second of CPU per per cent: four hosts for two minutes.)"""
    v2 = Path("/sys/fs/cgroup/cgroup.controllers").exists()
    grp = Path("/sys/fs/cgroup/aibench-soak-test") if v2 else CGROUP
    grp.mkdir(exist_ok=True)
    if v2:
        (grp / "cpu.max").write_text("1000 100000")
    else:
        (grp / "cpu.cfs_period_us").write_text("100000")
        (grp / "cpu.cfs_quota_us").write_text("1000")
    for pid in net.netns_pids(h):
        try:
            (grp / "cgroup.procs").write_text(str(pid))
        except OSError:
            continue


def _unthrottle() -> None:
    for grp in (CGROUP, Path("/sys/fs/cgroup/aibench-soak-test")):
        if grp.exists():
            parent = grp.parent / "cgroup.procs"
            for pid in (grp / "cgroup.procs").read_text().split():
                try:
                    parent.write_text(pid)
                except OSError:
                    continue
            grp.rmdir()


def test_two_minute_soak_interrupted_and_resumed(
    testbed_soak: TestBed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not (bmcsim.available() and redfishsim.available() and shutil.which("stress-ng")):
        pytest.skip("ipmi_sim, ipmitool, sushy-static or stress-ng missing")
    monkeypatch.setenv("AIBENCH_SOAK_IPMI_PW", IPMI_PW)
    monkeypatch.setenv("AIBENCH_SOAK_RF_PW", RF_PW)
    h1, h2, h3, h4 = testbed_soak.hosts
    sims = [
        bmcsim.SimBmc(
            tmp_path / f"bmc-{h.name}", h.address, 623, "admin", IPMI_PW, name=h.name, netns=h.netns
        ).start()
        for h in (h1, h2)
    ]
    sushies = [_sushy(h, tmp_path / f"rf-{h.name}") for h in (h3, h4)]
    try:
        data = testbed_soak.inventory_data()
        bmcs = {
            h1.name: {"protocol": "ipmi", "port": 623, "cipher_suite": 3},
            h2.name: {"protocol": "ipmi", "port": 623, "cipher_suite": 3},
            h3.name: {
                "protocol": "redfish",
                "port": 8443,
                "ca_bundle": str(tmp_path / f"rf-{h3.name}" / "bmc.crt"),
            },
            h4.name: {
                "protocol": "redfish",
                "port": 8443,
                "ca_bundle": str(tmp_path / f"rf-{h4.name}" / "bmc.crt"),
            },
        }
        for n in data["nodes"]:  # type: ignore[union-attr]
            b = bmcs[n["name"]]
            n["bmc"] = {
                "address": n["address"],
                "username": "admin",
                "timeout": 5,
                "password_env": "AIBENCH_SOAK_IPMI_PW"
                if b["protocol"] == "ipmi"
                else "AIBENCH_SOAK_RF_PW",
                **b,
            }
        inv: Inventory = build_inventory(
            InventoryModel.model_validate(data), "inventory.yaml", data
        )
        nodes = list(inv.nodes)
        opts = SoakOptions(
            duration=120,
            interval=2.0,
            chunk=10.0,
            bmc_interval=4.0,
            stress=StressNgOptions(cpu=1, vm=0, cpu_load=10),
        )
        soak_dir = tmp_path / "soak"
        seen: list[tuple[float, float, object]] = []

        def run_until(stop_at: float | None, actions: dict[float, object]) -> None:
            async def main() -> None:
                task = asyncio.current_task()
                assert task is not None

                def progress(elapsed: float, duration: float, hot: object) -> None:
                    seen.append((elapsed, duration - elapsed, hot))
                    for at in sorted(actions):
                        if elapsed >= at:
                            threading.Thread(target=actions.pop(at)).start()  # type: ignore[arg-type]
                    if stop_at is not None and elapsed >= stop_at:
                        task.cancel()

                try:
                    await run_soak(soak_dir, nodes, lambda n: for_node(n, inv), opts, progress)
                except asyncio.CancelledError:
                    pass
                finally:
                    seen_ex = {id(for_node(n, inv)): for_node(n, inv) for n in nodes}
                    for ex in seen_ex.values():
                        await ex.close()

            asyncio.run(main())

        fan_failed = {}

        def fail_fan() -> None:
            fan_failed["t"] = time.time()
            sims[1].set_sensor(3, 0)
            sims[1].add_sel("Fan", 3, 0x02)

        run_until(60, {30: fail_fan})
        half = load_state(soak_dir)
        assert 60 <= half["elapsed"] < 120
        store = Store(soak_dir / "telemetry")
        before = compact(store)
        run_until(None, {70: lambda: _throttle(h3)})
        assert load_state(soak_dir)["elapsed"] >= 120
        tel = compact(store)
    finally:
        _unthrottle()
        for s in sims:
            s.stop()
        for p in sushies:
            p.terminate()
            p.wait(10)

    # progress: time left and the hottest part after every chunk
    assert seen[-1][1] <= 0.5
    assert any(hot is not None for _, _, hot in seen)

    # the series go on across the interruption: the same series, times rising
    def rate(node):
        return next(
            s for s in tel["series"] if s["node"] == node and s["metric"] == "bogo_ops_rate"
        )

    for h in (h1, h4):
        s = rate(h.name)
        assert s["t"] == sorted(s["t"])
        assert len(s["t"]) >= 10
        old = next(
            x for x in before["series"] if x["node"] == h.name and x["metric"] == "bogo_ops_rate"
        )
        assert s["t"][: len(old["t"])] == old["t"]
    verdicts = judge(
        tel, [h.name for h in (h1, h2, h3, h4)], Limits(baseline_s=30, rate_min_pct=20)
    )
    by = {(v.subject[0], v.check): v for v in verdicts}
    fan = by[(h2.name, "soak.fan.floor")]
    assert fan.outcome is Outcome.FAIL, fan
    assert fan.culprits == (f"{h2.name}:Fan 1",)
    assert "below 500 RPM from" in fan.observed_text
    ev = by[(h2.name, "soak.bmc.events")]
    assert ev.outcome is Outcome.FAIL
    assert "Fan Fan 1: Lower Critical going low at" in ev.observed_text
    thr = by[(h3.name, "soak.stress.rate")]
    assert thr.outcome is Outcome.FAIL, thr
    when = float(thr.observed_text.rsplit("from ", 1)[1].split()[0])
    assert when > 60, (thr, rate(h3.name))  # after the restart, when the cgroup limit came
    for h in (h1, h4):
        bad = [v for v in verdicts if v.subject == (h.name,) and v.outcome is not Outcome.PASS]
        assert not bad, bad
    assert by[(h3.name, "soak.fan.floor")].outcome is Outcome.PASS  # Redfish fans read
    # credentials: nowhere in what the soak wrote
    text = "".join(p.read_text(errors="replace") for p in soak_dir.rglob("*") if p.is_file())
    assert IPMI_PW not in text
    assert RF_PW not in text
    assert os.environ.get("IPMI_PASSWORD") is None
    (tmp_path / "verdicts.json").write_text(json.dumps([v.to_dict() for v in verdicts], indent=1))
