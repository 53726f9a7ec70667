"""Render the reports of a GENERATED N-node run and print time, size and peak memory.

    .venv/bin/python bench/report_scale.py [--nodes 1024]

Targets for 1024 nodes: report.html renders in < 30 s, is < 25 MB, and the process peaks
below 2 GB of memory (resident set, from getrusage). The run comes from
tests/reports/gen.py and is labelled generated (its numbers were not measured).
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aibench.reports import write_all  # noqa: E402
from tests.reports.gen import make_run, write_run  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1024)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="aibench-scale-") as tmp:
        run_dir = Path(tmp)
        t0 = time.perf_counter()
        gen = make_run(args.nodes)
        write_run(gen, run_dir)
        t1 = time.perf_counter()
        files = write_all(gen.run, run_dir)
        t2 = time.perf_counter()
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        run = gen.run
        print(f"nodes                {args.nodes}")
        print(f"steps / verdicts     {len(run.steps)} / {len(run.verdicts)}")
        print(f"measurements         {len(run.measurements)}")
        print(f"generate + run.json  {t1 - t0:.1f} s")
        print(f"write_all            {t2 - t1:.1f} s   (target < 30 s)")
        for name, path in files.items():
            print(f"  {name:<18} {path.stat().st_size / 2**20:8.2f} MiB")
        size = files["report.html"].stat().st_size / 2**20
        print(f"report.html          {size:.2f} MiB (target < 25 MB)")
        print(f"peak RSS             {peak_mib:.0f} MiB (target < 2 GB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
