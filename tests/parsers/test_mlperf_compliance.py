"""mlperf-logging's compliance checker, as it really prints (fixtures/mlperf-compliance).

The runner judges the checker by its exit status and names the failure with
``first_complaint``; these are the checker's own outputs on the five captured training
logs of ``fixtures/mlperf-training``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from aibench import parsers
from aibench.model import Fact
from aibench.runners.mlperf_training import first_complaint

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CHECKER = FIXTURES / "mlperf-compliance"


def checker_output(variant: str) -> str:
    return (CHECKER / f"checker6.0.0_{variant}.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("variant", "complaint"),
    [
        (
            "bad_opt",
            "CHECK for 'opt_name' failed in line 10: failed test:  v['value'] == 'adamw'",
        ),
        ("no_run_stop", "Required EXACTLY_ONE occurrence of 'run_stop' but found 0"),
        (
            "no_status",
            "CHECK for 'run_stop' failed in line 50: failed test: 'status' in v['metadata']",
        ),
    ],
)
def test_first_complaint_of_a_failed_check(variant: str, complaint: str) -> None:
    text = checker_output(variant)
    assert "ERROR - FAILED" in text
    assert first_complaint(text) == complaint


@pytest.mark.parametrize("variant", ["valid", "aborted"])
def test_a_passed_check_has_no_complaint_to_name(variant: str) -> None:
    """The checker passes these (exit 0, so the runner never asks); its output holds no
    WARNING or ERROR line, so ``first_complaint`` has only its fallback to say."""
    text = checker_output(variant)
    assert text.rstrip().endswith("INFO - SUCCESS")
    assert first_complaint(text) == "FAILED (no reason given)"


def test_the_checker_passes_an_aborted_run_that_the_parser_reports() -> None:
    """The rules only require that run_stop has a status, so "aborted" passes the checker;
    the run's status must come from the log itself."""
    assert checker_output("aborted").rstrip().endswith("INFO - SUCCESS")
    log = (FIXTURES / "mlperf-training/mllog6_llama31_8b_aborted.log").read_text()
    recs = parsers.parse("mlperf-training", log)
    status = [r for r in recs if isinstance(r, Fact) and r.name == "status"]
    assert [s.value for s in status] == ["aborted"]
