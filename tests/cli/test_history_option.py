"""``--history DB`` is the history database for ``run``, ``check`` and ``report`` alike.

``report`` used to take the database as ``--history-db`` and earlier run directories as
``--history``; a database given to the old ``--history`` ended in a UnicodeDecodeError
traceback. Both old spellings still work, with a note on stderr.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from aibench.cli import main
from aibench.errors import EXIT_USAGE
from tests.thresholds.test_judgement import history_case


def test_report_and_check_take_the_history_database_the_same_way(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, spec, _ = history_case(tmp_path)
    db = str(tmp_path / "history.sqlite")
    assert main(["check", str(run_dir), "--spec", str(spec.source), "--history", db]) == 1
    assert f"history verdicts recomputed against {db}" in capsys.readouterr().out
    assert main(["report", str(run_dir), "--spec", str(spec.source), "--history", db]) == 1
    assert "deprecated" not in capsys.readouterr().err
    # the old spelling still works, and says it is old
    assert main(["report", str(run_dir), "--spec", str(spec.source), "--history-db", db]) == 1
    assert "--history-db is deprecated" in capsys.readouterr().err


def test_a_database_without_a_spec_is_one_line_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, _, _ = history_case(tmp_path)
    db = str(tmp_path / "history.sqlite")
    assert main(["report", str(run_dir), "--history", db]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "--history go with --spec" in err


def test_an_earlier_run_directory_goes_to_the_trend_plots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, _, _ = history_case(tmp_path)
    earlier = tmp_path / "earlier"
    shutil.copytree(run_dir, earlier)
    assert main(["report", str(run_dir), "--trend", str(earlier)]) == 1  # the run FAILs
    assert "deprecated" not in capsys.readouterr().err
    assert main(["report", str(run_dir), "--history", str(earlier)]) == 1
    assert "--trend RUN_DIR adds it to the trend plots" in capsys.readouterr().err


def test_a_file_that_is_not_a_run_is_named_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, _, _ = history_case(tmp_path)
    not_a_run = tmp_path / "not-a-run"
    not_a_run.mkdir()
    (not_a_run / "run.json").write_bytes(b"SQLite format 3\x00\xff\xfe")
    assert main(["report", str(run_dir), "--trend", str(not_a_run)]) == EXIT_USAGE
    assert "not a run.json (not UTF-8 text)" in capsys.readouterr().err
