"""``aibench check RUN_DIR``: re-judging stored results, exit codes, --write, suspects."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from aibench.cli import main
from aibench.model import Run
from aibench.store import save_run
from tests.thresholds.helpers import m, run, step


def _run_dir(tmp_path: Path, seq_kib: float) -> Path:
    nodes = [f"n{i}" for i in range(6)]
    steps = []
    for n in nodes:
        for name, metric, unit, direction, value in (
            ("fio-seq-read", "bw", "KiB/s", "read", seq_kib),
            ("fio-seq-write", "bw", "KiB/s", "write", 400_000),
            ("fio-rand-read", "iops", "IOPS", "read", 30_000),
            ("fio-rand-write", "iops", "IOPS", "write", 20_000),
        ):
            steps.append(
                step(name, "fio", (n,), [m("fio", metric, value, unit, (), direction=direction)])
            )
    for a, b in itertools.combinations(nodes, 2):
        gbit = 2.0 if "n4" in (a, b) else 9.4
        steps.append(
            step(
                "iperf3-tcp",
                "iperf3",
                (a, b),
                [
                    m("iperf3", "throughput", gbit * 1e9, "bit/s", (), side="receiver", direction=d)
                    for d in ("forward", "reverse")
                ],
            )
        )
    d = tmp_path / "run"
    d.mkdir()
    save_run(run(steps, nodes).replace(spec="default"), d)
    return d


def test_pass_exit_0_and_suspects(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _run_dir(tmp_path, 600_000)
    # a run stored without its inputs is judged with an explicit spec only
    assert main(["check", str(d)]) == 2
    assert "holds no copy of the spec" in capsys.readouterr().err
    assert main(["check", str(d), "--spec", "default"]) == 0
    out = capsys.readouterr().out
    assert "SUSPECT iperf3: node n4: 5 of 5 pairs slow" in out
    assert out.strip().splitlines()[-1].startswith("PASS: r1 against default (")
    before = json.loads((d / "run.json").read_text())
    assert before["verdicts"] == []  # not rewritten without --write


def test_fail_exit_1_and_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _run_dir(tmp_path, 50_000)  # 51.2 MB/s < 100 MB/s
    assert main(["check", str(d), "--spec", "default", "--write"]) == 1
    out = capsys.readouterr().out
    assert "FAIL    fio-seq-read-bw" in out
    stored = Run.from_dict(json.loads((d / "run.json").read_text()))
    assert {v.outcome.value for v in stored.verdicts if v.check == "fio-seq-read-bw"} == {"FAIL"}
    last = stored.judgements[-1]
    assert (last["by"], last["spec"], last["outcome"]) == (
        "aibench check --write",
        "default",
        "FAIL",
    )
    (suspect,) = stored.suspects
    assert (suspect["tool"], suspect["kind"], suspect["name"]) == ("iperf3", "node", "n4")
    assert len(suspect["series"]) == 2  # iperf3-tcp and iperf3-tcp-reverse, named once


def test_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = _run_dir(tmp_path, 600_000)
    assert main(["check", str(d), "--spec", "default", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["outcome"] == "PASS"
    assert [s["name"] for s in data["suspects"]] == ["n4"]
    assert len(data["verdicts"]) == 4 * 6 + 2 * 15 + 6  # per node, per pair, coverage


def test_not_a_run_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(tmp_path / "nope")]) == 2
    assert "no such run directory" in capsys.readouterr().err
