"""MLPerf Training rules: run counts per ruleset (read from mlperf-logging), quality
metrics (mlperf-logging's compliance bounds + the rules' names) and olympic scoring."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aibench import mlperf_logging_meta
from aibench.mlperf_rules import (
    SCORE,
    RulesError,
    drop_count,
    min_runs,
    olympic_score,
    quality,
    run_outcome,
    score_benchmark,
)
from aibench.parsers.mlperf_training import parse
from aibench.units import UnitError, convert

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
        # rulesets the installed mlperf-logging has compliance rules for
        ("llama31_8b", "5.1.0", 10),
        ("flux1", "5.1", 10),
        ("retinanet", "5.1.0", 5),
        ("qwen35_397b_grpo", "6.1.0", 3),
        ("dlrmv4", "6.1.0", 10),
        ("resnet", "3.1", 5),
        ("transformer", "0.7", 10),
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
        ("llama31_405b", "6.1.0", "not in MLPerf Training 6.1"),
        ("resnet", "7.0", "unknown MLPerf Training ruleset"),
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
    every = {b for r in mlperf_logging_meta.rulesets() for b in mlperf_logging_meta.benchmarks(r)}
    assert {drop_count(b) for b in every if b != "unet3d"} == {1}


def test_rulesets_are_those_of_the_installed_checker() -> None:
    got = mlperf_logging_meta.rulesets()
    assert {"5.1.0", "6.0.0", "6.1.0"} <= set(got)
    assert not any(r.endswith("_warn") for r in got)


@pytest.mark.parametrize(
    ("benchmark", "part", "name", "unit", "direction"),
    [
        ("resnet", "", "top-1 classification accuracy", "ratio", "higher"),
        ("bert", "", "masked-LM accuracy", "ratio", "higher"),
        ("transformer", "", "BLEU", "ratio", "higher"),  # v0.7 logs BLEU / 100
        ("gnmt", "", "SacreBLEU", "ratio", "higher"),
        ("gpt3", "", "log perplexity", SCORE, "lower"),
        ("llama31_8b", "", "log perplexity", SCORE, "lower"),
        ("llama2_70b_lora", "", "eval loss", SCORE, "lower"),
        ("flux1", "", "eval loss", SCORE, "lower"),
        ("rnnt", "", "word error rate", SCORE, "lower"),
        ("stable_diffusion", "FID", "FID", SCORE, "lower"),
        ("stable_diffusion", "CLIP", "CLIP score", SCORE, "higher"),
        ("maskrcnn", "SEGM", "mask min AP", "ratio", "higher"),
        ("dlrmv4", "", "", "ratio", "higher"),  # in mlperf-logging 6.1.0, not yet in the rules
    ],
)
def test_quality_metric_name_unit_and_direction(
    benchmark: str, part: str, name: str, unit: str, direction: str
) -> None:
    q = quality(benchmark, part)
    assert (q.name, q.unit, q.direction) == (name, unit, direction)
    assert q.source.startswith(("training_", "hpc_"))


def test_quality_target_comes_from_the_rulesets_compliance_config() -> None:
    assert quality("llama31_8b", ruleset="5.1.0").targets == (3.3,)
    assert quality("ssd", ruleset="1.0.0").targets == (0.23,)  # SSD300
    assert quality("ssd", ruleset="4.0.0").targets == (0.34,)  # RetinaNet
    assert quality("dlrmv4", ruleset="6.1.0").targets == (0.75,)  # s['target_accuracy']
    assert quality("bert", ruleset="0.7.0").targets == (0.712, 0.706)  # by batch size
    assert quality("llama31_8b").targets == ()  # no ruleset: no target


def test_v06_bleu_is_percent_and_converts_to_the_v07_fraction() -> None:
    q = quality("transformer", legacy=True)
    assert q.unit == "%"
    # BLEU 25.33 on the 0-100 scale is the 0.2533 that v0.7 logs, never 2533 %
    assert convert(25.33, q.unit, "ratio") == pytest.approx(0.2533)
    assert quality("resnet", legacy=True).unit == "ratio"
    assert quality("ssd", legacy=True).unit == SCORE  # no v0.6 log establishes the scale


def test_a_score_never_converts_to_a_percentage() -> None:
    with pytest.raises(UnitError):
        convert(2.69, SCORE, "%")


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


def test_compliance_expressions_are_read_never_evaluated() -> None:
    cmps = mlperf_logging_meta.comparisons(
        "(0.0 <= v['value']['FID'] <= 90.0) and __import__('os').system('false') == 0", {}
    )
    assert cmps == [("FID", ">=", 0.0), ("FID", "<=", 90.0)]
    assert mlperf_logging_meta.comparisons("s['x'] = 1", {}) == []  # a statement: no bound
    state = {"target_accuracy": 0.75}
    assert mlperf_logging_meta.comparisons("v['value'] >= s['target_accuracy']", state) == [
        ("", ">=", 0.75)
    ]
