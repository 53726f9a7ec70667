"""``aibench report RUN_DIR``: re-render the reports of a stored run, without rerunning.

Reads ``RUN_DIR/run.json``; writes report.html, junit.xml, summary.md, metrics.prom and a
fresh manifest.sha256.

``--spec P`` re-judges the run first, the way ``aibench run`` judged it (aibench/judge.py:
the spec's checks and coverage, consistency, inventory, and the stored history verdicts
carried over, or recomputed with ``--history DB``; as of the stored instant), and
renders the reports from that judgement (labelled a new judgement when the spec's sha256
differs from the stored one). With ``--write`` it becomes the run's verdict: run.json,
the reports and the manifest are written in RUN_DIR, and the run's record of judgements
keeps every verdict given before. Without ``--write`` the run directory is left as it
is: the reports go to ``--out DIR``, or summary.md to standard output, and say that
their judgement is not stored.

``--history DB`` is the history database, spelled as ``aibench run`` and ``aibench check``
spell it (``--history-db DB`` is its old, deprecated spelling). ``--trend RUN_DIR``
(repeatable) adds earlier runs for the trend plots; ``--history RUN_DIR``, its old spelling,
still does that for a directory, with a note on stderr. ``--sign KEY``
signs the new manifest with an OpenSSH key (``ssh-keygen -Y sign``).

A run directory written into (RUN_DIR, or an ``--out`` that is a run directory) is checked
against its manifest first; one that does not match, or holds a link, is refused (exit 4),
and an ``--out`` inside a run directory is refused (exit 2). Re-rendering a signed run keeps
its signature when the manifest comes out byte for byte the same; when a file changed (a
new judgement in run.json), the signature is removed and a line says so.

Exit code: 0 when the (re-)judged run passes, 1 when a check fails, 2 for a bad argument,
4 for a run directory that does not match its manifest.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from aibench.commands import Command
from aibench.errors import UserError
from aibench.judge import exit_status

EPILOG = """\
examples:
  aibench report runs/20261202-101500-acceptance
  aibench report runs/20261202-101500-acceptance --spec h100-ndr            # re-judge, show
  aibench report runs/20261202-101500-acceptance --spec h100-ndr --out /tmp/rejudged
  aibench report runs/20261202-101500-acceptance --spec h100-ndr --write    # and store it
  aibench report RUN_DIR --spec default --history runs/history.sqlite     # recompute history
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
        "--out",
        metavar="DIR",
        help="write the reports here instead of RUN_DIR (with --spec and neither --out nor "
        "--write: summary.md to standard output); RUN_DIR changes only without --spec "
        "or with --write",
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
    from aibench.store import load_run

    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: not a directory", hint="give a run directory")
    db, trend = _history_args(args)
    if (args.write or db) and not args.spec:
        raise UserError("--write and --history go with --spec (the spec to judge with)")
    if args.out and args.write:
        raise UserError("--out and --write: --write stores the judgement in RUN_DIR itself")
    out_dir = _target(run_dir, args)
    had_signature = out_dir is not None and (out_dir / manifest.SIGNATURE).exists()
    the_run = load_run(run_dir)
    if args.spec:
        the_run = _rejudge(the_run, run_dir, args, db)
    history = [load_run(h) for h in trend]
    if out_dir is None:
        from aibench.reports import i18n, markdown

        sys.stdout.write(markdown.render(the_run, i18n.check(args.lang)))
        return exit_status(the_run.outcome)
    written = reports.write_all(the_run, out_dir, history=history, lang=args.lang)
    for name in written:
        print(f"wrote {out_dir / name}")
    note = manifest.signature_note(out_dir, had_signature)
    if note:
        print(note)
    if args.sign:
        print(f"wrote {manifest.sign(out_dir, Path(args.sign))}")
    print(f"{the_run.outcome.value}: {out_dir / reports.REPORT}")
    return exit_status(the_run.outcome)


def _target(run_dir: Path, args: argparse.Namespace) -> Path | None:
    """Where the reports go (None: summary.md to standard output), checked first: a run
    directory written into (RUN_DIR itself, or an ``--out`` that is or lies in one) must
    match its manifest, or nothing is written (exit 4)."""
    from aibench import manifest

    out_dir: Path | None = run_dir if (not args.spec or args.write) else None
    if args.out:
        out_dir = Path(args.out)
    if out_dir is None:
        return None
    if out_dir.exists() and not out_dir.is_dir():
        raise UserError(f"--out {out_dir}: not a directory")
    if out_dir == run_dir:
        manifest.guard(run_dir)
    else:
        manifest.writing_into(out_dir, "--out")
    return out_dir


def _rejudge(the_run: Any, run_dir: Path, args: argparse.Namespace, db: Path | None) -> Any:
    """The run with its judgement against ``--spec`` (stored in run.json with --write)."""
    from aibench.judge import record, rejudge
    from aibench.store import save_run
    from aibench.thresholds import load_spec

    spec = load_spec(args.spec)
    judgement = rejudge(the_run, run_dir, spec=spec, history_db=db)
    by = "aibench report --write" if args.write else "aibench report (not stored)"
    judged = record(the_run, judgement, by)
    if args.write:
        save_run(judged, run_dir)
        print(f"stored the judgement with {spec.name} in {run_dir / 'run.json'}")
        return judged
    note = (
        f"judged with {spec.name} by aibench report; not stored in run.json "
        "(its verdicts are the run's own): --write stores it"
    )
    return judged.replace(notes=(*judged.notes, note))


COMMAND = Command(
    name="report",
    help="re-render the reports (HTML, JUnit, Markdown, Prometheus) of a stored run",
    add_arguments=add_arguments,
    run=run,
    description=__doc__ or "",
    epilog=EPILOG,
    order=40,
)
