"""What do aibench's storage steps cost on top of fio's client/server mode run by hand?

Three nodes on loopback addresses (127.0.0.1-3), one step of each kind of the
``fio-cluster`` tool (an aggregate read, the metadata phases, a checkpoint burst). In one
interleaved loop, for each step:

* ``direct``: what aibench plans for it, done by hand: the setup commands, ``fio
  --server`` on every node (waiting until its port answers), the driver's ``fio
  --client=... JOBFILE`` (the same argv, from aibench's own planner), the servers stopped;
* ``aibench``: ``aibench run`` of a suite with that one step, a fresh process that plans,
  runs, parses, judges, stores and renders every report.

It prints the median wall time of each, the difference and the ratio aibench / direct.

    python bench/storage_overhead.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

INVENTORY = """\
schema_version: 1
name: loopback
defaults: {{executor: local}}
nodes:
{nodes}
"""
STEPS = {
    "read": "{rw: read, bs: 1M, size: 32M, runtime: null, directory: DIR}",
    "metadata": "{kind: metadata, files: 200, dirs: 4, directory: DIR}",
    "checkpoint": "{kind: checkpoint, size: 32M, directory: DIR}",
}
SUITE = """\
schema_version: 1
name: storage-overhead
steps:
  - name: shared-{kind}
    tool: fio-cluster
    options: {options}
"""
SPEC = """\
schema_version: 1
name: storage-overhead
checks:
  - id: any-bw
    select: {tool: fio-cluster, metric: bw, dims: {client: all}}
    scope: fleet
    unit: MB/s
    min: 0.001
"""
ADDRESSES = ("127.0.0.1", "127.0.0.2", "127.0.0.3")


def _wait_port(host: str, port: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def planned(
    suite: Path, inventory: Path
) -> list[tuple[list[list[str]], list[list[str]], list[str]]]:
    """(setup argvs, server argvs, client argv) of every invocation aibench plans."""
    from aibench.inventory_file import load_inventory
    from aibench.plan import build_plan
    from aibench.suite import load_suite

    plan = build_plan(load_suite(str(suite)), load_inventory(str(inventory)))
    return [
        (
            [list(p.argv) for p in inv.setup],
            [list(s.argv) for s in inv.servers],
            list(inv.client.argv),
        )
        for inv in plan.invocations
    ]


def direct(runs: list[tuple[list[list[str]], list[list[str]], list[str]]]) -> float:
    """Wall seconds of doing by hand what aibench plans: setup, servers, client, stop."""
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    t0 = time.perf_counter()
    for setup, servers, client in runs:
        for argv in setup:
            subprocess.run(argv, check=True, **quiet)  # type: ignore[call-overload]
        procs = [subprocess.Popen(argv, start_new_session=True, **quiet) for argv in servers]  # type: ignore[call-overload]
        try:
            for argv in servers:
                addr, port = argv[1].removeprefix("--server=ip:").rsplit(",", 1)
                _wait_port(addr, int(port))
            subprocess.run(client, check=True, **quiet)  # type: ignore[call-overload]
        finally:
            for p in procs:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait()
    return time.perf_counter() - t0


def with_aibench(suite: Path, inventory: Path, spec: Path, out: Path) -> float:
    argv = [sys.executable, "-m", "aibench", "run", "--suite", str(suite), "--inventory",
            str(inventory), "--spec", str(spec), "--output-dir", str(out), "--quiet"]  # fmt: skip
    t0 = time.perf_counter()
    done = subprocess.run(argv, check=False, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"aibench run failed: {done.stdout[-500:]}{done.stderr[-500:]}")
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="aibench-storage-overhead-") as tmp:
        d = Path(tmp)
        (d / "shared").mkdir()
        nodes = "\n".join(f"  - {{name: n{i}, address: {a}}}" for i, a in enumerate(ADDRESSES, 1))
        inventory = d / "inventory.yaml"
        inventory.write_text(INVENTORY.format(nodes=nodes))
        spec = d / "spec.yaml"
        spec.write_text(SPEC)
        suites = {}
        for kind, options in STEPS.items():
            suites[kind] = d / f"{kind}.yaml"
            text = options.replace("DIR", str(d / "shared"))
            suites[kind].write_text(SUITE.format(kind=kind, options=text))
        rows: dict[str, dict[str, list[float]]] = {k: {"direct": [], "aibench": []} for k in STEPS}
        for kind, suite in suites.items():  # warm the page cache and the bytecode
            direct(planned(suite, inventory))
            with_aibench(suite, inventory, spec, d / f"warm-{kind}")
        for i in range(args.runs):
            for kind, suite in suites.items():
                rows[kind]["direct"].append(direct(planned(suite, inventory)))
                rows[kind]["aibench"].append(with_aibench(suite, inventory, spec, d / f"{kind}{i}"))
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.runs} runs each, 3 clients"
    )
    print(f"{'step':12} {'direct s':>9} {'aibench s':>10} {'extra s':>8} {'ratio':>6}")
    for kind, r in rows.items():
        a, b = statistics.median(r["direct"]), statistics.median(r["aibench"])
        print(f"{kind:12} {a:9.3f} {b:10.3f} {b - a:8.3f} {b / a:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
