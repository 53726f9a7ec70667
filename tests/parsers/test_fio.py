"""fio parser: vocabulary, schema generations, failures, and cross-checks on real output."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from aibench.errors import ParseError, ToolFailure
from aibench.parsers import fio
from aibench.parsers._fio_common import normalize_bs
from aibench.parsers._fio_text import group_totals
from tests.golden import one, pick

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "fio"


def load(name: str) -> str:
    return (FIX / name).read_text(encoding="utf-8")


def test_fio3_json_vocabulary_and_units() -> None:
    recs = fio.parse(load("v3.33_libaio_randread_direct1.json"))
    dims = {
        "job": "libaio_randread_direct1",
        "direction": "read",
        "rw": "randread",
        "bs": "4k",
        "iodepth": 16,
        "ioengine": "libaio",
        "direct": True,
    }
    assert one(recs, "bw", **dims).value == 268804
    assert one(recs, "bw").unit == "KiB/s"
    assert one(recs, "iops").value == pytest.approx(67201.159768)
    assert one(recs, "io_bytes").value == 1376555008
    assert one(recs, "runtime").unit == "ms"
    assert one(recs, "clat_mean").unit == "ns"
    p99 = one(recs, "clat_percentile", percentile=99.0)
    assert p99.value == 1236992
    assert p99.unit == "ns"
    assert isinstance(p99.dims["percentile"], float)
    # a pure read job: the zero write/trim/sync sections are not emitted
    assert {r.dims["direction"] for r in recs if r.metric != "disk_util"} == {"read"}


def test_fio2_schema_is_usec_and_io_bytes_in_kib() -> None:
    text = load("v2.18_randread_json_usec.json")
    recs = fio.parse(text)
    job = json.loads(text)["jobs"][0]["read"]
    assert one(recs, "clat_mean").unit == "us"
    # fio 2.x wrote KiB in "io_bytes": 733 IOs of 4 KiB
    assert one(recs, "io_bytes").value == job["io_bytes"] * 1024 == job["total_ios"] * 4096
    # the unused "0.00": 0 percentile slot of fio 2.x is not a percentile
    assert all(r.dims["percentile"] > 0 for r in pick(recs, "clat_percentile"))


def test_oldest_schema_without_job_options() -> None:
    recs = fio.parse(load("v2.1.3_randrw_json_reserialized.json"))
    assert {r.dims["direction"] for r in recs if r.metric != "disk_util"} == {"read", "write"}
    assert "rw" not in recs[0].dims
    assert one(recs, "iops", direction="write").value == 21045


def test_disk_util_per_device() -> None:
    """fio's "Disk stats": the utilisation of every device it lists, in %."""
    recs = fio.parse(load("v3.16_randread_libaio_json.json"))
    util = {r.dims["device"]: r.value for r in recs if r.metric == "disk_util"}
    assert util
    assert all(0 <= v <= 100 for v in util.values())
    assert {r.unit for r in recs if r.metric == "disk_util"} == {"%"}


def test_sync_section_is_its_own_direction() -> None:
    recs = fio.parse(load("v3.33_write_fdatasync_json.json"))
    sync = pick(recs, "lat_mean", direction="sync")
    assert len(sync) == 1
    assert sync[0].unit == "ns"
    assert not pick(recs, "bw", direction="sync")


def test_job_error_is_tool_failure_with_the_error_lines() -> None:
    with pytest.raises(ToolFailure) as exc:
        fio.parse(load("v3.33_json_error22_prefixed.json"))
    assert "time_based requires a runtime/timeout setting" in exc.value.reason
    assert "error=22" in exc.value.reason


def test_text_job_error_is_tool_failure() -> None:
    with pytest.raises(ToolFailure) as exc:
        fio.parse(load("v3.33_text_error_einval.txt"))
    assert "err=22" in exc.value.reason
    assert "Invalid argument" in exc.value.reason


def test_truncated_json_is_a_parse_error_with_its_line() -> None:
    text = load("v3.33_psync_read_direct1.json")
    cut = text[: len(text) // 2]
    with pytest.raises(ParseError) as exc:
        fio.parse(cut)
    assert exc.value.line == cut.count("\n") + 1


def test_json_plus_bins_are_ignored() -> None:
    text = load("v3.33_randread_io_uring_jsonplus.json")
    doc = json.loads(text)
    assert "bins" in doc["jobs"][0]["read"]["clat_ns"]
    del doc["jobs"][0]["read"]["clat_ns"]["bins"]
    assert fio.parse(text) == fio.parse(json.dumps(doc))


@pytest.mark.parametrize(
    "name",
    [
        "v3.33_randrw_libaio_nj2_text.txt",
        "v3.33_write_fdatasync_text.txt",
        "v3.25_text_fdatasync_zfs.txt",
        "v3.28_text_fdatasync.txt",
        "v2.2.10_text_randread_three_runs.txt",
        "v2.2.10_text_randwrite_five_runs.txt",
    ],
)
def test_run_status_group_equals_the_sum_of_the_jobs(name: str) -> None:
    text = load(name)
    recs = fio.parse(text)
    totals = group_totals(text)
    assert totals
    for direction, (bw, io) in totals.items():
        jobs_bw = sum(r.value for r in pick(recs, "bw", direction=direction))
        jobs_io = sum(r.value for r in pick(recs, "io_bytes", direction=direction))
        # fio prints three significant digits per figure: allow one rounding step per job
        assert jobs_bw == pytest.approx(bw, rel=0.006)
        assert jobs_io == pytest.approx(io, rel=0.006)


@pytest.mark.parametrize(
    "name", ["v2.2.10_text_randread_three_runs.txt", "v2.2.10_text_randwrite_five_runs.txt"]
)
def test_fio2_group_aggrb_lines_are_read_as_printed(name: str) -> None:
    """Each run's ``aggrb=NKB/s, minb=..., maxb=..., mint=Nmsec`` (KB meaning KiB)."""
    text = load(name)
    printed = re.findall(
        r"^\s+(READ|WRITE): io=(\d+\.\d)MB, aggrb=(\d+)KB/s, minb=(\d+)KB/s, "
        r"maxb=(\d+)KB/s, mint=(\d+)msec",
        text,
        re.M,
    )
    assert len(printed) >= 3
    recs = fio.parse(text)
    for run, (direction, io_mb, aggrb, minb, maxb, mint) in enumerate(printed, 1):
        d = {"run": run, "direction": direction.lower(), "group": 0}
        assert one(recs, "group_bw", **d).value == float(aggrb)
        assert one(recs, "group_bw_min", **d).value == float(minb)
        assert one(recs, "group_bw_max", **d).value == float(maxb)
        assert one(recs, "group_runtime_min", **d).value == float(mint)
        assert one(recs, "group_io_bytes", **d).value == float(io_mb) * 2**20


def test_a_group_summary_alone_is_read() -> None:
    recs = fio.parse(load("v3_howto_run_status_group_only.txt"))
    assert one(recs, "group_bw", direction="write").value == 1231.0
    assert one(recs, "group_bw_min", direction="read").value == pytest.approx(10.4 * 1024)
    assert one(recs, "group_runtime_max", direction="write").value == 53223.0
    assert not pick(recs, "bw")


def test_text_fio3_units_dims_and_sync() -> None:
    recs = fio.parse(load("v3.25_text_fdatasync_zfs.txt"))
    w = {"job": "mytest", "direction": "write", "rw": "write", "bs": "4k", "ioengine": "sync"}
    assert one(recs, "bw", **w).value == pytest.approx(18.8 * 1024)
    assert one(recs, "clat_mean", **w).value == 13462.14
    assert one(recs, "clat_mean", **w).unit == "ns"
    assert one(recs, "lat_mean", direction="sync").value == 192480.0  # 192.48 usec
    assert one(recs, "clat_percentile", direction="sync", percentile=99.0).value == 260000.0


def test_terse_fields() -> None:
    recs = fio.parse(load("v3.33_randread_psync_terse.txt"))
    assert one(recs, "bw").value == 62411
    assert one(recs, "io_bytes").value == 63160 * 1024
    assert one(recs, "clat_percentile", percentile=99.9).value == 1220
    assert not pick(recs, "slat_mean")  # psync: no submission latency measured
    assert {r.dims["direction"] for r in recs if r.metric != "disk_util"} == {"read"}


def test_terse_line_cut_short_is_a_parse_error() -> None:
    line = load("v3.33_randread_psync_terse.txt").split(";")
    with pytest.raises(ParseError, match="fields"):
        fio.parse(";".join(line[:60]))


def test_howto_stanza_and_group_only() -> None:
    recs = fio.parse(load("v3.0_howto_job_stanza_posixaio.txt"))
    assert one(recs, "slat_mean").value == 8318.0
    assert one(recs, "clat_mean").value == 4019020.0
    with pytest.raises(ParseError, match=r"no job report .* and no 'Run status group'"):
        fio.parse("Run status group 0 (all jobs):\n")


@pytest.mark.parametrize(
    ("raw", "want"),
    [
        ("4k", "4k"),
        ("4K", "4k"),
        ("4096", "4k"),
        ("4096B-4096B", "4k"),
        ("1M", "1m"),
        ("2300", "2300"),
        ("4k-64k", "4k-64k"),
        ("4k,8k", "4k,8k"),
    ],
)
def test_normalize_bs(raw: str, want: str) -> None:
    assert normalize_bs(raw) == want


def test_every_value_is_finite_with_a_known_unit() -> None:
    from aibench.units import is_known

    for f in FIX.iterdir():
        if f.suffix in (".json", ".txt") and not f.name.endswith(".expected.json"):
            try:
                recs = fio.parse(f.read_text())
            except (ParseError, ToolFailure):
                continue
            assert all(math.isfinite(r.value) and is_known(r.unit) for r in recs), f.name


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_live_fio_terse_json_and_text_of_one_run_agree(tmp_path: Path) -> None:
    out = subprocess.run(
        [
            "fio",
            "--name=live",
            f"--filename={tmp_path / 'f'}",
            "--size=2M",
            "--rw=randread",
            "--bs=4k",
            "--ioengine=psync",
            "--output-format=terse,json,normal",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    terse = "\n".join(ln for ln in out.splitlines() if ln.startswith("3;"))
    start = out.index("\n{") + 1
    end = out.index("\n}\n", start) + 3
    jrecs = fio.parse(out[start:end])
    trecs = fio.parse(terse)
    xrecs = fio.parse(out[end:])
    assert one(trecs, "bw").value == one(jrecs, "bw").value
    assert one(trecs, "io_bytes").value == one(jrecs, "io_bytes").value == 2 * 1024 * 1024
    assert one(trecs, "clat_mean").value == pytest.approx(one(jrecs, "clat_mean").value / 1000)
    assert one(xrecs, "io_bytes").value == one(jrecs, "io_bytes").value
    assert one(xrecs, "bw").value == pytest.approx(one(jrecs, "bw").value, rel=0.006)
    assert one(xrecs, "clat_mean").value == pytest.approx(one(jrecs, "clat_mean").value, rel=0.006)


# ---- runs cut short, several runs in one log (captured with fio 3.33 here) ----------------


@pytest.mark.parametrize(
    ("name", "signal"),
    [
        ("v3.33_json_interrupted_sigint.json", 2),
        ("v3.33_json_terminated_sigterm.json", 15),
        ("v3.33_text_interrupted_sigint.txt", 2),
        ("v3.33_terse_interrupted_sigint.txt", 2),
    ],
)
def test_a_run_cut_short_by_a_signal_is_a_tool_failure_in_fios_words(
    name: str, signal: int
) -> None:
    with pytest.raises(ToolFailure) as exc:
        fio.parse(load(name))
    assert f"fio: terminating on signal {signal}" in exc.value.reason
    # what fio reported for the part that ran is kept as evidence, never as a result
    assert pick(exc.value.partial, "bw")  # type: ignore[arg-type]


def test_a_killed_job_process_is_a_tool_failure() -> None:
    # fio's line for a job process killed by a signal, as printed in front of its report
    text = load("v3.33_text_two_runs_appended.txt")
    cut = text.replace("fio-3.33\n", "fio-3.33\nfio: pid=14489, got signal=9\n", 1)
    with pytest.raises(ToolFailure, match="got signal=9"):
        fio.parse(cut)


def test_several_runs_in_one_text_log_are_numbered() -> None:
    recs = fio.parse(load("v3.33_text_two_runs_appended.txt"))
    bw = pick(recs, "bw")
    assert [r.dims["run"] for r in bw] == [1, 2]
    assert bw[0].value != bw[1].value
    assert {r.dims.get("run") for r in recs} == {1, 2}  # every record, not only bw


def test_one_run_has_no_run_dim() -> None:
    recs = fio.parse(load("v3.33_randrw_libaio_nj2_text.txt"))  # numjobs=2: one run
    assert all("run" not in r.dims for r in recs)


def test_several_json_documents_in_one_log_are_all_read_and_numbered() -> None:
    recs = fio.parse(load("v3.33_json_two_runs_appended.json"))
    bw = pick(recs, "bw")
    assert [r.dims["run"] for r in bw] == [1, 2]
    assert bw[0].value != bw[1].value
