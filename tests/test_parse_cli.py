"""``aibench parse``: table, json, csv, auto-detection, stdin, errors and exit codes."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from aibench.cli import main

FIX = Path(__file__).resolve().parent / "fixtures"
FIO = str(FIX / "fio" / "v3.33_libaio_randread_direct1.json")
IPERF3 = str(FIX / "iperf3" / "v3.12_lo_tcp_P2.json")
IPERF2_FAIL = str(FIX / "iperf2" / "v2.1.8_lo_client_refused.txt")
FIO_FAIL = str(FIX / "fio" / "v3.33_json_error22_prefixed.json")


def test_table_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", "fio", FIO]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["tool", "metric", "value", "unit", "dims"]
    bw = next(line for line in out if " bw " in line)
    assert "268804" in bw
    assert "KiB/s" in bw
    assert "direction=read" in bw


def test_json_format_round_trips_records(capsys: pytest.CaptureFixture[str]) -> None:
    from aibench import parsers
    from aibench.model import Measurement

    assert main(["parse", "iperf3", IPERF3, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    (f,) = doc["files"]
    assert f["parser"] == "iperf3"
    assert f["error"] is None
    got = [Measurement.from_dict(r) for r in f["records"]]
    assert got == parsers.parse("iperf3", Path(IPERF3).read_text())


def test_csv_has_one_column_per_dim(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", "iperf3", IPERF3, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    thr = [r for r in rows if r["metric"] == "throughput" and r["side"] == "sender"]
    assert len(thr) == 1
    doc = json.loads(Path(IPERF3).read_text())
    assert float(thr[0]["value"]) == doc["end"]["sum_sent"]["bits_per_second"]
    assert thr[0]["streams"] == "2"


@pytest.mark.parametrize("form", [["parse", "auto"], ["parse", "--tool", "auto"]])
def test_auto_detects_and_says_which(form: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*form, FIO, IPERF3]) == 0
    cap = capsys.readouterr()
    assert "detected tool fio" in cap.err
    assert "detected tool iperf3" in cap.err
    assert "file" in cap.out.splitlines()[0]


def test_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(Path(FIO).read_text()))
    assert main(["parse", "fio", "-", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["files"][0]["file"] == "-"


def test_tool_failure_is_one_line_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", "iperf2", IPERF2_FAIL]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"aibench parse: {IPERF2_FAIL} line 5: ToolFailure: tcp connect failed: Connection refused"
    ]


def test_parse_error_names_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cut = tmp_path / "cut.json"
    text = Path(FIO).read_text()
    cut.write_text(text[: len(text) // 3])
    assert main(["parse", "fio", str(cut)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"aibench parse: {cut} line ")
    assert "ParseError" in err
    assert "\n" not in err


def test_partial_records_are_marked_in_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # two jobs, the second failed: the first job's records come back, marked partial
    doc = json.loads(Path(FIO).read_text())
    bad = json.loads(json.dumps(doc["jobs"][0]))
    bad["jobname"], bad["error"] = "broken", 5
    doc["jobs"].append(bad)
    path = tmp_path / "two.json"
    path.write_text(json.dumps(doc))
    assert main(["parse", "fio", str(path), "--format", "json"]) == 1
    cap = capsys.readouterr()
    (f,) = json.loads(cap.out)["files"]
    assert f["error"]["type"] == "ToolFailure"
    assert f["records"]
    assert all(r["partial"] is True for r in f["records"])
    assert "job 'broken' error=5" in cap.err
    # the same through the real failure fixture: no records, still exit 1
    assert main(["parse", "fio", FIO_FAIL, "--format", "json"]) == 1


def test_unknown_tool_lists_valid_ones(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", "nosuchtool", FIO]) == 2
    err = capsys.readouterr().err
    assert "unknown parser 'nosuchtool'" in err
    assert "fio" in err
    assert "iperf3" in err


def test_missing_file_and_undetectable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["parse", "fio", str(tmp_path / "absent.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    junk = tmp_path / "junk.txt"
    junk.write_text("hello\n")
    assert main(["parse", "auto", str(junk)]) == 2
    assert "no parser recognizes" in capsys.readouterr().err


# ---- outputs that are only the tool's error; the tool's warnings ---------------------------


@pytest.mark.parametrize(
    ("fixture", "tool", "words"),
    [
        (
            "perftest/ib_write_bw_error_only_failed_to_modify_QP_to_RTR_GRH_required.txt",
            "perftest",
            "Failed to modify QP 122273 to RTR | Unable to Connect the HCA's through the link",
        ),
        (
            "perftest/ib_write_bw_client_error_couldnt_connect_pre-PR228_joined_lines.txt",
            "perftest",
            "Couldn't connect to 192.168.125.211:18515",
        ),
        (
            "iperf3/v3.21+_lo_json_stream_refused.json",
            "iperf3",
            "unable to connect to server - server may have stopped running",
        ),
        ("iperf3/v3.12_lo_refused_text.txt", "iperf3", "unable to connect to server"),
        ("iperf2/v2.1.8_lo_client_refused.txt", "iperf2", "Connection refused"),
    ],
)
def test_auto_on_an_output_that_is_only_an_error_names_the_tool_and_its_words(
    fixture: str, tool: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["parse", "--tool", "auto", str(FIX / fixture)]) == 1
    err = capsys.readouterr().err
    assert f"detected tool {tool}" in err
    assert "ToolFailure" in err
    assert words in err


def test_notes_follow_the_table_and_are_records_in_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = str(FIX / "iperf2" / "v2.0.x_enhanced_tcp_client_fb_negative_cwnd_mss_unknown.txt")
    assert main(["parse", "iperf2", path]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().splitlines()[-1] == (
        "warning (iperf2 line 10): MSS and MTU size unknown (TCP_MAXSEG not supported by OS?)"
    )
    assert main(["parse", "iperf2", path, "--format", "json"]) == 0
    (f,) = json.loads(capsys.readouterr().out)["files"]
    notes = [r for r in f["records"] if r["kind"] == "Note"]
    assert [n["text"] for n in notes] == [
        "MSS and MTU size unknown (TCP_MAXSEG not supported by OS?)"
    ]
    assert main(["parse", "iperf2", path, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["value"] for r in rows if r["kind"] == "Note"] == [notes[0]["text"]]
