"""``aibench run`` with telemetry: the sampler runs beside the steps of an ordinary suite
(here fio on this machine) and its series land in run.json; without it, nothing is sampled."""

from __future__ import annotations

from pathlib import Path

from tests.aibench_cli import aibench, only_run

SUITE = """\
schema_version: 1
name: tele
{settings}
steps:
  - name: fio-read
    tool: fio
    options: {{rw: read, bs: 1M, size: 32M, runtime: 3, ioengine: psync, iodepth: 1,
               direct: false, directory: {work}}}
"""


def _run(tmp: Path, settings: str, *extra: str) -> dict[str, object]:
    tmp.mkdir(parents=True, exist_ok=True)
    suite = tmp / "suite.yaml"
    suite.write_text(SUITE.format(settings=settings, work=tmp / "work"))
    res = aibench(
        "run", "--suite", str(suite), "--output-dir", str(tmp / "runs"), "--quiet", *extra
    )
    assert res.returncode in (0, 1), res.stderr  # 1: the default spec's other checks
    _, run = only_run(tmp / "runs")
    (step,) = run.steps
    assert step.ok, step.reason
    return dict(run.telemetry)


def test_host_series_are_sampled_beside_a_fio_step(tmp_path: Path) -> None:
    tele = _run(tmp_path, "settings: {telemetry: 0.5}")
    series = {(s["source"], s["metric"]): s for s in tele["series"]}  # type: ignore[union-attr]
    busy = series[("host", "cpu_busy")]
    assert len(busy["t"]) >= 3, busy  # a 3 s step sampled every 0.5 s
    assert all(0.0 <= v <= 100.0 for v in busy["v"])
    assert tele["errors"] == []


def test_the_command_line_turns_it_on_and_off_by_default(tmp_path: Path) -> None:
    assert _run(tmp_path / "off", "") == {}
    tele = _run(tmp_path / "on", "", "--telemetry", "0.5")
    assert any(s["metric"] == "load1" for s in tele["series"])  # type: ignore[union-attr]
