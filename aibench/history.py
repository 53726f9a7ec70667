"""The history database (SQLite): every run recorded, trends and regressions.

Schema (``PRAGMA user_version`` = 1)::

    runs(id PRIMARY KEY, started, suite, spec, outcome, generated, environment JSON,
         run JSON)
    points(run_id, series, tool, metric, step, unit, dims JSON, nodes, n, median, mad,
           low, high)

A *series* is one measured quantity: tool, metric, step, dims and nodes. :meth:`record`
stores a run's median and spread per series (repeats summarized), and the whole run (the
bytes of its run.json, written and read a step at a time) so that ``aibench compare`` can
work from the database alone.

Regressions (:meth:`History.regressions`) are noise-aware:

* the baseline is the handover run (``baseline=RUN_ID``) or the last ``window`` good runs
  (outcome PASS) before the candidate; fewer than ``min_history`` baseline runs: no
  verdict, and it says so;
* a value is a regression when it sits outside median ± max(k · MAD, min_rel · |median|)
  of the baseline medians, on the bad side (lower bandwidth, higher latency);
* :meth:`History.scan` walks the whole series: the run where the level moved is flagged
  once, and the baseline stays frozen while the shift persists;
* each finding lists what changed in the environment (driver, NCCL, firmware, kernel,
  tool versions) between the baseline and the candidate; when key facts differ the
  finding is marked ``env_changed`` and says so, instead of passing as a plain
  comparison.
"""

from __future__ import annotations

import functools
import io
import json
import sqlite3
import statistics
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aibench import units
from aibench.errors import UserError
from aibench.model import Outcome, Run, StepResult

SCHEMA = 1
MAD_SCALE = 1.4826

# Facts whose change makes two runs measure different things, by their flattened name
# (see :func:`flatten_environment`). Two shapes exist: the facts recorded with every run
# (:mod:`aibench.envfacts`: ``kernel``, ``os``, ``cpu_model``, ``tools.<tool>``), listed
# here, and the facts of the tools, which each tool declares (``Traits.key_facts``, e.g.
# the preflight's ``nvidia-smi.driver_version``, ``nccl.version``). A name ending in "."
# matches by prefix.
RUN_FACTS = (
    "kernel",
    "os",
    "cpu_model",
    "tools.",
    # older or hand-written environments
    "driver_version",
    "cuda_version",
    "nccl_version",
    "firmware",
)


@functools.cache
def key_facts() -> tuple[str, ...]:
    from aibench import tools

    return (*RUN_FACTS, *tools.key_facts())


def is_key_fact(name: str) -> bool:
    """Whether a flattened fact name is one of :func:`key_facts`."""
    return any(name == k or (k.endswith(".") and name.startswith(k)) for k in key_facts())


def series_key(
    tool: str, metric: str, step: str, dims: Mapping[str, Any], nodes: Sequence[str]
) -> str:
    d = ",".join(f"{k}={dims[k]}" for k in sorted(dims))
    return f"{tool}|{metric}|{step}|{d}|{'+'.join(nodes)}"


def flatten_environment(env: Mapping[str, Any]) -> dict[str, str]:
    """``{node: {tools: {fio: 3.33}}}`` -> ``{"node:tools.fio": "3.33"}`` (key facts only).

    A preflight fact keeps its dotted name: ``{node: {"nvidia-smi.driver_version": "550"}}``
    -> ``{"node:nvidia-smi.driver_version": "550"}``. Entries of the controller
    (``_controller``) are not node facts and are left out.
    """
    out: dict[str, str] = {}

    def walk(prefix: str, node: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                walk(f"{prefix}{k}.", node, v)
            return
        name = prefix[:-1]
        if is_key_fact(name):
            out[f"{node}:{name}"] = "absent" if value is None else str(value)

    for node, facts in env.items():
        if isinstance(facts, Mapping) and not str(node).startswith("_"):
            walk("", node, facts)
    return out


def env_diff(a: Mapping[str, str], b: Mapping[str, str]) -> list[str]:
    """Lines like ``gpu01:driver_version 550.54 -> 560.28`` (grouped when all nodes agree).

    A fact absent on one side and not recorded on the other is no change.
    """
    changes: dict[tuple[str, str, str], list[str]] = {}
    for key in sorted(set(a) | set(b)):
        old, new = a.get(key, "(none)"), b.get(key, "(none)")
        if old != new and {old, new} != {"absent", "(none)"}:  # absent = not recorded
            node, name = key.split(":", 1)
            changes.setdefault((name, old, new), []).append(node)
    lines = []
    for (name, old, new), nodes in sorted(changes.items()):
        where = nodes[0] if len(nodes) == 1 else f"{len(nodes)} nodes"
        lines.append(f"{name} {old} -> {new} ({where})")
    return lines


def higher_is_better(metric: str, unit: str, tool: str = "") -> bool:
    from aibench import tools

    return tools.higher_is_better(tool, metric, unit)


def _store_run(con: sqlite3.Connection, run: Run) -> None:
    """The ``runs`` row of ``run``: its record is run.json's bytes, written into the row a
    step at a time (``store.run_json_chunks``, ASCII: a character is a byte), so that the
    record of a run of millions of steps is never one text in memory."""
    from aibench.store import run_json_chunks

    size = sum(map(len, run_json_chunks(run)))
    cur = con.execute(
        "INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, zeroblob(?))",
        (
            run.id,
            run.started,
            run.suite,
            run.spec,
            run.outcome.value,
            int(run.generated),
            json.dumps(dict(run.environment), default=str),
            size,
        ),
    )
    assert cur.lastrowid is not None
    with con.blobopen("runs", "run", cur.lastrowid) as blob:
        for chunk in run_json_chunks(run):
            blob.write(chunk.encode("ascii"))


class _BlobReader(io.RawIOBase):
    """A database blob as a raw binary stream, for io.BufferedReader."""

    def __init__(self, blob: sqlite3.Blob) -> None:
        self.blob = blob

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.blob.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


@dataclass(frozen=True)
class RunInfo:
    id: str
    started: str
    suite: str
    spec: str
    outcome: str
    generated: bool


@dataclass(frozen=True)
class Point:
    run_id: str
    started: str
    median: float
    mad: float
    n: int


@dataclass(frozen=True)
class Finding:
    series: str
    run_id: str
    value: float
    baseline_median: float
    band: tuple[float, float]
    change: float  # fraction, signed (negative = lower)
    regression: bool  # on the bad side
    baseline_runs: tuple[str, ...]
    env_changes: tuple[str, ...]
    env_changed: bool
    unit: str
    spread: float = 0.0  # of the baseline medians: MAD scaled to a standard deviation

    @property
    def text(self) -> str:
        word = "regression" if self.regression else "improvement"
        line = (
            f"{word}: {self.series} in run {self.run_id}: {self.value:.4g} {self.unit} vs "
            f"baseline median {self.baseline_median:.4g} ({self.change * 100:+.1f}%, band "
            f"{self.band[0]:.4g}..{self.band[1]:.4g}, {len(self.baseline_runs)} runs)"
        )
        if self.env_changes:
            line += "; what changed: " + "; ".join(self.env_changes)
            line += " (environment differs: not a like-for-like comparison)"
        else:
            line += "; environment unchanged"
        return line


class History:
    """The SQLite history database at ``path``: created by :meth:`record` on first use;
    every other method only reads it, and a missing file or one that is not a history
    database is a UserError that says so (nothing is created)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @contextmanager
    def _db(self, *, write: bool = False) -> Iterator[sqlite3.Connection]:
        if write:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        elif not self.path.is_file():
            raise UserError(f"{self.path}: no history database here")
        try:
            if write:
                con = sqlite3.connect(self.path)
            else:
                con = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True)
        except sqlite3.Error as exc:
            raise UserError(f"{self.path}: cannot open the history database ({exc})") from None
        try:
            version = con.execute("PRAGMA user_version").fetchone()[0]
            if version == 0 and write:
                self._create(con)
            elif version == 0:
                raise UserError(f"{self.path}: not a history database (no aibench schema)")
            elif version != SCHEMA:
                raise UserError(
                    f"{self.path}: history schema {version}; this aibench reads {SCHEMA}"
                )
            yield con
            if write:
                con.commit()
        except sqlite3.DatabaseError as exc:
            raise UserError(f"{self.path}: not a history database ({exc})") from None
        finally:
            con.close()

    @staticmethod
    def _create(con: sqlite3.Connection) -> None:
        con.executescript(
            """
            CREATE TABLE IF NOT EXISTS runs (
                id TEXT PRIMARY KEY, started TEXT, suite TEXT, spec TEXT, outcome TEXT,
                generated INTEGER, environment TEXT, run TEXT);
            CREATE TABLE IF NOT EXISTS points (
                run_id TEXT, series TEXT, tool TEXT, metric TEXT, step TEXT, unit TEXT,
                dims TEXT, nodes TEXT, n INTEGER, median REAL, mad REAL, low REAL, high REAL,
                PRIMARY KEY (run_id, series));
            CREATE INDEX IF NOT EXISTS points_series ON points (series);
            PRAGMA user_version = 1;
            """
        )

    def record(self, run: Run) -> int:
        """Store ``run`` (replacing an earlier record of the same id); returns #series."""
        groups: dict[str, list[float]] = {}
        meta: dict[str, tuple[str, str, str, str, str, str]] = {}
        for s in run.steps:
            if not s.ok:
                continue
            for m in s.measurements:
                key = series_key(m.tool, m.metric, m.step, m.dims, m.nodes)
                meta.setdefault(
                    key,
                    (
                        m.tool,
                        m.metric,
                        m.step,
                        m.unit,
                        json.dumps(m.dims.to_dict()),
                        "+".join(m.nodes),
                    ),
                )
                try:  # repeats of one series in one unit (the first one seen)
                    value = units.convert(m.value, m.unit, meta[key][3])
                except units.UnitError:
                    raise UserError(
                        f"run {run.id}: {m.tool} {m.metric} of step {m.step} is recorded in "
                        f"{m.unit} and in {meta[key][3]}: cannot summarize one series"
                    ) from None
                groups.setdefault(key, []).append(value)
        with self._db(write=True) as con:
            con.execute("DELETE FROM points WHERE run_id = ?", (run.id,))
            _store_run(con, run)
            for key, vals in groups.items():
                med = float(statistics.median(vals))
                mad = float(statistics.median(abs(v - med) for v in vals)) * MAD_SCALE
                con.execute(
                    "INSERT INTO points VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (run.id, key, *meta[key], len(vals), med, mad, min(vals), max(vals)),
                )
        return len(groups)

    def runs(self) -> list[RunInfo]:
        with self._db() as con:
            rows = con.execute(
                "SELECT id, started, suite, spec, outcome, generated FROM runs ORDER BY started, id"
            ).fetchall()
        return [RunInfo(r[0], r[1], r[2], r[3], r[4], bool(r[5])) for r in rows]

    def load_run(self, run_id: str, *, steps_of: Collection[str] | None = None) -> Run:
        """The run recorded as ``run_id``, read from the database a piece at a time;
        ``steps_of``: only the steps of these tools are kept."""
        from aibench.store import read_run

        def keep(s: StepResult) -> bool:
            return steps_of is None or s.tool in steps_of

        with self._db() as con:
            row = con.execute(
                "SELECT rowid, typeof(run), run FROM runs WHERE id = ?", (run_id,)
            ).fetchone()
            if row is None:
                raise UserError(
                    f"{self.path}: no run {run_id!r}", hint="aibench history lists them"
                )
            if row[1] == "text":  # recorded by an older aibench, as one JSON text
                run = Run.from_dict(json.loads(row[2]))
                return run.replace(steps=[s for s in run.steps if keep(s)])
            with con.blobopen("runs", "run", row[0], readonly=True) as blob:
                text = io.TextIOWrapper(io.BufferedReader(_BlobReader(blob)), "utf-8")
                return read_run(text, keep=keep)

    def environment(self, run_id: str) -> dict[str, str]:
        with self._db() as con:
            row = con.execute("SELECT environment FROM runs WHERE id = ?", (run_id,)).fetchone()
        return flatten_environment(json.loads(row[0])) if row else {}

    def series(self) -> list[tuple[str, str]]:
        """(series, unit) of every series, sorted; the unit of its latest point.

        A series whose unit changed between runs (fio reports latencies in us before 3.0
        and in ns after) is one series: :meth:`points` converts to this unit.
        """
        with self._db() as con:
            rows = con.execute(
                "SELECT p.series, p.unit FROM points p JOIN runs r ON r.id = p.run_id "
                "ORDER BY p.series, r.started, r.id"
            ).fetchall()
        latest: dict[str, str] = {}
        for key, unit in rows:
            latest[key] = unit
        return sorted(latest.items())

    def points(self, series: str, unit: str | None = None) -> list[Point]:
        """The run medians of ``series`` in time order, converted to ``unit``.

        ``unit`` defaults to the series' latest unit. A point in a unit of another
        dimension cannot be converted: it is left out, never compared as a number.
        """
        with self._db() as con:
            rows = con.execute(
                "SELECT p.run_id, r.started, p.median, p.mad, p.n, p.unit FROM points p "
                "JOIN runs r ON r.id = p.run_id WHERE p.series = ? ORDER BY r.started, r.id",
                (series,),
            ).fetchall()
        want = unit or (rows[-1][5] if rows else "")
        out = []
        for run_id, started, median, mad, n, have in rows:
            if have != want:
                try:
                    median, mad = (
                        units.convert(median, have, want),
                        units.convert(mad, have, want),
                    )
                except units.UnitError:
                    continue
            out.append(Point(run_id, started, median, mad, n))
        return out

    def _outcomes(self) -> dict[str, str]:
        return {r.id: r.outcome for r in self.runs()}

    # ------------------------------------------------------------ regressions

    def regressions(
        self,
        run_id: str | None = None,
        *,
        baseline: str | None = None,
        window: int = 10,
        min_history: int = 5,
        k: float = 4.0,
        min_rel: float = 0.03,
        status: dict[str, str] | None = None,
    ) -> tuple[list[Finding], list[str]]:
        """Findings for one run (default: the latest) against its baseline; and notes.

        ``status`` (filled when given): each series of the run, "" when it was judged
        against a baseline, else why not."""
        status = {} if status is None else status
        runs = self.runs()
        if not runs:
            return [], ["the history is empty"]
        ids = [r.id for r in runs]
        target = run_id or ids[-1]
        if target not in ids:
            raise UserError(f"{self.path}: no run {target!r}", hint="aibench history lists them")
        outcomes = self._outcomes()
        findings: list[Finding] = []
        notes: list[str] = []
        for key, unit in self.series():
            pts = self.points(key, unit)
            cand = next((p for p in pts if p.run_id == target), None)
            if cand is None:
                continue
            before = [p for p in pts if ids.index(p.run_id) < ids.index(target)]
            if baseline:
                base = [p for p in pts if p.run_id == baseline]
            else:
                good = [p for p in before if outcomes.get(p.run_id) == Outcome.PASS.value]
                base = good[-window:]
            if not baseline and len(base) < min_history:
                status[key] = f"{len(base)} good baseline run(s), need {min_history}"
                notes.append(f"{key}: {status[key]}")
                continue
            if not base:
                status[key] = f"not measured in the baseline run {baseline}"
                notes.append(f"{key}: {status[key]}")
                continue
            status[key] = ""
            f = self._judge(key, unit, cand, base, k=k, min_rel=min_rel)
            if f is not None:
                findings.append(f)
        return findings, notes

    def scan(
        self,
        series: str,
        *,
        window: int = 10,
        min_history: int = 5,
        k: float = 4.0,
        min_rel: float = 0.03,
    ) -> list[Finding]:
        """Level shifts along one series: each flagged once, where it starts."""
        unit = dict(self.series()).get(series, "")
        pts = self.points(series, unit or None)
        findings: list[Finding] = []
        base: list[Point] = []
        shifted = False
        for p in pts:
            if len(base) < min_history:
                base.append(p)
                continue
            f = self._judge(series, unit, p, base[-window:], k=k, min_rel=min_rel)
            if f is None:
                base.append(p)
                shifted = False
            elif not shifted:
                findings.append(f)
                shifted = True
        return findings

    def _judge(
        self, key: str, unit: str, cand: Point, base: list[Point], *, k: float, min_rel: float
    ) -> Finding | None:
        meds = [b.median for b in base]
        center = float(statistics.median(meds))
        spread = float(statistics.median(abs(m - center) for m in meds)) * MAD_SCALE
        half = max(k * spread, min_rel * abs(center))
        lo, hi = center - half, center + half
        if lo <= cand.median <= hi:
            return None
        tool, metric = key.split("|")[:2]
        better_high = higher_is_better(metric, unit, tool)
        regression = (cand.median < lo) if better_high else (cand.median > hi)
        env_now = self.environment(cand.run_id)
        env_base = self.environment(base[-1].run_id)
        changes = tuple(env_diff(env_base, env_now))
        return Finding(
            series=key,
            run_id=cand.run_id,
            value=cand.median,
            baseline_median=center,
            band=(lo, hi),
            change=(cand.median - center) / center if center else 0.0,
            regression=regression,
            baseline_runs=tuple(b.run_id for b in base),
            env_changes=changes,
            env_changed=bool(changes),
            unit=unit,
            spread=spread,
        )
