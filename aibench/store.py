"""Run directories: where a run's raw logs, results and reports live.

Layout of ``runs/<YYYYmmdd-HHMMSS>-<suite>/``::

    run.json          the Run (schema_version), rewritten atomically as the run goes on;
                      it keeps what the run was judged with (Run.inputs: the spec's and the
                      suite's text, Run.inventory, Run.judgements), so that aibench check
                      judges it again from this file alone
    run-config.json   what was asked (suite, spec, inventory paths, options): for --resume
    steps.jsonl       one StepResult per line, appended as each invocation finishes
    raw/<step>/...    stdout/stderr of every process, written as they arrive
    report.html, junit.xml, summary.md, metrics.prom, manifest.sha256
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aibench.errors import UserError
from aibench.model import Run

RUN_JSON = "run.json"
RUN_CONFIG = "run-config.json"


def new_run_dir(base: Path, suite: str, now: datetime | None = None) -> Path:
    now = now or datetime.now(UTC)
    stamp = now.strftime("%Y%m%d-%H%M%S")
    base.mkdir(parents=True, exist_ok=True)
    for n in range(100):
        name = f"{stamp}-{suite}" if n == 0 else f"{stamp}-{suite}-{n}"
        d = base / name
        try:
            d.mkdir()
        except FileExistsError:
            continue
        return d
    raise UserError(f"{base}: cannot create a new run directory")


def write_json_atomic(path: Path, data: Any) -> None:
    from aibench.textio import write_atomic

    write_atomic(path, json.dumps(data, indent=1, sort_keys=False) + "\n")


def save_run(run: Run, run_dir: Path) -> Path:
    path = run_dir / RUN_JSON
    write_json_atomic(path, run.to_dict())
    return path


def load_run(run_dir: Path) -> Run:
    path = run_dir / RUN_JSON if run_dir.is_dir() else run_dir
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(
            f"{path}: no run.json here", hint="give a run directory made by aibench run"
        ) from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except UnicodeDecodeError:
        raise UserError(f"{path}: not a run.json (not UTF-8 text)") from None
    try:
        return Run.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise UserError(f"{path}: cannot read this run: {exc}") from None
