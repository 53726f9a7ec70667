"""How fast does `aibench --help` start? Target: under 0.3 s on a 2-core machine.

Runs `aibench --help` and, side by side in the same loop, a bare `python -c pass` (the
interpreter's own floor) N times each, and prints the medians and their ratio. Also
lists which heavy modules the CLI imported (there should be none: pandas, matplotlib,
asyncssh, pydantic, jinja2 and rich load only inside commands that need them).

    python bench/cli_startup.py [--runs 20]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

HEAVY = ["pandas", "matplotlib", "numpy", "asyncssh", "jinja2", "rich", "pydantic", "yaml"]


def timed(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--target", type=float, default=0.3)
    args = ap.parse_args()
    help_cmd = [sys.executable, "-m", "aibench", "--help"]
    floor_cmd = [sys.executable, "-c", "pass"]
    timed(help_cmd)  # warm the file cache and bytecode
    helps, floors = [], []
    for _ in range(args.runs):
        helps.append(timed(help_cmd))
        floors.append(timed(floor_cmd))
    h, f = statistics.median(helps), statistics.median(floors)
    probe = (
        "import sys; from aibench.cli import build_parser; build_parser(); "
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    ).stdout.strip()
    print(
        f"aibench --help     median {h * 1000:7.1f} ms  (min {min(helps) * 1000:.1f}, n={args.runs})"
    )
    print(f"python -c pass     median {f * 1000:7.1f} ms  (min {min(floors) * 1000:.1f})")
    print(f"ratio help/python  {h / f:5.2f}x;  aibench's own cost {(h - f) * 1000:.1f} ms")
    print(f"heavy modules imported by --help: {loaded or 'none'}")
    ok = h < args.target
    print(f"target < {args.target:.2f} s: {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
