"""Redfish: a real Redfish service (sushy-tools' static emulator over the DMTF
public-rackmount1 mockup) read over HTTPS with certificate checks; values changed in the
served files while it runs show up; an inventory cannot hold the password itself."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from aibench import bmc
from aibench.errors import ConfigError
from aibench.inventory import Node
from aibench.inventory_file import load_inventory
from tests import redfishsim

PORT = 19851
PASSWORD = "Rf-Secret-42"
pytestmark = pytest.mark.skipif(
    not redfishsim.available(),
    reason="sushy-tools or openssl not installed",
)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(served mockup copy, CA certificate): sushy-static over HTTPS on loopback."""
    p, root, cert = redfishsim.start(tmp_path_factory.mktemp("redfish"), "127.0.0.1", PORT)
    try:
        yield root, cert
    finally:
        p.terminate()
        p.wait(10)


def _target(ca: Path | None, monkeypatch: pytest.MonkeyPatch) -> bmc.BmcTarget:
    monkeypatch.setenv("AIBENCH_TEST_RF_PW", PASSWORD)
    b = {
        "address": "127.0.0.1",
        "protocol": "redfish",
        "port": PORT,
        "username": "admin",
        "password_env": "AIBENCH_TEST_RF_PW",
        "timeout": 5,
    }
    if ca is not None:
        b["ca_bundle"] = str(ca)
    t = bmc.target_for(Node(name="gpu01", facts={"bmc": b}))
    assert t is not None
    return t


def test_reads_the_mockup_and_sees_changes(
    service: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, ca = service
    t = _target(ca, monkeypatch)
    r = bmc.read(t)
    values = {(s.kind, s.name): s.value for s in r.sensors}
    assert values[("fan", "Fan Bay 1")] == 2200
    assert values[("temperature", "Intake")] == 24.8
    assert values[("power", "Power Supply Bay 1 output")] == 937.4
    # the mockup's power supply reports Health Warning from the start
    assert [(e.sensor_type, e.event) for e in r.events] == [("Power Supply", "Health Warning")]
    fan = root / "Chassis/1U/ThermalSubsystem/Fans/Bay1/index.json"
    doc = json.loads(fan.read_text())
    doc["SpeedPercent"].update({"Reading": 0, "SpeedRPM": 0})
    doc["Status"]["Health"] = "Critical"
    fan.write_text(json.dumps(doc))
    r = bmc.read(t)
    assert {(s.kind, s.name): s.value for s in r.sensors}[("fan", "Fan Bay 1")] == 0
    assert ("Fan", "Fan Bay 1", "Health Critical") in {
        (e.sensor_type, e.sensor, e.event) for e in r.events
    }


def test_the_older_thermal_and_power_resources(
    service: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root, ca = service
    chassis = root / "Chassis/1U/index.json"
    original = chassis.read_text()
    doc = json.loads(original)
    del doc["ThermalSubsystem"], doc["PowerSubsystem"]
    chassis.write_text(json.dumps(doc))
    try:
        r = bmc.read(_target(ca, monkeypatch))
    finally:
        chassis.write_text(original)
    values = {(s.kind, s.name): s.value for s in r.sensors}
    assert values[("temperature", "CPU1 Temp")] == 41
    assert values[("fan", "BaseBoard System Fan")] == 2100
    assert values[("power", "System Input Power")] == 344
    assert values[("voltage", "VRM1 Voltage")] == 12


def test_tls_is_verified_by_default(
    service: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(bmc.BmcError, match="TLS certificate not trusted") as e:
        bmc.read(_target(None, monkeypatch))
    assert PASSWORD not in str(e.value)


def test_an_inventory_cannot_hold_the_password(tmp_path: Path) -> None:
    inv = tmp_path / "inv.yaml"
    inv.write_text(
        "schema_version: 1\nname: t\nnodes:\n  - name: gpu01\n    executor: local\n"
        "    bmc: {address: 10.0.0.1, protocol: ipmi, username: admin, password: hunter2}\n"
    )
    with pytest.raises(ConfigError, match=r"nodes\[0\]\.bmc"):
        load_inventory(inv)
    inv.write_text(
        "schema_version: 1\nname: t\nnodes:\n  - name: gpu[01-02]\n    executor: local\n"
        "    bmc: {address: '{name}-bmc', protocol: redfish, username: admin,"
        " password_file: /etc/aibench/bmc.pw}\n"
    )
    nodes = load_inventory(inv).nodes
    targets = [bmc.target_for(n) for n in nodes]
    assert [t.address for t in targets if t] == ["gpu01-bmc", "gpu02-bmc"]


def test_redfish_over_http_is_refused_unless_the_inventory_accepts_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inv = tmp_path / "inv.yaml"
    head = "schema_version: 1\nname: t\nnodes:\n  - name: gpu01\n    executor: local\n"
    bmc_block = (
        "    bmc: {address: 127.0.0.1, protocol: redfish, scheme: http, port: 19852,"
        " username: admin, password_env: AIBENCH_TEST_RF_PW%s}\n"
    )
    inv.write_text(head + bmc_block % "")
    with pytest.raises(ConfigError, match=r"nodes\[0\]\.bmc.*insecure_http: true"):
        load_inventory(inv)
    inv.write_text(head + bmc_block % ", insecure_http: true")
    (node,) = load_inventory(inv).nodes
    assert bmc.target_for(node) is not None
    monkeypatch.setenv("AIBENCH_TEST_RF_PW", PASSWORD)
    plain = bmc.BmcTarget(
        node="gpu01", address="127.0.0.1", protocol="redfish", username="admin",
        port=19852, password_env="AIBENCH_TEST_RF_PW", scheme="http",
    )  # fmt: skip
    with pytest.raises(bmc.BmcError, match="refused") as e:
        bmc.read(plain)
    assert PASSWORD not in str(e.value)
