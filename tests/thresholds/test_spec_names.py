"""A spec's tool, metric and step names are checked against aibench's tools, their
vocabularies and the suite before anything runs: a misspelt name is a one-line error with
the nearest valid name, not a check that turns MISSING after the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from aibench.cli import main
from aibench.config import builtin_names
from aibench.errors import ConfigError
from aibench.suite import load_suite
from aibench.thresholds import check_spec_names, load_spec

CHECK = """schema_version: 1
name: typo
checks:
  - id: c1
    select: {{tool: {tool}, metric: {metric}{step}}}
    unit: {unit}
    min: 1
"""


def spec_file(tmp_path: Path, tool: str, metric: str, unit: str, step: str = "") -> Path:
    p = tmp_path / "spec.yaml"
    p.write_text(CHECK.format(tool=tool, metric=metric, unit=unit, step=step and f", step: {step}"))
    return p


def steps_of(suite: str) -> list[tuple[str, str]]:
    return [(s.name, s.tool) for s in load_suite(suite).steps]


def test_built_in_profiles_and_suites_pass() -> None:
    for name in builtin_names("profiles"):
        check_spec_names(load_spec(name))
    for name in builtin_names("suites"):
        suite = load_suite(name)
        check_spec_names(load_spec(suite.spec or "default"), steps_of(name))
    # a spec for the whole cluster with a suite that runs only part of it: its NCCL and
    # perftest checks are MISSING after the run, not an error before it
    check_spec_names(load_spec("h100-ndr"), steps_of("acceptance"))


@pytest.mark.parametrize(
    ("tool", "metric", "unit", "step", "key", "problem", "near"),
    [
        ("nccl-test", "busbw", "GB/s", "", "tool", "no tool named 'nccl-test'", "nccl-tests"),
        ("fio", "bandwith", "MB/s", "", "metric", "no metric of fio named 'bandwith'", "bw"),
        (
            "fio", "bw", "MB/s", "fio-seq-raed", "step",
            "no fio step of the suite named 'fio-seq-raed'", "did you mean 'fio-seq-read'?",
        ),
        (
            "fio", "bw", "MB/s", "iperf3-tcp", "step",
            "step 'iperf3-tcp' runs iperf3, not fio", "fio-rand-read",
        ),
    ],
)  # fmt: skip
def test_unknown_name_is_an_error_with_the_nearest_valid_one(
    tmp_path: Path, tool: str, metric: str, unit: str, step: str, key: str, problem: str, near: str
) -> None:
    path = spec_file(tmp_path, tool, metric, unit, step)
    with pytest.raises(ConfigError) as info:
        check_spec_names(load_spec(path), steps_of("acceptance"))
    assert info.value.file == str(path)
    assert info.value.key == f"checks[0].select.{key}"
    assert info.value.problem == problem
    assert near in str(info.value.hint)


def test_a_tool_without_a_vocabulary_is_not_checked_for_its_metrics(tmp_path: Path) -> None:
    """mlperf-training declares no metric vocabulary: its metric names are not guessed."""
    check_spec_names(load_spec(spec_file(tmp_path, "mlperf-training", "anything", "s")))


def test_a_step_the_suite_does_not_run_is_no_error(tmp_path: Path) -> None:
    """One spec serves many suites: a check of a step the suite lacks (not a misspelling of
    one of its steps) is MISSING after the run, not refused before it."""
    for tool, metric, unit, step in (
        ("nccl-tests", "busbw", "GB/s", "nccl-8"),
        ("fio", "bw", "MB/s", "shared-read"),
        ("iperf3", "throughput", "Gbit/s", "iperf3-udp-storage"),
    ):
        check_spec_names(
            load_spec(spec_file(tmp_path, tool, metric, unit, step)), steps_of("acceptance")
        )


def test_dry_run_and_spec_show_refuse_before_running(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = spec_file(tmp_path, "fio", "bw", "MB/s", "fio-seq-raed")
    assert main(["run", "--suite", "acceptance", "--spec", str(path), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"{path}: checks[0].select.step: no fio step" in err
    assert "did you mean 'fio-seq-read'?" in err
    metric = spec_file(tmp_path, "iperf3", "througput", "Gbit/s")
    assert main(["spec", "show", str(metric)]) == 2
    assert "did you mean 'throughput'?" in capsys.readouterr().err
