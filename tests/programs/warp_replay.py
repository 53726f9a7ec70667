"""A REPLAY of a published warp output, for tests only (warp is not packaged for Debian
and no MinIO server runs here).

Started in place of ``warp`` (a wrapper script execs this file with ``--fixture FILE``,
then the argv the runner built). It:

* accepts only the flags of the benchmark it is asked for, as warp's source defines them
  at commit d06f8e6 (tests/fixtures/tool-help/warp/flags_d06f8e6.txt): ``--name value``
  or ``--name=value`` for a flag that takes a value, ``--name`` for a boolean one; an
  unknown benchmark or flag, or a missing value, is an error (exit 2);
* refuses ``--access-key``/``--secret-key`` on the command line (the runner must pass the
  keys in ``WARP_ACCESS_KEY``/``WARP_SECRET_KEY``, which warp reads) and reports on
  stderr whether they reached it: ``replay keys: ACCESS_KEY/SECRET_KEY`` lengths only;
* prints the captured output and exits 0.

It measures nothing: the numbers are the captured ones.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

FLAGS = (
    Path(__file__).resolve().parent.parent / "fixtures" / "tool-help" / "warp" / "flags_d06f8e6.txt"
)


def flags(text: str) -> dict[str, dict[str, str]]:
    """benchmark -> flag name -> 'flag' | 'value'."""
    out: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        cmd, name, kind = line.split()
        out.setdefault(cmd, {})[name] = kind
    return out


def check(argv: list[str], known: dict[str, dict[str, str]]) -> str:
    """'' when warp would read ``argv`` (benchmark first), else why it refuses it."""
    if not argv or argv[0] not in known:
        return f"unknown benchmark {argv[0] if argv else ''!r}"
    table = known[argv[0]]
    i = 1
    while i < len(argv):
        name, eq, _value = argv[i].removeprefix("--").partition("=")
        if not argv[i].startswith("--") or name not in table:
            return f"unknown flag {argv[i]!r}"
        if name in ("access-key", "secret-key"):
            return f"a key on the command line: {argv[i].split('=')[0]}"
        if table[name] == "flag" or eq:
            i += 1
        elif i + 1 >= len(argv):
            return f"flag --{name} needs a value"
        else:
            i += 2
    return ""


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fixture", required=True)
    ns, rest = ap.parse_known_args()
    why = check(rest, flags(FLAGS.read_text(encoding="utf-8")))
    if why:
        print(f"replay: {why} (warp d06f8e6)", file=sys.stderr)
        return 2
    ak, sk = os.environ.get("WARP_ACCESS_KEY", ""), os.environ.get("WARP_SECRET_KEY", "")
    print(f"replay keys: {len(ak)}/{len(sk)} args={' '.join(rest)}", file=sys.stderr, flush=True)
    sys.stdout.write(Path(ns.fixture).read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
