"""A REPLAY of real captured perftest reports, for tests only (this machine has no RDMA).

Started in place of a perftest binary (a wrapper named like it, e.g. ``ib_send_bw``,
execs this file with ``--server-fixture FILE --client-fixture FILE``, then the argv the
runner built). It reads the perftest options the way the tool does (unknown ones exit 2)
and plays both roles over real TCP, like perftest's out-of-band exchange:

* server (no address argument): listens on ``-p PORT`` on every address, prints
  perftest's "Waiting for client to connect..." banner, accepts one client, then prints
  the captured server report;
* client (the server's address last): connects to ADDRESS:PORT once (like the real
  client, it fails at once when nothing listens), exchanges one line with the server,
  prints the captured client report.

The device name of the captured report is replaced by the ``-d`` device it was given
(so each rail reports its own); the numbers are the captured ones, nothing is measured.
"""

from __future__ import annotations

import argparse
import re
import socket
import sys
from pathlib import Path

_VALUED = {"-d", "-i", "-x", "-p", "-s", "-n", "-D", "-q", "--out_json_file"}
_FLAGS = {"-a", "-b", "-F", "-R", "--report_gbits", "--out_json"}
BANNER = (
    "\n************************************\n"
    "* Waiting for client to connect... *\n"
    "************************************\n"
)


def read_args(argv: list[str]) -> tuple[dict[str, str], str | None]:
    opts: dict[str, str] = {}
    address = None
    i = 0
    while i < len(argv):
        a = argv[i]
        name = a.split("=", 1)[0]
        if name in _VALUED and "=" in a:
            opts[name] = a.split("=", 1)[1]
        elif name in _VALUED:
            if i + 1 >= len(argv):
                print(f"replay: option {a} needs a value", file=sys.stderr)
                sys.exit(2)
            opts[a] = argv[i + 1]
            i += 1
        elif a in _FLAGS:
            opts[a] = ""
        elif not a.startswith("-") and address is None and i == len(argv) - 1:
            address = a
        else:
            print(f"replay: unknown option {a!r}", file=sys.stderr)
            sys.exit(2)
        i += 1
    return opts, address


def report(path: str, device: str | None) -> str:
    text = Path(path).read_text(encoding="utf-8")
    return re.sub(r"\bmlx5_\d+\b", device, text) if device else text


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--server-fixture", required=True)
    ap.add_argument("--client-fixture", required=True)
    ns, rest = ap.parse_known_args()
    opts, address = read_args(rest)
    port = int(opts.get("-p", "18515"))
    device = opts.get("-d")
    if address is None:
        with socket.create_server(("", port), reuse_port=False) as srv:
            sys.stdout.write(BANNER)
            sys.stdout.flush()
            srv.settimeout(30)
            conn, _ = srv.accept()
            with conn:
                peer = conn.makefile("r").readline().strip()
                conn.sendall(f"server {device or '-'}\n".encode())
        sys.stdout.write(report(ns.server_fixture, device))
        print(f"replay: served {peer}", file=sys.stderr)
        return 0
    try:
        conn = socket.create_connection((address, port), timeout=5)
    except OSError:
        print(f" Couldn't connect to {address}:{port}", file=sys.stderr)
        return 1
    with conn:
        conn.sendall(f"client {device or '-'}\n".encode())
        answer = conn.makefile("r").readline().strip()
    sys.stdout.write(report(ns.client_fixture, device))
    print(f"replay: {answer} at {address}:{port}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
