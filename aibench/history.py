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
import random
import sqlite3
import statistics
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

from aibench import stats, units
from aibench.errors import UserError
from aibench.model import Outcome, Run, StepResult

SCHEMA = 1

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


def _busy(exc: sqlite3.OperationalError) -> bool:
    """Whether ``exc`` says another connection holds the lock (SQLITE_BUSY, _LOCKED)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


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
    vanished: bool = False  # measured by the baseline runs, not by this run (value: nan)

    @property
    def text(self) -> str:
        if self.vanished:
            return (
                f"vanished: {self.series} was not measured in run {self.run_id}, although "
                f"its step ran; the baseline had it ({len(self.baseline_runs)} runs, median "
                f"{self.baseline_median:.4g} {self.unit})"
            )
        word = "regression" if self.regression else "improvement"
        line = (
            f"{word}: {self.series} in run {self.run_id}: {self.value:.4g} {self.unit} vs "
            f"baseline median {self.baseline_median:.4g} ({self.change * 100:+.1f}%, band "
            f"{self.band[0]:.4g}..{self.band[1]:.4g}, {len(self.baseline_runs)} runs)"
        )
        if self.env_changes:
            line += "; what changed: " + "; ".join(self.env_changes)
        else:
            line += "; environment unchanged"
        return line


# Shared safely by runs at once (nightly jobs of several pipelines on one database): the
# database is in WAL mode (readers never wait for a writer), a connection waits up to
# BUSY_TIMEOUT_S for a lock, and a write that still finds the database locked is tried
# again WRITE_TRIES times, after a growing pause with jitter; each write is one IMMEDIATE
# transaction (its lock taken at its start, so two writers never deadlock).
BUSY_TIMEOUT_S = 30.0
WRITE_TRIES = 5
WRITE_PAUSE_S = 0.2


class HistoryBusy(UserError):
    """The history database stayed locked by another process past the busy timeout."""


# path -> the connection of an open :func:`snapshot` of that database (this process)
_SNAPSHOTS: dict[Path, sqlite3.Connection] = {}


@contextmanager
def snapshot(path: Path) -> Iterator[None]:
    """While the block runs, every read of the history database at ``path`` (by any
    :class:`History` of it) sees one state of it: the one of the block's start, whatever
    runs record meanwhile (one read transaction; in WAL mode writers go on beside it)."""
    key = Path(path).resolve()
    if key in _SNAPSHOTS:
        yield
        return
    with History(path)._db() as con:
        con.execute("BEGIN")
        con.execute("SELECT count(*) FROM runs").fetchone()  # the snapshot is taken here
        _SNAPSHOTS[key] = con
        try:
            yield
        finally:
            del _SNAPSHOTS[key]
            con.rollback()


_F = TypeVar("_F", bound=Callable[..., Any])


def _in_one_snapshot(method: _F) -> _F:
    """A method of :class:`History` whose reads all see one state of the database (its
    several queries would otherwise each see the runs recorded meanwhile by others)."""

    @functools.wraps(method)
    def wrapper(self: History, *args: Any, **kwargs: Any) -> Any:
        with snapshot(self.path):
            return method(self, *args, **kwargs)

    return cast(_F, wrapper)


class History:
    """The SQLite history database at ``path``: created by :meth:`record` on first use;
    every other method only reads it, and a missing file or one that is not a history
    database is a UserError that says so (nothing is created)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def _connect(self, write: bool) -> sqlite3.Connection:
        con: sqlite3.Connection | None = None
        try:
            if write:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                con = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
                con.execute("PRAGMA journal_mode=WAL")
                con.execute("BEGIN IMMEDIATE")
                return con
            uri = f"{self.path.resolve().as_uri()}?mode=ro"
            return sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S)
        except BaseException:
            if con is not None:
                con.close()
            raise

    def _open(self, write: bool) -> sqlite3.Connection:
        """:meth:`_connect`, its failures as one line each (HistoryBusy when locked)."""
        try:
            return self._connect(write)
        except OSError as exc:
            raise UserError(f"{self.path}: cannot create the history database ({exc})") from None
        except sqlite3.OperationalError as exc:
            if _busy(exc):
                raise HistoryBusy(f"{self.path}: the history database is locked ({exc})") from None
            raise UserError(f"{self.path}: cannot open the history database ({exc})") from None
        except sqlite3.DatabaseError as exc:
            raise UserError(f"{self.path}: not a history database ({exc})") from None

    @contextmanager
    def _db(self, *, write: bool = False) -> Iterator[sqlite3.Connection]:
        """A connection (a write: in one IMMEDIATE transaction, committed at the end)."""
        if not write:
            held = _SNAPSHOTS.get(self.path.resolve())
            if held is not None:
                yield held
                return
            if not self.path.is_file():
                raise UserError(f"{self.path}: no history database here")
        con = self._open(write)
        try:
            self._check_schema(con, write)
            yield con
            if write:
                con.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if _busy(exc):
                raise HistoryBusy(f"{self.path}: the history database is locked ({exc})") from None
            raise UserError(f"{self.path}: cannot use the history database ({exc})") from None
        except sqlite3.DatabaseError as exc:
            raise UserError(f"{self.path}: not a history database ({exc})") from None
        finally:
            con.close()  # a write not committed is rolled back

    def _check_schema(self, con: sqlite3.Connection, write: bool) -> None:
        version = con.execute("PRAGMA user_version").fetchone()[0]
        if version == 0 and write:
            self._create(con)
        elif version == 0:
            raise UserError(f"{self.path}: not a history database (no aibench schema)")
        elif version != SCHEMA:
            raise UserError(f"{self.path}: history schema {version}; this aibench reads {SCHEMA}")

    def _write(self, work: Callable[[sqlite3.Connection], None]) -> None:
        """``work`` in one write transaction, tried again while the database is locked."""
        for attempt in range(WRITE_TRIES):
            try:
                with self._db(write=True) as con:
                    work(con)
                return
            except HistoryBusy:
                if attempt == WRITE_TRIES - 1:
                    raise
                time.sleep(WRITE_PAUSE_S * 2**attempt * (1 + random.random()))

    @staticmethod
    def _create(con: sqlite3.Connection) -> None:
        """The tables, in the caller's transaction (executescript would commit it)."""
        for statement in (
            "CREATE TABLE IF NOT EXISTS runs ("
            " id TEXT PRIMARY KEY, started TEXT, suite TEXT, spec TEXT, outcome TEXT,"
            " generated INTEGER, environment TEXT, run TEXT)",
            "CREATE TABLE IF NOT EXISTS points ("
            " run_id TEXT, series TEXT, tool TEXT, metric TEXT, step TEXT, unit TEXT,"
            " dims TEXT, nodes TEXT, n INTEGER, median REAL, mad REAL, low REAL, high REAL,"
            " PRIMARY KEY (run_id, series))",
            "CREATE INDEX IF NOT EXISTS points_series ON points (series)",
            f"PRAGMA user_version = {SCHEMA}",
        ):
            con.execute(statement)

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
        rows = []
        for key, vals in groups.items():
            med = float(statistics.median(vals))
            mad = stats.mad(vals)
            rows.append((run.id, key, *meta[key], len(vals), med, mad, min(vals), max(vals)))

        def write(con: sqlite3.Connection) -> None:
            con.execute("DELETE FROM points WHERE run_id = ?", (run.id,))
            _store_run(con, run)
            con.executemany(
                "INSERT INTO points VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows
            )

        self._write(write)
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

    @_in_one_snapshot
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
        good = self._good_runs(runs, target)
        good_set = set(good)
        steps = {key.split("|")[2] for key in self._series_of(target)}
        findings: list[Finding] = []
        notes: list[str] = []
        for key, unit in self.series():
            pts = self.points(key, unit)
            cand = next((p for p in pts if p.run_id == target), None)
            if baseline:
                base = [p for p in pts if p.run_id == baseline]
            else:
                base = [p for p in pts if p.run_id in good_set][-window:]
            if cand is None:
                gone = self._vanished(key, unit, target, base, good, steps)
                findings += [gone] if gone else []
                continue
            status[key] = self._unjudged(base, baseline, min_history)
            if status[key]:
                notes.append(f"{key}: {status[key]}")
                continue
            f = self._judge(key, unit, cand, base, k=k, min_rel=min_rel)
            if f is not None:
                findings.append(f)
        return findings, notes

    @staticmethod
    def _unjudged(base: Sequence[Point], baseline: str | None, min_history: int) -> str:
        """Why a series of the run is not judged against ``base`` ("" when it is): fewer
        good baseline runs than ``min_history``, or not measured in the named baseline."""
        if not baseline and len(base) < min_history:
            return f"{len(base)} good baseline run(s), need {min_history}"
        if not base:
            return f"not measured in the baseline run {baseline}"
        return ""

    def _good_runs(self, runs: Sequence[RunInfo], target: str) -> list[str]:
        """The runs of the target's suite before it that passed, oldest first: a
        baseline never mixes suites (``acceptance`` and ``nightly`` share step names
        with other sizes)."""
        ids = [r.id for r in runs]
        suite = next(r.suite for r in runs if r.id == target)
        before = runs[: ids.index(target)]
        return [r.id for r in before if r.suite == suite and r.outcome == Outcome.PASS.value]

    def _series_of(self, run_id: str) -> list[str]:
        with self._db() as con:
            rows = con.execute("SELECT series FROM points WHERE run_id = ?", (run_id,))
            return [r[0] for r in rows.fetchall()]

    def _vanished(
        self,
        key: str,
        unit: str,
        target: str,
        base: Sequence[Point],
        good: Sequence[str],
        steps: Collection[str],
    ) -> Finding | None:
        """A series the last good run measured and the target did not, although the
        target ran its step (a node or rail that stopped reporting)."""
        if not base or not good or base[-1].run_id != good[-1] or key.split("|")[2] not in steps:
            return None
        center = float(statistics.median(b.median for b in base))
        return Finding(
            series=key,
            run_id=target,
            value=float("nan"),
            baseline_median=center,
            band=(center, center),
            change=0.0,
            regression=True,
            baseline_runs=tuple(b.run_id for b in base),
            env_changes=(),
            env_changed=False,
            unit=unit,
            vanished=True,
        )

    @_in_one_snapshot
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
        spread = stats.mad(meds)
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
