"""History: 24 generated runs with noise and one real step change (a driver upgrade).

Series: NCCL all_reduce busbw of node g1 (drops 9% from run 14 on, when the driver goes
from 550.54.15 to 560.28.03), fio bandwidth of g1 (noise only), and iperf3 (noise only,
wider). The step must be flagged once, at run 14, naming the driver change; the noise
must not be flagged anywhere.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from aibench.cli import main
from aibench.history import History, env_diff, flatten_environment
from aibench.model import Outcome, Run, Verdict
from aibench.store import save_run
from aibench.thresholds.compare import compare_runs
from tests.thresholds.helpers import m, replace_execution, run, step

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


# ------------------------------------------------ the environment as real runs record it


def real_shape_environment(nodes: tuple[str, ...], driver: str) -> dict[str, object]:
    """The environment as `aibench run` builds it: envfacts per node, then the preflight's
    bill of materials merged in through environment_from_facts (keys "source.name")."""
    from aibench import envfacts
    from aibench.model import Fact
    from aibench.preflight import environment_from_facts

    env: dict[str, dict[str, object]] = {}
    for n in nodes:
        env[n] = envfacts.parse_facts(
            {
                "hostname": f"{n}\n",
                "kernel": "Linux 6.8.0-49-generic x86_64\n",
                "cpuinfo": "model name\t: AMD EPYC 9554 64-Core Processor\n" * 4,
                "meminfo": "MemTotal:       1056485376 kB\n",
                "os_release": 'PRETTY_NAME="Ubuntu 22.04.5 LTS"\n',
            }
        )
        env[n]["tools"] = {"nccl-tests": "2.13.10"}
    facts = []
    for n in nodes:
        for gpu in range(8):
            facts.append(Fact("nvidia-smi", "driver_version", driver, nodes=(n,)))
            facts.append(
                Fact("nvidia-smi", "persistence_mode", "Enabled", dims={"gpu": gpu}, nodes=(n,))
            )
        facts += [
            Fact("nvidia-smi", "cuda_version", "12.4", nodes=(n,)),
            Fact("nccl", "version", "2.21.5", nodes=(n,)),
            Fact("kernel", "release", "6.8.0-49-generic", nodes=(n,)),
            Fact("ibstat", "firmware_version", "28.39.1002", dims={"hca": "mlx5_0"}, nodes=(n,)),
            Fact("sysctl", "vm.swappiness", 10, nodes=(n,)),
        ]
    for node, bom in environment_from_facts(facts).items():
        env.setdefault(node, {}).update(bom)
    env["_controller"] = {"aibench": "0", "python": "3.11.9"}
    return dict(env)


def make_real_shape_runs(n: int = 22, at: int = 12, seed: int = 5) -> list[Run]:
    rnd = random.Random(seed)
    nodes = ("gpu01", "gpu02")
    out = []
    for i in range(n):
        driver = "550.54.15" if i < at else "560.35.03"
        level = 478.0 if i < at else 441.0
        steps = []
        for r in range(3):
            steps.append(
                step(
                    "nccl-node",
                    "nccl-tests",
                    ("gpu01",),
                    [
                        m(
                            "nccl-tests",
                            "busbw",
                            level * rnd.gauss(1, 0.005),
                            "GB/s",
                            (),
                            op="all_reduce",
                            size_bytes=2**34,
                        )
                    ],
                    repeat=r,
                )
            )
            steps.append(
                step(
                    "ib",
                    "perftest",
                    nodes,
                    [
                        m(
                            "perftest",
                            "bw_avg",
                            392.0 * rnd.gauss(1, 0.004),
                            "Gbit/s",
                            (),
                            test="write",
                            device="mlx5_0",
                        )
                    ],
                    repeat=r,
                )
            )
        r_ = run(
            steps,
            nodes,
            environment=real_shape_environment(nodes, driver),
            rid=f"n{i:02d}",
            started=f"2026-10-{i + 1:02d}T02:00:00Z",
        )
        out.append(r_.replace(verdicts=(Verdict(check="x", outcome=Outcome.PASS),)))
    return out


def test_driver_upgrade_in_the_preflight_shape_is_named(tmp_path: Path) -> None:
    runs = make_real_shape_runs()
    env = runs[0].environment["gpu01"]
    assert env["nvidia-smi.driver_version"] == "550.54.15"  # the key shape real runs store
    h = History(tmp_path / "h.sqlite")
    for r in runs:
        h.record(r)
    nccl = next(k for k, _ in h.series() if k.startswith("nccl-tests|"))
    (f,) = h.scan(nccl)
    assert f.run_id == "n12"
    assert f.regression
    assert f.env_changed
    assert f.env_changes == ("nvidia-smi.driver_version 550.54.15 -> 560.35.03 (2 nodes)",)
    assert "what changed: nvidia-smi.driver_version 550.54.15 -> 560.35.03" in f.text
    assert "environment unchanged" not in f.text
    ib = next(k for k, _ in h.series() if k.startswith("perftest|"))
    assert h.scan(ib) == []  # noise only


def test_flatten_keeps_preflight_key_facts_and_drops_the_rest() -> None:
    env = real_shape_environment(("g1",), "550.54.15")
    flat = flatten_environment(env)
    assert flat["g1:nvidia-smi.driver_version"] == "550.54.15"
    assert flat["g1:nccl.version"] == "2.21.5"
    assert flat["g1:ibstat.firmware_version"] == "28.39.1002"
    assert flat["g1:kernel.release"] == "6.8.0-49-generic"
    assert flat["g1:kernel"] == "Linux 6.8.0-49-generic x86_64"
    assert flat["g1:tools.nccl-tests"] == "2.13.10"
    assert "g1:sysctl.vm.swappiness" not in flat  # a setting, judged by the spec
    assert "g1:nvidia-smi.persistence_mode" not in flat
    assert not any(k.startswith("_controller") for k in flat)
    other = {**flat, "g1:ibstat.firmware_version": "28.41.1000"}
    assert env_diff(flat, other) == ["ibstat.firmware_version 28.39.1002 -> 28.41.1000 (g1)"]


def test_compare_names_the_driver_change_in_the_preflight_shape() -> None:
    runs = make_real_shape_runs()
    result = compare_runs(runs[3], runs[15])
    assert result.env_changes == ("nvidia-smi.driver_version 550.54.15 -> 560.35.03 (2 nodes)",)
    nccl = next(d for d in result.deltas if d.series.startswith("nccl-tests"))
    assert nccl.significant is True
    assert not nccl.better


def _latency_run(rid: str, values: list[float], unit: str) -> Run:
    steps = [
        step(
            "lat", "fio", ("g1",), [m("fio", "clat_mean", v, unit, (), direction="read")], repeat=i
        )
        for i, v in enumerate(values)
    ]
    return run(steps, ("g1",), rid=rid)


def test_compare_converts_a_unit_that_changed_between_runs() -> None:
    a = _latency_run("a", [95.0, 96.0, 95.5], "us")  # fio 2.x
    b = _latency_run("b", [95_400.0, 95_900.0, 95_600.0], "ns")  # fio 3.x
    (d,) = compare_runs(a, b).deltas
    assert d.unit == "us"
    assert d.b == pytest.approx(95.6)
    assert d.significant is False
    slow = _latency_run("c", [120_000.0, 121_000.0, 119_500.0], "ns")
    (d,) = compare_runs(a, slow).deltas
    assert d.significant is True
    assert not d.better


def test_compare_refuses_a_unit_of_another_dimension(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _latency_run("a", [95.0, 96.0], "us")
    b = _latency_run("b", [5000.0, 5100.0], "IOPS")
    result = compare_runs(a, b)
    assert result.deltas == ()
    assert result.refused == (f"{next(iter(_series_keys(a)))}: A in us, B in IOPS: not comparable",)
    da, db = tmp_path / "a", tmp_path / "b"
    for d, r in ((da, a), (db, b)):
        d.mkdir()
        save_run(r, d)
    assert main(["compare", str(da), str(db)]) == 0
    assert "not compared: fio|clat_mean" in capsys.readouterr().out


def _series_keys(r: Run) -> list[str]:
    from aibench.thresholds.compare import _series

    return list(_series(r))


def test_history_converts_a_unit_that_changed_between_runs(tmp_path: Path) -> None:
    h = History(tmp_path / "h.sqlite")
    for i in range(8):
        unit, scale = ("us", 1.0) if i < 4 else ("ns", 1000.0)
        r = _latency_run(f"r{i}", [(95.0 + 0.2 * i) * scale], unit)
        r = r.replace(started=f"2026-11-0{i + 1}T00:00:00Z")
        h.record(r.replace(verdicts=(Verdict(check="x", outcome=Outcome.PASS),)))
    ((key, unit),) = h.series()
    assert unit == "ns"
    assert [round(p.median) for p in h.points(key)] == [95000 + 200 * i for i in range(8)]
    assert h.scan(key, min_history=3) == []


# ------------------------------------------------------- nightly records by default


def test_nightly_suite_records_history_by_default(tmp_path: Path) -> None:
    import argparse

    from aibench.commands.run import history_path
    from aibench.suite import load_suite

    nightly, acceptance = load_suite("nightly"), load_suite("acceptance")
    run_dir = tmp_path / "runs" / "20261202-030000-nightly"
    args = argparse.Namespace(history=None, no_history=False)
    assert history_path(args, nightly, run_dir) == tmp_path / "runs" / "history.sqlite"
    assert history_path(args, acceptance, run_dir) is None
    explicit = argparse.Namespace(history=str(tmp_path / "h.db"), no_history=False)
    assert history_path(explicit, acceptance, run_dir) == tmp_path / "h.db"
    off = argparse.Namespace(history=None, no_history=True)
    assert history_path(off, nightly, run_dir) is None


def test_aibench_run_of_a_history_suite_fills_the_default_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`aibench run` twice, the execution replaced by generated fio results (the numbers
    are not the point): both runs land in OUTPUT_DIR/history.sqlite, which `aibench
    history --db` lists."""
    import yaml

    suite = tmp_path / "suite.yaml"
    suite.write_text(
        yaml.safe_dump(
            {
                "schema_version": 1,
                "name": "nightly-like",
                "spec": "default",
                "settings": {"history": True},
                "steps": [
                    {"name": "fio-seq-read", "tool": "fio", "options": {"rw": "read", "bs": "1M"}}
                ],
            }
        )
    )
    results = [
        step(
            "fio-seq-read",
            "fio",
            ("localhost",),
            [m("fio", "bw", 5e5, "KiB/s", (), direction="read")],
        )
    ]

    replace_execution(monkeypatch, results)
    out = tmp_path / "runs"
    for _ in range(2):  # exit 1: the default spec misses the steps this suite lacks
        assert main(["run", "--suite", str(suite), "--output-dir", str(out), "--quiet"]) == 1
    db = out / "history.sqlite"
    runs = History(db).runs()
    assert len(runs) == 2
    assert {r.suite for r in runs} == {"nightly-like"}
    main(["run", "--suite", str(suite), "--output-dir", str(out), "--quiet", "--no-history"])
    assert len(History(db).runs()) == 2


def test_a_run_is_recorded_as_its_run_json_bytes_written_a_step_at_a_time(
    tmp_path: Path,
) -> None:
    """The database keeps a run's record as the bytes of its run.json, written into the
    row a step at a time and read back a piece at a time; a record an older aibench
    stored as one JSON text still reads."""
    import json
    import sqlite3

    from tests.reports.gen import make_run

    r = make_run(8, dense=True).run
    h = History(tmp_path / "h.sqlite")
    h.record(r)
    h.record(r)  # again, in place of the first
    save_run(r, tmp_path)
    with sqlite3.connect(tmp_path / "h.sqlite") as con:
        rows = con.execute("SELECT typeof(run), run FROM runs").fetchall()
    assert [kind for kind, _ in rows] == ["blob"]
    assert rows[0][1] == (tmp_path / "run.json").read_bytes()
    assert h.load_run(r.id) == r
    with sqlite3.connect(tmp_path / "h.sqlite") as con:
        con.execute("UPDATE runs SET run = ?", (json.dumps(r.to_dict()),))
    assert h.load_run(r.id) == r


def test_a_run_judged_with_history_reads_only_the_last_twenty_runs_of_its_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report's trends take the suite's last 20 earlier runs: those are read from the
    database, not every run it holds."""
    from aibench import pipeline
    from aibench.suite import load_suite
    from aibench.thresholds import load_spec

    runs = make_runs(24)
    db = tmp_path / "h.sqlite"
    h = History(db)
    for r in runs[:-1]:
        h.record(r)
    read: list[str] = []
    real = History.load_run

    def counted(self: History, run_id: str, **kw: Any) -> Run:
        read.append(run_id)
        return real(self, run_id, **kw)

    monkeypatch.setattr(History, "load_run", counted)
    inputs = pipeline.Inputs(
        suite=load_suite("acceptance"), inventory=None, spec=load_spec("default")
    )
    judged, earlier = pipeline.judge(runs[-1], inputs, history=db)
    assert [r.id for r in earlier] == [r.id for r in runs[-21:-1]]
    assert read == [r.id for r in runs[-21:-1]]
    assert judged.id == runs[-1].id


def test_earlier_runs_read_for_trends_keep_only_the_steps_a_section_reads(
    tmp_path: Path,
) -> None:
    """The report draws trends from the earlier runs' verdicts, and only the MLPerf
    Training section reads their steps: an earlier run read for a suite keeps its
    verdicts and those steps alone (a nightly all-pairs run's steps stay in the database)."""
    from aibench import pipeline
    from aibench.reports.sections import history_step_tools
    from aibench.suite import load_suite
    from aibench.thresholds import load_spec
    from tests.reports.gen import make_run

    assert history_step_tools(["iperf3", "mlperf-training", "fio"]) == {"mlperf-training"}
    old = make_run(8, dense=True).run
    assert {"mlperf-training", "iperf3", "fio"} <= {s.tool for s in old.steps}
    db = tmp_path / "h.sqlite"
    History(db).record(old.replace(suite="acceptance"))
    new = old.replace(id="later", started="2026-12-03T10:15:00Z", suite="acceptance")
    examples = Path(__file__).resolve().parents[2] / "examples"
    for suite, want in (
        ("acceptance", set()),
        (str(examples / "suite-gpu-acceptance.yaml"), {"mlperf-training"}),
    ):
        inputs = pipeline.Inputs(
            suite=load_suite(suite), inventory=None, spec=load_spec("h100-ndr")
        )
        _, (earlier,) = pipeline.judge(new, inputs, history=db)
        assert {s.tool for s in earlier.steps} == want, suite
        assert earlier.verdicts == old.verdicts
    whole = History(db).load_run(old.id)
    assert len(whole.steps) == len(old.steps)


def test_compare_shows_no_absent_fact_missing_from_the_other_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fact absent on A's nodes (the tool is not installed) and not recorded in B (no
    preflight) is no environment change; a real change beside it is still shown."""
    from dataclasses import replace

    runs = make_runs()
    absent = {"nvidia-smi.driver_version": None, "nccl.version": None, "kernel": "Linux 6.8"}
    a = replace(runs[1], environment={"g1": absent, "g2": absent})
    b = replace(runs[2], environment={"g1": {"kernel": "Linux 6.9"}, "g2": {"kernel": "Linux 6.8"}})
    assert env_diff(flatten_environment(a.environment), flatten_environment(b.environment)) == [
        "kernel Linux 6.8 -> Linux 6.9 (g1)"
    ]
    da, db = tmp_path / "a", tmp_path / "b"
    for d, r in ((da, a), (db, b)):
        d.mkdir()
        save_run(r, d)
    assert main(["compare", str(da), str(db)]) == 0
    out = capsys.readouterr().out
    assert "environment differs" in out
    assert "absent" not in out
    assert "(none)" not in out
