"""A REPLAY of a real captured nccl-tests output, for tests only (no GPU on the test bed).

Started in place of an nccl-tests binary (a small wrapper script named like the binary,
e.g. ``all_reduce_perf``, execs this file with ``--fixture FILE --binary NAME``, then the
argv the runner built). It:

* accepts only the options of nccl-tests 2.17.10, read from the "Arguments" list of its
  README at that tag (tests/fixtures/tool-help/nccl-tests/, source in SOURCES.md): a short
  (``-b 32M``) or long (``--minbytes 32M``, ``--minbytes=32M``) option the list names,
  each with its value; anything else, or a missing value, is an error (exit 2), so a
  runner that builds an option the tool lacks fails its tests;
* on rank 0 (``OMPI_COMM_WORLD_RANK`` or ``SLURM_PROCID``; 0 when run alone) prints
  the block of the captured log whose ``# Collective test starting:`` line names the
  binary (the whole log when it names none), and writes the JSON fixture to
  the ``-J`` path when one is given;
* on every rank writes one line to stderr: ``replay rank R/N net N NCCL_DEBUG=... args=...``
  (``net`` is the rank's network namespace) so tests can see which ranks ran where and
  which environment reached them.

It measures nothing: the numbers are the captured ones.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from _rank import netns, rank_and_size

HELP = (
    Path(__file__).resolve().parent.parent
    / "fixtures"
    / "tool-help"
    / "nccl-tests"
    / "README_arguments_v2.17.10.md"
)
# one README entry: `-b,--minbytes <min size in bytes>` (every nccl-tests option takes a value)
_ENTRY = re.compile(r"`-([A-Za-z]),--([A-Za-z_]+) <")


def options(text: str) -> dict[str, str]:
    """'-b' and '--minbytes' -> 'b', for every option the argument list names."""
    out: dict[str, str] = {}
    for short, long in _ENTRY.findall(text):
        out[f"-{short}"] = short
        out[f"--{long}"] = short
    return out


def read_args(argv: list[str], known: dict[str, str] | None = None) -> dict[str, str]:
    """The options of ``argv`` by short letter; exit 2 on one nccl-tests does not have."""
    known = options(HELP.read_text(encoding="utf-8")) if known is None else known
    opts: dict[str, str] = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        name, eq, inline = a.partition("=") if a.startswith("--") else (a, "", "")
        if name not in known:
            print(f"replay: unknown option {a!r} (not in nccl-tests 2.17.10)", file=sys.stderr)
            sys.exit(2)
        if eq:
            opts[known[name]] = inline
            i += 1
            continue
        if i + 1 >= len(argv):
            print(f"replay: option {a} needs a value", file=sys.stderr)
            sys.exit(2)
        opts[known[name]] = argv[i + 1]
        i += 2
    return opts


def block(text: str, binary: str) -> str:
    marker = f"# Collective test starting: {binary}"
    if marker not in text:
        return text
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    keep = False
    for i, line in enumerate(lines):
        starts_here = i + 1 < len(lines) and lines[i + 1].startswith("# Collective test starting:")
        if line.startswith("# nccl-tests version") and starts_here:
            keep = lines[i + 1].startswith(marker)
        if keep:
            out.append(line)
        if line.startswith("# Collective test concluded:") and keep:
            keep = False
    return "".join(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--json-fixture")
    ap.add_argument("--binary", required=True)
    ap.add_argument("--exit-code", type=int, default=0)
    ns, rest = ap.parse_known_args()
    opts = read_args(rest)
    rank, size = rank_and_size()
    print(
        f"replay rank {rank}/{size} net {netns()} "
        f"NCCL_DEBUG={os.environ.get('NCCL_DEBUG', '')} args={' '.join(rest)}",
        file=sys.stderr,
        flush=True,
    )
    if rank == 0:
        sys.stdout.write(block(Path(ns.fixture).read_text(encoding="utf-8"), ns.binary))
        sys.stdout.flush()
        if "J" in opts and ns.json_fixture:
            Path(opts["J"]).write_text(Path(ns.json_fixture).read_text(encoding="utf-8"))
    return int(ns.exit_code)


if __name__ == "__main__":
    sys.exit(main())
