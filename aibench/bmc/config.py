"""A node's BMC resolved from its inventory ``bmc:`` block
(:class:`aibench.inventory_file.BmcModel`), and what a reading holds."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aibench.inventory import Node
from aibench.inventory_file import BmcModel


class BmcError(Exception):
    """The BMC could not be read; the message never holds the secret."""


@dataclass(frozen=True)
class BmcTarget:
    """A node's BMC, resolved: what the readers need. Holds no secret, only where it is."""

    node: str
    address: str
    protocol: str
    username: str
    port: int | None = None
    password_env: str | None = None
    password_file: str | None = None
    cipher_suite: int | None = None
    scheme: str = "https"
    ca_bundle: str | None = None
    timeout: float = 10.0
    insecure_http: bool = False

    def password(self) -> str:
        """The secret, read now from the environment or the file; never stored."""
        if self.password_env is not None:
            value = os.environ.get(self.password_env)
            if not value:
                raise BmcError(f"{self.node}: BMC password variable {self.password_env} is not set")
            return value
        assert self.password_file is not None
        try:
            lines = Path(self.password_file).expanduser().read_text().splitlines()
        except OSError as e:
            raise BmcError(
                f"{self.node}: BMC password file {self.password_file}: {e.strerror}"
            ) from None
        if not lines or not lines[0]:
            raise BmcError(f"{self.node}: BMC password file {self.password_file} is empty")
        return lines[0]


def target_for(node: Node) -> BmcTarget | None:
    """The node's BMC from its inventory facts (``bmc``), or None when it has none."""
    raw: Any = node.facts.get("bmc")
    if not raw:
        return None
    m = BmcModel.model_validate(raw)
    digits = re.findall(r"\d+", node.name)
    address = m.address.replace("{name}", node.name).replace("{n}", digits[-1] if digits else "")
    return BmcTarget(
        node=node.name,
        address=address,
        protocol=m.protocol,
        username=m.username,
        port=m.port,
        password_env=m.password_env,
        password_file=m.password_file,
        cipher_suite=m.cipher_suite,
        scheme=m.scheme,
        ca_bundle=m.ca_bundle,
        timeout=m.timeout,
        insecure_http=m.insecure_http,
    )


@dataclass(frozen=True)
class Sensor:
    """One BMC sensor value: kind (temperature | fan | fan_percent | power | voltage |
    current), the sensor's name, the value and its unit."""

    kind: str
    name: str
    value: float
    unit: str
    status: str = ""


@dataclass(frozen=True)
class SelEvent:
    """One event of the BMC's log: its id, the sensor type (Fan, Power Supply, Memory,
    Temperature ...), the sensor, the event text, asserted or not, the BMC's time text."""

    record: str
    sensor_type: str
    sensor: str
    event: str
    asserted: bool = True
    time: str = ""

    @property
    def key(self) -> str:
        return f"{self.record}|{self.sensor_type}|{self.sensor}|{self.event}"


@dataclass(frozen=True)
class BmcReading:
    sensors: tuple[Sensor, ...] = ()
    events: tuple[SelEvent, ...] = ()
    notes: tuple[str, ...] = field(default=())
