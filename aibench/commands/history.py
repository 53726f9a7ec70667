"""``aibench history``: the runs in the history database, trends and regressions.

Lists the recorded runs, then per series (tool, metric, step, dims, nodes) the trend of
medians, and the level shifts found by the noise-aware rule (see aibench/history.py).
With ``--regressions`` it judges the latest run (or ``--run``) against its baseline
(``--baseline RUN_ID`` = the handover run, else the last good runs) and exits 1 when a
regression is found. Record a run with ``aibench run --history DB`` or ``--record RUN_DIR``;
a suite with ``settings.history: true`` (nightly) records into ``<output-dir>/history.sqlite``
by itself, which is this command's default database for the default output directory.
"""

from __future__ import annotations

import argparse

from aibench.commands import Command
from aibench.errors import EXIT_CHECKS_FAILED, EXIT_OK

DEFAULT_DB = "runs/history.sqlite"

EPILOG = """\
examples:
  aibench history --db runs/history.sqlite
  aibench history --record runs/20261202-101500-acceptance
  aibench history --regressions --baseline 20261101-090000-acceptance
  aibench history --series fio
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--db", default=DEFAULT_DB, metavar="PATH", help=f"default {DEFAULT_DB}")
    p.add_argument(
        "--record",
        metavar="RUN_DIR",
        action="append",
        default=[],
        help="record a run directory first (repeatable)",
    )
    p.add_argument("--series", metavar="TEXT", help="only series containing this text")
    p.add_argument(
        "--regressions",
        action="store_true",
        help="judge one run against its baseline; exit 1 on a regression",
    )
    p.add_argument("--run", metavar="RUN_ID", help="the run to judge (default: the latest)")
    p.add_argument("--baseline", metavar="RUN_ID", help="the handover run to compare with")
    p.add_argument("--window", type=int, default=10, help="last k good runs (default 10)")
    p.add_argument("--min-history", type=int, default=5, help="fewest baseline runs (5)")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from aibench.history import History
    from aibench.store import load_run

    h = History(Path(args.db))
    if not args.record and not h.path.exists():  # reading never creates a database
        print(f"0 run(s): no history database at {args.db} (--record RUN_DIR makes one)")
        return EXIT_OK
    for d in args.record:
        recorded = load_run(Path(d))
        print(f"recorded {recorded.id}: {h.record(recorded)} series")
    runs = h.runs()
    if args.regressions:
        findings, notes = h.regressions(
            args.run, baseline=args.baseline, window=args.window, min_history=args.min_history
        )
        if args.series:
            findings = [f for f in findings if args.series in f.series]
        for f in findings:
            print(f.text)
        for n in notes[:20]:
            print(f"note: {n}")
        bad = [f for f in findings if f.regression]
        print(f"{len(bad)} regression(s), {len(findings) - len(bad)} improvement(s)")
        return EXIT_CHECKS_FAILED if bad else EXIT_OK
    print(f"{len(runs)} run(s) in {args.db}")
    for r in runs:
        gen = " (generated)" if r.generated else ""
        print(f"  {r.id:<36} {r.started:<22} {r.suite:<12} {r.spec:<14} {r.outcome}{gen}")
    for key, unit in h.series():
        if args.series and args.series not in key:
            continue
        pts = h.points(key)
        trend = " ".join(f"{p.median:.4g}" for p in pts[-12:])
        print(f"{key} [{unit}]: {trend}")
        for f in h.scan(key, window=args.window, min_history=args.min_history):
            print(f"    {f.text}")
    return EXIT_OK


COMMAND = Command(
    name="history",
    help="list recorded runs, per-metric trends and regressions (SQLite history)",
    add_arguments=add_arguments,
    run=run,
    description=__doc__ or "",
    epilog=EPILOG,
    order=55,
)
