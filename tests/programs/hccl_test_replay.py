"""A REPLAY of a real published hccl_test output, for tests only (no NPU on the test bed).

Started in place of an hccl_test binary (a wrapper script named like the binary, e.g.
``all_reduce_test``, execs this file with ``--fixture FILE``, then the argv the runner
built). It:

* checks the hccl_test options it is given the way the tool takes them (``-p -b -e -f -n
  -w -c -d -o -r``, each with a value; anything else is an error, exit 2), so the
  runner's argv is exercised;
* on rank 0 (``OMPI_COMM_WORLD_RANK``; 0 when run alone) prints the captured output, as
  hccl_test prints its table on one rank;
* on every rank writes one line to stderr: ``replay rank R/N net NS HCCL_...=... args=...``
  (``net`` is the rank's network namespace) so tests see which ranks ran where and which
  environment reached them.

It measures nothing: the numbers are the published ones.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from _rank import netns

_VALUED = set("pbefnwcdor")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--exit-code", type=int, default=0)
    own, rest = ap.parse_known_args()
    opts: dict[str, str] = {}
    i = 0
    while i < len(rest):
        a = rest[i]
        if len(a) != 2 or a[0] != "-" or a[1] not in _VALUED or i + 1 >= len(rest):
            print(f"replay: bad option {a!r}", file=sys.stderr)
            return 2
        opts[a[1]] = rest[i + 1]
        i += 2
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    size = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    hccl = " ".join(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("HCCL_"))
    print(f"replay rank {rank}/{size} net {netns()} {hccl} args={rest}", file=sys.stderr)
    if rank == 0:
        sys.stdout.write(Path(own.fixture).read_text())
        sys.stdout.flush()
    return own.exit_code


if __name__ == "__main__":
    sys.exit(main())
