"""``aibench report RUN_DIR``: re-render the reports of a stored run, without rerunning.

Reads ``RUN_DIR/run.json``; writes report.html, junit.xml, summary.md, metrics.prom and a
fresh manifest.sha256.

``--spec P`` re-judges the run first, the way ``aibench run`` judged it (aibench/judge.py:
the spec's checks and coverage, consistency, inventory, and the stored history verdicts
carried over, or recomputed with ``--history DB``), and renders the reports from that
judgement. run.json, the record of the run, is rewritten only with ``--write``; then the
run's record of judgements keeps who judged, when, with which spec, and every verdict
given before. Without ``--write`` the reports say that their judgement is not stored.

``--history DB`` is the history database, spelled as ``aibench run`` and ``aibench check``
spell it (``--history-db DB`` is its old, deprecated spelling). ``--trend RUN_DIR``
(repeatable) adds earlier runs for the trend plots; ``--history RUN_DIR``, its old spelling,
still does that for a directory, with a note on stderr. ``--sign KEY``
signs the new manifest with an OpenSSH key (``ssh-keygen -Y sign``). Exit code: 0 when the
(re-)judged run passes, 1 when a check fails, 2 for a bad argument.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from aibench.commands import Command
from aibench.errors import EXIT_CHECKS_FAILED, EXIT_OK, UserError

EPILOG = """\
examples:
  aibench report runs/20261202-101500-acceptance
  aibench report runs/20261202-101500-acceptance --spec h100-ndr            # re-judge, show
  aibench report runs/20261202-101500-acceptance --spec h100-ndr --write    # and store it
  aibench report RUN_DIR --spec nightly --history runs/history.sqlite     # recompute history
  aibench report RUN_DIR --trend runs/20261201-101500-acceptance --sign ~/.ssh/id_ed25519
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory written by aibench run")
    p.add_argument(
        "--spec",
        metavar="FILE",
        help="re-judge the run with this spec (file or profile name) before rendering",
    )
    p.add_argument(
        "--write",
        action="store_true",
        help="store the new judgement in run.json (earlier verdicts kept in its judgements)",
    )
    p.add_argument(
        "--history",
        metavar="DB",
        action="append",
        default=[],
        help="with --spec: recompute the history verdicts against this database",
    )
    p.add_argument("--history-db", metavar="DB", help=argparse.SUPPRESS)  # deprecated spelling
    p.add_argument(
        "--trend",
        metavar="RUN_DIR",
        action="append",
        default=[],
        help="an earlier run directory for the trend plots (repeatable)",
    )
    p.add_argument(
        "--sign", metavar="KEY", help="sign manifest.sha256 with this OpenSSH private key"
    )
    p.add_argument("--lang", choices=("en", "zh"), default="en", help="report language")


def _history_args(args: argparse.Namespace) -> tuple[Path | None, list[Path]]:
    """The history database and the trend run directories. ``--history`` names the
    database, as it does for ``run`` and ``check``; a directory given to it is the old
    spelling of ``--trend`` and ``--history-db`` the old spelling of ``--history``."""
    trend = [Path(t) for t in args.trend]
    db = Path(args.history_db) if args.history_db else None
    if args.history_db:
        print("aibench report: --history-db is deprecated; use --history DB", file=sys.stderr)
    for given in map(Path, args.history):
        if given.is_dir():
            print(
                f"aibench report: --history {given}: a run directory; --trend RUN_DIR adds "
                "it to the trend plots (--history RUN_DIR is deprecated)",
                file=sys.stderr,
            )
            trend.append(given)
        elif db is not None:
            raise UserError(f"--history {given}: one history database only (also {db})")
        else:
            db = given
    return db, trend


def run(args: argparse.Namespace) -> int:
    from aibench import manifest, reports
    from aibench.judge import judge_run, partial_run, record
    from aibench.store import load_run, save_run
    from aibench.thresholds import load_spec

    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: not a directory", hint="give a run directory")
    db, trend = _history_args(args)
    if (args.write or db) and not args.spec:
        raise UserError("--write and --history go with --spec (the spec to judge with)")
    the_run = load_run(run_dir)
    if args.spec:
        spec = load_spec(args.spec)
        if db is not None and not db.is_file():
            raise UserError(f"--history {db}: no such history database")
        judgement = judge_run(the_run, spec, history_db=db, partial=partial_run(run_dir))
        by = "aibench report --write" if args.write else "aibench report (not stored)"
        the_run = record(the_run, judgement, by)
        if args.write:
            save_run(the_run, run_dir)
            print(f"stored the judgement with {spec.name} in {run_dir / 'run.json'}")
        else:
            the_run = the_run.replace(
                notes=(
                    *the_run.notes,
                    f"judged with {spec.name} by aibench report; not stored in run.json "
                    "(its verdicts are the run's own): --write stores it",
                )
            )
    history = [load_run(h) for h in trend]
    written = reports.write_all(the_run, run_dir, history=history, lang=args.lang)
    for name in written:
        print(f"wrote {run_dir / name}")
    if args.sign:
        print(f"wrote {manifest.sign(run_dir, Path(args.sign))}")
    print(f"{the_run.outcome.value}: {run_dir / reports.REPORT}")
    return EXIT_CHECKS_FAILED if the_run.outcome.failing else EXIT_OK


COMMAND = Command(
    name="report",
    help="re-render the reports (HTML, JUnit, Markdown, Prometheus) of a stored run",
    add_arguments=add_arguments,
    run=run,
    description=__doc__ or "",
    epilog=EPILOG,
    order=40,
)
