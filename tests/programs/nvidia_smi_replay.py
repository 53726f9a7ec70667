"""A REPLAY of a real captured nvidia-smi query loop, for tests only (no GPU here).

Started in place of ``nvidia-smi`` with the argv the telemetry GPU probe builds
(``--query-gpu=FIELDS --format=csv -lms MS``). It checks that argv the way nvidia-smi reads
it (exit 2 otherwise), prints the CSV header for the fields asked (``name [unit]`` as
nvidia-smi 520+ writes it), then one row per interval, walking through the rows of the
captured loop of tests/fixtures/nvidia-smi-loop/ksysguard-520.56.06-1gpu-loop.csv (values of
the fields the capture has; ``[N/A]`` for the others, as nvidia-smi prints unsupported
fields) with the current time in ``timestamp``. ``--throttle-after N`` sets the
clocks_event_reasons.active (or clocks_throttle_reasons.active) mask to 0x40 (HW thermal slowdown) from row N on.

It measures nothing: the numbers are the captured ones.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from pathlib import Path

CAPTURE = (
    Path(__file__).resolve().parents[1]
    / "fixtures"
    / "nvidia-smi-loop"
    / "ksysguard-520.56.06-1gpu-loop.csv"
)
UNITS = {
    "power.draw": " [W]",
    "clocks.sm": " [MHz]",
    "fan.speed": " [%]",
    "utilization.gpu": " [%]",
}
CAPTURE_NAMES = {"clocks.sm": "clocks.current.sm"}


def main() -> None:
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--query-gpu", required=True)
    p.add_argument("--format", required=True, choices=["csv"])
    p.add_argument("-lms", type=int, required=True)
    p.add_argument("--throttle-after", type=int, default=-1)
    ns, rest = p.parse_known_args()
    if rest:
        print(f"nvidia-smi replay: unknown arguments {rest}", file=sys.stderr)
        sys.exit(2)
    fields = ns.query_gpu.split(",")
    lines = CAPTURE.read_text().splitlines()
    head = [h.strip().split(" [")[0] for h in lines[0].split(",")]
    rows = [[c.strip() for c in ln.split(",")] for ln in lines[1:]]
    print(", ".join(f + UNITS.get(f, "") for f in fields), flush=True)
    n = 0
    while True:
        row = dict(zip(head, rows[n % len(rows)], strict=True))
        out = []
        for f in fields:
            if f == "timestamp":
                out.append(datetime.now().strftime("%Y/%m/%d %H:%M:%S.%f")[:-3])
            elif f in ("clocks_event_reasons.active", "clocks_throttle_reasons.active"):
                out.append(
                    "0x0000000000000040" if 0 <= ns.throttle_after <= n else "0x0000000000000000"
                )
            else:
                out.append(row.get(CAPTURE_NAMES.get(f, f), "[N/A]"))
        print(", ".join(out), flush=True)
        n += 1
        time.sleep(ns.lms / 1000)


if __name__ == "__main__":
    main()
