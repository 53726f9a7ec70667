"""The run directory is the record: a re-judge reproduces the stored verdict from it alone.

Each test reproduces one way a stored run used to change its verdict when judged again
(the spec found by name, history verdicts lost, a verdict of an unknown origin dropped,
a spec's typo hidden by a partial run, a waiver judged against today, reports rewritten
in place from a judgement not stored).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from aibench import store
from aibench.cli import main
from aibench.judge import judge_run, record
from aibench.model import Run
from aibench.thresholds import Spec
from tests.thresholds.helpers import run, spec_from
from tests.thresholds.test_judgement import NODES, _fio, history_case

FAILING_DEFAULT = """\
schema_version: 1
name: default
checks:
  - id: fio-read
    select: {tool: fio, metric: bw, step: fio-read}
    scope: node
    min: 100000
    unit: MB/s
"""


def _inputs(steps: list[tuple[str, str]], selected: list[str]) -> dict[str, Any]:
    return {"suite": {"name": "t", "sha256": "", "text": "", "steps": steps, "selected": selected}}


def _store(tmp: Path, the_run: Run, spec: Spec, **judge: Any) -> Path:
    """The run as ``aibench run`` leaves it: judged once, in its own run directory."""
    run_dir = tmp / the_run.id
    run_dir.mkdir()
    if not the_run.inputs:
        the_run = the_run.replace(inputs=_inputs([("fio-read", "fio")], ["fio-read"]))
    store.save_run(record(the_run, judge_run(the_run, spec, **judge), "aibench run"), run_dir)
    return run_dir


def _stored(run_dir: Path) -> Run:
    return store.load_run(run_dir)


def _check_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    rc = main(["check", *args, "--format", "json"])
    return rc, json.loads(capsys.readouterr().out)


def _hashes(d: Path) -> dict[str, str]:
    return {
        p.relative_to(d).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(d.rglob("*"))
        if p.is_file()
    }


def test_a_spec_file_named_like_a_profile_is_judged_from_the_record_not_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A contract named ``default`` fails the run; the re-judge used to load the built-in
    profile ``default`` and PASS. The spec file is then edited and removed."""
    spec = spec_from(tmp_path, FAILING_DEFAULT, "contract.yaml")
    run_dir = _store(tmp_path, run([_fio(n) for n in NODES], NODES), spec)
    assert _stored(run_dir).outcome.value == "FAIL"
    Path(spec.source).write_text(FAILING_DEFAULT.replace("100000", "1"))
    rc, got = _check_json(capsys, str(run_dir))
    assert (rc, got["outcome"], got["label"]) == (1, "FAIL", "")
    Path(spec.source).unlink()
    rc, got = _check_json(capsys, str(run_dir))
    assert rc == 1
    assert got["verdicts"] == [v.to_dict() for v in _stored(run_dir).verdicts]
    assert got["spec_sha256"] == spec.sha256


def test_another_spec_is_a_new_judgement_stored_only_with_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = spec_from(tmp_path, FAILING_DEFAULT, "contract.yaml")
    run_dir = _store(tmp_path, run([_fio(n) for n in NODES], NODES), spec)
    before = (run_dir / "run.json").read_bytes()
    lenient = spec_from(tmp_path, FAILING_DEFAULT.replace("100000", "1"), "lenient.yaml")
    assert main(["check", str(run_dir), "--spec", lenient.source]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("NEW     new judgement: spec sha256 ")
    assert "--write makes it the run's verdict" in out.err
    assert (run_dir / "run.json").read_bytes() == before
    assert main(["check", str(run_dir), "--spec", lenient.source, "--write"]) == 0
    stored = _stored(run_dir)
    assert [j.get("label", "") != "" for j in stored.judgements] == [False, True]
    assert set(stored.inputs["specs"]) == {spec.sha256, lenient.sha256}
    Path(lenient.source).unlink()
    capsys.readouterr()
    rc, got = _check_json(capsys, str(run_dir))  # the new verdict, from the record
    assert (rc, got["label"], got["spec_sha256"]) == (0, "", lenient.sha256)
    summary = (run_dir / "summary.md").read_text()
    assert "new judgement" in summary
    assert "1 earlier judgement kept in run.json" in summary


def test_an_old_run_without_its_inputs_needs_spec_and_is_labelled_new(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = spec_from(tmp_path, FAILING_DEFAULT, "contract.yaml")
    run_dir = _store(tmp_path, run([_fio(n) for n in NODES], NODES), spec)
    data = json.loads((run_dir / "run.json").read_text())
    data["schema_version"] = "1.1"
    del data["inputs"]
    for j in data["judgements"]:
        del j["as_of"]
    (run_dir / "run.json").write_text(json.dumps(data))
    assert main(["check", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert "holds no copy of the spec it was judged with" in err
    assert "--spec" in err
    rc, got = _check_json(capsys, str(run_dir), "--spec", spec.source)
    assert rc == 1
    assert got["label"] == (
        "new judgement: the run's record holds no copy of the spec it was judged with"
    )


def _thin_history(db: Path, the_run: Run) -> None:
    from aibench.history import History

    History(db).record(the_run)


@pytest.mark.parametrize("kind", ["empty-file", "thin", "not-history", "run-not-recorded"])
def test_history_that_cannot_judge_gives_missing_with_the_reason(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, _, _ = history_case(tmp_path)
    stored = _stored(run_dir)
    db = tmp_path / f"{kind}.sqlite"
    if kind == "empty-file":
        db.touch()
    elif kind == "thin":
        _thin_history(db, stored)
    elif kind == "not-history":
        con = sqlite3.connect(db)
        con.execute("CREATE TABLE t (x)")
        con.close()
    else:
        _thin_history(db, stored.replace(id="another"))
    rc, got = _check_json(capsys, str(run_dir), "--history", str(db))
    assert rc == 1
    regress = [v for v in got["verdicts"] if v["origin"] == "history"]
    assert [v["outcome"] for v in regress] == ["MISSING"]
    assert str(db) in regress[0]["reason"]
    assert "cannot judge" in regress[0]["reason"]
    assert got["label"].startswith("new judgement: history recomputed against")
    # without --history: the stored verdict and its stored baseline
    rc, got = _check_json(capsys, str(run_dir))
    kept = [v for v in got["verdicts"] if v["origin"] == "history"]
    assert (rc, [v["outcome"] for v in kept]) == (1, ["FAIL"])
    assert kept[0]["baseline"]["runs"] == [f"good{i}" for i in range(5)]
    assert kept[0]["baseline"]["n"] == 5
    assert kept[0]["baseline"]["median"] == pytest.approx(502.0 * 1e6 / 1024, rel=1e-3)


def test_reading_history_never_creates_a_database(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "none" / "history.sqlite"
    assert main(["history", "--db", str(db)]) == 0
    assert "0 run(s)" in capsys.readouterr().out
    assert not db.parent.exists()


def test_a_verdict_of_an_unknown_origin_is_an_error_not_dropped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = spec_from(tmp_path, FAILING_DEFAULT, "contract.yaml")
    run_dir = _store(tmp_path, run([_fio(n) for n in NODES], NODES), spec)
    data = json.loads((run_dir / "run.json").read_text())
    data["verdicts"].append({**data["verdicts"][0], "check": "x", "origin": "oracle"})
    (run_dir / "run.json").write_text(json.dumps(data))
    assert main(["check", str(run_dir)]) == 2
    assert "origin 'oracle'" in capsys.readouterr().err


def test_a_partial_run_keeps_a_check_of_a_step_the_suite_does_not_have(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--steps fio-read: the deselected fio-write check is left out; a check naming
    fio-raed (a typo, in no step of the suite) is MISSING, as in a full run."""
    text = FAILING_DEFAULT.replace("100000", "1") + (
        "  - id: write\n    select: {tool: fio, metric: bw, step: fio-write}\n"
        "    scope: node\n    min: 1\n    unit: MB/s\n"
        "  - id: typo\n    select: {tool: fio, metric: bw, step: fio-raed}\n"
        "    scope: node\n    min: 1\n    unit: MB/s\n"
    )
    spec = spec_from(tmp_path, text, "contract.yaml")
    the_run = run([_fio(n) for n in NODES], NODES).replace(
        inputs=_inputs([("fio-read", "fio"), ("fio-write", "fio")], ["fio-read"])
    )
    run_dir = _store(tmp_path, the_run, spec, partial=True)
    stored = _stored(run_dir)
    assert {v.check: v.outcome.value for v in stored.verdicts} == {
        "fio-read": "PASS",
        "typo": "MISSING",
    }
    assert any(
        n.startswith("1 check(s) of default not judged: their steps were not selected")
        for n in stored.notes
    ), stored.notes
    rc, got = _check_json(capsys, str(run_dir))
    assert rc == 1
    assert got["verdicts"] == [v.to_dict() for v in stored.verdicts]


WAIVED = FAILING_DEFAULT + ("    waiver: {reason: vendor RMA, owner: ops, expires: '2026-12-02'}\n")


class _Tomorrow(datetime):
    @classmethod
    def now(cls, tz: Any = None) -> Any:
        return datetime(2026, 12, 3, 9, 0, tzinfo=UTC)


def test_a_waiver_is_judged_as_of_the_stored_instant_and_as_of_is_a_new_judgement(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = spec_from(tmp_path, WAIVED, "contract.yaml")
    judged_at = datetime(2026, 12, 2, 23, 0, tzinfo=UTC)
    run_dir = _store(tmp_path, run([_fio(n) for n in NODES], NODES), spec, now=judged_at)
    stored = _stored(run_dir)
    assert stored.judgements[-1]["as_of"] == "2026-12-02T23:00:00Z"
    assert {v.outcome.value for v in stored.verdicts} == {"WAIVED"}
    monkeypatch.setattr("aibench.judge.datetime", _Tomorrow)  # a day passes
    monkeypatch.setattr("aibench.instants.datetime", _Tomorrow)  # and --as-of now
    rc, got = _check_json(capsys, str(run_dir))
    assert (rc, got["label"], got["as_of"]) == (0, "", "2026-12-02T23:00:00Z")
    assert got["verdicts"] == [v.to_dict() for v in stored.verdicts]
    rc, got = _check_json(capsys, str(run_dir), "--as-of", "now")
    assert (rc, got["as_of"]) == (1, "2026-12-03T09:00:00Z")
    assert (
        got["label"] == "new judgement: as of 2026-12-03T09:00:00Z instead of 2026-12-02T23:00:00Z"
    )
    assert {v["outcome"] for v in got["verdicts"]} == {"FAIL"}
    later = (judged_at + timedelta(days=1)).date().isoformat()
    rc, got = _check_json(capsys, str(run_dir), "--as-of", later)
    assert rc == 1
    assert main(["check", str(run_dir), "--as-of", "yesterday"]) == 2


def test_report_with_a_spec_and_no_write_leaves_the_run_directory_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = spec_from(tmp_path, FAILING_DEFAULT, "contract.yaml")
    run_dir = _store(tmp_path, run([_fio(n) for n in NODES], NODES), spec)
    assert main(["report", str(run_dir)]) == 1
    before = _hashes(run_dir)
    lenient = spec_from(tmp_path, FAILING_DEFAULT.replace("100000", "1"), "lenient.yaml")
    capsys.readouterr()
    assert main(["report", str(run_dir), "--spec", lenient.source]) == 0
    out = capsys.readouterr().out
    assert "new judgement" in out
    assert "not stored in run.json" in out
    out_dir = tmp_path / "elsewhere"
    assert main(["report", str(run_dir), "--spec", lenient.source, "--out", str(out_dir)]) == 0
    assert "new judgement" in (out_dir / "summary.md").read_text()
    assert _hashes(run_dir) == before
    assert main(["verify", str(run_dir)]) == 0
    assert main(["report", str(run_dir), "--spec", lenient.source, "--write"]) == 0
    assert main(["verify", str(run_dir)]) == 0
    assert _stored(run_dir).outcome.value == "PASS"


def test_the_record_survives_a_copy_with_every_input_deleted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = spec_from(tmp_path, FAILING_DEFAULT, "contract.yaml")
    run_dir = _store(tmp_path, run([_fio(n) for n in NODES], NODES), spec)
    copy = tmp_path / "archive" / run_dir.name
    shutil.copytree(run_dir, copy)
    shutil.rmtree(run_dir)
    Path(spec.source).unlink()

    def no_profile(*args: object, **kwargs: object) -> None:
        raise AssertionError("a stored run is never judged with a spec loaded by name")

    monkeypatch.setattr("aibench.thresholds.load_spec", no_profile)
    rc, got = _check_json(capsys, str(copy))
    assert rc == 1
    assert got["verdicts"] == [v.to_dict() for v in _stored(copy).verdicts]
