"""Render the reports of a GENERATED N-node acceptance run; check time, size and memory.

    .venv/bin/python bench/report_scale.py [--nodes 1024] [--thin] [--keep DIR]

The run comes from tests/reports/gen.py (``dense``: the acceptance suite's fio workloads
with repeats on every node, iperf3 both ways and ib_write_bw on 8 rails over the ring
pairs, NCCL sweeps per node, per rack and across all nodes, MLPerf) and is labelled
generated: its numbers were not measured. It is written to a run directory, then
``aibench report RUN_DIR`` re-renders it in a child process, as a user would: the time
is that command's wall time (reading run.json, judging nothing, writing report.html,
junit.xml, summary.md, metrics.prom and manifest.sha256) and the memory is the peak
resident set of that ``aibench report`` process alone.

How the memory is measured: a small wrapper process (``python -c``, a few MB) starts
``aibench report`` and reads ``getrusage(RUSAGE_CHILDREN).ru_maxrss``, whose only child
is the report. The bench process itself cannot read it that way: it holds the generated
run (about 1 GB at 1024 nodes), and a child it starts inherits that peak until it execs
(Linux carries the pre-exec high-water mark into ``ru_maxrss``), so its own
RUSAGE_CHILDREN showed the generator's peak, not the renderer's. Both numbers are printed,
labelled.

Targets for 1024 nodes: renders in < 30 s, report.html < 25 MB (10^6 bytes), peak
memory of the report process < 2 GB (10^9 bytes), metrics.prom < 2 MB and < 20,000
series (read back with prometheus_client's parser: the low-cardinality default, per
check, outcome, node and pair; per-measurement series are ``aibench metrics
--measurements``). Prints PASS or MISS per target; exits 1 when one is missed.
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
TARGETS = {
    "render time": (30.0, "s"),
    "report.html": (25.0, "MB"),
    "report peak memory": (2000.0, "MB"),
    "metrics.prom": (2.0, "MB"),
    "metrics.prom series": (20000.0, ""),
}
# Runs ARGV and prints the peak resident set of that child alone (KiB on Linux).
WRAPPER = (
    "import resource, subprocess, sys; "
    "rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode; "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, rc)"
)


def prom_series(path: Path) -> int:
    from prometheus_client.parser import text_string_to_metric_families

    return sum(len(f.samples) for f in text_string_to_metric_families(path.read_text()))


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
        [sys.executable, "-c", WRAPPER, sys.executable, "-m", "aibench", "report", str(run_dir)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    elapsed = time.perf_counter() - t2  # includes the wrapper's own start (~20 ms)
    maxrss_kib, rc = (int(x) for x in proc.stdout.split())
    if proc.returncode or rc not in (0, 1):  # 1: the generated run has failing checks
        sys.stderr.write(proc.stderr)
        raise SystemExit(f"aibench report exited {rc}")
    peak = maxrss_kib * 1024 / MB
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / MB
    print(f"bench process peak   {own:.0f} MB (generator; not part of the target)")
    print(f"aibench report peak  {peak:.0f} MB (ru_maxrss of that process alone)")
    if abs(peak - own) <= 0.02 * own:  # the old mistake: the generator's peak read back
        raise SystemExit("the report's peak equals this process's peak: not measured alone")
    for name in ("report.html", "junit.xml", "summary.md", "metrics.prom", "manifest.sha256"):
        print(f"  {name:<18} {(run_dir / name).stat().st_size / MB:8.2f} MB")
    return {
        "render time": elapsed,
        "report.html": (run_dir / "report.html").stat().st_size / MB,
        "report peak memory": peak,
        "metrics.prom": (run_dir / "metrics.prom").stat().st_size / MB,
        "metrics.prom series": float(prom_series(run_dir / "metrics.prom")),
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
