"""``aibench report RUN_DIR``: re-render the reports of a stored run, without rerunning.

Reads ``RUN_DIR/run.json``; writes report.html, junit.xml, summary.md, metrics.prom and a
fresh manifest.sha256. ``--spec FILE`` re-judges the stored measurements first with the
thresholds engine (``aibench.thresholds.judge``) and stores the new verdicts in run.json,
with a note saying so. ``--history RUN_DIR`` (repeatable) adds earlier runs for the trend
plots. ``--sign KEY`` signs the new manifest with an OpenSSH key (``ssh-keygen -Y sign``).
Exit code: 0 when the (re-)judged run passes, 1 when a check fails, 2 for a bad argument.
"""

from __future__ import annotations

import argparse
import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aibench.commands import Command
from aibench.errors import EXIT_CHECKS_FAILED, EXIT_OK, UserError

EPILOG = """\
examples:
  aibench report runs/20261202-101500-acceptance
  aibench report runs/20261202-101500-acceptance --spec thresholds/h100-ndr.yaml
  aibench report RUN_DIR --history runs/20261201-101500-acceptance --sign ~/.ssh/id_ed25519
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory written by aibench run")
    p.add_argument(
        "--spec",
        metavar="FILE",
        help="re-judge the stored measurements with this spec (file or profile name)",
    )
    p.add_argument(
        "--history",
        metavar="RUN_DIR",
        action="append",
        default=[],
        help="an earlier run directory for the trend plots (repeatable)",
    )
    p.add_argument(
        "--sign", metavar="KEY", help="sign manifest.sha256 with this OpenSSH private key"
    )
    p.add_argument("--lang", choices=("en", "zh"), default="en", help="report language")


def _rejudge(run: Any, spec_path: Path) -> Any:
    import importlib

    try:
        thresholds: Any = importlib.import_module("aibench.thresholds")
    except ImportError:
        thresholds = None
    judge = getattr(thresholds, "judge", None)
    if not callable(judge):
        raise UserError(
            "re-judging needs the thresholds engine (aibench.thresholds.judge), which is not "
            "available in this installation",
            hint="run 'aibench report RUN_DIR' without --spec to re-render the stored verdicts",
        )
    load = getattr(thresholds, "load_spec", None)
    if callable(load):
        spec = load(str(spec_path))  # a built-in profile name or a file; validated
    elif spec_path.is_file():
        spec = spec_path
    else:
        raise UserError(f"{spec_path}: no such spec file")
    verdicts = tuple(judge(spec, run))
    when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    digest = getattr(spec, "sha256", "") or (
        hashlib.sha256(spec_path.read_bytes()).hexdigest() if spec_path.is_file() else ""
    )
    name = str(getattr(spec, "name", "") or spec_path)
    return run.replace(
        verdicts=verdicts,
        spec=name,
        spec_sha256=digest,
        notes=(*run.notes, f"re-judged with spec {name} at {when} by aibench report"),
    )


def run(args: argparse.Namespace) -> int:
    from aibench import manifest, reports
    from aibench.store import load_run, save_run

    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        raise UserError(f"{run_dir}: not a directory", hint="give a run directory")
    the_run = load_run(run_dir)
    if args.spec:
        the_run = _rejudge(the_run, Path(args.spec))
        save_run(the_run, run_dir)
    history = [load_run(Path(h)) for h in args.history]
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
