"""``aibench check RUN_DIR``: re-judge the stored results of a run.

With no options it judges the run again from its own record alone (aibench/judge.py):
the spec's text, the suite's steps, the inventory, the instant it was judged "as of"
(waivers are judged on that day) and the stored history verdicts with their baselines,
all kept in run.json. So it reproduces the stored verdicts exactly, wherever the run
directory was copied to and whatever became of the spec file since. It never loads a
spec by name or from the path it once had.

A judgement on another basis is a *new judgement*, labelled so: ``--spec NAME|FILE``
whose sha256 differs from the stored one, ``--as-of now|ISO`` (waivers judged on
another day), ``--history DB`` (history verdicts recomputed against a database; a
stored one that the database cannot judge is MISSING with the reason). A run stored
before its inputs were recorded needs ``--spec``.

Prints one line per verdict (the check's name says its origin: ``consistency.*``,
``inventory.*``, ``regression:*``, ``*.coverage``; ``--format json`` gives ``origin``),
the checks that do not apply, the fault-localization suspects of the pairwise network
results, and exits 0 (every check PASS, WARN or WAIVED) or 1. run.json is rewritten
only with ``--write``: the judgement becomes the run's verdict, the run's record of
judgements keeps every earlier one, and the reports and manifest are rendered again.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from aibench.commands import Command
from aibench.errors import EXIT_CHECKS_FAILED, EXIT_OK

EPILOG = """\
examples:
  aibench check runs/20261202-101500-acceptance
  aibench check runs/20261202-101500-acceptance --as-of now
  aibench check runs/20261202-101500-acceptance --spec h100-ndr
  aibench check runs/20261202-101500-acceptance --spec my-spec.yaml --write
  aibench check runs/20261202-101500-nightly --history runs/history.sqlite
  aibench check runs/20261202-101500-acceptance --format json
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory written by aibench run")
    p.add_argument(
        "--spec",
        metavar="NAME|FILE",
        help="judge with this spec (default: the copy in the run's record)",
    )
    p.add_argument(
        "--as-of",
        metavar="now|ISO",
        help="judge as of this instant (waivers on its day; default: the stored instant)",
    )
    p.add_argument(
        "--write",
        action="store_true",
        help="store the judgement in run.json (earlier verdicts kept in its judgements)",
    )
    p.add_argument(
        "--history",
        metavar="DB",
        help="recompute the history verdicts against this database (default: carry them over)",
    )
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    p.add_argument("--all", action="store_true", help="also list the PASS verdicts")


def _fmt_observed(v: object) -> str:
    from aibench.model import Verdict

    assert isinstance(v, Verdict)
    if v.observed is not None:
        return f"{v.observed:.4g} {v.unit}".strip()
    return v.observed_text


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from aibench.errors import UserError
    from aibench.judge import parse_instant, rejudge
    from aibench.store import load_run
    from aibench.thresholds import load_spec

    run_dir = Path(args.run_dir)
    if not run_dir.exists():
        raise UserError(f"{run_dir}: no such run directory")
    if not run_dir.is_dir():
        run_dir = run_dir.parent
    the_run = load_run(run_dir)
    judgement = rejudge(
        the_run,
        run_dir,
        spec=load_spec(args.spec) if args.spec else None,
        history_db=Path(args.history) if args.history else None,
        now=parse_instant(args.as_of) if args.as_of else None,
    )
    if args.format == "json":
        _print_json(judgement)
    else:
        _print_text(judgement, the_run.id, show_pass=args.all)
    if args.write:
        _write(the_run, judgement, run_dir)
    elif judgement.label:
        print("not stored: --write makes it the run's verdict", file=sys.stderr)
    return EXIT_CHECKS_FAILED if judgement.failing else EXIT_OK


def _print_json(judgement: Any) -> None:
    json.dump(
        {
            "spec": judgement.spec,
            "spec_sha256": judgement.spec_sha256,
            "as_of": judgement.as_of,
            "label": judgement.label,
            "outcome": judgement.outcome.value,
            "history": judgement.history_text(),
            "origins": judgement.by_origin(),
            "verdicts": [v.to_dict() for v in judgement.verdicts],
            "notes": list(judgement.notes),
            "suspects": [dict(s) for s in judgement.suspects],
        },
        sys.stdout,
        indent=1,
    )
    print()


def _print_text(judgement: Any, run_id: str, *, show_pass: bool) -> None:
    if judgement.label:
        print(f"NEW     {judgement.label}")
    for v in judgement.verdicts:
        if v.outcome.value == "PASS" and not show_pass and not v.reason:
            continue
        subject = "+".join(v.subject) or "-"
        print(
            f"{v.outcome.value:<7} {v.check:<32} {subject:<24} {_fmt_observed(v):>16}  "
            f"{v.expected}  {v.reason}".rstrip()
        )
    summary = ", ".join(f"{n} {k}" for k, n in judgement.counts().items())
    for line in judgement.notes:
        print(f"NOTE    {line}")
    for s in judgement.suspects:
        print(f"SUSPECT {s.get('tool', '')}: {s.get('text', '')}")
    origins = ", ".join(f"{k} {n}" for k, n in judgement.by_origin().items())
    print(f"judged: {origins or 'no verdict'}; {judgement.history_text()}; as of {judgement.as_of}")
    word = "FAIL" if judgement.failing else "PASS"
    print(f"{word}: {run_id} against {judgement.spec} ({summary})")


def _write(the_run: Any, judgement: Any, run_dir: Any) -> None:
    """The judgement as the run's verdict: run.json, then the reports and manifest."""
    from aibench import reports
    from aibench.judge import record
    from aibench.store import save_run

    judged = record(the_run, judgement, "aibench check --write")
    save_run(judged, run_dir)
    reports.write_all(judged, run_dir)
    print(f"stored in {run_dir / 'run.json'}; reports and manifest rendered again", file=sys.stderr)


COMMAND = Command(
    name="check",
    help="re-judge a stored run against a spec (prints verdicts; --write stores them)",
    add_arguments=add_arguments,
    run=run,
    description=__doc__ or "",
    epilog=EPILOG,
    order=35,
)
