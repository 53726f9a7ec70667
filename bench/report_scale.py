"""Render the reports of a GENERATED N-node acceptance run; check time, size and memory.

    .venv/bin/python bench/report_scale.py [--nodes 1024] [--thin] [--keep DIR]

The run comes from tests/reports/gen.py (``dense``: the acceptance suite's fio workloads
with repeats on every node, iperf3 both ways and ib_write_bw on 8 rails over the ring
pairs, NCCL sweeps per node, per rack and across all nodes, MLPerf) and is labelled
generated: its numbers were not measured. It is written to a run directory, then
``aibench report RUN_DIR`` re-renders it in a child process, as a user would: the time
is that command's wall time (reading run.json, judging nothing, writing report.html,
junit.xml, summary.md, metrics.prom and manifest.sha256) and the memory its peak
resident set (getrusage of the child).

Targets for 1024 nodes: renders in < 30 s, report.html < 25 MB (10^6 bytes), peak
memory < 2 GB (10^9 bytes). Prints PASS or MISS per target; exits 1 when one is missed.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.reports.gen import make_run, write_run  # noqa: E402

MB = 10**6
TARGETS = {"render time": (30.0, "s"), "report.html": (25.0, "MB"), "peak memory": (2000.0, "MB")}


def measure(nodes: int, dense: bool, run_dir: Path) -> dict[str, float]:
    t0 = time.perf_counter()
    gen = make_run(nodes, dense=dense)
    write_run(gen, run_dir)
    t1 = time.perf_counter()
    run = gen.run
    print(f"nodes                {nodes} ({'acceptance-shaped' if dense else 'thin'}, GENERATED)")
    print(f"steps / verdicts     {len(run.steps)} / {len(run.verdicts)}")
    print(f"measurements / facts {len(run.measurements)} / {len(run.facts)}")
    print(f"run.json             {(run_dir / 'run.json').stat().st_size / MB:.1f} MB")
    print(f"generate + write     {t1 - t0:.1f} s (not part of the target)")
    del gen, run
    t2 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "aibench", "report", str(run_dir)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    elapsed = time.perf_counter() - t2
    if proc.returncode not in (0, 1):  # 1: the generated run has failing checks
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"aibench report exited {proc.returncode}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 / MB  # KiB on Linux
    for name in ("report.html", "junit.xml", "summary.md", "metrics.prom", "manifest.sha256"):
        print(f"  {name:<18} {(run_dir / name).stat().st_size / MB:8.2f} MB")
    return {
        "render time": elapsed,
        "report.html": (run_dir / "report.html").stat().st_size / MB,
        "peak memory": peak,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1024)
    ap.add_argument("--thin", action="store_true", help="one step per node or pair, no repeats")
    ap.add_argument("--keep", metavar="DIR", help="write the run here and keep it")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="aibench-scale-") as tmp:
        run_dir = Path(args.keep) if args.keep else Path(tmp) / "run"
        got = measure(args.nodes, not args.thin, run_dir)
    missed = 0
    for name, (limit, unit) in TARGETS.items():
        ok = got[name] < limit
        missed += not ok
        print(
            f"{name:<20} {got[name]:8.2f} {unit:<2}  target < {limit:g} {unit}  "
            f"{'PASS' if ok else 'MISS'}"
        )
    if args.nodes != 1024:
        print("(the targets are set for 1024 nodes)")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
