"""MLPerf Training parser: hand-checked numbers, failure modes and odd values on real logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aibench import units
from aibench.errors import ParseError, ToolFailure
from aibench.model import Fact, Measurement
from aibench.parsers import detect
from aibench.parsers.mlperf_training import parse

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "mlperf-training"
TRUNCATED = (
    FIX / "v5.0_IBM-CoreWeave-NVIDIA_carina_ngpu1024_nemo_llama31_405b_result_0_TRUNCATED.txt"
)
RESNET_OK = FIX / "v4.0_NVIDIA_eos_n8_mxnet_resnet_result_0_success.txt"
RESNET_ABORTED = FIX / "v4.0_NVIDIA_eos_n8_mxnet_resnet_result_4_aborted.txt"
VALID6 = FIX / "mllog6_llama31_8b_valid.log"


def text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def facts(recs: list[Measurement | Fact]) -> dict[str, object]:
    return {r.name: r.value for r in recs if isinstance(r, Fact)}


def metric(recs: list[Measurement | Fact], name: str) -> list[Measurement]:
    return [r for r in recs if isinstance(r, Measurement) and r.metric == name]


def mllog_time(path: Path, key: str) -> int:
    """time_ms of the first `key` event, read with json directly (not with the parser)."""
    for line in text(path).splitlines():
        if line.startswith(":::MLLOG "):
            obj = json.loads(line[len(":::MLLOG ") :])
            if obj["key"] == key:
                return int(obj["time_ms"])
    raise AssertionError(f"no {key} in {path.name}")


def test_time_to_train_resnet_v40_equals_run_stop_minus_run_start() -> None:
    # run_start 1714090291947, run_stop 1714090442273 (lines 257 and 345 of result_0.txt)
    assert mllog_time(RESNET_OK, "run_stop") - mllog_time(RESNET_OK, "run_start") == 150326
    [ttt] = metric(parse(text(RESNET_OK)), "time_to_train")
    assert ttt.value == 1714090442273 - 1714090291947 == 150326
    assert ttt.unit == "ms"
    assert ttt.dims == {"status": "success"}


def test_v06_seconds_timestamps_give_exact_milliseconds() -> None:
    recs = parse(text(FIX / "v0.6_Google_tpu-v3-32_transformer_result_0_MLL_format.txt"))
    # 1558651003.100 - 1558650414.961 s, without binary floating point error
    assert metric(recs, "time_to_train")[0].value == 588139.0
    assert facts(recs)["benchmark"] == "transformer"
    assert facts(recs)["submitter"] == "google"


@pytest.mark.parametrize("path", [RESNET_ABORTED, FIX / "mllog6_llama31_8b_aborted.log"])
def test_aborted_status_is_read_as_aborted(path: Path) -> None:
    recs = parse(text(path))
    assert facts(recs)["status"] == "aborted"
    assert metric(recs, "time_to_train")[0].dims["status"] == "aborted"


def test_success_facts_of_resnet() -> None:
    f = facts(parse(text(RESNET_OK)))
    assert f == {
        "benchmark": "resnet",
        "submitter": "NVIDIA",
        "platform": "8xNVIDIA DGX H100",
        "division": "closed",
        "status": "success",
        "quality_metric": "top-1 classification accuracy",
        "quality_direction": "higher",
    }


def test_eval_accuracy_one_record_per_event_with_dims() -> None:
    recs = parse(text(RESNET_OK))
    evals = metric(recs, "eval_accuracy")
    raw = text(RESNET_OK).count('"key": "eval_accuracy"')
    assert len(evals) == raw == 9
    assert evals[0].value == 0.32174
    assert evals[0].dims == {"epoch_num": 3}
    assert all(e.unit == "ratio" for e in evals)


def test_stable_diffusion_fid_and_clip_are_told_apart() -> None:
    recs = parse(text(FIX / "v4.0_NVIDIA_eos_n8_nemo_stable_diffusion_result_0.txt"))
    by_metric = {e.dims["metric"] for e in metric(recs, "eval_accuracy")}
    assert by_metric == {"FID", "CLIP"}
    first_fid = next(e for e in metric(recs, "eval_accuracy") if e.dims["metric"] == "FID")
    assert first_fid.value == 101.65608201066408
    assert first_fid.dims["samples_count"] == 2048000


def test_no_run_stop_is_a_tool_failure_with_partial() -> None:
    with pytest.raises(ToolFailure) as ei:
        parse(text(FIX / "mllog6_llama31_8b_no_run_stop.log"))
    assert "no run_stop" in ei.value.reason
    partial = ei.value.partial
    assert any(
        isinstance(r, Fact) and r.name == "benchmark" and r.value == "llama31_8b" for r in partial
    )
    assert (
        len([r for r in partial if isinstance(r, Measurement) and r.metric == "eval_accuracy"]) == 3
    )
    assert not any(isinstance(r, Measurement) and r.metric == "time_to_train" for r in partial)


def test_log_cut_in_initialization_has_no_run_start() -> None:
    with pytest.raises(ToolFailure) as ei:
        parse(text(TRUNCATED))
    assert "no run_start" in ei.value.reason


def test_missing_status_is_an_absent_fact() -> None:
    recs = parse(text(FIX / "mllog6_llama31_8b_no_status.log"))
    [st] = [r for r in recs if isinstance(r, Fact) and r.name == "status"]
    assert st.absent
    assert "no status" in st.reason
    assert metric(recs, "time_to_train")[0].dims == {}


@pytest.mark.parametrize("junk", ["", "hello\nworld\n", "INFO - SUCCESS\n"])
def test_not_an_mlperf_log_is_a_parse_error(junk: str) -> None:
    with pytest.raises(ParseError):
        parse(junk)


@pytest.mark.parametrize("value", ["null", "true", '"True"', "NaN", '"abc"', "{}"])
def test_odd_eval_values_do_not_crash_and_are_never_zero(value: str) -> None:
    src = text(VALID6).replace('"value": 3.5,', f'"value": {value},')
    assert src != text(VALID6)
    recs = parse(src)
    evals = [e.value for e in metric(recs, "eval_accuracy")]
    assert evals == [3.9, 3.25]  # the odd one is not turned into a number
    assert metric(recs, "log_problems")[0].value == 1
    problem = facts(recs)["log_problem"]
    assert isinstance(problem, str)
    assert problem.startswith("line 44: eval_accuracy")


def test_numeric_string_value_is_read() -> None:
    src = text(VALID6).replace('"value": 3.5,', '"value": "3.5",')
    assert [e.value for e in metric(parse(src), "eval_accuracy")] == [3.9, 3.5, 3.25]


def test_cut_line_is_reported_and_the_rest_is_read() -> None:
    lines = text(VALID6).splitlines()
    i = next(n for n, ln in enumerate(lines) if '"eval_accuracy"' in ln)
    lines[i] = lines[i][: len(lines[i]) // 2]  # a rank died mid-write
    recs = parse("\n".join(lines) + "\n")
    assert len(metric(recs, "eval_accuracy")) == 2
    assert metric(recs, "log_problems")[0].value == 1
    assert facts(recs)["log_problem"] == f"line {i + 1}: invalid or cut :::MLLOG JSON"
    assert metric(recs, "time_to_train")[0].value == 38.0


def test_object_continued_on_the_next_line_reads_like_one_line() -> None:
    lines = text(VALID6).splitlines()
    i = next(n for n, ln in enumerate(lines) if '"eval_accuracy"' in ln)
    cut = lines[i].index('"metadata"')
    wrapped = [*lines[:i], lines[i][:cut], lines[i][cut:], *lines[i + 1 :]]
    assert parse("\n".join(wrapped)) == parse(text(VALID6))


def test_prefixes_and_noise_do_not_matter() -> None:
    plain = text(VALID6)
    noisy = "\n".join(
        f"[1,0]<stdout>:{ln}" if n % 2 else f"0: {ln}\nepoch {n}: loss=nan lr=1e-4"
        for n, ln in enumerate(plain.splitlines())
    )
    assert parse(noisy) == parse(plain)


def test_run_stop_before_run_start_is_a_parse_error() -> None:
    stop = mllog_time(VALID6, "run_stop")
    old = f'"time_ms": {stop}, "event_type": "INTERVAL_END", "key": "run_stop"'
    assert old in text(VALID6)
    src = text(VALID6).replace(old, old.replace(str(stop), "1"))
    with pytest.raises(ParseError) as ei:
        parse(src)
    assert ei.value.line == 51
    assert "earlier" in ei.value.reason


@pytest.mark.parametrize(
    "path", sorted(p for p in FIX.iterdir() if p.suffix in (".txt", ".log")), ids=lambda p: p.name
)
def test_every_fixture_uses_known_units_and_is_detected(path: Path) -> None:
    src = text(path)
    assert "mlperf-training" in detect(src)
    try:
        recs = parse(src)
    except ToolFailure as exc:
        recs = [r for r in exc.partial if isinstance(r, Measurement | Fact)]
    for r in recs:
        if isinstance(r, Measurement):
            assert units.is_known(r.unit)
            assert r.tool == "mlperf-training"
        else:
            assert r.source == "mlperf-training"


def test_two_records_glued_on_one_line_are_both_read() -> None:
    lines = text(VALID6).splitlines()
    i = next(n for n, ln in enumerate(lines) if '"eval_accuracy"' in ln)
    glued = [*lines[:i], lines[i] + lines[i + 1], *lines[i + 2 :]]
    assert parse("\n".join(glued)) == parse(text(VALID6))


def test_glued_after_a_cut_record_keeps_the_second() -> None:
    lines = text(VALID6).splitlines()
    i = next(n for n, ln in enumerate(lines) if '"eval_accuracy"' in ln)
    glued = [*lines[: i - 1], lines[i - 1][:30] + lines[i], *lines[i + 1 :]]
    recs = parse("\n".join(glued))
    assert [e.value for e in metric(recs, "eval_accuracy")] == [3.9, 3.5, 3.25]
    assert facts(recs)["log_problem"] == f"line {i}: invalid or cut :::MLLOG JSON"


def test_marker_without_json_is_a_problem() -> None:
    recs = parse(text(VALID6) + ":::MLLOG (log buffer overflow)\n")
    assert metric(recs, "log_problems")[0].value == 1
    assert "without a JSON object" in str(facts(recs)["log_problem"])


def test_quality_target_is_reported_when_logged() -> None:
    lines = text(VALID6).splitlines()
    i = next(n for n, ln in enumerate(lines) if '"global_batch_size"' in ln)
    extra = lines[i].replace('"global_batch_size", "value": 32', '"quality_target", "value": 3.3')
    assert extra != lines[i]
    recs = parse("\n".join([*lines[: i + 1], extra, *lines[i + 1 :]]))
    assert facts(recs)["quality_target"] == 3.3
    assert "quality_target" not in facts(parse(text(VALID6)))


def test_hpc_eval_error_is_kept_where_no_eval_accuracy_is_logged() -> None:
    # MLPerf HPC v1.0 oc20 logs its quality (force MAE) only as eval_error
    recs = parse(
        text(FIX / "hpc_v1.0_CSCS_piz_daint_n256_oc20_strong_result_1_eval_error_only.txt")
    )
    errors = [r for r in recs if isinstance(r, Measurement) and r.metric == "eval_error"]
    assert len(errors) == 25
    assert not [r for r in recs if isinstance(r, Measurement) and r.metric == "eval_accuracy"]
    assert (errors[0].value, dict(errors[0].dims)) == (0.062015305790935775, {"epoch_num": 1})
    assert (errors[-1].value, dict(errors[-1].dims)) == (0.03571707186807961, {"epoch_num": 25})
    ttt = next(r for r in recs if isinstance(r, Measurement) and r.metric == "time_to_train")
    assert ttt.value == 1633462356149 - 1633417502125
    assert facts(recs)["benchmark"] == "oc20"


def test_hpc_cosmoflow_logs_both_quality_keys() -> None:
    recs = parse(
        text(
            FIX
            / "hpc_v1.0_NVIDIA_dgxa100_n16_cosmoflow_strong_result_1_eval_error_and_accuracy.txt"
        )
    )
    by = {
        m: [r.value for r in recs if isinstance(r, Measurement) and r.metric == m]
        for m in ("eval_error", "eval_accuracy")
    }
    assert len(by["eval_error"]) == len(by["eval_accuracy"]) == 17
    # cosmoflow's eval_accuracy is the negated error: two readings of one number
    assert [-v for v in by["eval_accuracy"]] == by["eval_error"]


def test_maskrcnn_dict_eval_accuracy_gives_one_record_per_metric() -> None:
    # MLPerf Training v1.1 maskrcnn logs {"BBOX": .., "SEGM": ..} per evaluation
    recs = parse(
        text(
            FIX
            / "v1.1_NVIDIA_dgxa100_n51_pytorch_maskrcnn_result_2_eval_accuracy_BBOX_SEGM_dict.txt"
        )
    )
    evals = [r for r in recs if isinstance(r, Measurement) and r.metric == "eval_accuracy"]
    assert len(evals) == 32
    last = {r.dims["metric"]: r.value for r in evals if r.dims["epoch_num"] == 16}
    assert last == {"BBOX": 0.3772295332601115, "SEGM": 0.3424857087000742}
    assert "log_problem" not in facts(recs)
    ttt = next(r for r in recs if isinstance(r, Measurement) and r.metric == "time_to_train")
    assert ttt.value == 1634341791958 - 1634341613943


def test_dict_eval_accuracy_with_a_bad_entry_keeps_the_good_one() -> None:
    log = "\n".join(
        [
            ':::MLLOG {"namespace": "", "time_ms": 1, "event_type": "INTERVAL_START", '
            '"key": "run_start", "value": null, "metadata": {}}',
            ':::MLLOG {"namespace": "", "time_ms": 2, "event_type": "POINT_IN_TIME", '
            '"key": "eval_accuracy", "value": {"BBOX": 0.3, "SEGM": null}, '
            '"metadata": {"epoch_num": 1}}',
            ':::MLLOG {"namespace": "", "time_ms": 3, "event_type": "INTERVAL_END", '
            '"key": "run_stop", "value": null, "metadata": {"status": "success"}}',
        ]
    )
    recs = parse(log)
    evals = [r for r in recs if isinstance(r, Measurement) and r.metric == "eval_accuracy"]
    assert [(r.value, r.dims["metric"]) for r in evals] == [(0.3, "BBOX")]
    assert "SEGM" in str(facts(recs)["log_problem"])


def test_one_element_list_count_is_read_as_its_element() -> None:
    # Graphcore's v1.1 bert logs "train_samples": [3060640]; its run_stop is (wrongly)
    # an INTERVAL_START event, which does not matter to the time to train
    recs = parse(
        text(FIX / "v1.1_Graphcore_ipu-pod128_popart_bert_result_1_train_samples_list.txt")
    )
    by = {r.metric: r.value for r in recs if isinstance(r, Measurement)}
    assert by["train_samples"] == 3060640
    assert by["time_to_train"] == 1634891738705 - 1634891360870
    assert "log_problem" not in facts(recs)


def test_v07_time_s_seconds_are_read_as_exact_milliseconds() -> None:
    # lines of mlcommons/training_results_v0.7 Alibaba/results/v100-1280/result_2.txt
    # (resnet on 1280 V100): that logger wrote "time_s" in seconds, not "time_ms"
    log = "\n".join(
        [
            ':::MLLOG {"namespace": "main", "time_s": 0.0, "key": "submission_benchmark", '
            '"value": "resnet", "metadata": {"lineno": 1, "file": "/run/setup.py"}}',
            ':::MLLOG {"metadata": {"lineno": 183, "file": "train_imagenet.py"}, "value": null, '
            '"key": "run_start", "namespace": "", "time_s": 1593420638.864, '
            '"event_type": "INTERVAL_START" }',
            ':::MLLOG {"metadata": {"epoch_num": 3, "lineno": 971, "file": "common/fit.py"}, '
            '"value": 0.01723, "key": "eval_accuracy", "namespace": "", '
            '"time_s": 1593420648.253, "event_type": "POINT_IN_TIME" }',
            ':::MLLOG {"metadata": {"status": "success", "lineno": 976, "file": '
            '"common/fit.py"}, "value": null, "key": "run_stop", "namespace": "", '
            '"time_s": 1593420741.703, "event_type": "INTERVAL_END" }',
        ]
    )
    recs = parse(log)
    by = {r.metric: r for r in recs if isinstance(r, Measurement)}
    assert by["time_to_train"].value == 1593420741703 - 1593420638864  # exact, in ms
    assert by["eval_accuracy"].value == 0.01723
    assert facts(recs)["status"] == "success"


# ---- the unit of a quality value is its benchmark's (issue: BLEU 25.33 is not 2533 %)


def test_v06_bleu_on_the_0_100_scale_is_percent_and_equals_the_v07_fraction() -> None:
    v06 = parse(text(FIX / "v0.6_Google_tpu-v3-32_gnmt_result_0_BLEU_0_100.txt"))
    last = metric(v06, "eval_accuracy")[-1]
    assert (last.value, last.unit, facts(v06)["quality_metric"]) == (24.1, "%", "SacreBLEU")
    assert units.convert(last.value, last.unit, "ratio") == pytest.approx(0.241)
    v07 = parse(text(FIX / "v0.7_DellEMC_C4140_transformer_result_0_BLEU_fraction.txt"))
    final = metric(v07, "eval_accuracy")[-1]
    # the same log prints the tool's own "bleu_score=25.2633" beside the logged fraction
    assert (final.value, final.unit) == (0.2526334226131439, "ratio")
    assert units.convert(final.value, final.unit, "%") == pytest.approx(25.26334226)
    assert facts(v07)["quality_metric"] == "BLEU"
    assert facts(v07)["quality_direction"] == "higher"


@pytest.mark.parametrize(
    ("case", "unit", "name", "direction"),
    [
        ("v5.1_AMD_MI355X_llama31_8b_result_0.txt", "score", "log perplexity", "lower"),
        ("v4.0_Google_tpu-v5p-1024_maxtext_gpt3_result_0.txt", "score", "log perplexity", "lower"),
        ("v4.0_NVIDIA_eos_n8_nemo_llama2_70b_lora_result_0.txt", "score", "eval loss", "lower"),
        (
            "v5.0_GigaComputing_G893-SD1_dgl_rgat_result_0.txt",
            "ratio",
            "classification accuracy",
            "higher",
        ),
        (
            "v1.1_Graphcore_ipu-pod128_popart_bert_result_1_train_samples_list.txt",
            "ratio",
            "masked-LM accuracy",
            "higher",
        ),
    ],
)
def test_quality_unit_name_and_direction_per_benchmark(
    case: str, unit: str, name: str, direction: str
) -> None:
    recs = parse(text(FIX / case))
    assert {m.unit for m in metric(recs, "eval_accuracy")} == {unit}
    assert facts(recs)["quality_metric"] == name
    assert facts(recs)["quality_direction"] == direction


def test_a_log_perplexity_cannot_be_judged_as_a_percentage() -> None:
    recs = parse(text(FIX / "v5.1_AMD_MI355X_llama31_8b_result_0.txt"))
    last = metric(recs, "eval_accuracy")[-1]
    assert last.value < 3.3  # reached the 5.1 target of 3.3 log perplexity
    with pytest.raises(units.UnitError):
        units.convert(last.value, last.unit, "%")


def test_tracked_stats_throughput_mean_and_last() -> None:
    """The throughput an implementation logs in its tracked_stats events (5 on MI300X)."""
    recs = parse((FIX / "v5.0_AMD_MI300X_llama2_70b_lora_result_0.txt").read_text())
    got = {
        r.dims["stat"]: r.value
        for r in recs
        if isinstance(r, Measurement) and r.metric == "train_throughput"
    }
    logged = [2.0265096564665908, 2.029685430709314, 2.0279696812191723, 2.0272792138832743,
              2.0283686075275873]  # fmt: skip
    assert got == pytest.approx({"mean": sum(logged) / 5, "last": logged[-1]})
    assert {
        r.unit for r in recs if isinstance(r, Measurement) and r.metric == "train_throughput"
    } == {"samples/s"}
