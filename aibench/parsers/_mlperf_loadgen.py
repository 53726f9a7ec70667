"""Vocabulary shared by the two MLPerf LoadGen parsers (summary and detail log).

Both parsers name the same things the same way, so that a check written against one
also holds for the other: the constraint facts (``min_duration_met`` ...), the
throughput and latency metrics, and the normalized test mode.
"""

from __future__ import annotations

import re

TOOL = "mlperf-inference"

# "<what> satisfied : Yes" in the summary, result_<what>_met in the detail log
CONSTRAINTS = {
    "min duration": "min_duration_met",
    "min queries": "min_queries_met",
    "performance constraints": "perf_constraints_met",
    "early stopping": "early_stopping_met",
}

# LoadGen v0.5 wrote "Performance"/"Accuracy"; later versions "PerformanceOnly" ...
_MODES = {
    "performance": "PerformanceOnly",
    "performanceonly": "PerformanceOnly",
    "accuracy": "AccuracyOnly",
    "accuracyonly": "AccuracyOnly",
    "submission": "SubmissionRun",
    "submissionrun": "SubmissionRun",
    "findpeakperformance": "FindPeakPerformance",
}


def mode(text: str) -> str:
    """The normalized test mode (the text itself when it is not a known mode)."""
    return _MODES.get(text.strip().lower().replace(" ", ""), text.strip())


def constraint_name(label: str) -> str:
    """``Min duration`` -> ``min_duration_met``; unknown labels are snake-cased."""
    key = label.strip().lower()
    if key in CONSTRAINTS:
        return CONSTRAINTS[key]
    return re.sub(r"[^a-z0-9]+", "_", key).strip("_") + "_met"


def percentile(text: str) -> float:
    """``90th``, ``90.0th``, ``99.90`` -> 90.0, 90.0, 99.9."""
    return float(text.rstrip("th"))
