"""``aibench report`` and ``aibench check`` of a run whose steps stay in run.json (a run
larger than ``store.LAZY_BYTES``) give what they give of the run read whole."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from aibench import store
from aibench.cli import main
from tests.reports.gen import make_run, write_run

PLOT_IDS = re.compile(r"(?<=[\"#])p\d+-")  # each plot's ids: a counter of the process


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("lazy") / "run"
    write_run(make_run(8, dense=True), d)
    return d


def _outputs(
    run_dir: Path,
    lazy_bytes: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> tuple[int, str, int, dict[str, str]]:
    monkeypatch.setattr(store, "LAZY_BYTES", lazy_bytes)
    checked = main(
        ["check", str(run_dir), "--spec", "h100-ndr", "--as-of", "2026-12-02T12:00:00Z", "--all"]
    )
    check_text = capsys.readouterr().out
    reported = main(["report", str(run_dir)])
    capsys.readouterr()
    files = {
        name: PLOT_IDS.sub("p-", (run_dir / name).read_text(encoding="utf-8"))
        for name in ("report.html", "junit.xml", "summary.md", "metrics.prom")
    }
    return checked, check_text, reported, files


def test_report_and_check_of_steps_left_in_run_json(
    generated: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    held, lazy = tmp_path / "held", tmp_path / "lazy"
    shutil.copytree(generated, held)
    shutil.copytree(generated, lazy)
    loaded: list[type] = []
    real = store.load_run

    def spy(run_dir: Path, **kw: object) -> object:
        got = real(run_dir, **kw)  # type: ignore[arg-type]
        loaded.append(type(got.steps))
        return got

    monkeypatch.setattr(store, "load_run", spy)
    want = _outputs(held, 1 << 40, monkeypatch, capsys)
    assert set(loaded) == {tuple}
    loaded.clear()
    got = _outputs(lazy, 0, monkeypatch, capsys)
    assert set(loaded) == {store.RunJsonSteps}
    assert got[:3] == want[:3]
    for name, text in want[3].items():
        assert got[3][name] == text, name
    assert want[0] == 1  # the generated run has failing checks: something was compared
    assert "FAIL" in want[1]
