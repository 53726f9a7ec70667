"""``aibench compare RUN_A RUN_B``: per-metric deltas between two runs, with significance.

RUN_A and RUN_B are run directories (or run ids with ``--db``). For every series present
in both (tool, metric, step, dims, nodes) it prints both medians, the delta, and whether
the delta is significant given the repeats' spread: |delta| > k × the larger scaled MAD
of the two repeat sets *and* above ``--min-rel``; with a single repeat on either side the
significance is "n/a". When key environment facts differ (driver, CUDA, NCCL, HCA
firmware, kernel, tool versions) it says so first: such a comparison is not
like-for-like. B's values are converted to A's unit where a series' unit changed between
the runs; a unit of another dimension is listed as "not compared" with both units.
"""

from __future__ import annotations

import argparse

from aibench.commands import Command
from aibench.errors import EXIT_OK

EPILOG = """\
examples:
  aibench compare runs/20261101-090000-acceptance runs/20261202-101500-acceptance
  aibench compare 20261101-090000-acceptance 20261202-101500-acceptance --db runs/history.sqlite
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_a", metavar="RUN_A")
    p.add_argument("run_b", metavar="RUN_B")
    p.add_argument("--db", metavar="PATH", help="read runs by id from this history database")
    p.add_argument("--k", type=float, default=3.0, help="significance: k × MAD (default 3)")
    p.add_argument("--min-rel", type=float, default=0.02, help="and at least this fraction")
    p.add_argument("--metric", metavar="TEXT", help="only series containing this text")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from aibench.thresholds.compare import compare_runs

    def get(ref: str):  # type: ignore[no-untyped-def]
        from aibench.store import load_run

        if Path(ref).exists() or not args.db:
            return load_run(Path(ref))
        from aibench.history import History

        return History(Path(args.db)).load_run(ref)

    a, b = get(args.run_a), get(args.run_b)
    result = compare_runs(a, b, k=args.k, min_rel=args.min_rel)
    print(f"A: {a.id}   B: {b.id}")
    if result.env_changes:
        print("environment differs (not a like-for-like comparison):")
        for line in result.env_changes:
            print(f"  {line}")
    for d in result.deltas:
        if args.metric and args.metric not in d.series:
            continue
        print(d.text)
    for line in result.refused:
        print(f"not compared: {line}")
    for s in result.only_a:
        print(f"only in A: {s}")
    for s in result.only_b:
        print(f"only in B: {s}")
    return EXIT_OK


COMMAND = Command(
    name="compare",
    help="per-metric deltas between two runs, with significance from the repeats",
    add_arguments=add_arguments,
    run=run,
    description=__doc__ or "",
    epilog=EPILOG,
    order=56,
)
