"""redis-server in a namespace of the test bed, for the cache tests and the bench.

Debian's redis-server (7.0): no persistence, bound to the host's address only, daemonized
with a pid file under ``root``; ready in a few hundredths of a second. The bed's teardown
kills whatever runs in its namespaces, so :func:`stop` is only needed to stop it early.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from tests.testbed.ceph import _kill, in_netns


def start(root: Path, netns: str, address: str, port: int = 16379) -> Path:
    """Start redis-server; its pid file."""
    root.mkdir(parents=True, exist_ok=True)
    pidfile = root / "redis.pid"
    subprocess.run(
        [*in_netns(netns), "redis-server", "--port", str(port), "--bind", address,
         "--protected-mode", "no", "--save", "", "--appendonly", "no", "--daemonize", "yes",
         "--pidfile", str(pidfile), "--logfile", str(root / "redis.log"), "--dir", str(root)],
        check=True, timeout=30,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while not pidfile.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"redis-server did not start: see {root / 'redis.log'}")
        time.sleep(0.05)
    return pidfile


def stop(pidfile: Path) -> None:
    _kill(pidfile)
