"""ipmitool: BMC sensor readings (``ipmitool sensor``) and the System Event Log
(``ipmitool sel elist`` or ``sel list``).

``ipmitool-sensor`` reads the ten-column listing of ``ipmitool sensor`` (``name | value |
unit | status | lnr | lcr | lnc | unc | ucr | unr``), the three-column one of ``ipmitool
sdr [list]`` (``name | value unit | status``; ``no reading`` and hex discrete values are
not readings) and the five-column one of ``sdr elist`` / ``sdr entity`` (``name | 09h |
ok | 3.1 | 43 degrees C``). Emitted per analog sensor with a reading (dims ``sensor``): by
unit, ``temperature`` (C, ``degrees C``), ``fan`` (RPM), ``fan_percent`` (%, fans read in
``percent``), ``power`` (W, ``Watts``), ``voltage`` (V, ``Volts``), ``current`` (A,
``Amps``), in whatever case and spelling the BMC gives the unit (``watts``, ``W``, the
``Watts/hour`` of Lenovo BMCs); a reading ``na`` is left out (not measured, never 0),
discrete sensors and other units are left out. Per such sensor also the Fact
``sensor_status`` (ipmitool's status: ok, nc, cr, nr, ns ...) and, when the BMC gives them,
the Measurements ``threshold_lcr`` and ``threshold_ucr`` (the lower and upper critical
thresholds, in the reading's unit).

Problem states. A sensor of any kind (discrete and unit-less ones too) whose status is past
a threshold gives the Fact ``sensor_alarm``: ``warning`` for ``nc``/``lnc``/``unc``,
``critical`` for ``cr``/``lcr``/``ucr`` and the non-recoverable ``nr``/``lnr``/``unr``,
and a Note saying which; the listing gives the Fact ``sensor_alarms``, how many sensors
are in alarm (0 on a healthy BMC: a check ``eq 0`` on it fails a node with one).

``ipmitool-sel`` reads ``ID | date | time | sensor | event | direction [| detail]`` lines
(``sel elist`` names the sensor, ``sel list`` gives its number). Emitted per record, Facts
with source ``ipmitool`` and dims ``record`` (the SEL id as printed, hex), ``sensor_type``
(Fan, Power Supply, Memory, Temperature ... as ipmitool names it) and ``sensor``:
``sel_event`` (the event text, e.g. ``Lower Critical going low``), ``sel_direction``
(Asserted/Deasserted) and ``sel_time`` (``MM/DD/YYYY HH:MM:SS`` as printed, or
``Pre-Init SECONDS`` for a BMC clock not yet set). ``SEL has no entries`` is an empty list.

Tested on ipmitool 1.8.x outputs of Supermicro, AMI MegaRAC, HPE, Quanta and OpenPower
BMCs and of OpenIPMI's ipmi_sim. ipmitool's session errors (``Unable to establish IPMI v2
/ RMCP+ session``, ``Error: ...``) are a ToolFailure with its words.
"""

from __future__ import annotations

import re

from aibench.errors import ParseError, ToolFailure
from aibench.model import Fact, FrozenDims, Measurement, Note
from aibench.parsers import Parser, Record

TOOL = "ipmitool"
UNITS = {
    "degrees C": ("temperature", "C"),
    "RPM": ("fan", "RPM"),
    "percent": ("fan_percent", "%"),
    "Watts": ("power", "W"),
    "Volts": ("voltage", "V"),
    "Amps": ("current", "A"),
}
# Other spellings BMCs give the same units (lower-cased): "watts", "Watts/hour" (a
# Lenovo XCC's power reading, in W: ipmitool adds the SDR's rate modifier), "W" ...
_SPELLINGS = {
    "degrees c": "degrees C",
    "rpm": "RPM",
    "percent": "percent",
    "watts": "Watts",
    "watt": "Watts",
    "w": "Watts",
    "watts/hour": "Watts",
    "volts": "Volts",
    "volt": "Volts",
    "v": "Volts",
    "amps": "Amps",
    "amp": "Amps",
    "a": "Amps",
}
# ipmitool's status words for a reading past a threshold: what each means, and the
# sensor_alarm it raises (non-critical: warning; critical, non-recoverable: critical)
STATUS_ALARMS = {
    "nc": ("non-critical", "warning"),
    "lnc": ("lower non-critical", "warning"),
    "unc": ("upper non-critical", "warning"),
    "cr": ("critical", "critical"),
    "lcr": ("lower critical", "critical"),
    "ucr": ("upper critical", "critical"),
    "nr": ("non-recoverable", "critical"),
    "lnr": ("lower non-recoverable", "critical"),
    "unr": ("upper non-recoverable", "critical"),
}
_SDR_ID = re.compile(r"^[0-9a-fA-F]+h$")  # the sensor number column of sdr elist / entity
# ipmitool's sensor type names (ipmi_sel.c / ipmi_sdr.c), longest first so that
# "Power Supply" wins over "Power".
SENSOR_TYPES = sorted(
    [
        "Temperature",
        "Voltage",
        "Current",
        "Fan",
        "Physical Security",
        "Platform Security",
        "Processor",
        "Power Supply",
        "Power Unit",
        "Cooling Device",
        "Other",
        "Memory",
        "Drive Slot / Bay",
        "Drive Slot (Bay)",
        "POST Memory Resize",
        "System Firmware Progress",
        "System Firmwares",
        "Event Logging Disabled",
        "Watchdog1",
        "Watchdog 1",
        "Watchdog2",
        "Watchdog 2",
        "System Event",
        "Critical Interrupt",
        "Button",
        "Button / Switch",
        "Module / Board",
        "Microcontroller",
        "Add-in Card",
        "Chassis",
        "Chip Set",
        "Other FRU",
        "Cable / Interconnect",
        "Terminator",
        "System Boot Initiated",
        "Boot Error",
        "OS Boot",
        "OS Critical Stop",
        "Slot / Connector",
        "System ACPI Power State",
        "Platform Alert",
        "Entity Presence",
        "Monitor ASIC",
        "LAN",
        "Management Subsys Health",
        "Management Subsystem Health",
        "Battery",
        "Session Audit",
        "Version Change",
        "FRU State",
        "OEM",
        "Unknown",
    ],
    key=len,
    reverse=True,
)
_FAILURES = (
    "Unable to establish",
    "Error:",
    "Could not open device",
    "Unable to get",
    "Invalid user name",
)


def _check_failure(text: str, partial: list[Record]) -> None:
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if any(s.startswith(f) for f in _FAILURES) or "Error: Unable" in s:
            raise ToolFailure(TOOL, s, n, [*partial])


def _num(cell: str, n: int, what: str) -> float | None:
    c = cell.strip()
    if c in ("na", "", "inf", "-inf"):  # no threshold set ("inf" on some HPE BMCs)
        return None
    try:
        return float(c)
    except ValueError:
        raise ParseError(TOOL, f"{what} is not a number: {c!r}", n) from None


def _cells(line: str, n: int) -> tuple[str, str, str, str, list[str]]:
    """(name, value, unit, status, cells) of one line of any of ipmitool's sensor forms."""
    cells = [c.strip() for c in line.split("|")]
    if len(cells) < 3:
        raise ParseError(TOOL, f"a sensor line with {len(cells)} columns", n)
    if len(cells) == 5 and _SDR_ID.match(cells[1]):  # sdr elist: name | 09h | ok | 3.1 | 43 C
        cells = [cells[0], cells[4], cells[2]]
    if len(cells) == 3:  # ipmitool sdr: name | value unit | status
        name, reading, status = cells
        value, _, unit = reading.partition(" ")
        if reading == "no reading" or value.startswith("0x") or not _is_number(value):
            value, unit = "na", "discrete"
        return name, value, unit.strip(), status, cells
    name, value, unit, status = cells[:4]
    return name, value, unit, status, cells


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _alarm(name: str, status: str, dims: FrozenDims, n: int) -> list[Record]:
    """A status past a threshold: the Fact ``sensor_alarm`` and a Note saying it."""
    if status.lower() not in STATUS_ALARMS:
        return []
    meaning, level = STATUS_ALARMS[status.lower()]
    return [
        Fact(TOOL, "sensor_alarm", level, None, dims),
        Note(TOOL, f"{name}: status {status} ({meaning})", "warning", n),
    ]


def parse_sensor(text: str) -> list[Record]:
    out: list[Record] = []
    rows = alarms = 0
    for n, line in enumerate(text.splitlines(), 1):
        if "|" not in line:
            continue
        rows += 1
        name, value, unit, status, cells = _cells(line, n)
        dims = FrozenDims({"sensor": name})
        alarm = _alarm(name, status, dims, n)
        alarms += bool(alarm)
        spec = UNITS.get(_SPELLINGS.get(unit.lower(), unit))
        if spec is None:
            out += alarm  # a discrete or unit-less sensor: only its alarm is read
            continue
        metric, u = spec
        v = _num(value, n, name)
        if v is not None:
            out.append(Measurement(TOOL, metric, v, u, dims))
        out.append(Fact(TOOL, "sensor_status", status, None, dims))
        out += alarm
        if len(cells) >= 10:
            for col, label in ((5, "threshold_lcr"), (8, "threshold_ucr")):
                t = _num(cells[col], n, f"{name} {label}")
                if t is not None:
                    out.append(Measurement(TOOL, label, t, u, dims))
    _check_failure(text, out)
    if rows == 0:
        raise ParseError(TOOL, "no sensor line (name | value | unit | status ...)")
    out.append(Fact(TOOL, "sensor_alarms", alarms))
    return out


_SEL = re.compile(
    r"^\s*([0-9a-fA-F]+)\s*\|\s*([^|]*?)\s*\|\s*([^|]*?)\s*\|\s*([^|]+?)\s*\|\s*([^|]*?)\s*"
    r"\|\s*(Asserted|Deasserted)\b\s*(?:\|\s*(.*))?$"
)


def split_sensor(field: str) -> tuple[str, str]:
    """``Power Supply PS2 Status`` -> (``Power Supply``, ``PS2 Status``); ``Fan #0x02`` ->
    (``Fan``, ``#0x02``)."""
    for t in SENSOR_TYPES:
        if field == t:
            return t, ""
        if field.startswith(t + " "):
            return t, field[len(t) + 1 :].strip()
    return "", field


def parse_sel(text: str) -> list[Record]:
    out: list[Record] = []
    if "SEL has no entries" in text:
        return out
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _SEL.match(line)
        if not m:
            if "|" in line:
                raise ParseError(TOOL, "a SEL line without ID | date | time | sensor | event", n)
            continue
        rid, date, tm, sensor_field, event, direction, detail = m.groups()
        stype, sensor = split_sensor(sensor_field.strip())
        when = f"Pre-Init {tm.strip()}" if date.strip() == "Pre-Init" else f"{date} {tm}"
        dims = FrozenDims({"record": rid.lower(), "sensor_type": stype, "sensor": sensor})
        out.append(Fact(TOOL, "sel_event", event, None, dims))
        out.append(Fact(TOOL, "sel_direction", direction, None, dims))
        out.append(Fact(TOOL, "sel_time", when.strip(), None, dims))
        if detail:
            out.append(Fact(TOOL, "sel_detail", detail.strip(), None, dims))
    _check_failure(text, out)
    if not out:
        raise ParseError(TOOL, "no SEL line and no 'SEL has no entries'")
    return out


def _detect_sensor(text: str) -> bool:
    units = r"(degrees C|RPM|Watts|Volts|percent)"
    return bool(
        re.search(rf"^[^|\n]+\|[^|\n]+\|\s*({units[1:-1]}|discrete)\s*\|", text, re.M | re.I)
        or re.search(rf"^[^|\n]+\|\s*[0-9.]+ {units}\S*\s*\|\s*\w+\s*$", text, re.M | re.I)
        or re.search(r"^[^|\n]+\|\s*[0-9a-fA-F]+h\s*\|\s*\w+\s*\|\s*[0-9.]+\s*\|", text, re.M)
    )


def _detect_sel(text: str) -> bool:
    return bool(_SEL.search(text.split("\n", 1)[0])) or "SEL has no entries" in text


PARSER = [
    Parser("ipmitool-sensor", parse_sensor, "BMC sensors from ipmitool sensor", _detect_sensor),
    Parser(
        "ipmitool-sel",
        parse_sel,
        "BMC System Event Log from ipmitool sel elist",
        _detect_sel,
        emits="facts",
        empty_ok=True,  # a log with no event is a valid, good reading
    ),
]
