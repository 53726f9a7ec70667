"""``aibench parse auto``: every golden fixture is recognized by its own parser, and only by it."""

from __future__ import annotations

from pathlib import Path

import pytest

from aibench import parsers
from aibench.cli import main
from tests.golden import FIXTURES, cases

# Parsers with no ``detect``: they read the output of aibench's own collection commands
# (``grep -H '' /proc/...``, ``lsblk -J``, ``findmnt -J``, the ``@@ tool`` version script,
# ``dmesg``); the preflight always names the parser, and a kernel log without an Xid line
# carries nothing that says "dmesg". ``aibench parse auto`` does not guess them.
NOT_DETECTED = {
    "node-files",
    "lsblk-json",
    "lsblk-tree",
    "findmnt-json",
    "tool-versions",
    "dmesg-xid",
}
# Parsers of a fork whose output is its parent's format: auto detection names the parent,
# whose reader they use. (None now: an RCCL-tests log says it is RCCL's.)
READ_AS: dict[str, str] = {}

CASES = cases()


@pytest.mark.parametrize(("parser", "case"), CASES, ids=[f"{p}/{c.name}" for p, c in CASES])
def test_fixture_is_detected_as_its_own_parser(parser: str, case: Path) -> None:
    found = parsers.detect(case.read_text(encoding="utf-8", errors="replace"))
    assert found == ([] if parser in NOT_DETECTED else [READ_AS.get(parser, parser)])


def test_the_undetected_parsers_have_no_detector() -> None:
    """The list above stays true: a parser that gains a detector leaves it."""
    undetected = {p.name for p in parsers.PARSERS if p.detect is None}
    assert undetected == NOT_DETECTED | set(READ_AS)


@pytest.mark.parametrize(
    "name",
    [
        "v4.0_NVIDIA_eos_n8_mxnet_resnet_result_0_success.txt",
        "v4.0_NVIDIA_eos_n8_nemo_stable_diffusion_result_0.txt",
    ],
)
def test_parse_auto_reads_a_training_log_with_a_sysjson_head(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The eos_n8 logs start with a ``:::SYSJSON`` line whose JSON has commas and an
    "index"-like word; the --query-gpu CSV detector used to claim them too (exit 2)."""
    assert main(["parse", "auto", str(FIXTURES / "mlperf-training" / name)]) == 0
    assert "detected tool mlperf-training" in capsys.readouterr().err


def test_parse_auto_reads_a_perftest_failure(capsys: pytest.CaptureFixture[str]) -> None:
    """A perftest run that fails before its banner prints only perftest's own messages."""
    f = FIXTURES / "perftest" / "ib_write_bw_R_rdma_cm_server_error_read_keys.txt"
    assert main(["parse", "auto", str(f)]) == 1
    err = capsys.readouterr().err
    assert "detected tool perftest" in err
    assert "Couldn't read remote address" in err


@pytest.mark.parametrize(
    "text",
    [
        ':::SYSJSON {"index": 0, "driver_version": "550"}\n',
        "name, value\nindex, 3\n",  # field-like names, none of the ones it looks for
        "index, memory used\n0, 3\n",  # a space inside a name
        "iperf 3.12 (cJSON 1.7.15)\nLinux host 6.1.0 x86_64\n",
    ],
)
def test_the_query_gpu_csv_detector_wants_a_header_of_field_names(text: str) -> None:
    assert "nvidia-smi-query-gpu" not in parsers.detect(text)


def test_the_query_gpu_csv_detector_takes_units_and_nounits() -> None:
    assert parsers.detect("index, name, memory.total [MiB]\n0, NVIDIA H100, 81559 MiB\n") == [
        "nvidia-smi-query-gpu"
    ]
    assert parsers.detect("pci.bus_id, clocks_event_reasons.active\n00000000:1B:00.0, 0x0\n") == [
        "nvidia-smi-query-gpu"
    ]
