"""A REPLAY of a published elbencho output, for tests only (elbencho is not packaged for
Debian and was not built here).

Started in place of ``elbencho`` (a wrapper script execs this file with ``--fixture
FILE``, then the argv the runner built). It accepts only the options of elbencho's source
at commit d085b19 (tests/fixtures/tool-help/elbencho/options_d085b19.txt): a flag alone,
an option that takes a value with it (``-t 8``, ``--block=1m``), then the paths; anything
else, or a missing value, is an error (exit 2). It checks that the path it is given
exists (elbencho refuses a missing one), prints the captured output and exits 0.

It measures nothing: the numbers are the captured ones.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

OPTIONS = (
    Path(__file__).resolve().parent.parent
    / "fixtures"
    / "tool-help"
    / "elbencho"
    / "options_d085b19.txt"
)


def options(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, kind = line.split()
        out[name] = kind
    return out


def check(argv: list[str], known: dict[str, str]) -> str:
    """'' when elbencho would read ``argv`` (options, then paths), else why not."""
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        name, eq, _value = argv[i].partition("=")
        if name not in known:
            return f"unknown option {argv[i]!r}"
        if known[name] == "flag" or eq:
            i += 1
        elif i + 1 >= len(argv):
            return f"option {name} needs a value"
        else:
            i += 2
    if i == len(argv):
        return "no path"
    return ""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixture", required=True)
    ns, rest = ap.parse_known_args()
    why = check(rest, options(OPTIONS.read_text(encoding="utf-8")))
    if why:
        print(f"replay: {why} (elbencho d085b19)", file=sys.stderr)
        return 2
    path = rest[-1]
    if not os.path.exists(path) and not os.path.isdir(os.path.dirname(path)):
        print(f"replay: {path} does not exist", file=sys.stderr)
        return 1
    print(f"replay args={' '.join(rest)}", file=sys.stderr, flush=True)
    sys.stdout.write(Path(ns.fixture).read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
