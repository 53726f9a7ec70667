"""A real IPMI-over-LAN BMC for tests: OpenIPMI's ``ipmi_sim`` with sensors defined here.

``SimBmc`` writes a lan.conf (one LAN channel on ADDRESS:PORT, one admin user whose password
is given), an SDR description compiled by OpenIPMI's ``sdrcomp`` into ipmi_sim's persisted
SDR repository, and a command file that creates the sensors; it starts ``ipmi_sim -n`` and
talks to its console port to change sensor values and add SEL records while it runs.
ipmitool reads it with ``-I lanplus -C 3`` (ipmi_sim does not answer Get Channel Cipher
Suites, so the suite is named).

Sensors (number: name, type, unit, raw -> value): 1 "CPU Temp" (C, x1), 2 "Inlet Temp"
(C, x1), 3 "Fan 1" (RPM, x100), 4 "PSU1 Power" (W, x10).
"""

from __future__ import annotations

import re
import shutil
import socket
import struct
import subprocess
import time
from pathlib import Path

SENSORS = {
    1: ("CPU Temp", "processor", "Temperature", "degrees_C", 1, 0x01),
    2: ("Inlet Temp", "system_board", "Temperature", "degrees_C", 1, 0x01),
    3: ("Fan 1", "fan_cooling_device", "Fan", "RPM", 100, 0x04),
    4: ("PSU1 Power", "power_supply", "Current", "Watts", 10, 0x03),
}
SENSOR_TYPE_CODES = {"Fan": 0x04, "Power Supply": 0x08, "Memory": 0x0C, "Temperature": 0x01}


def available() -> bool:
    return all(shutil.which(t) for t in ("ipmi_sim", "sdrcomp", "ipmitool"))


def _sdrs() -> str:
    out = [
        "sdr type 18\n\tdevice_slave_address 0x20\n\tdevice_channel_number 0\n"
        "\tchassis true\n\tipmb_event_gen false\n\tipmb_event_recv false\n"
        "\tfru_inventory false\n\tsel true\n\tsdr true\n\tsensor true\n"
        '\tentity_id system_board\n\tentity_instance 1\n\tid_string "test bmc"\nendsdr\n'
    ]
    for num, (name, entity, stype, unit, m, _code) in SENSORS.items():
        out.append(
            f"sdr type 1\n\tsensor_owner_id 0x20\n\tsensor_owner_lun 0\n\tchannel_number 0\n"
            f"\tsensor_number {num}\n\tentity_id {entity}\n\tentity_instance 1\n"
            f"\tsensor_type {stype}\n\tinit_scanning true\n\tinit_sensor_type true\n"
            f"\tdefault_sensor_scan_on true\n\tevent_reading_type_code 1\n"
            f"\tanalog_data_format unsigned\n\trate_unit none\n\tmodifier_unit none\n"
            f"\tpercentage false\n\tbase_unit {unit}\n\tmodifier_unit_code unspecified\n"
            f"\tlinearization linear\n\tm {m}\n\ttolerance 0\n\tb 0\n\taccuracy 1\n"
            f"\taccuracy_exp 0\n\tsensor_direction input\n\tr_exp 0\n\tb_exp 0\n"
            f'\tsensor_maximum 255\n\tsensor_minimum 0\n\tid_string "{name}"\nendsdr\n'
        )
    return "\n".join(out)


class SimBmc:
    """One ipmi_sim instance; ``start()``/``stop()`` or use as a context manager."""

    def __init__(
        self,
        workdir: Path,
        address: str,
        port: int,
        user: str,
        password: str,
        name: str = "bmc",
        initial: dict[int, int] | None = None,
        netns: str | None = None,
    ) -> None:
        self.dir, self.address, self.port = workdir, address, port
        self.console = port + 1
        self.user, self.password, self.name = user, password, name
        self.initial = initial or {1: 45, 2: 24, 3: 90, 4: 50}
        self.proc: subprocess.Popen[bytes] | None = None
        self.netns = netns  # run inside this network namespace (a test-bed host)

    def start(self) -> SimBmc:
        d = self.dir
        state = d / "state" / "ipmi_sim" / self.name
        state.mkdir(parents=True, exist_ok=True)
        (d / "node.sdrs").write_text(_sdrs())
        sdr = subprocess.run(["sdrcomp", str(d / "node.sdrs")], capture_output=True, check=True)
        (state / "sdr.20.main").write_bytes(sdr.stdout)
        (d / "lan.conf").write_text(
            f'name "{self.name}"\nset_working_mc 0x20\n  startlan 1\n'
            f"    addr {self.address} {self.port}\n    priv_limit admin\n"
            "    allowed_auths_callback none md2 md5 straight\n"
            "    allowed_auths_user none md2 md5 straight\n"
            "    allowed_auths_operator none md2 md5 straight\n"
            "    allowed_auths_admin none md2 md5 straight\n"
            "    guid a123456789abcdefa123456789abcdef\n  endlan\n"
            f'  user 2 true "{self.user}" "{self.password}" admin 10 none md2 md5 straight\n'
            f"console {self.address} {self.console}\n"
        )
        emu = [
            "mc_setbmc 0x20",
            "mc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr",
            "sel_enable 0x20 1000 0x0a",
        ]
        for num, (_n, _e, _t, _u, _m, code) in SENSORS.items():
            emu += [
                f"sensor_add 0x20 0 {num} {code:#04x} 0x01",
                f"sensor_set_value 0x20 0 {num} {self.initial[num]} 0",
            ]
        emu.append("mc_enable 0x20")
        (d / "node.emu").write_text("\n".join(emu) + "\n")
        prefix = ["ip", "netns", "exec", self.netns] if self.netns else []
        self.proc = subprocess.Popen(
            [
                *prefix,
                "ipmi_sim",
                "-n",
                "-c",
                str(d / "lan.conf"),
                "-f",
                str(d / "node.emu"),
                "-s",
                str(d / "state"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # ipmi_sim writes its prompt to console clients that may have gone: with
            # SIGPIPE ignored (as in this Python) it gets EPIPE instead of dying
            restore_signals=False,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection((self.address, self.console), timeout=0.5).close()
                return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("ipmi_sim did not start")

    def command(self, line: str, within: float = 15.0) -> str:
        """Run one console command; its output up to the next prompt.

        The console also writes a line for every LAN session a client opens and closes, so
        while a sampler polls the BMC those lines run on after the prompt (waiting for what
        was read to end in one never ended): the prompt is looked for at the start of any
        line, and the whole exchange has a deadline."""
        deadline = time.monotonic() + within
        with socket.create_connection((self.address, self.console), timeout=5) as s:
            _until_prompt(s, deadline, "the console's first prompt")
            s.sendall(line.encode() + b"\n")
            out = _until_prompt(s, deadline, f"the prompt after {line!r}")
        return out.decode(errors="replace")

    def set_sensor(self, num: int, raw: int) -> None:
        self.command(f"sensor_set_value 0x20 0 {num} {raw} 0")

    def add_sel(
        self,
        sensor_type: str,
        sensor_num: int,
        offset: int,
        when: float | None = None,
        asserted: bool = True,
    ) -> None:
        """A system event record (type 2) as a BMC logs one: a threshold event (event type
        0x01) for ``sensor_num`` of ``sensor_type``, offset e.g. 0x02 lower critical going
        low (fan) or a sensor-specific one (event type 0x6f) for power supply / memory."""
        ts = struct.pack("<I", int(when if when is not None else time.time()))
        threshold = sensor_type in ("Fan", "Temperature")
        ev_type = 0x01 if threshold else 0x6F
        direction = ev_type | (0 if asserted else 0x80)
        data1 = (0x50 if threshold else 0x00) | offset
        body = [
            *ts,
            0x20,
            0x00,
            0x04,
            SENSOR_TYPE_CODES[sensor_type],
            sensor_num,
            direction,
            data1,
            0x00,
            0x00,
        ]
        out = self.command("sel_add 0x20 2 " + " ".join(f"{b:#04x}" for b in body))
        if "Added record" not in out:
            raise RuntimeError(f"sel_add failed: {out!r}")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None

    def __enter__(self) -> SimBmc:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# A prompt at the start of a line, or after the telnet option bytes (IAC WILL/WONT/DO/DONT
# and the option) that open the connection.
_PROMPT = re.compile(rb"(?:^|[\r\n]|\xff[\xfb-\xfe].)> ", re.DOTALL)


def _until_prompt(s: socket.socket, deadline: float, what: str) -> bytes:
    """What the console sends up to and including a prompt at the start of a line."""
    buf = b""
    while not _PROMPT.search(buf):
        left = deadline - time.monotonic()
        try:
            if left <= 0:
                raise TimeoutError
            s.settimeout(left)
            chunk = s.recv(4096)
        except TimeoutError:
            raise TimeoutError(f"ipmi_sim: no {what}; read {buf[-300:]!r}") from None
        if not chunk:
            raise ConnectionError(f"ipmi_sim closed its console before {what}; read {buf!r}")
        buf += chunk
    return buf
