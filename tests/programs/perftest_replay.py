"""A REPLAY of real captured perftest reports, for tests only (this machine has no RDMA).

Started in place of a perftest binary (a wrapper named like it, e.g. ``ib_send_bw``,
execs this file with ``--binary NAME --server-fixture FILE --client-fixture FILE``, then
the argv the runner built). It accepts only the options that the real ``NAME --help``
lists (perftest 4.5-0.17 of Debian 12, captured in tests/fixtures/tool-help/perftest/;
an option takes a value when the help shows ``=<...>`` or perftest's getopt string gives
its letter a ``:``), exits 2 on any other, so a runner that builds an option the tool
lacks fails its tests, and plays both roles over real TCP, like perftest's out-of-band
exchange:

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

HELP_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "tool-help" / "perftest"
# the short options that take a value: getopt_long's option string in
# src/perftest_parameters.c of linux-rdma/perftest at tag v4.5-0.17 (e63987c)
GETOPT = "w:y:p:d:i:m:s:n:t:u:S:x:c:q:I:o:M:r:Q:A:l:D:f:B:T:L:E:J:j:K:k:X:W:aFegzRvhbNVCHUOZP"
_VALUED_LETTERS = {GETOPT[i - 1] for i, ch in enumerate(GETOPT) if ch == ":"}
# a help line: "  -d, --ib-dev=<dev>  ..." or "      --out_json_file=<file>  ..."
_LINE = re.compile(r"^\s+(?:-([A-Za-z]), )?--([A-Za-z0-9_-]+)(=\S*)?")
BANNER = (
    "\n************************************\n"
    "* Waiting for client to connect... *\n"
    "************************************\n"
)


def options(help_text: str) -> tuple[set[str], set[str]]:
    """(valued, flags): the option spellings ``--help`` lists, short and long."""
    valued: set[str] = set()
    flags: set[str] = set()
    for line in help_text.splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        short, long, eq = m.groups()
        takes = bool(eq) or (short is not None and short in _VALUED_LETTERS)
        names = {f"--{long}"} | ({f"-{short}"} if short else set())
        (valued if takes else flags).update(names)
    return valued, flags


def read_args(
    argv: list[str], valued: set[str], flags: set[str]
) -> tuple[dict[str, str], str | None]:
    opts: dict[str, str] = {}
    address = None
    i = 0
    while i < len(argv):
        a = argv[i]
        name = a.split("=", 1)[0]
        if name in valued and "=" in a:
            opts[name] = a.split("=", 1)[1]
        elif name in valued:
            if i + 1 >= len(argv):
                print(f"replay: option {a} needs a value", file=sys.stderr)
                sys.exit(2)
            opts[a] = argv[i + 1]
            i += 1
        elif a in flags:
            opts[a] = ""
        elif not a.startswith("-") and address is None and i == len(argv) - 1:
            address = a
        else:
            print(f"replay: unknown option {a!r} (not in its --help)", file=sys.stderr)
            sys.exit(2)
        i += 1
    return opts, address


def report(path: str, device: str | None) -> str:
    text = Path(path).read_text(encoding="utf-8")
    return re.sub(r"\bmlx5_\d+\b", device, text) if device else text


def main() -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--server-fixture", required=True)
    ap.add_argument("--client-fixture", required=True)
    ns, rest = ap.parse_known_args()
    if rest[:1] in (["--version"], ["-V"]):
        print("replay: --version is not replayed (no perftest version to report)", file=sys.stderr)
        return 2
    help_text = (HELP_DIR / f"{ns.binary}--help.txt").read_text(encoding="utf-8")
    opts, address = read_args(rest, *options(help_text))
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
