"""A REPLAY of a real captured GPU tool output, for tests only (no GPU on the test bed).

Started in place of gpu_burn, nvbandwidth, dcgmproftester12, nvidia-smi (``dmon``),
amd-smi (``metric --json``) or npu-smi (``info``) (a
small wrapper script named like the binary execs this file with ``--fixture FILE --binary
NAME``, then the argv the runner built). It:

* checks the options the way the real binary reads them (unknown options, missing values
  and a missing or non-numeric duration are an error, exit 2), so the runner's argv is
  exercised;
* prints the captured output (stdout), as the tool would have;
* writes one line to stderr: ``replay BINARY args=...``.

It measures nothing: the numbers are the captured ones.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def fail(msg: str) -> None:
    print(f"replay: {msg}", file=sys.stderr)
    sys.exit(2)


def check_gpu_burn(args: list[str]) -> None:
    """gpu_burn [-d] [-tc] [-m N|N%] [-i N] [-c FILE] SECONDS (gpu-burn 2023+ options)."""
    i = 0
    while i < len(args) - 1:
        a = args[i]
        if a in ("-d", "-tc"):
            i += 1
        elif a in ("-m", "-i", "-c"):
            if i + 1 >= len(args) - 1:
                fail(f"{a} needs a value")
            i += 2
        else:
            fail(f"unknown option {a!r}")
    if not args or not args[-1].isdigit():
        fail("the last argument must be the seconds to burn")


def check_nvbandwidth(args: list[str]) -> None:
    """nvbandwidth [-j] [-t NAME ...]."""
    seen_t = False
    for a in args:
        if a == "-j":
            continue
        if a == "-t":
            seen_t = True
            continue
        if a.startswith("-") or not seen_t:
            fail(f"unknown option {a!r}")


def check_dcgmproftester(args: list[str]) -> None:
    """dcgmproftester12 --no-dcgm-validation -t FIELD -d SECONDS [-i IDS]."""
    valued = {"-t", "-d", "-i"}
    i = 0
    found = set()
    while i < len(args):
        a = args[i]
        if a == "--no-dcgm-validation":
            i += 1
            continue
        if a not in valued or i + 1 >= len(args):
            fail(f"unknown option or missing value: {a!r}")
        found.add(a)
        i += 2
    if "-t" not in found:
        fail("no -t FIELD_ID")


def check_nvidia_smi(args: list[str]) -> None:
    """nvidia-smi dmon [-s pucvmet] [-d SECS] [-c COUNT] [-i IDS] (the options dmon reads)."""
    valid = {
        "-s": lambda v: bool(v) and set(v) <= set("pucvmet"),
        "-d": lambda v: v.isdigit() and int(v) > 0,
        "-c": lambda v: v.isdigit() and int(v) > 0,
        "-i": lambda v: bool(v) and all(x.isdigit() for x in v.split(",")),
    }
    if not args or args[0] != "dmon":
        fail("only dmon is replayed")
    for a, value in zip(args[1::2], [*args[2::2], ""], strict=False):
        if a not in valid or not valid[a](value):
            fail(f"unknown option or bad value: {a!r} {value!r}")


def check_amd_smi(args: list[str]) -> None:
    """amd-smi metric --json (the one reading the telemetry loop asks for)."""
    if args != ["metric", "--json"]:
        fail(f"only 'metric --json' is replayed, not {args!r}")


def check_npu_smi(args: list[str]) -> None:
    """npu-smi info (the summary table)."""
    if args != ["info"]:
        fail(f"only 'info' is replayed, not {args!r}")


CHECKS = {
    "amd-smi": check_amd_smi,
    "npu-smi": check_npu_smi,
    "gpu_burn": check_gpu_burn,
    "nvbandwidth": check_nvbandwidth,
    "dcgmproftester12": check_dcgmproftester,
    "nvidia-smi": check_nvidia_smi,
}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--fixture", required=True)
    p.add_argument("--binary", required=True, choices=sorted(CHECKS))
    ns, rest = p.parse_known_args()
    CHECKS[ns.binary](rest)
    print(f"replay {ns.binary} args={' '.join(rest)}", file=sys.stderr)
    sys.stdout.write(Path(ns.fixture).read_text())


if __name__ == "__main__":
    main()
