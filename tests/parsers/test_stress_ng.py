"""stress-ng's lengths, as its versions spell them (the lines are quoted from public
outputs; whole outputs are golden fixtures under tests/fixtures/stress-ng)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aibench.errors import ToolFailure
from aibench.model import Measurement, Note
from aibench.parsers import stress_ng

LINES = [
    # stress-ng 0.15.06, captured here
    ("successful run completed in 2.97s", 2.97),
    ("successful run completed in 61.10s (1 min, 1.10 secs)", 61.10),
    # checkbox issue 54 (canonical/checkbox), 5-minute runs
    ("successful run completed in 300.13s (5 mins, 0.13 secs)", 300.13),
    # linuxppc-dev, "stress-ng --class interrupts" on a T4240RDB
    ("unsuccessful run completed in 6352.60s (1 hour, 45 mins, 52.60 secs)", 6352.60),
    # codecarbon docs/edit/test_on_scaleway.rst; openEuler RISC-V report; cygwin-patches
    ("successful run completed in 1 min", 60.0),
    ("successful run completed in 1 min, 1.14 secs", 61.14),
    ("unsuccessful run completed in 5.25 secs", 5.25),
    # a 90-minute soak on Kubernetes (code-index file id 55875039627)
    ("successful run completed in 1 hour, 30 mins", 5400.0),
]


@pytest.mark.parametrize(("line", "seconds"), LINES)
def test_run_lengths_in_every_spelling(line: str, seconds: float) -> None:
    m = stress_ng._COMPLETED.search(line)
    assert m is not None
    assert stress_ng._seconds(m.group(2), 1) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("spelled", "seconds"),
    [
        ("60 second", 60.0),
        ("61 second (1 min, 1.00 secs)", 61.0),
        ("1 min, 0 secs", 60.0),
        ("5 mins", 300.0),
        ("1 hour, 30 mins", 5400.0),
        ("86400 second (1 day, 0.00 secs)", 86400.0),
    ],
)
def test_requested_lengths(spelled: str, seconds: float) -> None:
    assert stress_ng._seconds(spelled, 1) == pytest.approx(seconds)


def test_a_length_it_cannot_read_is_a_parse_error() -> None:
    from aibench.errors import ParseError

    with pytest.raises(ParseError, match="not understood"):
        stress_ng._seconds("a while", 3)


# ---- warnings printed beside good numbers are Notes ---------------------------------------

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "stress-ng"
WARNED = [
    "inode-flags1-32s-metrics-check-zero-bogo-ops-warn.txt",  # 0.15.06, captured here
    "lkp-sctp64-60s-info-table-metrics-check-warn-times.txt",  # LKP, table on info: lines
    "cpu16-30s-metrics-hpet-clocksource-warn.txt",  # --metrics, HPET clocksource
]


@pytest.mark.parametrize("name", WARNED)
def test_every_warn_line_is_a_note_beside_the_numbers(name: str) -> None:
    lines = (FIX / name).read_text().splitlines()
    recs = stress_ng.parse("\n".join(lines))
    notes = [r for r in recs if isinstance(r, Note)]
    warned = [(n, ln.split("] ", 1)[1]) for n, ln in enumerate(lines, 1) if " warn: " in ln]
    assert warned
    assert [(n.line, n.text, n.kind) for n in notes] == [(n, t, "warning") for n, t in warned]
    # the numbers are read as printed all the same
    (row,) = [ln for ln in lines if " bogo ops " not in ln and ln.split()[3:4] and _is_row(ln)]
    cells = row.split("] ", 1)[1].split()
    ops = [r for r in recs if isinstance(r, Measurement) and r.metric == "bogo_ops"]
    assert [(m.dims["stressor"], m.value) for m in ops] == [(cells[0], float(cells[1]))]


def _is_row(line: str) -> bool:
    cells = line.split("] ", 1)[-1].split()
    return len(cells) > 5 and all(c.replace(".", "").isdigit() for c in cells[1:])


def test_a_warning_that_says_something_failed_is_still_a_failure() -> None:
    text = (FIX / "cpu16-30s-metrics-hpet-clocksource-warn.txt").read_text()
    aborted = text.replace(
        "WARNING! using HPET clocksource, this may impact benchmarking performance",
        "cpu: [1568507] aborted early, out of system resources",
    )
    with pytest.raises(ToolFailure, match="aborted early"):
        stress_ng.parse(aborted)


def _records(name: str) -> list:
    from aibench.errors import ToolFailure
    from tests.golden import FIXTURES

    text = (FIXTURES / "stress-ng" / name).read_text()
    try:
        return [r for r in stress_ng.parse(text) if hasattr(r, "metric")]
    except ToolFailure as exc:  # an unsuccessful run: its figures are the partial ones
        return [r for r in exc.partial if hasattr(r, "metric")]


def test_a_run_without_a_metrics_table_gives_its_length() -> None:
    recs = _records("cpu1-2s-no-metrics.txt")
    assert [(r.metric, r.value, r.unit) for r in recs] == [("run_time", 2.01, "s")]


def test_times_figures_as_printed() -> None:
    by = {(r.metric, r.dims.get("minutes")): r.value for r in _records("cpu1-vm1-2s-times.txt")}
    assert by == {
        ("times_run_time", None): 2.99,  # "for a 2.99s run time:"
        ("cpu_time_available", None): 5.98,
        ("cpu_time_user", None): 0.93,
        ("cpu_time_system", None): 0.09,
        ("cpu_time_total", None): 1.02,
        ("load_average", 1): 5.36,
        ("load_average", 5): 6.03,
        ("load_average", 15): 3.76,
        ("run_time", None): 2.99,
    }


@pytest.mark.parametrize(
    ("name", "passed", "failed", "skipped"),
    [
        ("openeuler-riscv-0.17.03-mixed-60s-misc-metrics.txt", 4, 0, 0),  # passed: 4: cpu (2) ...
        ("rapl-perf-24cpu-60s-1min-xeon-e5-2620v3.txt", 24, 0, 0),
        ("cygwin-0.18.12-clock-unsuccessful-timestamp.txt", 0, 2, 0),  # failed: 2: clock (2)
    ],
)
def test_pass_fail_counts_as_printed(name: str, passed: int, failed: int, skipped: int) -> None:
    by = {r.metric: r.value for r in _records(name)}
    assert (by["stressors_passed"], by["stressors_failed"], by["stressors_skipped"]) == (
        passed,
        failed,
        skipped,
    )
