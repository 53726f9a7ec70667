"""One judgement: a verdict of every origin survives every way of re-judging a run.

Each case stores a run whose only FAIL comes from one origin (consistency, inventory,
history, coverage), judged the way ``aibench run`` judges it. ``aibench check``,
``aibench report --spec`` and ``aibench check --write`` followed by ``aibench report`` must
all keep that FAIL (exit 1), and the run's record of judgements keeps what was judged
before.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from aibench import store
from aibench.cli import main
from aibench.history import History
from aibench.judge import HISTORY_CARRIED, HISTORY_RECOMPUTED, judge_run, record
from aibench.model import Fact, Run
from aibench.thresholds import Spec
from tests.thresholds.helpers import HEADER, m, run, spec_from, step

NODES = ("n1", "n2", "n3")
FIO_CHECK = """\
  - id: fio-read
    select: {tool: fio, metric: bw, step: fio-read}
    scope: node
    min: 100
    unit: MB/s
"""


def _fio(node: str, mbps: float = 500.0, *, rid: str = "") -> object:
    return step("fio-read", "fio", (node,), [m("fio", "bw", mbps * 1e6 / 1024, "KiB/s", ())])


def _preflight(node: str, **facts: object) -> object:
    return step(
        "preflight",
        "preflight",
        (node,),
        facts=[Fact("nvidia-smi", k, v, nodes=(node,)) for k, v in facts.items()],
    )


def _spec(tmp: Path, extra: str = "") -> Spec:
    return spec_from(tmp, HEADER + FIO_CHECK + extra)


def _store(tmp: Path, the_run: Run, spec: Spec, history: Path | None = None) -> Path:
    """The run as ``aibench run`` leaves it: judged once, in its own run directory."""
    run_dir = tmp / the_run.id
    run_dir.mkdir()
    judged = record(the_run, judge_run(the_run, spec, history_db=history), "aibench run")
    store.save_run(judged, run_dir)
    return run_dir


def consistency_case(tmp: Path) -> tuple[Path, Spec, str]:
    steps = [_fio(n) for n in NODES] + [
        _preflight(n, driver_version="570.86.15" if n == "n3" else "590.48.01") for n in NODES
    ]
    spec = _spec(tmp)
    return _store(tmp, run(steps, NODES), spec), spec, "consistency"


def inventory_case(tmp: Path) -> tuple[Path, Spec, str]:
    steps = [_fio(n) for n in NODES] + [
        _preflight(n, gpu_count=4)
        for n in NODES  # the same everywhere: consistent
    ]
    the_run = run(steps, NODES)
    inv = dict(the_run.inventory)
    inv["nodes"] = [{**n, "facts": {"gpus": {"count": 8}}} for n in inv["nodes"]]
    spec = _spec(tmp)
    return _store(tmp, the_run.replace(inventory=inv), spec), spec, "inventory"


def coverage_case(tmp: Path) -> tuple[Path, Spec, str]:
    # n3 was never measured; n1 and n2 pass, so only the coverage verdict fails
    spec = spec_from(tmp, HEADER + FIO_CHECK + "    require: every_node\n")
    return _store(tmp, run([_fio("n1"), _fio("n2")], NODES), spec), spec, "coverage"


def history_case(tmp: Path) -> tuple[Path, Spec, str]:
    """Five good nightly runs at 500 MB/s, then one at 300 MB/s: above the spec's 100 MB/s
    floor (spec PASS) but far outside the history's noise band (history FAIL)."""
    spec = _spec(tmp)
    db = tmp / "history.sqlite"
    hist = History(db)
    for i in range(5):
        good = run([_fio("n1", 500.0 + i)], ("n1",), rid=f"good{i}", started=f"2026-12-0{i + 1}")
        good = record(good, judge_run(good, spec), "aibench run")
        hist.record(good)
    bad = run([_fio("n1", 300.0)], ("n1",), rid="bad", started="2026-12-07T00:00:00Z")
    hist.record(bad)
    return _store(tmp, bad, spec, history=db), spec, "history"


CASES: list[Callable[[Path], tuple[Path, Spec, str]]] = [
    consistency_case,
    inventory_case,
    history_case,
    coverage_case,
]


def _stored(run_dir: Path) -> Run:
    return Run.from_dict(json.loads((run_dir / "run.json").read_text()))


def _only_failing_origin(the_run: Run) -> set[str]:
    return {v.origin for v in the_run.verdicts if v.outcome.failing}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_a_fail_of_every_origin_survives_every_rejudge(
    case: Callable[[Path], tuple[Path, Spec, str]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_dir, spec, origin = case(tmp_path)
    first = _stored(run_dir)
    assert _only_failing_origin(first) == {origin}  # the case is what it says
    assert first.outcome.value == "FAIL"
    assert {v.origin for v in first.verdicts if v.check == "fio-read"} == {"spec"}
    before = (run_dir / "run.json").read_bytes()

    # aibench check: exit 1, the failing verdict named, run.json untouched
    assert main(["check", str(run_dir), "--spec", str(spec.source)]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[-1].startswith("FAIL: ")
    assert f"{origin} " in out.splitlines()[-2]  # "judged: consistency 1, spec 3; ..."
    assert (run_dir / "run.json").read_bytes() == before

    # aibench report --spec: exit 1, the summary (on stdout) shows the FAIL, run.json untouched
    assert main(["report", str(run_dir), "--spec", str(spec.source)]) == 1
    assert (run_dir / "run.json").read_bytes() == before
    assert "FAIL" in capsys.readouterr().out.splitlines()[0]

    # aibench check --write, then aibench report: still FAIL, every judgement kept
    assert main(["check", str(run_dir), "--spec", str(spec.source), "--write"]) == 1
    assert main(["report", str(run_dir)]) == 1
    stored = _stored(run_dir)
    assert _only_failing_origin(stored) == {origin}
    assert [j["by"] for j in stored.judgements] == ["aibench run", "aibench check --write"]
    kept = stored.judgements[0]
    assert (kept["spec_sha256"], kept["outcome"]) == (spec.sha256, "FAIL")
    assert len(kept["verdicts"]) == len(first.verdicts)
    assert {v["origin"] for v in kept["verdicts"] if v["outcome"] == "FAIL"} == {origin}
    assert "verdicts" not in stored.judgements[-1]  # the current ones are run.verdicts


def test_history_verdicts_are_carried_or_recomputed_and_the_output_says_which(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, spec, _ = history_case(tmp_path)
    the_run = _stored(run_dir)
    carried = judge_run(the_run, spec)
    assert carried.history == HISTORY_CARRIED
    assert [v.check for v in carried.verdicts if v.origin == "history"] == [
        v.check for v in the_run.verdicts if v.origin == "history"
    ]
    again = judge_run(the_run, spec, history_db=tmp_path / "history.sqlite")
    assert again.history == HISTORY_RECOMPUTED
    assert [v.outcome.value for v in again.verdicts if v.origin == "history"] == ["FAIL"]
    assert main(["check", str(run_dir), "--spec", str(spec.source)]) == 1
    assert "1 history verdict(s) carried over from the stored run" in capsys.readouterr().out
    db = str(tmp_path / "history.sqlite")
    assert main(["check", str(run_dir), "--spec", str(spec.source), "--history", db]) == 1
    assert f"history verdicts recomputed against {db}" in capsys.readouterr().out


def test_a_run_stored_before_origins_reads_them_from_the_check_names(tmp_path: Path) -> None:
    run_dir, _, _ = consistency_case(tmp_path)
    data = json.loads((run_dir / "run.json").read_text())
    data["schema_version"] = "1.0"
    for v in data["verdicts"]:
        del v["origin"]
    del data["judgements"]
    old = Run.from_dict(data)
    assert {v.check.split(".")[0]: v.origin for v in old.verdicts} == {
        "fio-read": "spec",
        "consistency": "consistency",
    }


def test_check_json_gives_each_verdict_its_origin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, spec, _ = inventory_case(tmp_path)
    assert main(["check", str(run_dir), "--spec", str(spec.source), "--format", "json"]) == 1
    got = json.loads(capsys.readouterr().out)
    assert got["outcome"] == "FAIL"
    assert got["origins"] == {"inventory": 3, "spec": 3}
    failing = [(v["origin"], v["check"]) for v in got["verdicts"] if v["outcome"] == "FAIL"]
    assert failing == [("inventory", "inventory.gpu_count")] * 3


def test_a_soak_series_fail_is_carried_through_every_rejudge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A soak's verdicts are judged on its telemetry against the soak profile's limits;
    a re-judge with a spec keeps them (origin telemetry), so a failed fan stays FAIL."""
    from aibench.model import Outcome, Verdict

    fan = Verdict(
        check="soak.fan.floor",
        outcome=Outcome.FAIL,
        subject=("n2",),
        expected=">= 500 RPM",
        observed=0.0,
        unit="RPM",
        reason="FAN2 below 500 RPM from 30 s",
        origin="telemetry",
    )
    the_run = run([_fio(n) for n in NODES], NODES).replace(
        verdicts=(fan,), telemetry={"t0": 0, "series": [], "events": [], "errors": []}
    )
    spec = _spec(tmp_path)
    run_dir = _store(tmp_path, the_run, spec)
    assert _only_failing_origin(_stored(run_dir)) == {"telemetry"}
    assert main(["check", str(run_dir), "--spec", str(spec.source)]) == 1
    assert main(["report", str(run_dir), "--spec", str(spec.source)]) == 1
    assert main(["check", str(run_dir), "--spec", str(spec.source), "--write"]) == 1
    assert main(["report", str(run_dir)]) == 1
    stored = _stored(run_dir)
    assert [v.check for v in stored.verdicts if v.outcome.failing] == ["soak.fan.floor"]
    capsys.readouterr()
