"""History: 24 generated runs with noise and one real step change (a driver upgrade).

Series: NCCL all_reduce busbw of node g1 (drops 9% from run 14 on, when the driver goes
from 550.54.15 to 560.28.03), fio bandwidth of g1 (noise only), and iperf3 (noise only,
wider). The step must be flagged once, at run 14, naming the driver change; the noise
must not be flagged anywhere.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from aibench.cli import main
from aibench.history import History, env_diff, flatten_environment
from aibench.model import Outcome, Run, Verdict
from aibench.store import save_run
from aibench.thresholds.compare import compare_runs
from tests.thresholds.helpers import m, run, step

STEP_AT = 14


def make_runs(n: int = 24, seed: int = 11) -> list[Run]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        driver = "550.54.15" if i < STEP_AT else "560.28.03"
        level = 478.0 if i < STEP_AT else 435.0
        steps = []
        for r in range(3):
            steps.append(
                step(
                    "nccl",
                    "nccl-tests",
                    ("g1",),
                    [
                        m(
                            "nccl-tests",
                            "busbw",
                            level * rnd.gauss(1, 0.006),
                            "GB/s",
                            (),
                            op="all_reduce",
                            size_bytes=2**33,
                        )
                    ],
                    repeat=r,
                )
            )
            steps.append(
                step(
                    "fio",
                    "fio",
                    ("g1",),
                    [m("fio", "bw", 5_000_000 * rnd.gauss(1, 0.01), "KiB/s", (), direction="read")],
                    repeat=r,
                )
            )
            steps.append(
                step(
                    "tcp",
                    "iperf3",
                    ("g1", "g2"),
                    [
                        m(
                            "iperf3",
                            "throughput",
                            9.4e9 * rnd.gauss(1, 0.02),
                            "bit/s",
                            (),
                            side="receiver",
                        )
                    ],
                    repeat=r,
                )
            )
        env = {
            "g1": {"driver_version": driver, "kernel": "Linux 6.8.0", "tools": {"fio": "3.33"}},
            "g2": {"driver_version": driver, "kernel": "Linux 6.8.0"},
        }
        r_ = run(
            steps,
            ("g1", "g2"),
            environment=env,
            rid=f"run{i:02d}",
            started=f"2026-11-{i + 1:02d}T03:00:00Z",
        )
        out.append(r_.replace(verdicts=(Verdict(check="x", outcome=Outcome.PASS),)))
    return out


@pytest.fixture
def history(tmp_path: Path) -> History:
    h = History(tmp_path / "h.sqlite")
    for r in make_runs():
        h.record(r)
    return h


def _key(h: History, tool: str) -> str:
    (key,) = [k for k, _ in h.series() if k.startswith(tool + "|")]
    return key


def test_step_change_flagged_once_noise_not(history: History) -> None:
    assert len(history.runs()) == 24
    step_findings = history.scan(_key(history, "nccl-tests"))
    assert [f.run_id for f in step_findings] == [f"run{STEP_AT:02d}"]
    (f,) = step_findings
    assert f.regression
    assert f.change == pytest.approx(-0.09, abs=0.02)
    assert f.env_changed
    assert any("driver_version 550.54.15 -> 560.28.03" in c for c in f.env_changes)
    assert "what changed: driver_version 550.54.15 -> 560.28.03 (2 nodes)" in f.text
    assert history.scan(_key(history, "fio")) == []
    assert history.scan(_key(history, "iperf3")) == []


def test_latest_run_against_last_good_runs(history: History) -> None:
    # The last good runs include the post-step ones, so run23 is no longer a regression
    # against a 10-run window; against the handover run it is.
    findings, _ = history.regressions("run23")
    assert [f for f in findings if f.series.startswith("nccl")] == []
    findings, _ = history.regressions("run23", baseline="run00")
    nccl = [f for f in findings if f.series.startswith("nccl")]
    assert len(nccl) == 1
    assert nccl[0].regression
    assert nccl[0].env_changed
    findings, _ = history.regressions(f"run{STEP_AT:02d}")
    assert [f.series.split("|")[0] for f in findings] == ["nccl-tests"]


def test_minimum_history_is_said(history: History) -> None:
    findings, notes = history.regressions("run03")
    assert findings == []
    assert any("3 good baseline run(s), need 5" in n for n in notes)


def test_cli_history_and_regressions(history: History, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["history", "--db", str(history.path)]) == 0
    out = capsys.readouterr().out
    assert "24 run(s)" in out
    assert out.count("regression: nccl-tests|busbw") == 1
    assert "driver_version 550.54.15 -> 560.28.03" in out
    assert main(["history", "--db", str(history.path), "--regressions", "--run", "run14"]) == 1
    assert "1 regression(s)" in capsys.readouterr().out


def test_record_from_run_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = tmp_path / "r"
    d.mkdir()
    save_run(make_runs(1)[0], d)
    db = tmp_path / "x.sqlite"
    assert main(["history", "--db", str(db), "--record", str(d)]) == 0
    assert "recorded run00: 3 series" in capsys.readouterr().out
    assert History(db).load_run("run00").id == "run00"


def test_not_a_history_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.sqlite"
    bad.write_text("not sqlite at all " * 100)
    assert main(["history", "--db", str(bad)]) == 2
    assert "not a history database" in capsys.readouterr().err


def test_compare_significance_and_environment() -> None:
    runs = make_runs()
    same = compare_runs(runs[2], runs[3])
    assert all(d.significant is False for d in same.deltas)
    assert same.env_changes == ()
    stepped = compare_runs(runs[2], runs[STEP_AT + 2])
    sig = {d.series.split("|")[0]: d for d in stepped.deltas}
    assert sig["nccl-tests"].significant is True
    assert not sig["nccl-tests"].better
    assert sig["fio"].significant is False
    assert stepped.env_changes == ("driver_version 550.54.15 -> 560.28.03 (2 nodes)",)


def test_cli_compare(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = make_runs()
    a, b = tmp_path / "a", tmp_path / "b"
    for d, r in ((a, runs[1]), (b, runs[STEP_AT + 1])):
        d.mkdir()
        save_run(r, d)
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "environment differs" in out
    assert "SIGNIFICANT worse" in out
    assert out.count("within noise") == 2


def test_environment_flattening() -> None:
    env = {
        "g1": {"driver_version": "550", "tools": {"fio": "3.33"}, "memory_gib": 2015},
        "_controller": {"python": "3.11"},
    }
    flat = flatten_environment(env)
    assert flat == {"g1:driver_version": "550", "g1:tools.fio": "3.33"}
    assert env_diff(flat, {**flat, "g1:tools.fio": "3.36"}) == ["tools.fio 3.33 -> 3.36 (g1)"]
