"""The history database shared by runs at once, and a database that cannot be written.

Before: two nightly runs sharing one database ended with a ValueError traceback from
history.py and no run.json in 2 of 3 tries; a corrupt, locked or newer database made
``aibench run`` exit 2 after every step had run, with no run.json and no report; an
``--output-dir`` that is a file was a traceback.
"""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
import subprocess
from pathlib import Path

import pytest

from aibench import history as history_module
from aibench.history import History, HistoryBusy
from aibench.model import Measurement, Run, StepResult, StepStatus
from aibench.pipeline import history_missing, record_in_history
from tests.hostile.tiny import Bed, aibench, needs_fio, record


def nightly(bed: Bed) -> Bed:
    text = bed.suite.read_text().replace("settings: {", "settings: {history: true, ")
    bed.suite.write_text(text.split("  - name: slow")[0])  # the quick step only
    return bed


@needs_fio
def test_eight_concurrent_nightly_runs_lose_nothing(tmp_path: Path) -> None:
    bed = nightly(Bed(tmp_path))
    procs = []
    for k in range(8):  # each job its own scratch directory, as on eight CI runners
        own = tmp_path / f"tiny-{k}.yaml"
        own.write_text(bed.suite.read_text().replace("/scratch", f"/scratch-{k}"))
        procs.append(bed.start("--suite", str(own)))
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode in (0, 1), out + err  # 1: a real regression among eight
        assert "Traceback" not in err
    dirs = sorted(d for d in bed.runs.iterdir() if d.is_dir())
    assert len(dirs) == 8
    db = bed.runs / "history.sqlite"
    recorded = {r.id: r for r in History(db).runs()}
    assert set(recorded) == {d.name for d in dirs}
    for d in dirs:
        for name in ("run.json", "report.html", "junit.xml", "manifest.sha256"):
            assert (d / name).is_file(), (d, name)
        run = record(d)
        assert run.judgements[-1]["history"].startswith("history verdicts recomputed")
        assert not [v for v in run.verdicts if v.outcome.value in ("MISSING", "ERROR")]
        assert recorded[d.name].outcome == run.outcome.value  # the judged record stored
        assert History(db).points(_series(db, d.name))  # its points are there
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def _series(db: Path, run_id: str) -> str:
    with sqlite3.connect(db) as con:
        row = con.execute("SELECT series FROM points WHERE run_id = ?", (run_id,)).fetchone()
    assert row is not None, f"no points of {run_id}"
    return str(row[0])


def a_run(i: int) -> Run:
    m = Measurement(
        tool="fio", metric="bw", value=100.0 + i, unit="MB/s", dims={"direction": "read"},
        nodes=("here",), step="quick", repeat=0,
    )  # fmt: skip
    step = StepResult(
        step_id="quick/here/r0", step="quick", tool="fio", nodes=("here",), repeat=0, round=0,
        status=StepStatus.OK, measurements=(m,),
    )  # fmt: skip
    return Run(id=f"run-{i:02d}", suite="tiny", spec="s", started=f"2026-12-05T00:00:{i:02d}Z",
               steps=(step,))  # fmt: skip


def _record_many(db: str, first: int, count: int) -> None:
    h = History(Path(db))
    for i in range(first, first + count):
        h.record(a_run(i))
        h.regressions(f"run-{i:02d}")  # read while the others write


@pytest.mark.parametrize("writers", [2, 4, 8])
def test_concurrent_writers_of_the_history_lose_no_row(tmp_path: Path, writers: int) -> None:
    """The write path alone, as many processes at once as nightly jobs would be."""
    db = tmp_path / "history.sqlite"
    each = 5
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=_record_many, args=(str(db), k * each, each)) for k in range(writers)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(300)
        assert p.exitcode == 0
    h = History(db)
    assert [r.id for r in h.runs()] == [f"run-{i:02d}" for i in range(writers * each)]
    assert len(h.points(h.series()[0][0])) == writers * each


def broken_corrupt(db: Path) -> None:
    db.write_bytes(b"this is not a database, it was overwritten by a careless copy\n" * 100)


def broken_newer(db: Path) -> None:
    with sqlite3.connect(db) as con:
        con.execute("PRAGMA user_version = 7")


@needs_fio
@pytest.mark.parametrize(
    ("breaks", "says"),
    [(broken_corrupt, "not a history database"), (broken_newer, "history schema 7")],
)
def test_a_database_that_cannot_be_written_still_leaves_the_record(
    tmp_path: Path, breaks: object, says: str
) -> None:
    bed = Bed(tmp_path)
    db = tmp_path / "history.sqlite"
    assert callable(breaks)
    breaks(db)
    proc = bed.start("--history", str(db), "--steps", "quick")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, out + err  # a MISSING verdict fails the run
    run_dir = bed.run_dir()
    for name in ("run.json", "report.html", "junit.xml", "summary.md"):
        assert (run_dir / name).is_file(), name
    run = record(run_dir)
    (missing,) = [v for v in run.verdicts if v.origin == "history"]
    assert missing.outcome.value == "MISSING"
    assert says in missing.reason
    assert str(db) in missing.reason
    assert [v.outcome.value for v in run.verdicts if v.origin == "spec"] == ["PASS"]
    assert "MISSING" in out
    assert "history" in out


def test_a_locked_database_is_tried_again_then_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "history.sqlite"
    History(db).record(a_run(0))
    monkeypatch.setattr(history_module, "BUSY_TIMEOUT_S", 0.05)
    monkeypatch.setattr(history_module, "WRITE_PAUSE_S", 0.01)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(HistoryBusy, match="locked"):
            History(db).record(a_run(1))
        why = record_in_history(a_run(1), db)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert "locked" in why
    assert history_missing(db, why).outcome.value == "MISSING"
    History(db).record(a_run(1))  # once the lock is gone, it is written
    assert [r.id for r in History(db).runs()] == ["run-00", "run-01"]


@needs_fio
def test_an_older_aibench_database_still_reads_and_takes_new_runs(tmp_path: Path) -> None:
    """As aibench before WAL wrote it: rollback journal, the run as one JSON text."""
    db = tmp_path / "history.sqlite"
    old = a_run(0)
    with sqlite3.connect(db) as con:
        con.executescript(
            """
            CREATE TABLE runs (id TEXT PRIMARY KEY, started TEXT, suite TEXT, spec TEXT,
                outcome TEXT, generated INTEGER, environment TEXT, run TEXT);
            CREATE TABLE points (run_id TEXT, series TEXT, tool TEXT, metric TEXT, step TEXT,
                unit TEXT, dims TEXT, nodes TEXT, n INTEGER, median REAL, mad REAL, low REAL,
                high REAL, PRIMARY KEY (run_id, series));
            PRAGMA user_version = 1;
            """
        )
        con.execute(
            "INSERT INTO runs VALUES (?, ?, ?, ?, ?, 0, '{}', ?)",
            (old.id, old.started, "tiny", "s", "PASS", json.dumps(old.to_dict())),
        )
    assert History(db).load_run(old.id).steps[0].measurements[0].value == 100.0
    bed = nightly(Bed(tmp_path))
    res = subprocess.run(
        bed.argv("--history", str(db)), capture_output=True, text=True, check=False
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert next(r.id for r in History(db).runs()) == old.id
    assert len(History(db).runs()) == 2


@pytest.mark.parametrize("where", ["a-file", "a-file/below"])
def test_an_output_dir_that_cannot_be_made_is_one_line_exit_2(tmp_path: Path, where: str) -> None:
    (tmp_path / "a-file").write_text("not a directory\n")
    bed = Bed(tmp_path)
    res = aibench(*bed.argv("--output-dir", str(tmp_path / where))[3:])
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("aibench: error: --output-dir ")
    assert where in line
