"""The run directory is the contract: ``aibench check RUN`` with no options reproduces the
stored verdicts exactly, for every kind of run directory the commands make.

Each kind below is made by the real CLI on this machine (fio, iperf3, the preflight's
probes over the local executor). For each, the stored verdicts must come back from
``check RUN``: in place; after the directory is copied elsewhere with every input file
deleted (suite, spec, history database) and no spec loadable by name; and a day later
(the clock moved past a waiver's last day). A new kind of run is one entry in ``KINDS``.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from aibench.cli import main
from aibench.history import History
from aibench.model import Outcome, Run, Verdict
from aibench.store import load_run
from tests.aibench_cli import aibench, only_run_dir

pytestmark = pytest.mark.skipif(
    not all(Path(p).exists() for p in ("/usr/bin/fio", "/usr/bin/iperf3")),
    reason="needs fio and iperf3 (make system-packages)",
)

SUITE = """\
schema_version: 1
name: acceptance-short
description: the acceptance suite's steps, each shortened to a second (iperf3 paced, as the loopback at full rate only burns CPU)
spec: {spec}
settings: {{workdir: {workdir}, base_port: {port}}}
steps:
  - name: preflight
    tool: preflight
  - name: fio-seq-read
    tool: fio
    repeats: 2
    options: {{rw: read, bs: 1M, size: 16M, runtime: 1, iodepth: 4}}
  - name: fio-rand-write
    tool: fio
    options: {{rw: randwrite, bs: 4k, size: 16M, runtime: 1, iodepth: 4}}
  - name: iperf3-tcp
    tool: iperf3
    placement: pairs
    options: {{duration: 1, streams: 2, bandwidth: 200M}}
"""

# Named like the built-in profile on purpose: a re-judge that loads "default" by name
# gives another verdict.
CONTRACT = """\
schema_version: 1
name: default
checks:
  - id: fio-seq-read-bw
    select: {{tool: fio, metric: bw, step: fio-seq-read, dims: {{direction: read}}}}
    scope: node
    unit: MB/s
    min: {read_floor}
    require: every_node
{waiver}  - id: fio-rand-write-iops
    select: {{tool: fio, metric: iops, step: fio-rand-write, dims: {{direction: write}}}}
    scope: node
    unit: IOPS
    min: 1
  - id: iperf3-tcp
    select: {{tool: iperf3, metric: throughput, step: iperf3-tcp, dims: {{side: receiver}}}}
    scope: pair
    unit: Gbit/s
    min: 0.01
    require: every_pair
  - id: fio-installed
    fact: {{source: tool-path, name: fio}}
    op: present
{extra}"""

# a check of a step the suite does not have (not a misspelling of one of its steps, which
# the plan refuses): MISSING after the run
TYPO = """\
  - id: typo
    select: {tool: fio, metric: bw, step: fio-seq-write}
    scope: node
    unit: MB/s
    min: 1
"""


@dataclass(frozen=True)
class Made:
    """A run directory the CLI wrote, and the input files it was made from."""

    run_dir: Path
    inputs: tuple[Path, ...] = ()
    expect: set[str] = field(default_factory=set)  # outcomes the kind must show


@dataclass(frozen=True)
class Kind:
    name: str
    make: Callable[[Path, int], Made]
    waiver_expires: bool = False  # the day after the run judges differently


def _inputs(
    tmp: Path, port: int, *, read_floor: float = 1, waiver: str = "", extra: str = ""
) -> tuple[Path, Path]:
    d = tmp / "inputs"
    d.mkdir(exist_ok=True)
    spec = d / "contract.yaml"
    spec.write_text(CONTRACT.format(read_floor=read_floor, waiver=waiver, extra=extra))
    suite = d / "suite.yaml"
    suite.write_text(SUITE.format(spec=spec, workdir=tmp / "scratch", port=port))
    return suite, spec


def _run(tmp: Path, suite: Path, *args: str, out: str = "runs") -> Path:
    res = aibench("run", "--suite", str(suite), "--output-dir", str(tmp / out), "--quiet", *args)
    assert res.returncode in (0, 1), res.stderr
    return only_run_dir(tmp / out)


def acceptance(tmp: Path, port: int) -> Made:
    suite, spec = _inputs(tmp, port)
    return Made(_run(tmp, suite), (suite, spec), {"PASS"})


def failing(tmp: Path, port: int) -> Made:
    suite, spec = _inputs(tmp, port, read_floor=1e9)
    return Made(_run(tmp, suite), (suite, spec), {"FAIL"})


def partial(tmp: Path, port: int) -> Made:
    suite, spec = _inputs(tmp, port, extra=TYPO)
    made = Made(_run(tmp, suite, "--steps", "fio-seq-read"), (suite, spec), {"MISSING"})
    stored = load_run(made.run_dir)
    assert {v.check for v in stored.verdicts if v.outcome.value == "MISSING"} == {"typo"}
    return made


def expiring_waiver(tmp: Path, port: int) -> Made:
    today = datetime.now(UTC).date().isoformat()
    waiver = f"    waiver: {{reason: slow scratch disk, owner: ops, expires: '{today}'}}\n"
    suite, spec = _inputs(tmp, port, read_floor=1e9, waiver=waiver)
    return Made(_run(tmp, suite), (suite, spec), {"WAIVED"})


def preflight(tmp: Path, port: int) -> Made:
    out = tmp / "preflight"
    out.mkdir()
    res = aibench("preflight", "--output", str(out / "run.json"), "--quiet")
    assert res.returncode in (0, 1), res.stderr
    return Made(out, (), {"PASS"})


def history_regression(tmp: Path, port: int) -> Made:
    """Five good runs at three times this machine's numbers, then a real run judged
    against them: its fio and iperf3 series regress (FAIL, or WARN when a key fact
    differs)."""
    suite, spec = _inputs(tmp, port)
    first = load_run(_run(tmp, suite, out="first"))
    db = tmp / "history.sqlite"
    for i in range(5):
        History(db).record(_faster(first, i))
    made = Made(_run(tmp, suite, "--history", str(db)), (suite, spec, db))
    regressions = [v for v in load_run(made.run_dir).verdicts if v.origin == "history"]
    assert regressions
    assert all(v.baseline and v.baseline["n"] == 5 for v in regressions)
    return made


GPU_NODE = """\
schema_version: 1
name: one-gpu-node
nodes:
  - {name: vm, address: 127.0.0.1, executor: local, gpus: {count: 1, model: H100}}
"""


def _gpu_inventory(tmp: Path) -> Path:
    """This machine, declared with a GPU: the telemetry and soak rows that apply to GPU
    nodes give verdicts (MISSING: no GPU series here)."""
    inv = tmp / "inputs" / "inventory.yaml"
    inv.parent.mkdir(exist_ok=True)
    inv.write_text(GPU_NODE)
    return inv


def with_telemetry(tmp: Path, port: int) -> Made:
    """aibench run --telemetry: the series judged by the telemetry profile recorded with
    them, whatever spec judges the steps."""
    suite, spec = _inputs(tmp, port)
    inv = _gpu_inventory(tmp)
    made = Made(_run(tmp, suite, "--telemetry", "0.5", "--inventory", str(inv)), (suite, spec, inv))
    stored = load_run(made.run_dir)
    assert stored.telemetry["profile"]["name"] == "telemetry"
    assert {v.check for v in stored.verdicts if v.origin == "telemetry"} >= {"soak.temperature.max"}
    return made


def soak(tmp: Path, port: int) -> Made:
    """aibench soak (stress-ng and the sampler for real, a few seconds): judged by the soak
    profile; a GPU node without GPU stress is MISSING."""
    inv = _gpu_inventory(tmp)
    res = aibench(
        "soak", "--inventory", str(inv), "--duration", "4s", "--chunk", "2", "--interval", "1",
        "--cpu", "1", "--cpu-load", "10", "--vm", "0", "--no-gpu-burn",
        "--output-dir", str(tmp / "runs"), "--quiet",
    )  # fmt: skip
    assert res.returncode in (0, 1), res.stderr
    made = Made(only_run_dir(tmp / "runs"), (inv,), {"MISSING"})
    stored = load_run(made.run_dir)
    assert stored.spec == "soak"
    assert {v.origin for v in stored.verdicts} == {"telemetry"}
    return made


def _faster(the_run: Run, i: int) -> Run:
    steps = tuple(
        replace(
            s,
            measurements=tuple(replace(m, value=m.value * (3 + i / 100)) for m in s.measurements),
        )
        for s in the_run.steps
    )
    good = Verdict(check="baseline", outcome=Outcome.PASS)
    return the_run.replace(
        id=f"good{i}", started=f"2026-01-0{i + 1}T00:00:00Z", steps=steps, verdicts=(good,)
    )


KINDS = [
    Kind("acceptance", acceptance),
    Kind("preflight", preflight),
    Kind("failing", failing),
    Kind("history-regression", history_regression),
    Kind("expiring-waiver", expiring_waiver, waiver_expires=True),
    Kind("partial", partial),
    Kind("with-telemetry", with_telemetry),
    Kind("soak", soak),
]


def _check(capsys: pytest.CaptureFixture[str], run_dir: Path, *args: str) -> dict[str, Any]:
    capsys.readouterr()
    rc = main(["check", str(run_dir), "--format", "json", *args])
    got: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert rc == (1 if got["outcome"] == "FAIL" else 0)
    return got


def _reproduces(got: dict[str, Any], stored: Run) -> None:
    assert got["label"] == ""
    assert got["verdicts"] == [v.to_dict() for v in stored.verdicts]
    assert got["outcome"] == stored.outcome.value
    assert got["spec_sha256"] == stored.spec_sha256
    assert got["as_of"] == stored.judgements[-1]["as_of"]


def _clock(at: datetime) -> type[datetime]:
    class Clock(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return at

    return Clock


@pytest.fixture(scope="module")
def kinds_made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Future[Made]]:
    """Every kind's run directory, made side by side (each in a directory and on ports of
    its own): the runs mostly wait on fio's and iperf3's clocks. All are finished before
    the first test judges one; each kind's test takes its own (and its own failure), and
    is the only one to touch it."""
    with ThreadPoolExecutor(len(KINDS)) as pool:
        return {
            k.name: pool.submit(k.make, tmp_path_factory.mktemp(k.name), 16400 + 10 * i)
            for i, k in enumerate(KINDS)
        }


@pytest.mark.parametrize("kind", KINDS, ids=[k.name for k in KINDS])
def test_check_with_no_options_reproduces_the_stored_verdicts(
    kind: Kind,
    kinds_made: dict[str, Future[Made]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = kinds_made[kind.name].result()
    stored = load_run(made.run_dir)
    assert made.expect <= {v.outcome.value for v in stored.verdicts}, stored.verdicts
    _reproduces(_check(capsys, made.run_dir), stored)

    # archived elsewhere: every input gone, no spec to be had by name
    copy = tmp_path / "archive" / made.run_dir.name
    shutil.copytree(made.run_dir, copy)
    shutil.rmtree(made.run_dir)
    for p in made.inputs:
        p.unlink()

    def no_spec(*args: object, **kwargs: object) -> None:
        raise AssertionError("a stored run is judged with the spec its record keeps")

    monkeypatch.setattr("aibench.thresholds.load_spec", no_spec)
    _reproduces(_check(capsys, copy), stored)
    if (copy / "manifest.sha256").exists():
        assert main(["verify", str(copy)]) == 0

    # a day later
    day_after = datetime.fromisoformat(stored.judgements[-1]["as_of"]) + timedelta(days=1)
    monkeypatch.setattr("aibench.judge.datetime", _clock(day_after))
    monkeypatch.setattr("aibench.instants.datetime", _clock(day_after))  # --as-of now
    _reproduces(_check(capsys, copy), stored)
    if kind.waiver_expires:  # judged as of the day after, the waiver has expired
        later = _check(capsys, copy, "--as-of", "now")
        assert later["label"].startswith("new judgement: as of ")
        assert "WAIVED" not in {v["outcome"] for v in later["verdicts"]}
        assert later["outcome"] == "FAIL"
