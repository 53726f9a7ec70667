"""IPMI: the real ipmitool over lanplus against OpenIPMI's ipmi_sim serving our sensors;
values and SEL records change while it runs; the password never reaches an argv."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from aibench import bmc
from aibench.bmc import ipmi
from aibench.inventory import Node
from tests import bmcsim

pytestmark = pytest.mark.skipif(not bmcsim.available(), reason="ipmi_sim/ipmitool not installed")
PASSWORD = "Xq7-bmc-Secret"


def _node(port: int, **secret: str) -> Node:
    facts = {
        "bmc": {
            "address": "127.0.0.1",
            "protocol": "ipmi",
            "port": port,
            "username": "admin",
            "cipher_suite": 3,
            "timeout": 4,
            **secret,
        }
    }
    return Node(name="gpu01", facts=facts)


@pytest.fixture
def sim(tmp_path: Path):
    with bmcsim.SimBmc(tmp_path, "127.0.0.1", 19811, "admin", PASSWORD) as b:
        yield b


def _cmdlines() -> list[str]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                out.append((d / "cmdline").read_bytes().replace(b"\0", b" ").decode())
            except OSError:
                continue
    return out


def test_sensors_and_injected_events_through_the_real_ipmitool(
    sim: bmcsim.SimBmc, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIBENCH_TEST_BMC_PW", PASSWORD)
    t = bmc.target_for(_node(19811, password_env="AIBENCH_TEST_BMC_PW"))
    assert t is not None
    first = bmc.read(t)
    values = {(s.kind, s.name): s.value for s in first.sensors}
    assert values[("fan", "Fan 1")] == 9000
    assert values[("temperature", "CPU Temp")] == 45
    assert values[("power", "PSU1 Power")] == 500
    assert first.events == ()
    sim.set_sensor(3, 0)
    sim.add_sel("Fan", 3, 0x02)
    sim.add_sel("Power Supply", 4, 0x01)
    later = bmc.read(t)
    assert {(s.kind, s.name): s.value for s in later.sensors}[("fan", "Fan 1")] == 0
    kinds = {(e.sensor_type, e.event) for e in later.events}
    assert ("Fan", "Lower Critical going low") in kinds
    assert ("Power Supply", "Failure detected") in kinds


def test_the_password_is_in_no_process_argv(
    sim: bmcsim.SimBmc, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIBENCH_TEST_BMC_PW", PASSWORD)
    t = bmc.target_for(_node(19811, password_env="AIBENCH_TEST_BMC_PW"))
    assert t is not None
    assert PASSWORD not in " ".join(ipmi.argv(t, "sensor"))
    assert "-P" not in ipmi.argv(t, "sensor")
    seen: list[str] = []
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.extend(c for c in _cmdlines() if c.startswith("ipmitool"))

    w = threading.Thread(target=watch)
    w.start()
    try:
        for _ in range(3):
            bmc.read(t)
    finally:
        done.set()
        w.join()
    assert seen, "no ipmitool process was seen"
    assert not [c for c in seen if PASSWORD in c]


def test_password_file_and_wrong_password(sim: bmcsim.SimBmc, tmp_path: Path) -> None:
    pw = tmp_path / "bmc.pw"
    pw.write_text(PASSWORD + "\n")
    t = bmc.target_for(_node(19811, password_file=str(pw)))
    assert t is not None
    assert "-f" in ipmi.argv(t, "sensor")
    assert any(s.name == "Fan 1" for s in bmc.read(t, with_events=False).sensors)
    pw.write_text("wrong-one\n")
    with pytest.raises(bmc.BmcError) as e:
        bmc.read(t)
    assert "RMCP+ session" in str(e.value)
    assert "wrong-one" not in str(e.value)


def test_a_missing_variable_is_named_without_a_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIBENCH_TEST_BMC_PW", raising=False)
    t = bmc.target_for(_node(19811, password_env="AIBENCH_TEST_BMC_PW"))
    assert t is not None
    with pytest.raises(bmc.BmcError, match="AIBENCH_TEST_BMC_PW is not set"):
        bmc.read(t)
    assert "IPMI_PASSWORD" not in os.environ
