"""The serving step on the bed: AIPerf through HAProxy and Nginx and to each backend, and a
backend killed while the load runs through HAProxy.

abs-h2 and abs-h3 each run a backend: the TEST-ONLY streaming OpenAI-compatible server
``tests/programs/openai_stub_server.py`` (a fixed 20 ms between tokens; it needs an API
key). abs-h4 runs real HAProxy (health checks every 300 ms) and real Nginx in front of
both. abs-h1 drives AIPerf over SSH. One ``aibench run`` (child process) holds five steps:
a sweep of concurrency levels against each of the four endpoints (three through HAProxy,
its two ends at one backend, the judged level at the other and through Nginx), then a
failover step through HAProxy where the suite's ``stop`` command kills the h2 backend (run
on h2 through the SSH executor) and its ``start`` command starts it again.

Why the test backend and not llama.cpp's server: ``pip install llama-cpp-python`` (0.3.36)
has no wheel for this platform on PyPI and compiles llama.cpp from source; that took 1477 s
on the 2-core development machine (shared, load 8-13), far past the few minutes a CI
test may cost. The backends here are therefore the labelled test server, which paces
tokens exactly, so that the measured ITL can be checked against the delay it was given.

What is checked, from the stored run and the files a person reads:

* every sweep level of every endpoint is measured and the spec's checks pass (p99 TTFT
  and ITL bounds at concurrency 4, throughput floor, error-rate bound);
* failover: errors seen (HTTP 503 or cut streams), a recovery time measured and judged;
* aibench's latencies equal AIPerf's own summary of the same run (the export files on
  the driver), and the backends' ITL is the 20 ms token delay, 5 ms under to 15 ms over (mean);
* the API key appears in no file of the run directory (run.json, raw logs, reports);
* report.html shows the latency vs load table and the failover timeline.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.testbed.bed import TestBed

pytestmark = [pytest.mark.netns, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent.parent
STUB = ROOT / "tests" / "programs" / "openai_stub_server.py"
PY = sys.executable
AIPERF = str(Path(sys.executable).parent / "aiperf")
KEY = "sk-aibench-test-7f3c9e1d5b"  # must show up nowhere in the run
# HAProxy holds a streamed response back (TTFT = the whole response, ITL ~4 ms, measured
# here) unless ``option http-no-delay``; the config below sets it, as a streaming LLM
# deployment must.
DELAY = 0.02  # seconds between tokens at the backends
PORT, HAPROXY_PORT, NGINX_PORT = 18000, 18080, 18081
LEVELS = [1, 2, 4]  # the sweep through HAProxy
# AIPerf starts its whole system again for each level (about 15 s of a 2-core machine, 11
# of them CPU, for 16 requests), so the sweep runs in full through HAProxy only: b1 at its
# ends (compared with AIPerf's own files, as HAProxy's levels are), b2 and Nginx at the
# level the spec judges
LEVELS_OF = {"b1": [1, 4], "b2": [4], "haproxy": LEVELS, "nginx": [4]}


def _netns(bed: TestBed, host: str, *argv: str) -> list[str]:
    return ["ip", "netns", "exec", bed.host(host).netns, *argv]


def backend_argv(tmp: Path, addr: str, name: str) -> list[str]:
    return [
        PY, str(STUB), "serve", "--daemon", "--host", addr, "--port", str(PORT),
        "--token-delay", str(DELAY), "--model", "stub-model",
        "--api-key-file", str(tmp / "backend.key"),
        "--pidfile", str(tmp / f"{name}.pid"), "--log", str(tmp / f"{name}.log"),
    ]  # fmt: skip


def haproxy_cfg(addr: str, b1: str, b2: str) -> str:
    return f"""global
    maxconn 512
defaults
    mode http
    option http-no-delay
    timeout connect 1s
    timeout client 60s
    timeout server 60s
frontend fe
    bind {addr}:{HAPROXY_PORT}
    default_backend be
backend be
    balance roundrobin
    option httpchk GET /health
    default-server inter 300ms fall 1 rise 2
    server b1 {b1}:{PORT} check
    server b2 {b2}:{PORT} check
"""


def nginx_cfg(tmp: Path, addr: str, b1: str, b2: str) -> str:
    return f"""daemon off;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log;
events {{ worker_connections 512; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/nginx-body;
    proxy_temp_path {tmp}/nginx-proxy;
    fastcgi_temp_path {tmp}/nginx-fcgi;
    uwsgi_temp_path {tmp}/nginx-uwsgi;
    scgi_temp_path {tmp}/nginx-scgi;
    upstream be {{
        server {b1}:{PORT} max_fails=1 fail_timeout=5s;
        server {b2}:{PORT} max_fails=1 fail_timeout=5s;
        keepalive 16;
    }}
    server {{
        listen {addr}:{NGINX_PORT};
        location / {{
            proxy_pass http://be;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
        }}
    }}
}}
"""


def _wait_port(bed: TestBed, host: str, addr: str, port: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    code = f"import socket; socket.create_connection(('{addr}', {port}), 1).close()"
    while time.monotonic() < deadline:
        if subprocess.run(_netns(bed, host, PY, "-c", code), capture_output=True).returncode == 0:
            return
        time.sleep(0.2)
    raise RuntimeError(f"nothing listens on {addr}:{port} in {host}")


@pytest.fixture
def serving_bed(testbed_serving: TestBed, tmp_path: Path) -> Iterator[dict[str, Any]]:
    for tool in ("haproxy", "nginx"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            pytest.skip(f"{tool} is not installed")
    if not Path(AIPERF).exists():
        pytest.skip("aiperf is not installed (the serving extra)")
    bed = testbed_serving
    tmp = tmp_path / "serving"
    tmp.mkdir()
    (tmp / "backend.key").write_text(KEY)
    (tmp / "driver.key").write_text(KEY + "\n")
    os.chmod(tmp / "driver.key", 0o600)
    subprocess.run([PY, str(STUB), "write-tokenizer", str(tmp / "tok")], check=True)
    h = {n: bed.host(n).address for n in ("abs-h1", "abs-h2", "abs-h3", "abs-h4")}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for host, name in (("abs-h2", "b1"), ("abs-h3", "b2")):
            subprocess.run(_netns(bed, host, *backend_argv(tmp, h[host], name)), check=True)
        (tmp / "haproxy.cfg").write_text(haproxy_cfg(h["abs-h4"], h["abs-h2"], h["abs-h3"]))
        (tmp / "nginx.conf").write_text(nginx_cfg(tmp, h["abs-h4"], h["abs-h2"], h["abs-h3"]))
        for argv in (
            ["haproxy", "-db", "-f", str(tmp / "haproxy.cfg")],
            ["nginx", "-c", str(tmp / "nginx.conf"), "-p", str(tmp)],
        ):
            log = (tmp / f"{argv[0]}.out").open("wb")
            procs.append(subprocess.Popen(_netns(bed, "abs-h4", *argv), stdout=log, stderr=log))
        for host, port in (("abs-h2", PORT), ("abs-h3", PORT)):
            _wait_port(bed, "abs-h1", h[host], port)
        _wait_port(bed, "abs-h1", h["abs-h4"], HAPROXY_PORT)
        _wait_port(bed, "abs-h1", h["abs-h4"], NGINX_PORT)
        yield {"bed": bed, "tmp": tmp, "addr": h}
    finally:
        for p in procs:
            p.terminate()
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        for name in ("b1", "b2"):
            subprocess.run([PY, str(STUB), "stop", "--pidfile", str(tmp / f"{name}.pid")],
                           capture_output=True)  # fmt: skip


def _files(ctx: dict[str, Any], out: Path) -> tuple[Path, Path, Path]:
    bed: TestBed = ctx["bed"]
    tmp: Path = ctx["tmp"]
    a = ctx["addr"]
    inv = bed.inventory_data("ssh")
    eps = {
        "abs-h2": [{"name": "b1", "url": f"http://{a['abs-h2']}:{PORT}", "model": "stub-model",
                    "role": "backend", "api_key_file": str(tmp / "driver.key")}],
        "abs-h3": [{"name": "b2", "url": f"http://{a['abs-h3']}:{PORT}", "model": "stub-model",
                    "role": "backend", "api_key_file": str(tmp / "driver.key")}],
        "abs-h4": [
            {"name": "haproxy", "url": f"http://{a['abs-h4']}:{HAPROXY_PORT}",
             "model": "stub-model", "role": "balancer", "backends": ["b1", "b2"],
             "api_key_file": str(tmp / "driver.key")},
            {"name": "nginx", "url": f"http://{a['abs-h4']}:{NGINX_PORT}",
             "model": "stub-model", "role": "balancer", "backends": ["b1", "b2"],
             "api_key_file": str(tmp / "driver.key")},
        ],
    }  # fmt: skip
    for node in inv["nodes"]:  # type: ignore[union-attr]
        if node["name"] in eps:
            node["endpoints"] = eps[node["name"]]
    inv_path = out / "inventory.yaml"
    inv_path.write_text(yaml.safe_dump(inv, sort_keys=False))
    common = {
        "driver": "abs-h1", "api": "chat", "streaming": True, "input_tokens": 16,
        "output_tokens": 10, "tokenizer": str(tmp / "tok"), "aiperf": AIPERF,
        "workdir": str(tmp / "work"),
    }  # fmt: skip
    steps: list[dict[str, Any]] = [
        {"name": f"sweep-{ep}", "tool": "aiperf",
         "options": {**common, "endpoint": ep, "concurrency": LEVELS_OF[ep], "requests": 16}}
        for ep in ("b1", "b2", "haproxy", "nginx")
    ]  # fmt: skip
    stub = [PY, str(STUB)]
    steps.append({
        "name": "failover-haproxy", "tool": "aiperf",
        "options": {**common, "endpoint": "haproxy", "concurrency": [4], "duration": 9,
                    "request_timeout": 10,
                    "failover": {
                        "endpoint": "b1", "stop_after_s": 1.5, "start_after_s": 2.5,
                        "stop": [*stub, "stop", "--pidfile", str(tmp / "b1.pid")],
                        "start": backend_argv(tmp, a["abs-h2"], "b1")}}})  # fmt: skip
    suite = {"schema_version": 1, "name": "serving", "settings": {"workdir": str(tmp / "work")},
             "steps": steps}  # fmt: skip
    suite_path = out / "suite.yaml"
    suite_path.write_text(yaml.safe_dump(suite, sort_keys=False))
    checks: list[dict[str, Any]] = []
    for ep in ("b1", "b2", "haproxy", "nginx"):
        sel = {"tool": "aiperf", "step": f"sweep-{ep}"}
        c4 = {"concurrency": 4}
        checks += [
            {"id": f"{ep}-ttft-p99", "select": {**sel, "metric": "ttft",
             "dims": {**c4, "stat": "p99"}}, "max": 1000, "unit": "ms"},
            {"id": f"{ep}-itl-p99", "select": {**sel, "metric": "itl",
             "dims": {**c4, "stat": "p99"}}, "max": 100, "unit": "ms"},
            {"id": f"{ep}-qps", "select": {**sel, "metric": "request_throughput",
             "dims": c4}, "min": 2, "unit": "queries/s"},
            {"id": f"{ep}-errors", "select": {**sel, "metric": "error_rate"},
             "aggregate": "max", "max": 0.5, "unit": "%"},
        ]  # fmt: skip
    checks.append({"id": "failover-recovery", "select": {"tool": "aiperf",
                   "step": "failover-haproxy", "metric": "recovery_time"},
                   "max": 8, "unit": "s"})  # fmt: skip
    spec_path = out / "spec.yaml"
    spec_path.write_text(yaml.safe_dump({"schema_version": 1, "name": "serving",
                                         "checks": checks}, sort_keys=False))  # fmt: skip
    return inv_path, suite_path, spec_path


def _ms(run: dict[str, Any], step: str, metric: str, **dims: Any) -> list[dict[str, Any]]:
    out = []
    for s in run["steps"]:
        if s["step"] != step:
            continue
        for m in s["measurements"]:
            if m["metric"] == metric and all(m["dims"].get(k) == v for k, v in dims.items()):
                out.append(m)
    return out


def test_serving_sweep_and_failover(serving_bed: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    inv, suite, spec = _files(serving_bed, out)
    runs = out / "runs"
    env = {
        k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    }
    proc = subprocess.run(
        [PY, "-m", "aibench", "run", "--suite", str(suite), "--inventory", str(inv),
         "--spec", str(spec), "--output-dir", str(runs), "--quiet"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    run_dir = next(d for d in runs.iterdir() if d.is_dir())
    run = json.loads((run_dir / "run.json").read_text())
    status = {s["step"]: (s["status"], s["reason"]) for s in run["steps"]}
    bad = {k: v for k, v in status.items() if v[0] != "ok"}
    assert not bad, bad
    outcomes = {v["check"]: v["outcome"] for v in run["verdicts"]}
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-2000:], outcomes)
    assert outcomes
    assert all(o == "PASS" for o in outcomes.values()), outcomes

    # every level of every endpoint measured
    for ep, levels in LEVELS_OF.items():
        for c in levels:
            got = _ms(run, f"sweep-{ep}", "itl", concurrency=c, stat="mean", endpoint=ep)
            assert len(got) == 1, (ep, c)
            # the backends pace tokens at DELAY: ITL is that, also through both balancers, at
            # most 5 ms less (chunks read together) and 15 ms more: the backend's event loop
            # can only wake late, and on a machine busy with the other test beds it was late
            # by 5.2 ms on average once (b1 at concurrency 4)
            itl = got[0]["value"] - DELAY * 1000
            assert -5.0 <= itl <= 15.0, (ep, c, got[0]["value"])
            ttft = _ms(run, f"sweep-{ep}", "ttft", concurrency=c, stat="p50")[0]["value"]
            assert DELAY * 1000 <= ttft <= DELAY * 1000 + 200, (ep, c, ttft)

    # aibench's numbers are AIPerf's own summary of the same run
    work = serving_bed["tmp"] / "work" / "aiperf"
    for ep in ("b1", "haproxy"):
        for c in LEVELS_OF[ep]:
            doc = json.loads((work / f"sweep-{ep}.r0" / "a" / f"concurrency_{c}" /
                              "profile_export_aiperf.json").read_text())  # fmt: skip
            for metric, key in (("ttft", "time_to_first_token"), ("itl", "inter_token_latency"),
                                ("e2e_latency", "request_latency")):  # fmt: skip
                for stat, k in (("mean", "avg"), ("p50", "p50"), ("p99", "p99")):
                    ours = _ms(run, f"sweep-{ep}", metric, concurrency=c, stat=stat)[0]["value"]
                    assert ours == pytest.approx(doc[key][k], rel=1e-9), (ep, c, metric, stat)
            thr = _ms(run, f"sweep-{ep}", "request_throughput", concurrency=c)[0]["value"]
            assert thr == pytest.approx(doc["request_throughput"]["avg"], rel=1e-9)

    # failover: errors seen while b1 was down, recovery measured and judged
    errs = _ms(run, "failover-haproxy", "failover_errors", kind="all")
    assert errs
    assert errs[0]["value"] >= 1, errs
    rec = _ms(run, "failover-haproxy", "recovery_time")[0]["value"]
    assert 0 < rec <= 8, rec
    assert _ms(run, "failover-haproxy", "backend_down_time")[0]["value"] >= 2.0
    timeline = _ms(run, "failover-haproxy", "timeline_requests")
    assert {m["dims"]["t"] for m in timeline} >= {-1, 0, 1, 2}, timeline
    # the start command brought b1 back: it answers again
    assert (serving_bed["tmp"] / "b1.pid").read_text().strip()

    # no key anywhere: the run directory, AIPerf's own files on the driver, aibench's output
    for folder in (run_dir, serving_bed["tmp"] / "work"):
        for f in folder.rglob("*"):
            if f.is_file():
                assert KEY.encode() not in f.read_bytes(), f
    assert KEY not in proc.stdout + proc.stderr
    report = (run_dir / "report.html").read_text()
    assert "Latency vs load" in report
    assert "Failover timeline" in report
