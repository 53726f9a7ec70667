"""``aibench check RUN_DIR --spec FILE``: re-judge the stored results of a run.

Loads RUN_DIR/run.json and judges it the way ``aibench run`` did (aibench/judge.py):
the spec's checks (a built-in profile name or a path; default: the spec the run was judged
with) and their coverage, the fleet's consistency, the inventory's declarations, and the
history: recomputed with ``--history DB``, else the run's stored history verdicts carried
over. Prints one line per verdict (the check's name says its origin: ``consistency.*``,
``inventory.*``, ``regression:*``, ``*.coverage``; ``--format json`` gives ``origin``),
the checks that do not apply (a role no node has) and the fault-localization suspects of
the pairwise network results, and exits 0 (every check PASS, WARN or WAIVED) or 1.

run.json is rewritten only with ``--write``: the new verdicts become the run's, and the
run's record of judgements keeps who judged, when, with which spec (sha256) and the
verdicts every earlier judgement gave.
"""

from __future__ import annotations

import argparse
import json
import sys

from aibench.commands import Command
from aibench.errors import EXIT_CHECKS_FAILED, EXIT_OK

EPILOG = """\
examples:
  aibench check runs/20261202-101500-acceptance
  aibench check runs/20261202-101500-acceptance --spec h100-ndr
  aibench check runs/20261202-101500-acceptance --spec my-spec.yaml --write
  aibench check runs/20261202-101500-nightly --history runs/history.sqlite
  aibench check runs/20261202-101500-acceptance --format json
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory written by aibench run")
    p.add_argument("--spec", metavar="NAME|FILE", help="spec profile or YAML path")
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
    from aibench.judge import judge_run, partial_run, record, stored_spec
    from aibench.store import load_run, save_run
    from aibench.thresholds import load_spec

    run_dir = Path(args.run_dir)
    if not run_dir.exists():
        raise UserError(f"{run_dir}: no such run directory")
    if not run_dir.is_dir():
        run_dir = run_dir.parent
    the_run = load_run(run_dir)
    spec = load_spec(args.spec) if args.spec else stored_spec(run_dir, the_run)
    history = Path(args.history) if args.history else None
    if history is not None and not history.is_file():
        raise UserError(f"--history {history}: no such history database")
    judgement = judge_run(the_run, spec, history_db=history, partial=partial_run(run_dir))
    verdicts = judgement.verdicts
    failing = judgement.failing
    if args.format == "json":
        json.dump(
            {
                "spec": spec.name,
                "spec_sha256": spec.sha256,
                "outcome": judgement.outcome.value,
                "history": judgement.history_text(),
                "origins": judgement.by_origin(),
                "verdicts": [v.to_dict() for v in verdicts],
                "notes": list(judgement.notes),
                "suspects": [dict(s) for s in judgement.suspects],
            },
            sys.stdout,
            indent=1,
        )
        print()
    else:
        for v in verdicts:
            if v.outcome.value == "PASS" and not args.all and not v.reason:
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
        print(f"judged: {origins or 'no verdict'}; {judgement.history_text()}")
        print(f"{'FAIL' if failing else 'PASS'}: {the_run.id} against {spec.name} ({summary})")
    if args.write:
        save_run(record(the_run, judgement, "aibench check --write"), run_dir)
        print(f"stored in {run_dir / 'run.json'}", file=sys.stderr)
    return EXIT_CHECKS_FAILED if failing else EXIT_OK


COMMAND = Command(
    name="check",
    help="re-judge a stored run against a spec (prints verdicts; --write stores them)",
    add_arguments=add_arguments,
    run=run,
    description=__doc__ or "",
    epilog=EPILOG,
    order=35,
)
