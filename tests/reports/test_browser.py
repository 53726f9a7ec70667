"""The HTML report in a real headless chromium: it renders, its script runs without console
errors, it fetches nothing, planted payloads stay text, and the first screen is captured."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.aibench_cli import aibench, only_run_dir

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed"),
]

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    # the browser's own update/account pings must not leave the machine either:
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--proxy-server=127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>;127.0.0.1",
]


def chromium(url: str, *extra: str, timeout: int = 60) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    with tempfile.TemporaryDirectory(prefix="aibench-chromium-") as profile:
        return subprocess.run(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *extra, url],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )


def console_errors(stderr: str) -> list[str]:
    return [
        line
        for line in stderr.splitlines()
        if "CONSOLE" in line or "Uncaught" in line or "Refused to" in line
    ]


def page_requests(netlog: Path) -> set[str]:
    """URLs a document asked for, from chromium's net log: the requests whose initiator is
    an origin (a file:// page is the origin "null"); the browser's own background requests
    have the initiator "not an origin". The page's own file:// and data: URLs are left out.
    """
    log = json.loads(netlog.read_text(errors="replace"))
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    out = set()
    for e in log["events"]:
        p = e.get("params") or {}
        own = p.get("initiator", "not an origin") == "not an origin"
        if e["type"] == start and not own and not p["url"].startswith(("file:", "data:")):
            out.add(p["url"])
    return out


def test_the_request_detector_sees_a_page_request(beacon, tmp_path):
    """Control: a page that does load an image from the loopback is caught by page_requests."""
    page = tmp_path / "control.html"
    page.write_text(f'<!DOCTYPE html><img src="{beacon.url}?control">')
    netlog = tmp_path / "net.json"
    proc = chromium(
        page.as_uri(), "--virtual-time-budget=3000", f"--log-net-log={netlog}", "--dump-dom"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert page_requests(netlog) == {f"{beacon.url}?control"}
    assert "/leak.png?control" in beacon.hits
    beacon.hits.remove("/leak.png?control")


def test_report_renders_script_runs_no_console_errors(rendered):
    url = (rendered.run_dir / "report.html").as_uri()
    proc = chromium(
        url, "--enable-logging=stderr", "--v=0", "--virtual-time-budget=3000", "--dump-dom"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert 'data-report-js="ok"' in dom, "the report's own script did not run"
    m = re.search(r'id="shown"[^>]*>(\d+) of (\d+) shown<', dom)
    assert m
    assert m[1] == m[2] == str(len(rendered.gen.run.verdicts))
    assert '<div class="filters" id="filters" hidden' not in dom
    assert "<title>FAIL · aibench acceptance" in dom
    assert console_errors(proc.stderr) == []


def test_first_screen_screenshot(rendered, artifacts_dir):
    shot = artifacts_dir / "report_first_screen.png"
    if shot.exists():
        shot.unlink()
    proc = chromium(
        (rendered.run_dir / "report.html").as_uri(),
        f"--screenshot={shot}",
        "--window-size=1280,1000",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000


def test_planted_payloads_do_not_execute_and_nothing_is_fetched(hostile, beacon, tmp_path):
    html = hostile.html
    assert "<script>document.title" not in html
    assert 'onerror="' not in html
    assert not re.search(r'(?:src|href)\s*=\s*["\']?\s*(?:https?:|//)', html, re.I)
    assert html.count("<script") == 1
    netlog = tmp_path / "net.json"
    proc = chromium(
        (hostile.run_dir / "report.html").as_uri(),
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=3000",
        f"--log-net-log={netlog}",
        "--dump-dom",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert 'data-report-js="ok"' in dom
    title = re.search(r"<title>(.*?)</title>", dom, re.S)[1]
    assert title.startswith("FAIL · aibench acceptance · acme-h100-pod&lt;script&gt;"), title
    html_tag = re.search(r"<html([^>]*)>", dom)[1]
    assert "data-pwned" not in html_tag
    assert 'data-report-js="ok"' in html_tag
    assert not re.search(r"<[a-z]+[^>]*\sdata-pwned=", dom)
    assert "<script>document.title" not in dom
    assert console_errors(proc.stderr) == []
    assert beacon.hits == [], f"the report requested {beacon.hits}"
    assert page_requests(netlog) == set()


def test_prints_to_pdf(rendered, tmp_path):
    pdf = tmp_path / "report.pdf"
    proc = chromium(
        (rendered.run_dir / "report.html").as_uri(),
        "--no-pdf-header-footer",
        f"--print-to-pdf={pdf}",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-")
    pages = data.count(b"/Type /Page") - data.count(b"/Type /Pages")
    assert pages >= 5  # sign-off, checks, sections, environment and logs start new pages


# ---- the report of a real local run ----------------------------------------------------

REAL_SUITE = """\
schema_version: 1
name: browser-real
settings: {{workdir: {work}, base_port: 17650}}
steps:
  - name: preflight
    tool: preflight
    options: {{gpu: false, infiniband: false}}
{fio}
  - name: iperf3-tcp
    tool: iperf3
    placement: pairs
    options: {{duration: 1, streams: 2, bidir: true, bandwidth: 200M}}
"""
FIO_STEP = """\
  - name: {name}
    tool: fio
    options: {{rw: {rw}, bs: {bs}, size: 8M, runtime: 1, ioengine: psync, iodepth: 1,
               direct: false}}
"""


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    """``aibench run`` of a short suite on this machine: fio on a small file and iperf3
    over the loopback, judged by the default spec (the step names are the ones it checks)."""
    if shutil.which("fio") is None or shutil.which("iperf3") is None:
        pytest.skip("needs fio and iperf3")
    tmp = tmp_path_factory.mktemp("real")
    fio = "".join(
        FIO_STEP.format(name=name, rw=rw, bs=bs)
        for name, rw, bs in (
            ("fio-seq-read", "read", "1M"),
            ("fio-seq-write", "write", "1M"),
            ("fio-rand-read", "randread", "4k"),
            ("fio-rand-write", "randwrite", "4k"),
        )
    )
    suite = tmp / "suite.yaml"
    suite.write_text(REAL_SUITE.format(work=tmp / "work", fio=fio.rstrip("\n")))
    res = aibench("run", "--suite", str(suite), "--output-dir", str(tmp / "runs"), "--quiet")
    assert res.returncode in (0, 1), res.stderr  # 1: a check failed (reported, not a crash)
    run_dir = only_run_dir(tmp / "runs")
    run = json.loads((run_dir / "run.json").read_text())
    assert not run.get("generated")
    assert {s["tool"] for s in run["steps"]} == {"preflight", "fio", "iperf3"}
    assert all(s["status"] == "ok" for s in run["steps"] if s["tool"] != "preflight"), [
        (s["step_id"], s["reason"]) for s in run["steps"] if s["status"] != "ok"
    ]
    return Path(run_dir), run


def test_real_run_report_renders_without_console_errors_or_requests(real_run, tmp_path):
    run_dir, run = real_run
    html = (run_dir / "report.html").read_text()
    assert "GENERATED DATA" not in html
    netlog = tmp_path / "net.json"
    proc = chromium(
        (run_dir / "report.html").as_uri(),
        "--enable-logging=stderr",
        "--v=0",
        "--virtual-time-budget=3000",
        f"--log-net-log={netlog}",
        "--dump-dom",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    assert 'data-report-js="ok"' in dom, "the report's own script did not run"
    m = re.search(r'id="shown"[^>]*>(\d+) of (\d+) shown<', dom)
    assert m
    assert m[1] == m[2] == str(len(run["verdicts"]))
    assert console_errors(proc.stderr) == []
    # the page asked for nothing (the browser's own update and account pings are no
    # page requests, and the flags keep them from leaving the machine)
    assert page_requests(netlog) == set()
    # the real measurements are in it
    for check in ("fio-seq-read-bw", "iperf3-tcp-throughput"):
        assert check in dom
    assert "<h2>Preflight (node facts)" in dom


def test_real_run_first_screen_screenshot(real_run, artifacts_dir):
    run_dir, _ = real_run
    shot = artifacts_dir / "report_real_run_first_screen.png"
    if shot.exists():
        shot.unlink()
    proc = chromium(
        (run_dir / "report.html").as_uri(),
        f"--screenshot={shot}",
        "--window-size=1280,1000",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, height) == (1280, 1000)
    assert len(data) > 20_000
