"""The ``bmc:`` block of an inventory node, the resolved target, and what a reading holds."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from aibench.config import Strict

if TYPE_CHECKING:
    from aibench.inventory import Node

_HOST = re.compile(r"^[A-Za-z0-9_.:\[\]{}][A-Za-z0-9_.:\-\[\]{}]*$")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PATH = r"^[A-Za-z0-9_./~][A-Za-z0-9_./~+@%=:,\-]*$"


class BmcError(Exception):
    """The BMC could not be read; the message never holds the secret."""


class BmcModel(Strict):
    """A node's BMC (inventory ``bmc:``). The password is named, never given."""

    address: str = Field(
        description="BMC host or IP; {name} and {n} (the node name's last number) are replaced"
    )
    protocol: Literal["ipmi", "redfish"] = Field(description="ipmi (ipmitool lanplus) | redfish")
    port: Annotated[int, Field(ge=1, le=65535)] | None = Field(
        None, description="default 623 (ipmi), 443/80 (redfish https/http)"
    )
    username: str = Field(pattern=r"^[A-Za-z0-9_.@\-]+$", max_length=64)
    password_env: str | None = Field(None, description="environment variable holding the password")
    password_file: Annotated[str, Field(pattern=_PATH)] | None = Field(
        None, description="file whose first line is the password"
    )
    cipher_suite: Annotated[int, Field(ge=0, le=17)] | None = Field(
        None, description="ipmi: ipmitool -C (e.g. 17 or 3); default ipmitool's choice"
    )
    scheme: Literal["https", "http"] = Field(
        "https", description="redfish: https (default); http only with insecure_http: true"
    )
    insecure_http: bool = Field(
        False,
        description="redfish: allow scheme http, which sends the BMC password in clear text",
    )
    ca_bundle: Annotated[str, Field(pattern=_PATH)] | None = Field(
        None, description="redfish: CA bundle to verify the BMC's certificate with"
    )
    timeout: float = Field(10.0, gt=0, le=120, description="seconds per BMC request")

    @field_validator("address")
    @classmethod
    def _address(cls, v: str) -> str:
        if not _HOST.match(v) or re.search(r"\{(?!(?:name|n)\})", v):
            raise ValueError(f"not a BMC address: {v!r} (a host, an IP, {{name}}, {{n}})")
        return v

    @field_validator("password_env")
    @classmethod
    def _env(cls, v: str | None) -> str | None:
        if v is not None and not _ENV.match(v):
            raise ValueError(f"not an environment variable name: {v!r}")
        return v

    @model_validator(mode="after")
    def _one_secret(self) -> BmcModel:
        if (self.password_env is None) == (self.password_file is None):
            raise ValueError("give password_env or password_file (one of them)")
        if self.scheme == "http" and not self.insecure_http:
            raise ValueError(
                "scheme http sends the BMC password in clear text; use https, or set "
                "insecure_http: true to accept that"
            )
        return self


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
