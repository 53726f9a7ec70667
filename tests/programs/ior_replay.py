"""A REPLAY of a real captured IOR or mdtest output, for tests only (neither tool is
packaged for Debian, and the test bed has no parallel file system client to point it at).

Started in place of ``ior`` or ``mdtest`` (a wrapper script of that name execs this file
with ``--binary ior|mdtest --fixture FILE``, then the argv the runner built). It:

* accepts only the options of the real tool's own option list, ``ior -h`` / ``mdtest -h``
  of IOR 4.1.0+dev (tests/fixtures/tool-help/ior/, source in SOURCES.md): a flag of a
  ``Flags`` section alone, an option of an ``Optional arguments`` section with its value
  (``-t 2m`` or ``-t=2m``, ``--name=value``); anything else, or a missing value, is an
  error (exit 2), so a runner that builds an option the tool lacks fails its tests;
* on rank 0 (``OMPI_COMM_WORLD_RANK`` or ``SLURM_PROCID``; 0 when run alone) prints the
  captured output, and exits with ``--exit-code``;
* on every rank writes one line to stderr: ``replay rank R/N net N args=...`` (``net``
  is the rank's network namespace, so a test sees which ranks ran on which host).

It measures nothing: the numbers are the captured ones.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from _rank import netns, rank_and_size

HELP_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "tool-help" / "ior"
HELP = {"ior": HELP_DIR / "ior-h_4.1.0dev.txt", "mdtest": HELP_DIR / "mdtest-h_4.1.0dev.txt"}
# "  -c, --collective   ...", "  -a=POSIX   ...", "  --randomPrefill=0 ...", "  -O key=1 ..."
_ENTRY = re.compile(r"^  (-[A-Za-z])?(?:, )?(--[A-Za-z][\w.-]*?)?(?==|\s)")


def options(text: str) -> tuple[set[str], set[str]]:
    """(flags, options that take a value) of a ``-h`` listing."""
    flags: set[str] = set()
    valued: set[str] = set()
    section = flags
    for line in text.splitlines():
        if line.startswith("Flags"):
            section = flags
        elif line.startswith("Optional arguments"):
            section = valued
        elif m := _ENTRY.match(line):
            section.update(name for name in m.groups() if name)
    return flags, valued


def check(argv: list[str], flags: set[str], valued: set[str]) -> str:
    """'' when every argument is one the tool reads, else the reason it refuses one."""
    i = 0
    while i < len(argv):
        name, eq, _inline = argv[i].partition("=")
        if (name in flags and not eq) or (name in valued and eq):
            i += 1
        elif name in valued:
            if i + 1 >= len(argv):
                return f"option {name} needs a value"
            i += 2
        else:
            return f"unknown option {argv[i]!r}"
    return ""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", choices=sorted(HELP), required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--exit-code", type=int, default=0)
    ns, rest = ap.parse_known_args()
    flags, valued = options(HELP[ns.binary].read_text(encoding="utf-8"))
    why = check(rest, flags, valued)
    if why:
        print(f"replay: {why} (not in {ns.binary} -h of IOR 4.1.0+dev)", file=sys.stderr)
        return 2
    rank, size = rank_and_size()
    line = f"replay rank {rank}/{size} net {netns()} args={' '.join(rest)}"
    print(line, file=sys.stderr, flush=True)
    if rank == 0:
        sys.stdout.write(Path(ns.fixture).read_text(encoding="utf-8"))
        sys.stdout.flush()
    return int(ns.exit_code)


if __name__ == "__main__":
    sys.exit(main())
