"""MLPerf Training rules that the mlperf-logging package does not carry, as data.

What mlperf-logging has is read from the installed package
(:mod:`aibench.mlperf_logging_meta`): the rulesets, the benchmarks of each ruleset, the run
(result file) counts, and the quality bounds of each benchmark's closed compliance config
(direction, target, whether the value is a fraction). This module keeps the rest, from the
MLPerf Training rules (mlcommons/training_policies, ``training_rules.adoc``):

* olympic scoring: "Each benchmark result is computed by dropping the fastest and slowest
  runs, then taking the mean of the remaining times"; a single non-converging run may be
  treated as the slowest and dropped; more than one makes the result invalid; UNet3D
  drops the 4 fastest and the 4 slowest of its 40 runs (commit d73e20f);
* the name of each benchmark's quality metric (the "Target" column of the closed-division
  tables: ``3.3 log perplexity``, ``0.80275 AUC``; commits d73e20f, 42d9e93 for the v0.7
  benchmarks, e5fdbc6 for NCF's HR@10);
* the scale of the v0.6 logs (``:::MLL`` lines), which mlperf-logging's 0.6.0 configs do
  not bound: gnmt and transformer logged BLEU on the 0-100 scale (``17.9`` ... ``24.1``
  in Google's tpu-v3-32 gnmt result_0.txt, ``25.08`` in its transformer result_0.txt of
  training_results_v0.6), where v0.7 logs the same BLEU as a fraction (``0.2526`` beside
  the tool's own ``bleu_score=25.2633`` in Dell EMC's C4140 transformer result_0.txt of
  training_results_v0.7); resnet logged top-1 accuracy as a fraction (``0.7609``).

Benchmark names are the ``submission_benchmark`` values of the logs (what the
``mlperf-training`` parser reports as the ``benchmark`` Fact).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from aibench import mlperf_logging_meta as meta

#: benchmarks that drop more than one fastest and one slowest run
_DROP = {"unet3d": 4}

#: how many non-converged runs a result may have (the one counts as the slowest)
MAX_NOT_CONVERGED = 1

#: benchmark (or (benchmark, part) for a value with several parts) -> the rules' name of
#: its quality metric; mlperf-logging has the bounds but not the names
QUALITY_NAMES: Mapping[str | tuple[str, str], str] = {
    "resnet": "top-1 classification accuracy",
    "unet3d": "mean DICE score",
    "ssd": "mAP",
    "retinanet": "mAP",
    ("maskrcnn", "BBOX"): "box min AP",
    ("maskrcnn", "SEGM"): "mask min AP",
    "gnmt": "SacreBLEU",
    "transformer": "BLEU",
    "bert": "masked-LM accuracy",
    "dlrm": "AUC",
    "dlrm_dcnv2": "AUC",
    "minigo": "win rate vs. checkpoint",
    "ncf": "HR@10",
    "rnnt": "word error rate",
    "gnn": "classification accuracy",
    "rgat": "classification accuracy",
    "gpt3": "log perplexity",
    ("stable_diffusion", "FID"): "FID",
    ("stable_diffusion", "CLIP"): "CLIP score",
    "llama2_70b_lora": "eval loss",
    "llama31_405b": "log perplexity",
    "llama31_8b": "log perplexity",
    "gpt_oss_20b": "log perplexity",
    "deepseekv3_671b": "log perplexity",
    "flux1": "eval loss",
}

#: v0.6 (``:::MLL``) logs: the unit of eval_accuracy where a real log shows the scale
V06_UNITS: Mapping[str, str] = {"gnmt": "%", "transformer": "%", "resnet": "ratio"}

#: a value the compliance config bounds by 1 that is still not a fraction: the CLIP score
#: is a cosine similarity (range -1 to 1), not a share of something
NOT_FRACTIONS = {("stable_diffusion", "CLIP")}

#: the unit of a quality value that is not a fraction (a loss, a log perplexity, FID,
#: or a scale no log or config establishes): comparable only with itself
SCORE = "score"


class RulesError(ValueError):
    """An unknown ruleset version or benchmark; the message lists the known ones."""


def min_runs(benchmark: str, ruleset: str) -> int:
    """Runs needed for ``benchmark`` under ruleset ``ruleset`` ("4.0", "v5.1", "6.1.0").

    From the installed mlperf-logging (benchmark_meta); RulesError names what is known.
    """
    try:
        return meta.result_count(benchmark, ruleset)
    except meta.MetaError as exc:
        raise RulesError(str(exc)) from None


@dataclass(frozen=True)
class Quality:
    """What one quality value of a benchmark is: name, unit, which way is better."""

    benchmark: str
    part: str  # "" or the part of a value with several (BBOX, SEGM, FID, CLIP)
    name: str  # the rules' name of the metric; "" where the rules have none
    unit: str  # "ratio" (a fraction), "%" (v0.6 BLEU), or SCORE
    direction: str  # "higher" | "lower" | "" (the configs say nothing or disagree)
    targets: tuple[float, ...] = ()  # only for a given ruleset
    source: str = ""  # the compliance config(s) read


def quality(
    benchmark: str,
    part: str = "",
    *,
    key: str = "eval_accuracy",
    ruleset: str | None = None,
    legacy: bool = False,
) -> Quality:
    """The quality metric of ``benchmark`` logged as ``key`` (``part``: the sub-value, as
    maskrcnn's BBOX).

    Unit and direction come from mlperf-logging's closed compliance configs: every config
    of the benchmark (or only ``ruleset``'s) must agree, else the direction is "" and the
    unit SCORE. ``legacy``: the value comes from a v0.6 ``:::MLL`` log, whose scale is
    :data:`V06_UNITS` (SCORE where no log establishes it). Targets only with ``ruleset``.
    """
    found = [b for b in meta.bounds(benchmark, ruleset) if b.key == key]
    mine = [b for b in found if b.part == part] or [b for b in found if b.part == ""]
    name = (
        (QUALITY_NAMES.get((benchmark, part)) or QUALITY_NAMES.get(benchmark, ""))
        if (key == "eval_accuracy")
        else ""
    )
    directions = {b.direction for b in mine}
    fractions = {b.fraction for b in mine}
    direction = directions.pop() if len(directions) == 1 else ""
    if legacy:
        unit = V06_UNITS.get(benchmark, SCORE)
    elif fractions == {True} and (benchmark, part) not in NOT_FRACTIONS:
        unit = "ratio"
    else:
        unit = SCORE
    targets = tuple(t for b in mine for t in b.targets) if ruleset is not None else ()
    return Quality(
        benchmark,
        part,
        name,
        unit,
        direction,
        tuple(dict.fromkeys(targets)),
        ", ".join(sorted({b.config for b in mine})),
    )


def drop_count(benchmark: str) -> int:
    """How many fastest (and as many slowest) runs olympic scoring drops."""
    return _DROP.get(benchmark, 1)


@dataclass(frozen=True)
class OlympicScore:
    """The result of olympic scoring over a set of runs (times in the caller's unit)."""

    valid: bool
    score: float | None  # mean of the kept times; None when not valid
    kept: tuple[float, ...] = ()
    dropped_fastest: tuple[float, ...] = ()
    dropped_slowest: tuple[float, ...] = ()  # a non-converged run is last, with its time
    runs: int = 0
    not_converged: int = 0
    reason: str = ""


def olympic_score(
    times: Sequence[float],
    converged: Sequence[bool] | None = None,
    *,
    drop: int = 1,
    required: int | None = None,
) -> OlympicScore:
    """Drop the ``drop`` fastest and ``drop`` slowest runs, average the rest.

    ``converged[i]`` says whether run ``i`` reached its quality target (all True when
    omitted). One non-converged run counts as the slowest and is dropped among the
    slowest; more than :data:`MAX_NOT_CONVERGED` makes the result invalid. ``required``
    is the number of runs the rules ask for: fewer is invalid.
    """
    if drop < 0:
        raise ValueError("drop must be >= 0")
    conv = [True] * len(times) if converged is None else list(converged)
    if len(conv) != len(times):
        raise ValueError(f"{len(times)} times but {len(conv)} converged flags")
    n = len(times)
    bad = conv.count(False)

    def invalid(reason: str) -> OlympicScore:
        return OlympicScore(False, None, runs=n, not_converged=bad, reason=reason)

    if required is not None and n < required:
        return invalid(f"{n} runs, the rules need {required}")
    if bad > MAX_NOT_CONVERGED:
        return invalid(f"{bad} runs did not converge; at most {MAX_NOT_CONVERGED} may")
    if bad > drop:
        return invalid(f"{bad} non-converged run(s) but only {drop} dropped")
    if n - 2 * drop < 1:
        return invalid(f"{n} runs leave none after dropping {drop}+{drop}")
    ok = sorted(t for t, c in zip(times, conv, strict=True) if c)
    # a non-converged run counts as the slowest of all, whatever its time: it goes last
    ordered = ok + [t for t, c in zip(times, conv, strict=True) if not c]
    fastest = tuple(ordered[:drop])
    slowest = tuple(ordered[n - drop :]) if drop else ()
    kept = tuple(ordered[drop : n - drop])
    return OlympicScore(
        True,
        math.fsum(kept) / len(kept),
        kept=kept,
        dropped_fastest=fastest,
        dropped_slowest=slowest,
        runs=n,
        not_converged=bad,
    )


def score_benchmark(
    benchmark: str,
    ruleset: str,
    times: Sequence[float],
    converged: Sequence[bool] | None = None,
) -> OlympicScore:
    """Olympic scoring with the benchmark's run count and drop count from the rules."""
    return olympic_score(
        times,
        converged,
        drop=drop_count(benchmark),
        required=min_runs(benchmark, ruleset),
    )


def run_outcome(records: Iterable[object]) -> tuple[float | None, bool]:
    """(time_to_train in ms, converged) of one run, from ``mlperf-training`` records.

    Converged means the run's ``status`` Fact is ``success``; a missing status or time
    gives (None, False).
    """
    time: float | None = None
    status: object = None
    for r in records:
        metric = getattr(r, "metric", None)
        if metric == "time_to_train":
            time = getattr(r, "value", None)
        elif getattr(r, "name", None) == "status" and getattr(r, "source", "") == "mlperf-training":
            status = getattr(r, "value", None)
    return time, status == "success"
