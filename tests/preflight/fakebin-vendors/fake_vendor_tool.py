#!/usr/bin/env python3
"""TEST DOUBLE (tests only): amd-smi, rocm-smi, npu-smi and hccn_tool printing real captures.

Installed as links named after the tools (``amd-smi`` ...) to this file; the name it is
called by picks the tool. Every output is a real public capture from tests/fixtures
(sources in each folder's SOURCES.md); nothing is measured. Per tool and argv:

* ``amd-smi version`` / ``static --json`` / ``metric --json`` / ``firmware`` / ``xgmi``:
  amd-smi-version/oci-8xmi300x-rocm6.1.2.txt, amd-smi-static/mi210-gpu_data-rocm6.4.json,
  amd-smi-metric/rx6600-list-rocm6.x.json, amd-smi-firmware/mi300x-gpu0-rocm-blog-2024-09.txt,
  amd-smi-xgmi/mi300-class-8gpu-38Gbps-transferbench-faq.txt;
* ``rocm-smi -a``: rocm-smi/mi300x-oam-4gpu-vf-driver6.7.0-a.txt;
* ``npu-smi info``: npu-smi-info/910b2-23.0.7-eight-npus-idle.txt; ``npu-smi info -i N
  [-c 0] -t board|health|ecc``: that query's section of npu-smi-detail/huawei-doc-npu0-
  collection-example.txt (a capture of NPU 0, printed for every N);
* ``hccn_tool -i N -<query> -g``: that query's section of hccn-tool/huawei-doc-device0-
  collection-example.txt (device 0's, printed for every N); a query without a captured
  section (``-speed``) exits 2 with no output.

The ODD NODE: when this host's name is listed in the file ``odd-hosts`` beside the link
that was called, it prints another real capture where one exists: amd-smi version
amd-smi-version/amdsmi-changelog-rocm6.1.0.txt (ROCm 6.1.0), amd-smi static
amd-smi-static/rx6600-list-rocm6.x.json (another GPU and driver), npu-smi info
npu-smi-info/910b3-25.3.rc1.b061-eight-npus-idle.txt (another NPU model and driver).
Anything else exits 2 with no output.
"""

import socket
import sys
from pathlib import Path

FIX = Path(__file__).resolve().parents[2] / "fixtures"
tool = Path(sys.argv[0]).name
args = sys.argv[1:]
odd_file = Path(sys.argv[0]).parent / "odd-hosts"
odd = odd_file.is_file() and socket.gethostname() in odd_file.read_text().split()


def show(rel: str) -> None:
    sys.stdout.write((FIX / rel).read_text())
    sys.exit(0)


def section(rel: str, command: str) -> None:
    """Print the lines after ``command`` in a Huawei collection example, up to the next
    command line (the blank lines before it are the example's separator)."""
    lines = (FIX / rel).read_text().splitlines()
    out: list[str] = []
    for i, line in enumerate(lines):
        if line.strip().endswith(command):
            for body in lines[i + 1 :]:
                if "/usr/local/" in body:
                    break
                out.append(body)
            break
    while out and not out[-1].strip():
        out.pop()
    if not out:
        sys.exit(2)
    print("\n".join(out))
    sys.exit(0)


if tool == "amd-smi":
    if args == ["version"]:
        show(
            "amd-smi-version/"
            + ("amdsmi-changelog-rocm6.1.0.txt" if odd else "oci-8xmi300x-rocm6.1.2.txt")
        )
    if args == ["static", "--json"]:
        show(
            "amd-smi-static/"
            + ("rx6600-list-rocm6.x.json" if odd else "mi210-gpu_data-rocm6.4.json")
        )
    if args == ["metric", "--json"]:
        show("amd-smi-metric/rx6600-list-rocm6.x.json")
    if args == ["firmware"]:
        show("amd-smi-firmware/mi300x-gpu0-rocm-blog-2024-09.txt")
    if args == ["xgmi"]:
        show("amd-smi-xgmi/mi300-class-8gpu-38Gbps-transferbench-faq.txt")
elif tool == "rocm-smi":
    if args == ["-a"]:
        show("rocm-smi/mi300x-oam-4gpu-vf-driver6.7.0-a.txt")
elif tool == "npu-smi":
    if args == ["info"]:
        show(
            "npu-smi-info/"
            + (
                "910b3-25.3.rc1.b061-eight-npus-idle.txt"
                if odd
                else "910b2-23.0.7-eight-npus-idle.txt"
            )
        )
    if len(args) >= 5 and args[:2] == ["info", "-i"] and args[-2] == "-t":
        chip = " -c 0" if "-c" in args else ""
        section(
            "npu-smi-detail/huawei-doc-npu0-collection-example.txt",
            f"npu-smi info -i 0{chip} -t {args[-1]}",
        )
elif tool == "hccn_tool" and len(args) == 4 and args[0] == "-i" and args[3] == "-g":
    section("hccn-tool/huawei-doc-device0-collection-example.txt", f"hccn_tool -i 0 {args[2]} -g")
sys.exit(2)
