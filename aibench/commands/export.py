"""``aibench export RUN_DIR --format csv|parquet|json``: a run's tables as files.

Writes the tidy tables of :mod:`aibench.frames` (``measurements``, ``verdicts``,
``facts``, ``steps``; ``--table`` picks some) to ``OUT_DIR/<run-id>.<table>.<ext>``:
CSV with a header row, JSON as an array of row objects (missing values as null), or
Parquet (needs pyarrow: the ``parquet`` extra), which keeps the column types. Nothing is
written into a run directory: an ``--output-dir`` that is one, or lies in one (the
default ``.`` inside it too), is refused with one line (its manifest covers what is there).
Exit code: 0 when written; 2 for a bad run directory or output folder, a table or a
missing library.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from aibench.commands import Command
from aibench.errors import EXIT_OK, UserError

FORMATS = {"csv": "csv", "json": "json", "parquet": "parquet"}
TABLES = ("measurements", "verdicts", "facts", "steps")

EPILOG = """\
examples:
  aibench export runs/20261202-101500-acceptance --format csv
  aibench export runs/20261202-101500-acceptance --format parquet --output-dir /data/aibench
  aibench export RUN_DIR --format json --table verdicts
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run directory written by aibench run")
    p.add_argument("--format", choices=sorted(FORMATS), default="csv", help="default csv")
    p.add_argument(
        "--table",
        choices=TABLES,
        action="append",
        default=[],
        help="a table to write (repeatable; default all four)",
    )
    p.add_argument(
        "--output-dir", metavar="DIR", default=".", help="where the files go (default: here)"
    )


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    """One row with JSON's own types: a missing cell (NaN, NaT, None) is null, a numpy
    scalar its Python value, anything else (a timestamp) its text."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if hasattr(value, "item") and not isinstance(value, str | bytes):
            value = value.item()
        if value is None or (isinstance(value, float) and math.isnan(value)):
            out[key] = None
        elif isinstance(value, bool | int | float | str):
            out[key] = value
        elif type(value).__name__ in ("NAType", "NaTType"):
            out[key] = None
        elif hasattr(value, "isoformat"):
            out[key] = value.isoformat()
        else:
            out[key] = value
    return out


def write(frame: object, path: Path, fmt: str) -> None:
    """Write one DataFrame as ``fmt``, atomically (a temporary name, then renamed)."""
    tmp = path.with_name(f".{path.name}.tmp")
    if fmt == "csv":
        frame.to_csv(tmp, index=False)  # type: ignore[attr-defined]
    elif fmt == "json":
        # Python's own float repr: every value read back exactly (pandas' to_json keeps
        # at most 15 significant digits, so 39.980208310518464 came back as 39.9802083105)
        rows = frame.to_dict(orient="records")  # type: ignore[attr-defined]
        text = json.dumps([_plain(r) for r in rows], indent=1, ensure_ascii=False, default=str)
        tmp.write_text(text + "\n", encoding="utf-8")
    else:
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise UserError(
                "--format parquet needs pyarrow, which is not installed",
                hint="pip install 'aibench-cluster[parquet]'",
            ) from None
        frame.to_parquet(tmp, index=False, engine="pyarrow")  # type: ignore[attr-defined]
    tmp.replace(path)


def run(args: argparse.Namespace) -> int:
    from aibench.frames import frames, pandas
    from aibench.manifest import not_into_run_dir
    from aibench.store import load_run

    pandas()  # a missing pandas is a one-line error before anything is read
    run_dir = Path(args.run_dir)
    if not run_dir.exists():
        raise UserError(f"{run_dir}: no such run directory")
    out = Path(args.output_dir)
    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: not a directory", hint="--output-dir takes a directory")
    not_into_run_dir(out, "--output-dir")
    out.mkdir(parents=True, exist_ok=True)
    tables = frames(load_run(run_dir))
    for name in args.table or TABLES:
        path = out / f"{tables.run_id}.{name}.{FORMATS[args.format]}"
        frame = tables.table(name)
        write(frame, path, args.format)
        print(f"wrote {path} ({len(frame)} rows)")
    return EXIT_OK


COMMAND = Command(
    name="export",
    help="write a run's measurements, verdicts, facts and steps as CSV, JSON or Parquet",
    add_arguments=add_arguments,
    run=run,
    description=__doc__ or "",
    epilog=EPILOG,
    order=57,
)
