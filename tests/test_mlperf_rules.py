"""MLPerf Training scoring rules: run counts per ruleset and olympic scoring, as tables."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aibench.mlperf_rules import (
    MIN_RUNS,
    RulesError,
    drop_count,
    min_runs,
    olympic_score,
    run_outcome,
    score_benchmark,
)
from aibench.parsers.mlperf_training import parse

FIX = Path(__file__).resolve().parent / "fixtures" / "mlperf-training"


@pytest.mark.parametrize(
    ("benchmark", "ruleset", "runs"),
    [
        ("resnet", "4.0", 5),
        ("unet3d", "4.0", 40),
        ("ssd", "4.0", 5),
        ("retinanet", "5.0", 5),
        ("stable_diffusion", "4.1", 10),
        ("bert", "5.0", 10),
        ("gpt3", "4.0", 3),
        ("llama31_405b", "5.0", 3),
        ("llama31_405b", "6.0", 3),
        ("llama2_70b_lora", "4.0", 10),
        ("llama2_70b_lora", "6.0", 10),
        ("dlrm_dcnv2", "6.0", 10),
        ("gnn", "4.1", 10),
        ("rgat", "5.0", 10),
        ("flux1", "6.0", 10),
        ("llama31_8b", "6.0.0", 10),
        ("deepseekv3_671b", "v6.0", 3),
        ("gpt_oss_20b", "6.0", 10),
    ],
)
def test_min_runs(benchmark: str, ruleset: str, runs: int) -> None:
    assert min_runs(benchmark, ruleset) == runs


@pytest.mark.parametrize(
    ("benchmark", "ruleset", "words"),
    [
        ("resnet", "4.1", "not in MLPerf Training 4.1"),  # last run in v4.0
        ("unet3d", "5.0", "not in MLPerf Training 5.0"),
        ("bert", "6.0", "not in MLPerf Training 6.0"),  # deprecated
        ("resnet", "3.1", "unknown MLPerf Training ruleset"),
        ("nonsense", "4.0", "known: bert"),
    ],
)
def test_unknown_benchmark_or_ruleset_says_what_is_known(
    benchmark: str, ruleset: str, words: str
) -> None:
    with pytest.raises(RulesError, match=words):
        min_runs(benchmark, ruleset)


def test_drop_counts() -> None:
    assert drop_count("unet3d") == 4
    assert {drop_count(b) for table in MIN_RUNS.values() for b in table if b != "unet3d"} == {1}


@pytest.mark.parametrize(
    ("times", "converged", "drop", "required", "valid", "score", "fastest", "slowest"),
    [
        # 10 runs: drop 1 fastest + 1 slowest, mean of the 8 others
        (list(range(10, 0, -1)), None, 1, 10, True, 5.5, (1,), (10,)),
        # 5 runs (resnet): mean of the middle 3
        (
            [13.1, 13.5, 12.9, 14.2, 13.3],
            None,
            1,
            5,
            True,
            (13.1 + 13.5 + 13.3) / 3,
            (12.9,),
            (14.2,),
        ),
        # UNet3D: 40 runs, 4 + 4 dropped
        (list(range(1, 41)), None, 4, 40, True, 20.5, (1, 2, 3, 4), (37, 38, 39, 40)),
        # one non-converged run counts as the slowest, whatever its time
        ([10, 11, 12, 13, 14], [True, True, True, True, False], 1, 5, True, 12.0, (10,), (14,)),
        ([9, 11, 12, 13, 14], [False, True, True, True, True], 1, 5, True, 13.0, (11,), (9,)),
        # ... also for UNet3D, where it is one of the 4 dropped as slowest
        (
            list(range(1, 41)),
            [i != 0 for i in range(40)],
            4,
            40,
            True,
            21.5,
            (2, 3, 4, 5),
            (38, 39, 40, 1),
        ),
        # more than one non-converged run: invalid
        ([10, 11, 12, 13, 14], [True, False, True, True, False], 1, 5, False, None, (), ()),
        (list(range(1, 41)), [i > 1 for i in range(40)], 4, 40, False, None, (), ()),
        # too few runs
        ([10, 11, 12, 13], None, 1, 5, False, None, (), ()),
        ([10, 11], None, 1, None, False, None, (), ()),
    ],
)
def test_olympic_score_table(
    times: list[float],
    converged: list[bool] | None,
    drop: int,
    required: int | None,
    valid: bool,
    score: float | None,
    fastest: tuple[float, ...],
    slowest: tuple[float, ...],
) -> None:
    got = olympic_score(times, converged, drop=drop, required=required)
    assert got.valid is valid
    assert got.runs == len(times)
    if score is None:
        assert got.score is None
        assert got.reason
    else:
        assert got.score == pytest.approx(score)
        assert got.dropped_fastest == fastest
        assert got.dropped_slowest == slowest
        assert len(got.kept) == len(times) - 2 * drop


def test_invalid_reasons_name_the_rule() -> None:
    assert "2 runs did not converge" in olympic_score([1, 2, 3], [False, False, True]).reason
    assert "the rules need 10" in olympic_score([1.0] * 9, required=10).reason
    assert "only 0 dropped" in olympic_score([1, 2, 3], [True, False, True], drop=0).reason


def test_mismatched_flags_are_a_bug_not_a_result() -> None:
    with pytest.raises(ValueError, match="converged flags"):
        olympic_score([1, 2, 3], [True])


def test_score_benchmark_uses_the_rules() -> None:
    unet = score_benchmark("unet3d", "4.0", list(range(1, 41)))
    assert unet.valid
    assert len(unet.dropped_fastest) == 4
    assert not score_benchmark("llama2_70b_lora", "5.0", [1.0] * 9).valid
    assert score_benchmark("llama2_70b_lora", "5.0", [float(i) for i in range(10)]).score == 4.5


def test_run_outcome_from_parsed_real_logs() -> None:
    ok = parse((FIX / "v4.0_NVIDIA_eos_n8_mxnet_resnet_result_0_success.txt").read_text())
    aborted = parse((FIX / "v4.0_NVIDIA_eos_n8_mxnet_resnet_result_4_aborted.txt").read_text())
    assert run_outcome(ok) == (150326.0, True)
    assert run_outcome(aborted) == (158453.0, False)
    assert run_outcome([]) == (None, False)


@given(
    st.lists(st.floats(min_value=1, max_value=1e7, allow_nan=False), min_size=3, max_size=50),
    st.randoms(),
)
def test_olympic_score_is_order_free_and_inside_the_range(
    times: list[float], rnd: random.Random
) -> None:
    got = olympic_score(times)
    shuffled = list(times)
    rnd.shuffle(shuffled)
    again = olympic_score(shuffled)
    assert got.valid
    assert again.score == got.score
    assert got.score is not None
    slack = 1e-12 * max(times)  # the mean of equal floats may be off in the last bit
    assert min(times) - slack <= got.score <= max(times) + slack
