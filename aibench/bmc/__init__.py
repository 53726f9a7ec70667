"""Reading a node's BMC: sensors (temperature, fans, power) and its event log.

The inventory names a node's BMC in an optional ``bmc:`` block (:class:`BmcModel`): the
address, ``protocol: ipmi | redfish``, a user name and where the password is: the name of
an environment variable (``password_env``) or a file (``password_file``). The password
itself is never in the inventory, and aibench never writes it anywhere: not in run.json,
logs, reports, nor in a process's argv (``ipmitool -E`` reads it from the child's
environment, ``-f`` from the file; Redfish sends it in the HTTP Authorization header).

:func:`read` returns one :class:`BmcReading` (sensor values and SEL / log events) per call;
the telemetry sampler calls it at its interval. Readers: :mod:`aibench.bmc.ipmi`
(``ipmitool -I lanplus``), :mod:`aibench.bmc.redfish` (``requests``, TLS verified by
default).
"""

from __future__ import annotations

from aibench.bmc.config import (
    BmcError,
    BmcReading,
    BmcTarget,
    SelEvent,
    Sensor,
    target_for,
)
from aibench.inventory_file import BmcModel

__all__ = [
    "BmcError",
    "BmcModel",
    "BmcReading",
    "BmcTarget",
    "SelEvent",
    "Sensor",
    "read",
    "target_for",
]


def read(target: BmcTarget, *, with_events: bool = True) -> BmcReading:
    """One reading of the BMC; raises :class:`BmcError` (a one-line reason without the
    secret) when it cannot be read."""
    if target.protocol == "ipmi":
        from aibench.bmc import ipmi

        return ipmi.read(target, with_events=with_events)
    from aibench.bmc import redfish

    return redfish.read(target, with_events=with_events)
