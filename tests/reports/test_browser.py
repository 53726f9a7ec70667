"""The HTML report in a real headless chromium: it renders, its script runs without console
errors, it fetches nothing, planted payloads stay text, and the first screen is captured."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile

import pytest

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
    if netlog.is_file():
        urls = set(re.findall(r'"url":"([^"]+)"', netlog.read_text(errors="replace")))
        assert not [u for u in urls if "127.0.0.1" in u or "leak" in u], urls
    _ = json


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
