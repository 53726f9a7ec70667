"""``aibench check RUN_DIR --spec FILE``: re-judge the stored results of a run.

Loads RUN_DIR/run.json, judges its measurements and facts with the spec (a built-in
profile name or a path; default: the spec the run was judged with), prints one line per
verdict, the checks that do not apply (a role no node has), and the fault-localization
suspects of the pairwise network results (comparable series only: see
aibench/thresholds/localize.py), and exits 0 (every check PASS, WARN or WAIVED) or 1.
run.json is rewritten only with ``--write`` (verdicts, suspects and a note).
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
  aibench check runs/20261202-101500-acceptance --format json
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory written by aibench run")
    p.add_argument("--spec", metavar="NAME|FILE", help="spec profile or YAML path")
    p.add_argument("--write", action="store_true", help="store the new verdicts in run.json")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    p.add_argument("--all", action="store_true", help="also list the PASS verdicts")


def _fmt_observed(v: object) -> str:
    from aibench.model import Verdict

    assert isinstance(v, Verdict)
    if v.observed is not None:
        return f"{v.observed:.4g} {v.unit}".strip()
    return v.observed_text


def run(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime
    from pathlib import Path

    from aibench.errors import UserError
    from aibench.store import load_run, save_run
    from aibench.thresholds import judge, load_spec, not_applicable
    from aibench.thresholds.localize import suspects_of

    run_dir = Path(args.run_dir)
    if not run_dir.exists():
        raise UserError(f"{run_dir}: no such run directory")
    the_run = load_run(run_dir)
    spec_name = args.spec or the_run.spec or "default"
    spec = load_spec(spec_name)
    verdicts = judge(spec, the_run)
    inapplicable = not_applicable(spec, the_run)
    suspects = suspects_of(the_run)
    records = tuple(s.to_dict(tool, metric) for tool, metric, s in suspects)
    failing = any(v.outcome.failing for v in verdicts)
    if args.format == "json":
        json.dump(
            {
                "spec": spec.name,
                "spec_sha256": spec.sha256,
                "outcome": "FAIL" if failing else "PASS",
                "verdicts": [v.to_dict() for v in verdicts],
                "not_applicable": inapplicable,
                "suspects": list(records),
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
        counts: dict[str, int] = {}
        for v in verdicts:
            counts[v.outcome.value] = counts.get(v.outcome.value, 0) + 1
        summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
        for line in inapplicable:
            print(f"NOTE    {line}")
        for tool, _, s in suspects:
            print(f"SUSPECT {tool}: {s.text}")
        print(f"{'FAIL' if failing else 'PASS'}: {the_run.id} against {spec.name} ({summary})")
    if args.write:
        when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        save_run(
            the_run.replace(
                verdicts=tuple(verdicts),
                suspects=records,
                spec=spec.name,
                spec_sha256=spec.sha256,
                notes=(
                    *the_run.notes,
                    *(n for n in inapplicable if n not in the_run.notes),
                    f"re-judged with {spec.name} at {when} by aibench check",
                ),
            ),
            run_dir if run_dir.is_dir() else run_dir.parent,
        )
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
