"""Runs and the history database as tidy pandas DataFrames.

``load_run(path)`` reads a run directory (or its ``run.json``) and returns :class:`RunFrames`:

* ``measurements``: one row per value: ``run_id, step_id, step, tool, metric, value, unit,
  nodes, repeat, step_status`` and one column per dimension name found in the run
  (``rw``, ``bs``, ``direction``, ``size_bytes`` ...; empty where a row lacks it).
  ``nodes`` is the node, or the nodes joined by ``,`` in the run's order.
* ``verdicts``: one row per verdict: ``run_id, check, benchmark, outcome, subject,
  observed, unit, expected, reference, bound_low, bound_high, aggregate, samples,
  culprits, evidence, observed_text, reason, waived, description``.
* ``facts``: one row per fact of a step: ``run_id, step_id, step, source, name, value,
  number, unit, nodes, absent, reason`` and a column per dimension. ``value`` is the
  fact's text (JSON scalars written as text, empty when absent); ``number`` the value when
  it is a number (not a bool), else missing.
* ``steps``: one row per tool invocation: ``run_id, step_id, step, tool, nodes, repeat,
  round, status, exit_code, started, duration_s, reason, tool_version``.

``load_history(db)`` reads the SQLite history (:mod:`aibench.history`) and returns
:class:`HistoryFrames`: ``runs`` (one row per recorded run), ``points`` (one row per run
and series: the median, scaled MAD, low, high and count of its repeats, with the series'
tool, step, metric, unit, nodes and dimension columns) and ``verdicts`` (every recorded
run's verdicts, with ``started`` and ``suite``).

Dimension columns keep the type the parsers gave them when every row agrees (integer,
float, bool or text, as pandas' nullable ``Int64``, ``Float64``, ``boolean`` and
``string`` dtypes); a dimension with values of several types across rows is text. A
dimension named like a fixed column is prefixed ``dim_``. These frames are what
``aibench export`` writes (CSV, JSON or Parquet).

pandas is imported here, never by ``import aibench``; it comes with the ``pandas`` extra
(``pip install 'aibench-cluster[pandas]'``), Parquet export with ``parquet``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aibench.errors import UserError
from aibench.model import Fact, Measurement, Run, Verdict

if TYPE_CHECKING:
    import pandas as pd

MEASUREMENT_COLUMNS = (
    "run_id",
    "step_id",
    "step",
    "tool",
    "metric",
    "value",
    "unit",
    "nodes",
    "repeat",
    "step_status",
)
VERDICT_COLUMNS = (
    "run_id",
    "check",
    "benchmark",
    "outcome",
    "subject",
    "observed",
    "unit",
    "expected",
    "reference",
    "bound_low",
    "bound_high",
    "aggregate",
    "samples",
    "culprits",
    "evidence",
    "observed_text",
    "reason",
    "waived",
    "description",
)
FACT_COLUMNS = (
    "run_id",
    "step_id",
    "step",
    "source",
    "name",
    "value",
    "number",
    "unit",
    "nodes",
    "absent",
    "reason",
)
STEP_COLUMNS = (
    "run_id",
    "step_id",
    "step",
    "tool",
    "nodes",
    "repeat",
    "round",
    "status",
    "exit_code",
    "started",
    "duration_s",
    "reason",
    "tool_version",
)
TABLES = ("measurements", "verdicts", "facts", "steps")


def pandas() -> Any:
    """The pandas module, or a UserError naming the extra that brings it."""
    try:
        import pandas as pd
    except ImportError:
        raise UserError(
            "DataFrames need pandas, which is not installed",
            hint="pip install 'aibench-cluster[pandas]'",
        ) from None
    return pd


@dataclass(frozen=True)
class RunFrames:
    """The tables of one run; see the module docstring for their columns."""

    run_id: str
    measurements: pd.DataFrame
    verdicts: pd.DataFrame
    facts: pd.DataFrame
    steps: pd.DataFrame

    def table(self, name: str) -> pd.DataFrame:
        if name not in TABLES:
            raise UserError(f"no table {name!r}", hint=f"one of {', '.join(TABLES)}")
        frame: pd.DataFrame = getattr(self, name)
        return frame


@dataclass(frozen=True)
class HistoryFrames:
    """The tables of a history database; see the module docstring."""

    runs: pd.DataFrame
    points: pd.DataFrame
    verdicts: pd.DataFrame


def _nodes(nodes: Sequence[str]) -> str:
    return ",".join(nodes)


def _dim_columns(rows: Sequence[Mapping[str, Any]], fixed: Iterable[str]) -> dict[str, list[Any]]:
    """One column per dimension name: values per row (None where absent), names
    prefixed ``dim_`` where they would shadow a fixed column."""
    taken = set(fixed)
    names: dict[str, str] = {}
    for d in rows:
        for k in d:
            if k not in names:
                names[k] = f"dim_{k}" if k in taken else k
    return {names[k]: [d.get(k) for d in rows] for k in sorted(names)}


def _typed(pd: Any, values: list[Any]) -> Any:
    """A nullable pandas Series of one type for a dimension column (text if mixed)."""
    kinds = {type(v) for v in values if v is not None}
    if kinds == {bool}:
        return pd.array(values, dtype="boolean")
    if kinds == {int}:
        return pd.array(values, dtype="Int64")
    if kinds and kinds <= {int, float}:
        return pd.array([None if v is None else float(v) for v in values], dtype="Float64")
    if kinds == {str} or not kinds:
        return pd.array(values, dtype="string")
    text = [None if v is None else json.dumps(v) if not isinstance(v, str) else v for v in values]
    return pd.array(text, dtype="string")


def _frame(
    pd: Any, columns: Mapping[str, list[Any]], order: Sequence[str], types: Mapping[str, str]
) -> pd.DataFrame:
    data: dict[str, Any] = {}
    for name in order:
        dtype = types.get(name)
        data[name] = pd.array(columns[name], dtype=dtype) if dtype else columns[name]
    for name, values in columns.items():
        if name not in data:
            data[name] = _typed(pd, values)
    frame: pd.DataFrame = pd.DataFrame(data)
    return frame


_TEXT = "string"


def measurement_frame(pd: Any, run_id: str, items: Iterable[tuple[str, str, Measurement]]) -> Any:
    """Rows from (step_id, step status, measurement) triples."""
    cols: dict[str, list[Any]] = {c: [] for c in MEASUREMENT_COLUMNS}
    dims: list[Mapping[str, Any]] = []
    for step_id, status, m in items:
        cols["run_id"].append(run_id)
        cols["step_id"].append(step_id)
        cols["step"].append(m.step)
        cols["tool"].append(m.tool)
        cols["metric"].append(m.metric)
        cols["value"].append(m.value)
        cols["unit"].append(m.unit)
        cols["nodes"].append(_nodes(m.nodes))
        cols["repeat"].append(m.repeat)
        cols["step_status"].append(status)
        dims.append(m.dims)
    cols.update(_dim_columns(dims, MEASUREMENT_COLUMNS))
    types = {c: _TEXT for c in MEASUREMENT_COLUMNS} | {"value": "float64", "repeat": "int64"}
    return _frame(pd, cols, MEASUREMENT_COLUMNS, types)


def _fact_text(f: Fact) -> str | None:
    if f.value is None:
        return None
    if isinstance(f.value, str):
        return f.value
    return json.dumps(f.value)


def fact_frame(pd: Any, run_id: str, items: Iterable[tuple[str, str, Fact]]) -> Any:
    """Rows from (step_id, step name, fact) triples."""
    cols: dict[str, list[Any]] = {c: [] for c in FACT_COLUMNS}
    dims: list[Mapping[str, Any]] = []
    for step_id, step, f in items:
        number = f.value if type(f.value) in (int, float) else None
        for name, v in (
            ("run_id", run_id),
            ("step_id", step_id),
            ("step", step),
            ("source", f.source),
            ("name", f.name),
            ("value", _fact_text(f)),
            ("number", None if number is None else float(number)),
            ("unit", f.unit),
            ("nodes", _nodes(f.nodes)),
            ("absent", f.absent),
            ("reason", f.reason),
        ):
            cols[name].append(v)
        dims.append(f.dims)
    cols.update(_dim_columns(dims, FACT_COLUMNS))
    types = {c: _TEXT for c in FACT_COLUMNS} | {"number": "Float64", "absent": "bool"}
    return _frame(pd, cols, FACT_COLUMNS, types)


def verdict_frame(pd: Any, run_id: str | Sequence[str], verdicts: Sequence[Verdict]) -> Any:
    """Rows of verdicts; ``run_id`` one id for all or one per verdict."""
    ids = [run_id] * len(verdicts) if isinstance(run_id, str) else list(run_id)
    cols: dict[str, list[Any]] = {c: [] for c in VERDICT_COLUMNS}
    for rid, v in zip(ids, verdicts, strict=True):
        for name, value in (
            ("run_id", rid),
            ("check", v.check),
            ("benchmark", v.benchmark),
            ("outcome", v.outcome.value),
            ("subject", _nodes(v.subject)),
            ("observed", v.observed),
            ("unit", v.unit),
            ("expected", v.expected),
            ("reference", v.reference),
            ("bound_low", v.bounds[0]),
            ("bound_high", v.bounds[1]),
            ("aggregate", v.aggregate),
            ("samples", v.samples),
            ("culprits", _nodes(v.culprits)),
            ("evidence", " ".join(v.evidence)),
            ("observed_text", v.observed_text),
            ("reason", v.reason),
            ("waived", v.waiver is not None),
            ("description", v.description),
        ):
            cols[name].append(value)
    numbers = ("observed", "reference", "bound_low", "bound_high")
    types = (
        {c: _TEXT for c in VERDICT_COLUMNS}
        | {c: "Float64" for c in numbers}
        | {"samples": "int64", "waived": "bool"}
    )
    return _frame(pd, cols, VERDICT_COLUMNS, types)


def step_frame(pd: Any, run: Run) -> Any:
    cols: dict[str, list[Any]] = {c: [] for c in STEP_COLUMNS}
    for s in run.steps:
        for name, value in (
            ("run_id", run.id),
            ("step_id", s.step_id),
            ("step", s.step),
            ("tool", s.tool),
            ("nodes", _nodes(s.nodes)),
            ("repeat", s.repeat),
            ("round", s.round),
            ("status", s.status.value),
            ("exit_code", s.exit_code),
            ("started", s.started),
            ("duration_s", s.duration_s),
            ("reason", s.reason),
            ("tool_version", s.tool_version),
        ):
            cols[name].append(value)
    types = {c: _TEXT for c in STEP_COLUMNS} | {
        "repeat": "int64",
        "round": "int64",
        "exit_code": "Int64",
        "duration_s": "float64",
    }
    return _frame(pd, cols, STEP_COLUMNS, types)


def frames(run: Run) -> RunFrames:
    """The tables of a Run already in memory."""
    pd = pandas()
    return RunFrames(
        run_id=run.id,
        measurements=measurement_frame(
            pd, run.id, ((s.step_id, s.status.value, m) for s in run.steps for m in s.measurements)
        ),
        verdicts=verdict_frame(pd, run.id, run.verdicts),
        facts=fact_frame(pd, run.id, ((s.step_id, s.step, f) for s in run.steps for f in s.facts)),
        steps=step_frame(pd, run),
    )


def load_run(path: str | Path) -> RunFrames:
    """The tables of the run stored at ``path`` (a run directory or its run.json)."""
    from aibench.store import load_run as load

    return frames(load(Path(path)))


def load_history(db: str | Path) -> HistoryFrames:
    """The tables of the history database at ``db`` (it must exist)."""
    pd = pandas()
    path = Path(db)
    if not path.is_file():
        raise UserError(f"{path}: no history database here", hint="aibench history --record RUN")
    run_rows, point_rows = _history_rows(path)
    runs = pd.DataFrame(
        {
            "run_id": pd.array([r[0] for r in run_rows], dtype=_TEXT),
            "started": pd.array([r[1] for r in run_rows], dtype=_TEXT),
            "suite": pd.array([r[2] for r in run_rows], dtype=_TEXT),
            "spec": pd.array([r[3] for r in run_rows], dtype=_TEXT),
            "outcome": pd.array([r[4] for r in run_rows], dtype=_TEXT),
            "generated": pd.array([bool(r[5]) for r in run_rows], dtype="bool"),
        }
    )
    points = _points_frame(pd, point_rows)
    vids: list[str] = []
    verdicts: list[Verdict] = []
    started: list[str] = []
    suites: list[str] = []
    for r in run_rows:
        for v in json.loads(r[6]).get("verdicts", ()):
            vids.append(r[0])
            started.append(r[1])
            suites.append(r[2])
            verdicts.append(Verdict.from_dict(v))
    vf = verdict_frame(pd, vids, verdicts)
    vf.insert(1, "started", pd.array(started, dtype=_TEXT))
    vf.insert(2, "suite", pd.array(suites, dtype=_TEXT))
    return HistoryFrames(runs=runs, points=points, verdicts=vf)


def _history_rows(path: Path) -> tuple[list[Any], list[Any]]:
    """The runs and the points of the history database, read only, its schema checked."""
    from aibench.history import SCHEMA

    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            version = con.execute("PRAGMA user_version").fetchone()[0]
            if version != SCHEMA:
                raise UserError(f"{path}: history schema {version}; this aibench reads {SCHEMA}")
            run_rows = con.execute(
                "SELECT id, started, suite, spec, outcome, generated, run FROM runs "
                "ORDER BY started, id"
            ).fetchall()
            point_rows = con.execute(
                "SELECT p.run_id, r.started, p.series, p.tool, p.metric, p.step, p.unit, p.dims,"
                " p.nodes, p.n, p.median, p.mad, p.low, p.high FROM points p JOIN runs r ON"
                " r.id = p.run_id ORDER BY r.started, r.id, p.series"
            ).fetchall()
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        raise UserError(f"{path}: not a history database ({exc})") from None
    return run_rows, point_rows


def _points_frame(pd: Any, point_rows: list[Any]) -> Any:
    """One row per recorded point: its series' fixed fields, statistics and dims."""
    fixed = ("run_id", "started", "series", "tool", "metric", "step", "unit", "nodes")
    stats = ("n", "median", "mad", "low", "high")
    cols: dict[str, list[Any]] = {c: [] for c in (*fixed, *stats)}
    dims: list[Mapping[str, Any]] = []
    for r in point_rows:
        for name, value in zip(fixed, (*r[:7], r[8].replace("+", ",")), strict=True):
            cols[name].append(value)
        for name, value in zip(stats, r[9:], strict=True):
            cols[name].append(value)
        dims.append(json.loads(r[7]))
    cols.update(_dim_columns(dims, (*fixed, *stats)))
    types = {c: _TEXT for c in fixed} | {"n": "int64"} | {c: "float64" for c in stats[1:]}
    return _frame(pd, cols, (*fixed, *stats), types)
