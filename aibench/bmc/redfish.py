"""Redfish: chassis temperatures, fans and power from a BMC's Redfish service (``requests``).

For every member of ``/redfish/v1/Chassis``: the newer ``ThermalSubsystem`` (``Fans``
members' ``SpeedPercent.Reading`` / ``SpeedRPM``, ``ThermalMetrics``'
``TemperatureReadingsCelsius``) and ``PowerSubsystem`` (``PowerSupplies`` members' metrics
``OutputPowerWatts``/``InputPowerWatts``) when the chassis links them, else the older
``Thermal`` (``Temperatures[].ReadingCelsius``, ``Fans[].Reading`` in RPM or percent) and
``Power`` (``PowerControl[].PowerConsumedWatts``, ``PowerSupplies[].LastPowerOutputWatts``,
``Voltages[].ReadingVolts``). Events: a fan, power supply or temperature sensor whose
``Status.Health`` is Warning or Critical is reported as an event of that sensor type
(Redfish has no SEL record for it to point at; the resource's ``@odata.id`` stands for it).

HTTPS with certificate verification by default (the CAs of ``certifi``, or the
inventory's ``ca_bundle``; environment variables such as REQUESTS_CA_BUNDLE and proxies are
not used); basic authentication with the inventory's user and password, sent only in
the Authorization header, and only to the BMC: every link the service gives
(``@odata.id``) is followed only when it is a path on the BMC itself or an absolute URL of
the same scheme, host and port (``@other.host/redfish/...`` or ``https://other.host/...``
is refused, naming the link), and redirects are not followed. Tested against sushy-tools'
static emulator serving the DMTF public-rackmount1 mockup.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import requests

from aibench.bmc.config import BmcError, BmcReading, BmcTarget, SelEvent, Sensor

_BAD = ("Warning", "Critical")


class _Client:
    def __init__(self, t: BmcTarget) -> None:
        self.t = t
        if t.scheme != "https" and not t.insecure_http:
            raise BmcError(
                f"{t.node}: Redfish over {t.scheme} refused: the password would travel in "
                "clear text (bmc.insecure_http: true accepts that)"
            )
        port = f":{t.port}" if t.port else ""
        self.base = f"{t.scheme}://{t.address}{port}"
        self.origin = _origin(self.base)
        self.s = requests.Session()
        self.s.auth = (t.username, t.password())
        # the inventory alone says how to verify and where to connect: no REQUESTS_CA_BUNDLE
        # or proxy variables from the environment (a BMC network is not reached by proxy)
        self.s.trust_env = False
        self.verify: str | bool = t.ca_bundle if t.ca_bundle else True
        self.s.headers["Accept"] = "application/json"

    def path(self, link: str) -> str:
        """``link`` as a path on the BMC; a link that would leave it is refused: the
        Authorization header goes to the BMC alone."""
        parts = urlsplit(link)
        if parts.scheme or parts.netloc:
            if _origin(link) != self.origin:
                raise BmcError(f"{self.t.node}: Redfish link {link[:120]!r} leaves the BMC")
            link = parts.path + (f"?{parts.query}" if parts.query else "")
        if not link.startswith("/") or link.startswith("//") or "\\" in link:
            raise BmcError(f"{self.t.node}: Redfish link {link[:120]!r} is not a path on the BMC")
        return link

    def get(self, link: str) -> dict[str, Any]:
        path = self.path(link)
        try:
            r = self.s.get(
                self.base + path,
                timeout=self.t.timeout,
                verify=self.verify,
                allow_redirects=False,  # a redirect could lead the credentials elsewhere
            )
        except requests.exceptions.SSLError:
            raise BmcError(
                f"{self.t.node}: Redfish {path}: TLS certificate not trusted "
                "(give the BMC's CA as bmc.ca_bundle)"
            ) from None
        except requests.RequestException as e:
            raise BmcError(f"{self.t.node}: Redfish {path}: {type(e).__name__}") from None
        if r.status_code != 200:
            raise BmcError(f"{self.t.node}: Redfish {path}: HTTP {r.status_code}")
        try:
            body = r.json()
        except ValueError:
            raise BmcError(f"{self.t.node}: Redfish {path}: not JSON") from None
        if not isinstance(body, dict):
            raise BmcError(f"{self.t.node}: Redfish {path}: not a JSON object")
        return body

    def close(self) -> None:
        self.s.close()


def _origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of an absolute URL, the port filled in from the scheme."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or {"https": 443, "http": 80}.get(scheme)
    except ValueError:
        port = -1  # no port a BMC has
    return scheme, (parts.hostname or "").lower(), port


def _link(doc: dict[str, Any], key: str) -> str | None:
    v = doc.get(key)
    return v.get("@odata.id") if isinstance(v, dict) else None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _health(doc: dict[str, Any]) -> str:
    st = doc.get("Status")
    return str(st.get("Health") or "") if isinstance(st, dict) else ""


def read(t: BmcTarget, *, with_events: bool = True) -> BmcReading:
    c = _Client(t)
    sensors: list[Sensor] = []
    events: list[SelEvent] = []

    def note(stype: str, name: str, doc: dict[str, Any], uri: str) -> None:
        h = _health(doc)
        if h in _BAD:
            events.append(SelEvent(uri, stype, name, f"Health {h}", True, ""))

    try:
        for member in c.get("/redfish/v1/Chassis").get("Members", []):
            chassis_uri = member.get("@odata.id") if isinstance(member, dict) else None
            if not chassis_uri:
                continue
            ch = c.get(chassis_uri)
            ts, ps = _link(ch, "ThermalSubsystem"), _link(ch, "PowerSubsystem")
            if ts:
                _thermal_subsystem(c, ts, sensors, note)
            elif (th := _link(ch, "Thermal")) is not None:
                _thermal(c.get(th), th, sensors, note)
            if ps:
                _power_subsystem(c, ps, sensors, note)
            elif (pw := _link(ch, "Power")) is not None:
                _power(c.get(pw), pw, sensors, note)
    finally:
        c.close()
    return BmcReading(sensors=tuple(sensors), events=tuple(events) if with_events else ())


def _thermal(doc: dict[str, Any], uri: str, out: list[Sensor], note: Any) -> None:
    for i, tdoc in enumerate(doc.get("Temperatures", [])):
        name = str(tdoc.get("Name") or f"Temperature {i}")
        if (v := _num(tdoc.get("ReadingCelsius"))) is not None:
            out.append(Sensor("temperature", name, v, "C", _health(tdoc)))
        note("Temperature", name, tdoc, f"{uri}#/Temperatures/{i}")
    for i, f in enumerate(doc.get("Fans", [])):
        name = str(f.get("Name") or f.get("FanName") or f"Fan {i}")
        v = _num(f.get("Reading"))
        if v is not None:
            pct = str(f.get("ReadingUnits", "RPM")).lower() == "percent"
            out.append(
                Sensor("fan_percent" if pct else "fan", name, v, "%" if pct else "RPM", _health(f))
            )
        note("Fan", name, f, f"{uri}#/Fans/{i}")


def _power(doc: dict[str, Any], uri: str, out: list[Sensor], note: Any) -> None:
    for i, p in enumerate(doc.get("PowerControl", [])):
        if (v := _num(p.get("PowerConsumedWatts"))) is not None:
            out.append(Sensor("power", str(p.get("Name") or f"PowerControl {i}"), v, "W"))
    for i, p in enumerate(doc.get("PowerSupplies", [])):
        name = str(p.get("Name") or f"Power Supply {i}")
        if (v := _num(p.get("LastPowerOutputWatts"))) is not None:
            out.append(Sensor("power", name, v, "W", _health(p)))
        note("Power Supply", name, p, f"{uri}#/PowerSupplies/{i}")
    for i, p in enumerate(doc.get("Voltages", [])):
        if (v := _num(p.get("ReadingVolts"))) is not None:
            out.append(Sensor("voltage", str(p.get("Name") or f"Voltage {i}"), v, "V"))


def _members(c: _Client, uri: str | None) -> list[tuple[str, dict[str, Any]]]:
    if not uri:
        return []
    out = []
    for m in c.get(uri).get("Members", []):
        mu = m.get("@odata.id") if isinstance(m, dict) else None
        if mu:
            out.append((mu, c.get(mu)))
    return out


def _thermal_subsystem(c: _Client, uri: str, out: list[Sensor], note: Any) -> None:
    doc = c.get(uri)
    for fu, f in _members(c, _link(doc, "Fans")):
        name = str(f.get("Name") or fu.rsplit("/", 1)[-1])
        sp = f.get("SpeedPercent")
        if isinstance(sp, dict):
            if (rpm := _num(sp.get("SpeedRPM"))) is not None:
                out.append(Sensor("fan", name, rpm, "RPM", _health(f)))
            if (pct := _num(sp.get("Reading"))) is not None:
                out.append(Sensor("fan_percent", name, pct, "%", _health(f)))
        note("Fan", name, f, fu)
    if (tm := _link(doc, "ThermalMetrics")) is not None:
        for r in c.get(tm).get("TemperatureReadingsCelsius", []):
            if (v := _num(r.get("Reading"))) is not None:
                out.append(Sensor("temperature", str(r.get("DeviceName") or "temperature"), v, "C"))


def _power_subsystem(c: _Client, uri: str, out: list[Sensor], note: Any) -> None:
    doc = c.get(uri)
    for pu, p in _members(c, _link(doc, "PowerSupplies")):
        name = str(p.get("Name") or pu.rsplit("/", 1)[-1])
        note("Power Supply", name, p, pu)
        if (mu := _link(p, "Metrics")) is None:
            continue
        m = c.get(mu)
        for key in ("OutputPowerWatts", "InputPowerWatts"):
            r = m.get(key)
            if isinstance(r, dict) and (v := _num(r.get("Reading"))) is not None:
                label = "output" if key.startswith("Output") else "input"
                out.append(Sensor("power", f"{name} {label}", v, "W", _health(p)))
