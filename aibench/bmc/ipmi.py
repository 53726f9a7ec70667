"""IPMI over LAN with ipmitool: ``ipmitool -I lanplus [-C N] -H ADDR -p PORT -U USER -E
sensor`` and ``... sel elist``.

The password reaches ipmitool through its ``-E`` option: the variable ``IPMI_PASSWORD`` is
set in the child's environment only (copied from the inventory's ``password_env``), or
with ``-f FILE`` for ``password_file``; never with ``-P`` on the command line, where any
user of the machine could read it in the process list. Tested with ipmitool 1.8.19 against
OpenIPMI's ipmi_sim.
"""

from __future__ import annotations

import os
import subprocess

from aibench import parsers
from aibench.bmc.config import BmcError, BmcReading, BmcTarget, SelEvent, Sensor
from aibench.errors import OutputError
from aibench.model import Fact, Measurement

KINDS = ("temperature", "fan", "fan_percent", "power", "voltage", "current")


def argv(t: BmcTarget, *command: str) -> list[str]:
    """The ipmitool command for ``command`` on the target; it holds no secret."""
    args = ["ipmitool", "-I", "lanplus"]
    if t.cipher_suite is not None:
        args += ["-C", str(t.cipher_suite)]
    args += ["-H", t.address, "-p", str(t.port or 623), "-U", t.username]
    args += ["-f", t.password_file] if t.password_file else ["-E"]
    args += ["-N", str(max(1, int(t.timeout / 2))), "-R", "2"]
    return [*args, *command]


def _env(t: BmcTarget) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "IPMI_PASSWORD"}
    if t.password_env is not None:
        env["IPMI_PASSWORD"] = t.password()
    return env


def _run(t: BmcTarget, *command: str) -> str:
    try:
        p = subprocess.run(
            argv(t, *command),
            env=_env(t),
            capture_output=True,
            text=True,
            timeout=t.timeout * 3,
            check=False,
        )
    except FileNotFoundError:
        raise BmcError(f"{t.node}: ipmitool is not installed") from None
    except subprocess.TimeoutExpired:
        raise BmcError(f"{t.node}: ipmitool {' '.join(command)} timed out") from None
    if p.returncode != 0:
        last = (p.stderr.strip() or p.stdout.strip() or f"exit {p.returncode}").splitlines()[-1]
        raise BmcError(f"{t.node}: ipmitool {' '.join(command)}: {last}")
    return p.stdout + p.stderr


def read(t: BmcTarget, *, with_events: bool = True) -> BmcReading:
    try:
        recs = parsers.parse("ipmitool-sensor", _run(t, "sensor"))
        status = {
            r.dims["sensor"]: str(r.value)
            for r in recs
            if isinstance(r, Fact) and r.name == "sensor_status"
        }
        sensors = tuple(
            Sensor(
                r.metric, str(r.dims["sensor"]), r.value, r.unit, status.get(r.dims["sensor"], "")
            )
            for r in recs
            if isinstance(r, Measurement) and r.metric in KINDS
        )
        events: tuple[SelEvent, ...] = ()
        if with_events:
            events = events_of(parsers.parse("ipmitool-sel", _run(t, "sel", "elist")))
    except OutputError as e:
        raise BmcError(f"{t.node}: {e}") from None
    return BmcReading(sensors=sensors, events=events)


def events_of(recs: list[parsers.Record]) -> tuple[SelEvent, ...]:
    by: dict[tuple[str, str, str], dict[str, str]] = {}
    for r in recs:
        if isinstance(r, Fact):
            key = (str(r.dims["record"]), str(r.dims["sensor_type"]), str(r.dims["sensor"]))
            by.setdefault(key, {})[r.name] = str(r.value)
    return tuple(
        SelEvent(
            record=rid,
            sensor_type=stype,
            sensor=sensor,
            event=f.get("sel_event", ""),
            asserted=f.get("sel_direction") != "Deasserted",
            time=f.get("sel_time", ""),
        )
        for (rid, stype, sensor), f in by.items()
    )
