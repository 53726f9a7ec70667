"""A real Redfish service for tests: sushy-tools' static emulator (``sushy-static``)
serving a copy of the DMTF public-rackmount1 mockup over HTTPS with a self-signed
certificate made for the address it listens on. The tests change the copied files while it
runs and read the changes back through aibench's Redfish reader."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

MOCKUP = Path(__file__).resolve().parent / "data" / "redfish" / "public-rackmount1"
SUSHY = shutil.which("sushy-static") or str(Path(sys.executable).parent / "sushy-static")


def available() -> bool:
    return Path(SUSHY).exists() and shutil.which("openssl") is not None


def wait_port(host: str, port: int, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{host}:{port} did not open")


def start(
    workdir: Path, address: str, port: int, prefix: tuple[str, ...] = ()
) -> tuple[subprocess.Popen[bytes], Path, Path]:
    """Serve a fresh copy of the mockup on ADDRESS:PORT (run under ``prefix``, e.g.
    ``ip netns exec NS``); (the process, the served folder, the CA certificate)."""
    root = workdir / "redfish-v1"
    shutil.copytree(MOCKUP, root)
    cert, key = workdir / "bmc.crt", workdir / "bmc.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", f"/CN={address}", "-addext", f"subjectAltName=IP:{address}",
         "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    p = subprocess.Popen(
        [*prefix, SUSHY, "-i", address, "-p", str(port), "-m", str(root),
         "-c", str(cert), "-k", str(key)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_port(address, port)
    except RuntimeError:
        p.terminate()
        p.wait(10)
        raise
    return p, root, cert
