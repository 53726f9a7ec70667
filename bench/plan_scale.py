"""Plans at scale: the built-in acceptance suite (preflight, four fio steps on every node,
iperf3 over every pair both ways, three repeats) over generated inventories of N nodes.
Target: ``aibench plan`` and the start of ``aibench run`` at 1024 nodes under 1 GB and
within seconds.

For each N it runs, each as a fresh child process measured alone (its peak RSS from
``wait4``, never the parent's), side by side in one loop:

* ``plan``: ``aibench plan`` (the summary per step), its wall time, peak RSS and bytes
  printed;
* ``plan --full``: the full listing, for N up to ``--full-up-to`` (all pairs of 1024
  nodes are over three million runs: that listing is minutes and gigabytes of text);
* ``run start``: what ``aibench run`` computes before it contacts a node and before its
  first round starts: the plan, its run count and estimate, the version probes of every
  node and the first round. The nodes are SSH nodes on TEST-NET-1 addresses that are
  never contacted (no packet leaves the machine).

``--source DIR`` runs another checkout of aibench (for before/after figures; an older
``aibench plan`` prints the full listing by default and has no ``--full``).

    python bench/plan_scale.py [--nodes 128,1024,4096] [--full-up-to 128] [--source DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

INVENTORY = """\
name: generated-{n}
defaults: {{executor: ssh}}
ssh: {{user: bench, known_hosts: {known_hosts}, connect_timeout: 5}}
nodes:
  - name: node[{first}-{last}]
    address_pattern: "192.0.2.{{index}}"
"""

RUN_START = """\
import sys, time
from aibench.pipeline import load_inputs
from aibench.plan import build_plan
t0 = time.perf_counter()
inputs = load_inputs("acceptance", inventory=sys.argv[1])
plan = build_plan(inputs.suite, inputs.inventory)
from aibench.versions import version_probes
if hasattr(plan, "iter_rounds"):
    runs, seconds = plan.run_count(), plan.estimated_seconds()
    hosts = plan.hosts()
    probes = {p for inv in plan.sample_invocations() for p in version_probes(inv)}
    first = next(plan.iter_rounds())
else:  # an aibench before lazy plans (--source): what its run did before the first round
    runs, seconds = len(plan.invocations), plan.estimated_seconds()
    hosts = sorted({n for inv in plan.invocations for n in (*inv.nodes, inv.client.host)})
    probes = {p for inv in plan.invocations for p in version_probes(inv)}
    first = plan.rounds[0]
print(runs, len(hosts), len(probes), len(first.invocations), f"{time.perf_counter() - t0:.2f}")
"""


def inventory(d: Path, n: int) -> Path:
    width = len(str(n))
    path = d / f"inventory-{n}.yaml"
    path.write_text(
        INVENTORY.format(n=n, known_hosts=d / "no-such-known_hosts", first="1".zfill(width), last=n)
    )
    return path


def measure(argv: list[str], env: dict[str, str], timeout: float) -> tuple[float, float, int, str]:
    """(wall s, peak RSS MiB of the child alone, bytes it printed, its first line)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=tempfile.gettempdir()
    )
    assert proc.stdout is not None
    size, first = 0, b""
    deadline = t0 + timeout
    while chunk := proc.stdout.read(1 << 20):
        if not first:
            first = chunk.split(b"\n", 1)[0]
        size += len(chunk)
        if time.perf_counter() > deadline:
            proc.kill()
            break
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {proc.returncode}: {err.strip()[-500:]}")
    return wall, usage.ru_maxrss / 1024, size, first.decode(errors="replace")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", default="128,1024,4096")
    ap.add_argument("--full-up-to", type=int, default=128)
    ap.add_argument("--source", help="a checkout of aibench to measure instead of this one")
    ap.add_argument("--timeout", type=float, default=600.0)
    args = ap.parse_args()
    env = dict(os.environ)
    if args.source:
        env["PYTHONPATH"] = str(Path(args.source).resolve())
    aibench = [sys.executable, "-m", "aibench", "plan", "--suite", "acceptance", "--inventory"]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'nodes':>6} {'what':<11} {'runs':>9} {'wall s':>8} {'peak MiB':>9} {'printed':>10}")
    with tempfile.TemporaryDirectory(prefix="aibench-plan-scale-") as tmp:
        d = Path(tmp)
        for n in (int(x) for x in args.nodes.split(",")):
            inv = str(inventory(d, n))
            rows = [("plan", [*aibench, inv])]
            if n <= args.full_up_to:
                rows.append(("plan --full", [*aibench, inv, "--full"]))
            rows.append(("run start", [sys.executable, "-c", RUN_START, inv]))
            for what, argv in rows:
                wall, rss, size, first = measure(argv, env, args.timeout)
                if what == "run start":
                    runs = first.split()[0]
                else:
                    runs = first.split(": ", 1)[-1].split(" runs", 1)[0]
                print(f"{n:>6} {what:<11} {runs:>9} {wall:8.2f} {rss:9.0f} {size / 1e6:8.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
