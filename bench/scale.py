"""What aibench costs on 4, 16 and 64 hosts over SSH, and the 64-host / 4-host ratio.

Builds the 64-host test bed (network namespaces ``abx-h1`` .. ``abx-h64``, each with its
own sshd; needs root) and runs the real CLI in a child process, for each host count:

* ``preflight``: ``aibench preflight`` (the node checklist, about ten commands a host);
* ``iperf3-sample``: ``aibench run`` of an iperf3 step with the ``sample`` placement,
  N/2 random pairs (about one test per host), 1 s each at 10 Mbit/s (the link is not
  what is measured here: the harness is);
* ``iperf3-pairs``: the same step with ``pairs`` (every pair) on 16 hosts only.

For each it prints the median wall time over ``--runs`` runs and, of the aibench
process: CPU seconds (user + system, from wait4) and CPU per invocation, peak resident
memory, and at its peak (sampled every 20 ms from /proc) open file descriptors and
established SSH connections. It also prints the CPU the bed spent meanwhile (every
sshd of the bed with everything it ran, from /proc: other load on the machine does not
count) and the CPU bound: (aibench CPU + bed CPU) / cores, the shortest wall time these
cores allow for that work. Last, the 64-host / 4-host ratios for the same per-host work,
with the target (preflight: under 3) marked PASS or MISS; exit 1 on a miss.

    sudo .venv/bin/python bench/scale.py [--runs 3] [--hosts 4,16,64]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.testbed.bed import TestBed  # noqa: E402
from tests.testbed.net import BIG  # noqa: E402

TARGET = 3.0  # preflight on 64 hosts under 3 x its time on 4
TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Sample:
    wall: float
    cpu: float
    rss_mb: float
    fds: int
    ssh: int
    bed_cpu: float
    invocations: int


def suite_file(d: Path, placement: str, k: int | None) -> Path:
    step: dict[str, object] = {
        "name": "iperf3",
        "tool": "iperf3",
        "placement": placement,
        "options": {"duration": 1, "bandwidth": "10M"},
    }
    if k is not None:
        step["sample"] = k
    path = d / f"iperf3-{placement}-{k}.yaml"
    path.write_text(
        yaml.safe_dump({"schema_version": 1, "name": f"scale-iperf3-{placement}", "steps": [step]})
    )
    return path


def bed_cpu(bed: TestBed) -> float:
    """CPU seconds of the bed's sshds and of everything they ran and reaped."""
    total = 0
    for proc in bed.sshd_procs.values():
        try:
            fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return total / TICK


def ssh_sockets(pid: int) -> tuple[int, int]:
    """(open fds, established TCP connections to port 22) of a process."""
    inodes = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except FileNotFoundError:
        return 0, 0
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    ssh = 0
    try:
        rows = Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]
    except FileNotFoundError:
        rows = []
    for row in rows:
        cols = row.split()
        if cols[2].endswith(":0016") and cols[3] == "01" and cols[9] in inodes:
            ssh += 1
    return len(fds), ssh


def steps_in(out: Path) -> int:
    """Invocations in what the command wrote: a run.json-format file, or a runs folder."""
    if out.is_dir():
        (out,) = [x / "run.json" for x in out.iterdir() if x.is_dir()]
    return len(json.loads(out.read_text())["steps"])


def measure(argv: list[str], bed: TestBed, out: Path) -> Sample:
    c0 = bed_cpu(bed)
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak_fds = peak_ssh = 0
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        fds, ssh = ssh_sockets(proc.pid)
        peak_fds, peak_ssh = max(peak_fds, fds), max(peak_ssh, ssh)
        time.sleep(0.02)
    wall = time.monotonic() - t0
    code = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(argv)}: exit {code}\n{err[-2000:]}")
    time.sleep(0.3)  # the bed's session processes end and are reaped
    return Sample(
        wall=wall,
        cpu=ru.ru_utime + ru.ru_stime,
        rss_mb=ru.ru_maxrss / 1024,
        fds=peak_fds,
        ssh=peak_ssh,
        bed_cpu=bed_cpu(bed) - c0,
        invocations=steps_in(out),
    )


def scenario(name: str, n: int, inv: Path, d: Path) -> tuple[list[str], Path]:
    nodes = f"abx-h[1-{n}]"
    py = [sys.executable, "-m", "aibench"]
    if name == "preflight":
        out = d / f"preflight-{n}.json"
        return [*py, "preflight", "--inventory", str(inv), "--nodes", nodes, "--quiet",
                "--output", str(out)], out  # fmt: skip
    placement, k = ("sample", max(1, n // 2)) if name == "iperf3-sample" else ("pairs", None)
    runs = d / f"runs-{name}-{n}"
    if runs.exists():
        subprocess.run(["rm", "-rf", str(runs)], check=True)
    return [*py, "run", "--suite", str(suite_file(d, placement, k)), "--inventory", str(inv),
            "--nodes", nodes, "--output-dir", str(runs), "--quiet", "--no-history",
            "--spec", "default"], runs  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="runs per point (median shown)")
    ap.add_argument("--hosts", default="4,16,64", help="host counts (at most 64)")
    args = ap.parse_args()
    counts = [int(x) for x in args.hosts.split(",")]
    cores = os.cpu_count() or 1
    print(f"machine: {cores} cores, load average {Path('/proc/loadavg').read_text().split()[:3]}")
    with tempfile.TemporaryDirectory(prefix="aibench-scale-") as tmp:
        d = Path(tmp)
        t0 = time.monotonic()
        bed = TestBed.up(max(counts), d / "bed", BIG)
        print(f"bed: {max(counts)} hosts up in {time.monotonic() - t0:.1f} s")
        try:
            data = bed.inventory_data()
            for node in data["nodes"]:  # type: ignore[attr-defined]
                node.pop("data_dirs")
            inv = d / "inventory.yaml"
            inv.write_text(yaml.safe_dump(data, sort_keys=False))
            points = [(s, n) for s in ("preflight", "iperf3-sample") for n in counts]
            points += [("iperf3-pairs", 16)] if 16 in counts else []
            results: dict[tuple[str, int], Sample] = {}
            head = (
                f"{'scenario':<14} {'hosts':>5} {'invoc':>5} {'wall s':>7} {'cpu s':>6} "
                f"{'ms/inv':>6} {'rss MB':>6} {'fds':>4} {'ssh':>4} {'bed cpu':>7} "
                f"{'bound s':>7}"
            )
            print(head)
            for name, n in points:
                samples = []
                for _ in range(args.runs if name != "iperf3-pairs" else 1):
                    argv, out = scenario(name, n, inv, d)
                    samples.append(measure(argv, bed, out))
                s = median_sample(samples)
                results[(name, n)] = s
                bound = (s.cpu + s.bed_cpu) / cores
                print(
                    f"{name:<14} {n:>5} {s.invocations:>5} {s.wall:>7.2f} {s.cpu:>6.2f} "
                    f"{1000 * s.cpu / max(1, s.invocations):>6.1f} {s.rss_mb:>6.0f} "
                    f"{s.fds:>4} {s.ssh:>4} {s.bed_cpu:>7.2f} {bound:>7.2f}",
                    flush=True,
                )
        finally:
            bed.down()
    lo, hi = min(counts), max(counts)
    missed = False
    for name in ("preflight", "iperf3-sample"):
        a, b = results.get((name, lo)), results.get((name, hi))
        if a is None or b is None or lo == hi:
            continue
        ratio = b.wall / a.wall
        bound_ratio = max(a.wall, (b.cpu + b.bed_cpu) / cores) / a.wall
        verdict = ""
        if name == "preflight":
            ok = ratio < TARGET
            missed |= not ok
            verdict = f"  target < {TARGET:g}: {'PASS' if ok else 'MISS'}"
        share = b.cpu / (b.cpu + b.bed_cpu)
        print(
            f"{name}: {hi}/{lo} hosts wall ratio {ratio:.2f} (aibench CPU {b.cpu / a.cpu:.2f}, "
            f"rss {b.rss_mb / a.rss_mb:.2f}); the {cores} cores allow no less than "
            f"{bound_ratio:.2f} (of the CPU at {hi} hosts aibench spends {share:.0%}, the "
            f"hosts' sshd and commands the rest){verdict}"
        )
    return 1 if missed else 0


def median_sample(samples: list[Sample]) -> Sample:
    by_wall = sorted(samples, key=lambda s: s.wall)
    mid = by_wall[len(by_wall) // 2]
    return Sample(
        wall=statistics.median(s.wall for s in samples),
        cpu=statistics.median(s.cpu for s in samples),
        rss_mb=max(s.rss_mb for s in samples),
        fds=max(s.fds for s in samples),
        ssh=max(s.ssh for s in samples),
        bed_cpu=statistics.median(s.bed_cpu for s in samples),
        invocations=mid.invocations,
    )


if __name__ == "__main__":
    raise SystemExit(main())
