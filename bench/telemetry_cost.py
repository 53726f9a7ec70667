"""What does telemetry sampling cost a node? Target: under 1 % of one core at a 2 s interval.

Runs the host probe exactly as the sampler starts it on a node (``sh -c SCRIPT sh 2``) for
``--seconds``, then reads the CPU time of the probe and everything it started (the
children's rusage once it has been waited for) and divides by the wall time: the share of
one core the node spends. Side by side it measures what the sampler spends on this machine
(aibench's side) to parse the same output, and, with ``--ipmi`` (OpenIPMI's ipmi_sim and
ipmitool installed), what one BMC read costs every interval (on the aibench host: a BMC is its own controller,
the node spends nothing on it; shown for sizing, not judged). Prints each as % of one core
and PASS/MISS against 1 %; exits 1 on a MISS.

    python bench/telemetry_cost.py [--seconds 60] [--interval 2] [--ipmi]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aibench.telemetry import host

BUDGET = 1.0  # % of one core


def child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def probe_cost(seconds: float, interval: float) -> tuple[float, str, int]:
    before = child_cpu()
    t0 = time.monotonic()
    p = subprocess.Popen(host.argv(interval), stdout=subprocess.PIPE, text=True)
    time.sleep(seconds)
    p.terminate()
    out, _ = p.communicate()
    wall = time.monotonic() - t0
    return 100.0 * (child_cpu() - before) / wall, out, out.count("@@ ")


def parse_cost(out: str, wall: float) -> float:
    t0 = time.process_time()
    parser = host.HostParser("node")
    parser.feed(out)
    return 100.0 * (time.process_time() - t0) / wall


def ipmi_cost(interval: float, reads: int) -> float:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from aibench import bmc
    from aibench.inventory import Node
    from tests import bmcsim

    os.environ["AIBENCH_BENCH_BMC_PW"] = "bench-pw"
    with (
        tempfile.TemporaryDirectory() as d,
        bmcsim.SimBmc(Path(d), "127.0.0.1", 19951, "admin", "bench-pw"),
    ):
        node = Node(
            name="n",
            facts={
                "bmc": {
                    "address": "127.0.0.1",
                    "protocol": "ipmi",
                    "port": 19951,
                    "username": "admin",
                    "password_env": "AIBENCH_BENCH_BMC_PW",
                    "cipher_suite": 3,
                }
            },
        )
        t = bmc.target_for(node)
        assert t is not None
        before = child_cpu() + time.process_time()
        for _ in range(reads):
            bmc.read(t)
        spent = child_cpu() + time.process_time() - before
    return 100.0 * (spent / reads) / interval


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--interval", type=float, default=2.0)
    ap.add_argument("--ipmi", action="store_true", help="also time one BMC read per interval")
    a = ap.parse_args()
    node_pct, out, blocks = probe_cost(a.seconds, a.interval)
    rows = [
        ("node: host probe (sh loop, cat, date, sleep)", node_pct),
        ("aibench host: parse the probe's output", parse_cost(out, a.seconds)),
    ]
    info = 0.0
    if a.ipmi:
        info = ipmi_cost(a.interval, 10)
    print(f"interval {a.interval:g} s, {a.seconds:g} s, {blocks} samples")
    worst = 0.0
    for name, pct in rows:
        ok = pct < BUDGET
        worst = max(worst, pct)
        print(
            f"  {name:58s} {pct:6.3f} % of one core  ({pct / BUDGET:5.2f} x budget) {'PASS' if ok else 'MISS'}"
        )
    if a.ipmi:
        print(
            f"  {'aibench host: ipmitool sensor + sel elist per interval':58s} {info:6.3f} % of one core"
            "  (not on the node: the BMC is read from the aibench host; per BMC)"
        )
    return 0 if worst < BUDGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
