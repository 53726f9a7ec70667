"""A covering acceptance run end to end over a simulated fleet of SSH hosts.

The fleet (``tests/fleetsim.py``) is 128 real SSH servers on loopback addresses
127.1.0.x, in one process, answering like nodes: the preflight's batch, fio and iperf3
replaying real captures; one host is slow (its NIC: every pair with it at 30 %) and one
link is bad. ``aibench run`` (the real CLI, in a child process) runs the acceptance
suite's preflight and network steps with the covering placement: each node against 4
partners, one at least in the other leaf, then every pair among the suspects. The run
must name the slow host as a node and the bad link as a link, and its second phase must
have measured them. ``bench/fleet.py`` runs the same at 1024 hosts (the test keeps to
128 so that it takes well under a minute on a busy two-core machine).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from aibench.inventory_file import load_inventory
from aibench.plan import build_plan
from aibench.suite import load_suite

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
HOSTS = 128
SLOW = "sim0007"
SUITE = """\
schema_version: 1
name: fleet
spec: default
settings: {workdir: /var/tmp/aibench-fleet, base_port: 17900}
steps:
  - name: preflight
    tool: preflight
    options: {batch: true}
  - name: fio-seq-read
    tool: fio
    options: {rw: read, bs: 1M, size: 256M, runtime: 1, ioengine: libaio, iodepth: 16,
              direct: true}
  - name: iperf3-tcp
    tool: iperf3
    placement: auto
    cover_above: 64
    partners: 4
    options: {duration: 1, streams: 4, bidir: true}
"""


def start_fleet(root: Path, bad_link: tuple[str, str] | None) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "tests.fleetsim", "--hosts", str(HOSTS), "--dir", str(root)]
    argv += ["--slow", SLOW]
    if bad_link:
        argv += ["--bad-link", ",".join(bad_link)]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


@pytest.fixture(scope="module")
def fleet_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[dict[str, object], tuple[str, str]]:
    root = tmp_path_factory.mktemp("fleet")
    suite_path = root / "suite.yaml"
    suite_path.write_text(SUITE)
    # the inventory first (the same every time), to pick a bad link the cover measures
    fleet = start_fleet(root / "hosts", None)
    fleet.terminate()
    fleet.wait(30)
    plan = build_plan(
        load_suite(str(suite_path)), load_inventory(str(root / "hosts" / "inventory.yaml"))
    )
    first = next(s for s in plan.steps if s.name == "iperf3-tcp")
    bad = next(
        (a, b) for rnd in first.schedule for a, b in rnd if SLOW not in (a, b) and a > "sim0020"
    )
    fleet = start_fleet(root / "hosts", bad)
    try:
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "aibench",
                "run",
                "--suite",
                str(suite_path),
                "--inventory",
                str(root / "hosts" / "inventory.yaml"),
                "--output-dir",
                str(root / "runs"),
                "--quiet",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    finally:
        fleet.terminate()
        fleet.wait(30)
    assert p.returncode in (0, 1), p.stdout + p.stderr
    (run_dir,) = (root / "runs").iterdir()
    return json.loads((run_dir / "run.json").read_text()), bad


def test_every_step_ran_on_every_host(fleet_run: tuple[dict[str, object], tuple[str, str]]) -> None:
    run, _ = fleet_run
    steps = run["steps"]
    assert isinstance(steps, list)
    bad = [(s["step_id"], s["reason"]) for s in steps if s["status"] != "ok"]
    assert not bad, bad[:5]
    by_step: dict[str, set[str]] = {}
    for s in steps:
        by_step.setdefault(s["step"], set()).update(s["nodes"])
    assert len(by_step["preflight"]) == len(by_step["fio-seq-read"]) == HOSTS
    assert len(by_step["iperf3-tcp"]) == HOSTS
    # one batch a host: every fact command's exit code recorded beside it
    pre = [s for s in steps if s["step"] == "preflight"]
    assert len(pre) == HOSTS
    assert all(len(s["processes"]) > 10 for s in pre)
    hostnames = {
        f["nodes"][0]: f["value"] for s in pre for f in s["facts"] if f["name"] == "hostname"
    }
    assert hostnames["sim0003"] == "sim0003"


def test_the_second_phase_names_the_slow_host_and_the_bad_link(
    fleet_run: tuple[dict[str, object], tuple[str, str]],
) -> None:
    run, bad = fleet_run
    steps = run["steps"]
    assert isinstance(steps, list)
    second = {tuple(s["nodes"]) for s in steps if s["step"] == "iperf3-tcp-suspects"}
    assert any(SLOW in p for p in second)
    assert tuple(bad) in second or tuple(reversed(bad)) in second
    suspects = run["suspects"]
    assert isinstance(suspects, list)
    named = {(s["kind"], s["name"]) for s in suspects if s["tool"] == "iperf3"}
    assert ("node", SLOW) in named, named
    assert ("link", "+".join(sorted(bad))) in named, named
    # named by the second phase's own series
    by_name = {s["name"]: s for s in suspects}
    assert any("iperf3-tcp-suspects" in x for x in by_name[SLOW]["series"])
    assert any("iperf3-tcp-suspects" in x for x in by_name["+".join(sorted(bad))]["series"])
    # and nothing else
    assert len(named) == 2, named


def test_inventory_is_on_the_loopback_only(tmp_path: Path) -> None:
    from tests.fleetsim import address

    assert address(0) == "127.1.0.1"
    assert address(1023) == "127.1.4.24"
    with pytest.raises(ValueError, match="out of range"):
        address(250 * 250)
    data = yaml.safe_load(SUITE)
    assert data["steps"][2]["placement"] == "auto"
