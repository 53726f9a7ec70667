"""Fan-out cost of the SSH executor: one short step on 1 host vs on 4 hosts at once.

Builds the multi-host test bed (4 network-namespace hosts, each with its own sshd; needs
root), opens the pooled connections once, then times ``true`` (or ``--cmd hostname``)
through ``SSHExecutor.run``: N rounds on one host, N rounds on all 4 in parallel. Prints
the medians, the 4-vs-1 ratio (target <= 1.5: fanning out should cost little more than
one step), and the harness cost per step beside the tool's own run time (the same argv
run as a local subprocess, i.e. fork + exec + the tool). Tears the bed down at the end.

    sudo .venv/bin/python bench/fanout.py [--rounds 30] [--cmd true]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aibench.executors.base import Command
from aibench.executors.ssh import SSHExecutor
from aibench.inventory import load_inventory
from tests.testbed.bed import TestBed
from tests.testbed.net import netns_available


async def measure(
    inv_path: Path, argv: tuple[str, ...], rounds: int, tmp: Path
) -> dict[str, float]:
    inv = load_inventory(inv_path)
    nodes = list(inv.nodes)
    ex = SSHExecutor()
    cmd = Command(argv, timeout=30)
    try:
        t0 = time.perf_counter()
        await asyncio.gather(*(ex.check(n) for n in nodes))
        connect = time.perf_counter() - t0

        async def one_round(group: list) -> float:  # type: ignore[type-arg]
            t = time.perf_counter()
            res = await asyncio.gather(
                *(ex.run(n, cmd, tmp / f"{n.name}.out", tmp / f"{n.name}.err") for n in group)
            )
            took = time.perf_counter() - t
            assert all(r.exit_code == 0 for r in res), res
            return took

        for _ in range(3):  # warm-up
            await one_round(nodes)
        single, fan = [], []
        for _ in range(rounds):  # interleaved, so drift hits both alike
            single.append(await one_round(nodes[:1]))
            fan.append(await one_round(nodes))
        # The floor: the same command over the same connections with bare asyncssh
        # (no wrapper, no process group, no files).
        conns = [ex._conns[n.name] for n in nodes]
        line = " ".join(argv)

        async def bare_round(group: list) -> float:  # type: ignore[type-arg]
            t = time.perf_counter()
            await asyncio.gather(*(c.run(line, check=True) for c in group))
            return time.perf_counter() - t

        bare1, bare4 = [], []
        for _ in range(rounds):
            bare1.append(await bare_round(conns[:1]))
            bare4.append(await bare_round(conns))
    finally:
        await ex.close()
    return {
        "bare1": statistics.median(bare1),
        "bare4": statistics.median(bare4),
        "connect": connect,
        "single": statistics.median(single),
        "fan": statistics.median(fan),
        "single_p90": sorted(single)[int(0.9 * len(single))],
        "fan_p90": sorted(fan)[int(0.9 * len(fan))],
    }


def local_tool_time(argv: tuple[str, ...], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--cmd", default="true", choices=["true", "hostname"])
    args = ap.parse_args()
    reason = netns_available()
    if reason:
        print(f"cannot build the test bed: {reason}", file=sys.stderr)
        return 3
    argv = (args.cmd,)
    with tempfile.TemporaryDirectory(prefix="aibench-fanout-") as d:
        root = Path(d)
        t = time.perf_counter()
        bed = TestBed.up(4, root / "bed")
        bed_up = time.perf_counter() - t
        try:
            inv = bed.write_inventory(root / "inventory.yaml")
            m = asyncio.run(measure(inv, argv, args.rounds, root))
        finally:
            bed.down()
    tool = local_tool_time(argv, args.rounds)
    ratio = m["fan"] / m["single"]
    print(
        f"bed up: {bed_up * 1000:.0f} ms; 4 connections opened in parallel: {m['connect'] * 1000:.0f} ms"
    )
    print(f"`{args.cmd}` over pooled SSH, median of {args.rounds} rounds:")
    print(f"  1 host : {m['single'] * 1000:7.1f} ms  (p90 {m['single_p90'] * 1000:.1f})")
    print(f"  4 hosts: {m['fan'] * 1000:7.1f} ms  (p90 {m['fan_p90'] * 1000:.1f})")
    print(
        f"  ratio 4 hosts / 1 host: {ratio:.2f}  (target <= 1.5: {'met' if ratio <= 1.5 else 'NOT met'})"
    )
    print(
        f"  floor, bare asyncssh conn.run: 1 host {m['bare1'] * 1000:.1f} ms, 4 hosts "
        f"{m['bare4'] * 1000:.1f} ms, ratio {m['bare4'] / m['bare1']:.2f}"
    )
    print(
        f"per step: tool's own run time {tool * 1000:.1f} ms (local fork+exec of `{args.cmd}`), "
        f"harness cost {max(0.0, m['single'] - tool) * 1000:.1f} ms (SSH session + wrapper)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
