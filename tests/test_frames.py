"""aibench.load_run / load_history and `aibench export` on a real local run (fio, iperf3).

The run is made by the CLI on this machine as a user makes one; the frames must hold the
very values of run.json, and every export format must read back to the same table.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import aibench
from aibench.commands import export
from aibench.errors import UserError
from tests.aibench_cli import aibench as cli
from tests.aibench_cli import only_run_dir

pd = pytest.importorskip("pandas")

SUITE = """\
schema_version: 1
name: frames
settings: {{workdir: {workdir}, base_port: 15701}}
steps:
  - name: fio-seq-read
    tool: fio
    repeats: 2
    options: {{rw: read, bs: 1M, size: 16M, runtime: 1, iodepth: 4}}
  - name: iperf3-tcp
    tool: iperf3
    placement: pairs
    options: {{duration: 1, streams: 2, bandwidth: 200M}}
"""

pytestmark = pytest.mark.skipif(
    not all(Path(p).exists() for p in ("/usr/bin/fio", "/usr/bin/iperf3")),
    reason="needs fio and iperf3 (make system-packages)",
)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("frames")
    suite = tmp / "frames.yaml"
    suite.write_text(SUITE.format(workdir=tmp / "scratch"))
    res = cli("run", "--suite", str(suite), "--output-dir", str(tmp / "runs"), "--quiet")
    assert res.returncode in (0, 1), res.stderr
    return only_run_dir(tmp / "runs")


def test_load_run_holds_the_values_of_run_json(run_dir: Path) -> None:
    data = json.loads((run_dir / "run.json").read_text())
    frames = aibench.load_run(run_dir)
    want = [(s, m) for s in data["steps"] for m in s["measurements"]]
    ms = frames.measurements
    assert len(ms) == len(want) > 0
    assert {"fio", "iperf3"} <= set(ms["tool"])
    for (step, m), row in zip(want, ms.to_dict("records"), strict=True):
        assert row["step_id"] == step["step_id"]
        assert row["step_status"] == step["status"]
        for key in ("tool", "step", "metric", "unit", "value", "repeat"):
            assert row[key] == m[key], key
        assert row["nodes"] == ",".join(m["nodes"])
        for k, v in m["dims"].items():
            assert row[k] == v, k
        dims = set(ms.columns) - set(aibench.frames.MEASUREMENT_COLUMNS)
        assert all(pd.isna(row[k]) for k in dims - set(m["dims"]))
    vs = frames.verdicts
    assert len(vs) == len(data["verdicts"]) > 0
    for v, row in zip(data["verdicts"], vs.to_dict("records"), strict=True):
        assert (row["check"], row["outcome"], row["subject"]) == (
            v["check"],
            v["outcome"],
            ",".join(v["subject"]),
        )
        assert (pd.isna(row["observed"]) and v["observed"] is None) or row["observed"] == v[
            "observed"
        ]
    facts = [f for s in data["steps"] for f in s["facts"]]
    assert len(frames.facts) == len(facts)
    assert list(frames.steps["step_id"]) == [s["step_id"] for s in data["steps"]]


def test_export_round_trips_in_every_format(run_dir: Path, tmp_path: Path) -> None:
    frames = aibench.load_run(run_dir)
    for fmt in ("parquet", "csv", "json"):
        res = cli("export", str(run_dir), "--format", fmt, "--output-dir", str(tmp_path))
        assert res.returncode == 0, res.stderr
        for table in ("measurements", "verdicts", "facts", "steps"):
            path = tmp_path / f"{frames.run_id}.{table}.{fmt}"
            want = frames.table(table)
            if fmt == "parquet":  # types and values, exactly
                pd.testing.assert_frame_equal(pd.read_parquet(path), want)
            elif fmt == "csv":
                got = pd.read_csv(path)
                assert list(got.columns) == list(want.columns)
                assert len(got) == len(want)
            else:
                rows = json.loads(path.read_text())
                assert len(rows) == len(want)
                if table == "measurements":
                    assert [r["value"] for r in rows] == list(want["value"])
    assert "wrote" in res.stdout
    assert not list(run_dir.glob("*.parquet"))  # nothing written into the run directory


def test_load_history_matches_the_database(run_dir: Path, tmp_path: Path) -> None:
    from aibench.history import History

    db = tmp_path / "history.sqlite"
    res = cli("history", "--db", str(db), "--record", str(run_dir))
    assert res.returncode == 0, res.stderr
    h = aibench.load_history(db)
    assert list(h.runs["run_id"]) == [r.id for r in History(db).runs()]
    for key, _unit in History(db).series():
        got = h.points[h.points["series"] == key]
        assert list(got["median"]) == [p.median for p in History(db).points(key)]
    assert len(h.verdicts) == len(aibench.load_run(run_dir).verdicts)
    with pytest.raises(UserError, match="no history database"):
        aibench.load_history(tmp_path / "absent.sqlite")


def test_import_aibench_does_not_import_pandas() -> None:
    probe = "import sys, aibench; print('pandas' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_parquet_without_pyarrow_is_a_one_line_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(UserError, match=r"needs pyarrow") as err:
        export.write(pd.DataFrame({"a": [1]}), tmp_path / "x.parquet", "parquet")
    assert "aibench-cluster[parquet]" in str(err.value)
