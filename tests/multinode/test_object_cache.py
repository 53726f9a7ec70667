"""Object storage over S3 and the cache on the test bed: s5cmd against a real Ceph RADOS
gateway and redis-benchmark against a real Redis, from two hosts at once.

The bed (:data:`tests.testbed.net.STORE`, hosts ``s3-h1`` .. ``s3-h3``): ``s3-h3`` runs a
one-host Ceph cluster with its S3 gateway (:mod:`tests.testbed.ceph`) and redis-server;
``s3-h1`` and ``s3-h2`` are the inventory's nodes, reached over SSH, and load them in
parallel. The S3 key pair is made by the fixture and reaches aibench only as the path of a
0600 credentials file named in the inventory.

* a good run: every phase of both nodes measured, the spec's checks pass, and the secret
  key is in no file of the run directory, nor in aibench's output;
* the gateway stopped while the load runs: the errors are counted on the steps, the steps
  fail, the run FAILs (exit 1) and no S3 check passes;
* redis-benchmark from both nodes: SET and GET ops/s and latency percentiles, judged.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.aibench_cli import node_values
from tests.testbed import ceph, redis
from tests.testbed.bed import TestBed
from tests.testbed.net import STORE, netns_available

pytestmark = [pytest.mark.netns, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent.parent
PY = sys.executable
CLIENTS = ("s3-h1", "s3-h2")
SERVER = "s3-h3"
REDIS_PORT = 16379


@pytest.fixture(scope="module")
def store_bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    reason = netns_available()
    if reason:
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("store-bed")
    bed = TestBed.up(3, root, STORE)
    cluster: ceph.CephS3 | None = None
    server = bed.host(SERVER)
    try:
        cluster = ceph.start(root / "ceph", server.netns, server.address)
        creds = root / "s3-credentials"
        creds.touch(mode=0o600)
        creds.write_text(
            f"[default]\naws_access_key_id = {cluster.access_key}\n"
            f"aws_secret_access_key = {cluster.secret_key}\n"
        )
        redis.start(root / "redis", server.netns, server.address, REDIS_PORT)
        yield {"bed": bed, "ceph": cluster, "creds": creds, "root": root}
    finally:
        try:
            if cluster is not None:
                ceph.stop(cluster)
        finally:
            bed.down()  # also ends redis-server: it runs in the bed's namespace


def _inventory(ctx: dict[str, Any], out: Path) -> Path:
    bed: TestBed = ctx["bed"]
    cluster: ceph.CephS3 = ctx["ceph"]
    inv = bed.inventory_data("ssh")
    inv["nodes"] = [n for n in inv["nodes"] if n["name"] in CLIENTS]  # type: ignore[union-attr,index]
    inv["defaults"] = {
        "executor": "ssh",
        "tool_dirs": {"s5cmd": str(ceph.s5cmd_dir())},
        "s3_endpoints": [
            {"name": "rgw", "url": cluster.url, "credentials_file": str(ctx["creds"])}
        ],
        "redis_endpoints": [
            {"name": "cache", "host": bed.host(SERVER).address, "port": REDIS_PORT}
        ],
    }
    path = out / "inventory.yaml"
    path.write_text(yaml.safe_dump(inv, sort_keys=False))
    return path


def _write(
    out: Path, name: str, steps: list[dict[str, Any]], checks: list[dict[str, Any]]
) -> tuple[Path, Path]:
    suite = {"schema_version": 1, "name": name, "settings": {"workdir": str(out / "work")},
             "steps": steps}  # fmt: skip
    spec = {"schema_version": 1, "name": name, "checks": checks}
    (out / "suite.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    (out / "spec.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return out / "suite.yaml", out / "spec.yaml"


S3_OPTIONS = {"endpoint": "rgw", "large_size": "8MiB", "large_count": 8, "small_size": 4096,
              "small_count": 120, "streams": 4, "timeout": 300}  # fmt: skip
S3_CHECKS: list[dict[str, Any]] = [
    {"id": "s3-put-large", "select": {"tool": "s5cmd", "metric": "throughput",
     "dims": {"op": "put", "object": "large"}}, "scope": "fleet", "combine": "sum",
     "min": 1, "unit": "MB/s"},
    {"id": "s3-put-large-per-node", "select": {"tool": "s5cmd", "metric": "throughput",
     "dims": {"op": "put", "object": "large"}}, "min": 0.5, "unit": "MB/s",
     "require": "every_node"},
    {"id": "s3-get-large", "select": {"tool": "s5cmd", "metric": "throughput",
     "dims": {"op": "get", "object": "large"}}, "scope": "fleet", "combine": "sum",
     "min": 1, "unit": "MB/s"},
    {"id": "s3-put-small-ops", "select": {"tool": "s5cmd", "metric": "ops_rate",
     "dims": {"op": "put", "object": "small"}}, "scope": "fleet", "combine": "sum",
     "min": 5, "unit": "ops/s"},
    {"id": "s3-get-small-p99", "select": {"tool": "s5cmd", "metric": "latency",
     "dims": {"op": "get", "object": "small", "stat": "p99"}}, "max": 5000, "unit": "ms"},
    {"id": "s3-errors", "select": {"tool": "s5cmd", "metric": "errors"},
     "aggregate": "max", "max": 0, "unit": "count"},
]  # fmt: skip


def _run(args: list[str], **kw: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PY, "-m", "aibench", "run", *args, "--quiet"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw,
    )  # fmt: skip


def _files(
    out: Path, steps: list[dict[str, Any]], checks: list[dict[str, Any]], ctx: dict[str, Any]
) -> list[str]:
    suite, spec = _write(out, out.name, steps, checks)
    inv = _inventory(ctx, out)
    return ["--suite", str(suite), "--inventory", str(inv), "--spec", str(spec),
            "--output-dir", str(out / "runs")]  # fmt: skip


def _load(out: Path) -> tuple[Path, dict[str, Any]]:
    run_dir = next(d for d in (out / "runs").iterdir() if d.is_dir())
    return run_dir, json.loads((run_dir / "run.json").read_text())


def _no_secret(run_dir: Path, secret: str, *texts: str) -> None:
    files = [f for f in run_dir.rglob("*") if f.is_file()]
    assert files
    for f in files:
        assert secret.encode() not in f.read_bytes(), f
    for t in texts:
        assert secret not in t


def test_s3_put_get_from_two_hosts(store_bed: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "s3-good"
    out.mkdir()
    steps = [{"name": "s3", "tool": "s5cmd", "options": S3_OPTIONS}]
    proc = _run(_files(out, steps, S3_CHECKS, store_bed))
    stdout, stderr = proc.communicate(timeout=600)
    run_dir, run = _load(out)
    status = {tuple(s["nodes"]): (s["status"], s["reason"]) for s in run["steps"]}
    assert status == {(n,): ("ok", "") for n in CLIENTS}, status
    outcomes = {v["check"]: v["outcome"] for v in run["verdicts"]}
    assert proc.returncode == 0, (stdout[-2000:], stderr[-2000:], outcomes)
    assert outcomes
    assert set(outcomes.values()) == {"PASS"}, outcomes
    for op in ("put", "get"):
        for obj, count in (("large", 8), ("small", 120)):
            assert node_values(run, "ops", op=op, object=obj) == {n: count for n in CLIENTS}
            assert set(node_values(run, "throughput", op=op, object=obj)) == set(CLIENTS)
        p50 = node_values(run, "latency", op=op, object="small", stat="p50")
        p99 = node_values(run, "latency", op=op, object="small", stat="p99")
        assert all(0 < p50[n] <= p99[n] for n in CLIENTS), (p50, p99)
    # the two nodes ran at the same time: their put-large phases overlap
    spans = {}
    for s in run["steps"]:
        t0 = datetime.fromisoformat(s["started"]).timestamp()
        spans[s["nodes"][0]] = (t0, t0 + s["duration_s"])
    (a0, a1), (b0, b1) = spans.values()
    assert a0 < b1, spans
    assert b0 < a1, spans
    _no_secret(run_dir, store_bed["ceph"].secret_key, stdout, stderr)
    report = (run_dir / "report.html").read_text()
    assert "Object storage over S3 (s5cmd)" in report
    assert "S3 load per node" in report


def test_s3_gateway_stopped_mid_run_fails(store_bed: dict[str, Any], tmp_path: Path) -> None:
    cluster: ceph.CephS3 = store_bed["ceph"]
    out = tmp_path / "s3-stopped"
    out.mkdir()
    steps = [{"name": "s3", "tool": "s5cmd", "options": {**S3_OPTIONS, "small_count": 400}}]
    proc = _run(_files(out, steps, S3_CHECKS, store_bed))
    deadline = time.monotonic() + 300
    marker = b"aibench-s5cmd phase get-large start"
    while time.monotonic() < deadline and proc.poll() is None:
        raws = [f for f in (out / "runs").rglob("raw/s3/*") if f.is_file()]
        if sum(marker in f.read_bytes() for f in raws) >= len(CLIENTS):
            break
        time.sleep(0.2)
    cluster.stop_gateway()
    assert not cluster.gateway_up()
    stdout, stderr = proc.communicate(timeout=600)
    run_dir, run = _load(out)
    assert proc.returncode == 1, (stdout[-2000:], stderr[-2000:])
    for s in run["steps"]:
        assert s["status"] == "failed", (s["status"], s["reason"])
        assert "operations failed" in s["reason"], s["reason"]
    errors = node_values(run, "errors", op="get", object="small")
    assert errors == {n: 400 for n in CLIENTS}, errors
    puts = node_values(run, "ops", op="put", object="large")
    assert puts == {n: 8 for n in CLIENTS}, puts  # measured before the stop, kept on the step
    outcomes = {v["check"]: v["outcome"] for v in run["verdicts"]}
    assert "PASS" not in {o for c, o in outcomes.items() if c.startswith("s3-")}, outcomes
    _no_secret(run_dir, cluster.secret_key, stdout, stderr)


def test_redis_benchmark_from_two_hosts(store_bed: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "cache"
    out.mkdir()
    steps = [{"name": "cache", "tool": "redis-benchmark",
              "options": {"endpoint": "cache", "requests": 20000, "clients": 20,
                          "data_size": 64, "keyspace": 10000, "timeout": 120}}]  # fmt: skip
    checks: list[dict[str, Any]] = [
        {"id": "cache-set-ops", "select": {"tool": "redis-benchmark", "metric": "ops_rate",
         "dims": {"op": "set"}}, "scope": "fleet", "combine": "sum", "min": 100,
         "unit": "ops/s"},
        {"id": "cache-get-ops-per-node", "select": {"tool": "redis-benchmark",
         "metric": "ops_rate", "dims": {"op": "get"}}, "min": 50, "unit": "ops/s",
         "require": "every_node"},
        {"id": "cache-get-p99", "select": {"tool": "redis-benchmark", "metric": "latency",
         "dims": {"op": "get", "stat": "p99"}}, "max": 1000, "unit": "ms"},
    ]  # fmt: skip
    proc = _run(_files(out, steps, checks, store_bed))
    stdout, stderr = proc.communicate(timeout=600)
    run_dir, run = _load(out)
    outcomes = {v["check"]: v["outcome"] for v in run["verdicts"]}
    assert proc.returncode == 0, (stdout[-2000:], stderr[-2000:], outcomes)
    assert set(outcomes.values()) == {"PASS"}, outcomes
    for op in ("set", "get"):
        rates = node_values(run, "ops_rate", op=op, endpoint="cache")
        assert set(rates) == set(CLIENTS), rates
        assert all(v > 0 for v in rates.values()), rates
        for stat in ("mean", "p50", "p95", "p99", "max"):
            assert set(node_values(run, "latency", op=op, stat=stat)) == set(CLIENTS)
    assert (store_bed["root"] / "redis" / "redis.pid").exists()
    assert "Cache load per node" in (run_dir / "report.html").read_text()
