"""dcgmi diag: Error / Warning / Info rows, results wrapped per GPU, tables without Metadata."""

from __future__ import annotations

from pathlib import Path

from aibench.model import Fact
from aibench.parsers.dcgmi import parse

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "dcgmi-diag"

HEAD = """\
Successfully ran diagnostic for group.
+---------------------------+------------------------------------------------+
| Diagnostic                | Result                                         |
+===========================+================================================+
"""


def facts(text: str, name: str) -> list[Fact]:
    return [f for f in parse(text) if f.name == name]


def test_an_error_row_is_the_failed_tests_text() -> None:
    text = (FIX / "r1-3.1.8-8xh200-persistence-mode-fail-error-rows.txt").read_text()
    (err,) = facts(text, "error")
    assert err.dims == {"test": "Persistence Mode", "section": "Deployment", "n": 1}
    assert isinstance(err.value, str)
    assert err.value.startswith("Persistence mode for GPU 0 is currently disabled. The DCGM")
    assert "Persistence mode for GPU 5 is currently disabled" in err.value
    result = {f.dims["test"]: f.value for f in facts(text, "result")}
    assert result["Persistence Mode"] == "fail"
    assert facts(text, "overall")[0].value == "fail"


def test_a_result_wrapped_per_gpu_is_the_worst_of_its_lines() -> None:
    # constructed: the header above, a section line, and the GPU Memory rows quoted in
    # NVIDIA/go-dcgm issue #52 (DCGM 3.3.1, "Pass - GPU: 1" then "Fail - GPU: 0")
    text = HEAD + (
        "+-----  Hardware  ----------+------------------------------------------------+\n"
        "| GPU Memory                | Pass - GPU: 1                                  |\n"
        "|                           | Fail - GPU: 0                                  |\n"
        "| Warning                   | GPU 0 Error using CUDA API cuCtxCreate Check   |\n"
        "|                           | DCGM and system logs for errors. Reset GPU. R  |\n"
        "|                           | estart DCGM. Rerun diagnostics. Unable to cre  |\n"
        "|                           | ate CUDA context: 'CUDA-capable device(s) is/  |\n"
        "|                           | are busy or unavailable'.                      |\n"
        "+---------------------------+------------------------------------------------+\n"
    )
    (result,) = facts(text, "result")
    assert result.value == "fail"
    (text_fact,) = facts(text, "result_text")
    assert text_fact.value == "Pass - GPU: 1 Fail - GPU: 0"
    (warning,) = facts(text, "warning")
    assert warning.value.startswith("GPU 0 Error using CUDA API cuCtxCreate")  # type: ignore[union-attr]


def test_a_table_without_metadata_is_read() -> None:
    # constructed: the Deployment rows of DCGM 3.0.4's table quoted in NVIDIA/DCGM issue
    # #55 (no Metadata section in that version)
    text = HEAD + (
        "|-----  Deployment  --------+------------------------------------------------|\n"
        "| Denylist                  | Pass                                           |\n"
        "| NVML Library              | Pass                                           |\n"
        "| Persistence Mode          | Pass                                           |\n"
        "+---------------------------+------------------------------------------------+\n"
    )
    assert [f.value for f in facts(text, "result")] == ["pass", "pass", "pass"]
    assert not facts(text, "version")
    assert facts(text, "overall")[0].value == "pass"


def test_dcgm4_json_reads_into_the_table_facts() -> None:
    """``dcgmi diag -j`` of DCGM 4.2.3 (GB10): the same facts as the table, as written."""
    import json

    from aibench.parsers import detect
    from tests.golden import FIXTURES

    path = FIXTURES / "dcgmi-diag" / "r1-4.2.3-gb10-json-persistence-mode-fail.json"
    text = path.read_text()
    doc = json.loads(text)
    assert detect(text) == ["dcgmi-diag"]
    facts = {(f.name, f.dims.get("test"), f.dims.get("n")): f.value for f in parse(text)}
    test = doc["DCGM Diagnostic"]["test_categories"][0]["tests"][0]
    assert facts[("version", None, None)] == doc["metadata"]["version"]
    assert facts[("driver_version", None, None)] == doc["metadata"]["Driver Version Detected"]
    assert facts[("result_text", "software", None)] == test["test_summary"]["status"]
    assert facts[("result", "software", None)] == "fail"
    assert facts[("warning", "software", 1)] == test["results"][0]["warnings"][0]["warning"]
    assert facts[("info", "software", 2)] == test["test_summary"]["info"][0]
    assert (facts[("overall", None, None)], facts[("failed_tests", None, None)]) == ("fail", 1)
