"""MLPerf Training scoring rules as data: minimum run counts and olympic scoring.

Source: the MLPerf Training rules (mlcommons/training_policies, ``training_rules.adoc``),
checked at the commits named in :data:`RULESET_COMMITS`:

* "Each benchmark result is computed by dropping the fastest and slowest runs, then
  taking the mean of the remaining times." (every version checked)
* A single non-converging run may be treated as the slowest run and dropped; the result
  is invalid if more than one run does not converge.
* UNet3D needs 40 runs and drops the 4 fastest and the 4 slowest.

Benchmark names are the ``submission_benchmark`` values of the logs (what the
``mlperf-training`` parser reports as the ``benchmark`` Fact). Where the rules table names
an area and the benchmark was renamed between rounds, both names are listed (``ssd`` and
``retinanet``; ``gnn`` and ``rgat``; ``gpt3`` and ``llama31_405b`` for LLM pretraining).
The v6.0 names of the two MoE benchmarks are read from the 6.0.0 compliance rules of
mlperf-logging: ``gpt_oss_20b`` (small LLM MoE) and ``deepseekv3_671b`` (LLM MoE
pretraining).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

RULESET_COMMITS: Mapping[str, str] = {
    "4.0": "0346e20",
    "4.1": "d38fe44",
    "5.0": "e1ed9b5",
    "6.0": "d73e20f",
}

_V40 = {
    "resnet": 5,
    "unet3d": 40,
    "ssd": 5,
    "retinanet": 5,
    "maskrcnn": 5,
    "stable_diffusion": 10,
    "bert": 10,
    "rnnt": 10,
    "gpt3": 3,
    "llama31_405b": 3,
    "llama2_70b_lora": 10,
    "dlrm_dcnv2": 10,
    "gnn": 10,
    "rgat": 10,
}
_V41_V50 = {
    "ssd": 5,
    "retinanet": 5,
    "stable_diffusion": 10,
    "bert": 10,
    "gpt3": 3,
    "llama31_405b": 3,
    "llama2_70b_lora": 10,
    "dlrm_dcnv2": 10,
    "gnn": 10,
    "rgat": 10,
}
_V60 = {
    "gpt3": 3,
    "llama31_405b": 3,
    "llama2_70b_lora": 10,
    "dlrm_dcnv2": 10,
    "flux1": 10,
    "llama31_8b": 10,
    "gpt_oss_20b": 10,
    "deepseekv3_671b": 3,
}

#: ruleset version -> benchmark -> the number of runs a submission needs
MIN_RUNS: Mapping[str, Mapping[str, int]] = {
    "4.0": _V40,
    "4.1": _V41_V50,
    "5.0": dict(_V41_V50),
    "6.0": _V60,
}

#: benchmarks that drop more than one fastest and one slowest run
_DROP = {"unet3d": 4}

#: how many non-converged runs a result may have (the one counts as the slowest)
MAX_NOT_CONVERGED = 1


class RulesError(ValueError):
    """An unknown ruleset version or benchmark; the message lists the known ones."""


def _version(ruleset: str) -> str:
    v = ruleset.strip().lstrip("v")
    parts = v.split(".")
    short = ".".join(parts[:2]) if len(parts) >= 2 else v
    if short not in MIN_RUNS:
        raise RulesError(
            f"unknown MLPerf Training ruleset {ruleset!r}; known: {', '.join(sorted(MIN_RUNS))}"
        )
    return short


def min_runs(benchmark: str, ruleset: str) -> int:
    """Runs needed for ``benchmark`` under ruleset ``ruleset`` ("4.0", "v5.0", "6.0.0")."""
    table = MIN_RUNS[_version(ruleset)]
    if benchmark not in table:
        raise RulesError(
            f"benchmark {benchmark!r} is not in MLPerf Training {_version(ruleset)}; "
            f"known: {', '.join(sorted(table))}"
        )
    return table[benchmark]


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
