"""Faults at scale, for real, on the 64-host bed: ``aibench run`` of the preflight checklist
over SSH while hosts are down, die, hang, crawl or refuse, the harness is killed or its
disk fills.

Each test starts the real CLI in a child process against the bed's namespace hosts and
reads the run it stored: which host got which status and reason, and that every host
that was not at fault was measured in full (the same facts as a healthy run), so no
measurement already made is lost. The inventory's connect timeout is 3 s.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.testbed.bed import TestBed

pytestmark = [pytest.mark.netns, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
REPEATED = HERE / "preflight-repeated.yaml"  # three rounds: room for a fault mid-run
CONNECT_TIMEOUT = 3.0


def write_inventory(
    bed: TestBed, path: Path, connect_timeout: float = CONNECT_TIMEOUT, **limits: Any
) -> Path:
    data = bed.inventory_data()
    for node in data["nodes"]:  # type: ignore[attr-defined]
        node.pop("data_dirs")  # not mounted on the bed: the preflight spec would fail them
    data["ssh"]["connect_timeout"] = connect_timeout  # type: ignore[index]
    if limits:
        data["limits"] = limits
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def start(
    inv: Path, out: Path, nodes: str, suite: str | Path = "preflight"
) -> subprocess.Popen[str]:
    argv = [
        sys.executable, "-m", "aibench", "run", "--suite", str(suite), "--inventory", str(inv),
        "--nodes", nodes, "--output-dir", str(out), "--quiet",
    ]  # fmt: skip
    return subprocess.Popen(
        argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def finish(proc: subprocess.Popen[str], timeout: float = 300) -> tuple[int, str]:
    text, _ = proc.communicate(timeout=timeout)
    return proc.returncode, text


def the_run_dir(out: Path) -> Path:
    (d,) = [d for d in out.iterdir() if d.is_dir()]
    return d


def load(out: Path) -> dict[str, Any]:
    return json.loads((the_run_dir(out) / "run.json").read_text())  # type: ignore[no-any-return]


def by_host(run: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    hosts: dict[str, list[dict[str, Any]]] = {}
    for s in run["steps"]:
        hosts.setdefault(s["nodes"][0], []).append(s)
    return hosts


def fact_names(steps: list[dict[str, Any]]) -> set[tuple[str, str, int]]:
    return {(f["source"], f["name"], s["repeat"]) for s in steps for f in s["facts"]}


def assert_measured(steps: list[dict[str, Any]], healthy: set[tuple[str, str, int]]) -> None:
    bad = [(s["step_id"], s["status"], s["reason"]) for s in steps if s["status"] != "ok"]
    assert not bad, bad
    assert fact_names(steps) >= healthy


@pytest.fixture(scope="module")
def big(testbed_big: TestBed) -> Iterator[TestBed]:
    yield testbed_big
    for h in testbed_big.hosts:  # whatever a failed test left broken
        if h.name in testbed_big.fault_procs or testbed_big.sshd_procs[h.name].poll() is not None:
            testbed_big.heal(h.name)


@pytest.fixture(scope="module")
def healthy(big: TestBed, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A run of the preflight on all 64 hosts with nothing at fault: the facts one host
    gives, and the wall time the fault runs are held against."""
    d = tmp_path_factory.mktemp("healthy")
    inv = write_inventory(big, d / "inv.yaml")
    t0 = time.monotonic()
    code, text = finish(start(inv, d / "out", "abx-h[1-64]"))
    wall = time.monotonic() - t0
    assert code == 0, text
    run = load(d / "out")
    hosts = by_host(run)
    assert len(hosts) == 64
    per_host = {h: {(src, name) for src, name, _r in fact_names(s)} for h, s in hosts.items()}
    one = per_host["abx-h1"]
    assert one
    assert all(v == one for v in per_host.values())
    return {
        "wall": wall,
        "facts": {(src, name, 0) for src, name in one},
        "steps": len(hosts["abx-h1"]),  # invocations per host and round
    }


def test_ten_percent_of_64_hosts_down_at_start(
    big: TestBed, healthy: dict[str, Any], tmp_path: Path
) -> None:
    """6 of 64 hosts down before the run: 3 with sshd stopped (refused), 2 with their
    link down (no answer), 1 that accepts TCP and never completes the SSH handshake. All
    six are named with their reason, the 58 others are measured in full, the exit code is
    1, and the run takes no longer than a healthy one plus the connect timeout."""
    refused, dark, silent = ["abx-h7", "abx-h19", "abx-h33"], ["abx-h40", "abx-h51"], "abx-h64"
    for h in refused:
        big.kill_sshd(h)
    for h in dark:
        big.link_down(h)
    big.silence(silent)
    try:
        inv = write_inventory(big, tmp_path / "inv.yaml")
        t0 = time.monotonic()
        code, text = finish(start(inv, tmp_path / "out", "abx-h[1-64]"))
        wall = time.monotonic() - t0
    finally:
        for h in dark:
            big.link_up(h)
        for h in [*refused, silent]:
            big.heal(h)
    assert code == 1, text
    run = load(tmp_path / "out")
    hosts = by_host(run)
    down = {*refused, *dark, silent}
    unreachable = run["environment"]
    for h in down:
        assert {s["status"] for s in hosts[h]} == {"unreachable"}, h
        assert "unreachable" in unreachable.get(h, {}), h
        assert any(n.startswith(f"{h} unreachable at the start") for n in run["notes"]), h
    for h in refused:
        assert "connection refused" in unreachable[h]["unreachable"]
    for h in dark:
        why = unreachable[h]["unreachable"]
        assert "timed out after 3 s" in why or "No route to host" in why, why
    assert "timed out after 3 s" in unreachable[silent]["unreachable"]
    for h, steps in hosts.items():
        if h not in down:
            assert_measured(steps, healthy["facts"])
    assert len(hosts) - len(down) == 58
    # the six hosts are given up in parallel, each within its connect timeout
    assert wall < healthy["wall"] * 1.5 + CONNECT_TIMEOUT + 2.0, (wall, healthy["wall"])
    summary = (the_run_dir(tmp_path / "out") / "summary.md").read_text()
    for h in down:
        assert h in summary


def _wait_for_journal(
    run_parent: Path, predicate: Any, timeout: float = 120
) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        dirs = [d for d in run_parent.iterdir() if d.is_dir()] if run_parent.exists() else []
        if dirs and (dirs[0] / "steps.jsonl").exists():
            lines = (dirs[0] / "steps.jsonl").read_text().splitlines()
            rows = []
            for ln in lines:
                try:
                    rows.append(json.loads(ln))
                except ValueError:
                    break
            if predicate(rows):
                return rows
        time.sleep(0.05)
    raise AssertionError("the run did not get there in time")


def test_sshd_stopped_mid_run(big: TestBed, healthy: dict[str, Any], tmp_path: Path) -> None:
    """sshd of abx-h5 (and every session it serves) is stopped once the host finished
    its first round: that round's facts stay, its later steps are unreachable, the
    breaker skips it after 3 failures, and the 15 other hosts are measured in full."""
    victim = "abx-h5"
    inv = write_inventory(big, tmp_path / "inv.yaml")
    out = tmp_path / "out"
    proc = start(inv, out, "abx-h[1-16]", REPEATED)
    try:
        first = _wait_for_journal(
            out,
            lambda rows: (
                sum(1 for r in rows if r["nodes"] == [victim] and r["repeat"] == 0)
                == healthy["steps"]
            ),
        )
        big.kill_sshd(victim)
        code, text = finish(proc)
    finally:
        big.heal(victim)
    # the checks judge facts, and the host's first round gave them all; the host's later
    # steps could not reach it: their step verdict fails the run, naming it
    assert code == 1, text
    assert f"ERROR   step:preflight [{victim}]" in text
    assert "unreachable" in text
    run = load(out)
    hosts = by_host(run)
    mine = hosts[victim]
    done_before = {r["step_id"]: r for r in first if r["nodes"] == [victim]}
    for s in mine:
        if s["step_id"] in done_before:
            assert s["status"] == "ok"
            assert s["facts"] == done_before[s["step_id"]]["facts"]  # nothing lost
    later = [s for s in mine if s["repeat"] == 2]
    assert {s["status"] for s in later} == {"unreachable"}, later
    reasons = " ".join(s["reason"] for s in mine if s["status"] == "unreachable")
    assert "skipped for the rest of the run after" in reasons
    assert "connection" in reasons
    # and the run's notes name it once, beside the hosts unreachable from the start
    given_up = [n for n in run["notes"] if n.startswith(f"{victim} given up on during the run")]
    assert len(given_up) == 1, run["notes"]
    expected = {(src, name, r) for src, name, _ in healthy["facts"] for r in range(3)}
    for h, steps in hosts.items():
        if h != victim:
            assert_measured(steps, expected)


def test_host_that_never_completes_the_handshake_costs_one_connect_timeout(
    big: TestBed, healthy: dict[str, Any], tmp_path: Path
) -> None:
    """abx-h9 accepts TCP and never sends an SSH banner: it is given up after the connect
    timeout (not retried, not hung on), named, and the 7 others are measured."""
    big.silence("abx-h9")
    try:
        inv = write_inventory(big, tmp_path / "inv.yaml")
        t0 = time.monotonic()
        code, text = finish(start(inv, tmp_path / "out", "abx-h[9-16]"))
        wall = time.monotonic() - t0
    finally:
        big.heal("abx-h9")
    assert code == 1, text
    run = load(tmp_path / "out")
    why = run["environment"]["abx-h9"]["unreachable"]
    assert "connection timed out after 3 s" in why
    for h, steps in by_host(run).items():
        if h != "abx-h9":
            assert_measured(steps, healthy["facts"])
    assert wall < 60


def _round_trip(bed: TestBed, name: str, n: int = 3) -> float:
    """Median time of ``true`` over an open SSH connection to the host (one session)."""
    import asyncssh

    async def go() -> float:
        async with asyncssh.connect(
            bed.host(name).address,
            username="root",
            client_keys=[str(bed.ssh.identity)],
            known_hosts=str(bed.ssh.known_hosts),
        ) as conn:
            times = []
            for _ in range(n):
                t0 = time.monotonic()
                await conn.run("true", check=True)
                times.append(time.monotonic() - t0)
            return sorted(times)[n // 2]

    return asyncio.run(go())


def test_a_host_ten_times_slower(big: TestBed, healthy: dict[str, Any], tmp_path: Path) -> None:
    """Every SSH exchange with abx-h17 is delayed 300 ms each way (a relay in its
    namespace; this kernel has no netem), so a command over an open connection takes at
    least 0.6 s, many times as long as on its neighbour (whose 0.16 s once, with both
    cores busy, was more than a tenth of it): all its steps finish and are measured (none
    hits a timeout), and the other hosts are not held back by it. The handshake alone
    takes about 4 s then, so the inventory gives it 10 s."""
    big.slow_down("abx-h17", 300)
    try:
        slow_rtt, fast_rtt = _round_trip(big, "abx-h17"), _round_trip(big, "abx-h18")
        assert slow_rtt >= 0.6, (slow_rtt, fast_rtt)
        assert slow_rtt > 3 * fast_rtt, (slow_rtt, fast_rtt)
        inv = write_inventory(big, tmp_path / "inv.yaml", connect_timeout=10)
        t0 = time.monotonic()
        code, text = finish(start(inv, tmp_path / "out", "abx-h[17-24]"))
        wall = time.monotonic() - t0
    finally:
        big.heal("abx-h17")
    assert code == 0, text
    hosts = by_host(load(tmp_path / "out"))
    for steps in hosts.values():
        assert_measured(steps, healthy["facts"])
    slow = sorted(s["duration_s"] for s in hosts["abx-h17"])
    fast = sorted(s["duration_s"] for h, st in hosts.items() if h != "abx-h17" for s in st)
    assert slow[len(slow) // 2] > fast[len(fast) // 2], (slow, fast)
    assert slow[0] >= 2 * 0.6  # every session needs at least two round trips
    # the run lasts as long as its slowest host, not the sum: the others ran meanwhile
    assert wall < 3 * max(slow) + healthy["wall"], (wall, max(slow))


def test_sshd_refusing_new_connections_and_sessions(
    big: TestBed, healthy: dict[str, Any], tmp_path: Path
) -> None:
    """abx-h25's sshd takes one unauthenticated connection at a time (MaxStartups 1),
    held by a stranger while aibench starts, and two sessions per connection
    (MaxSessions 2) while the preflight wants a dozen at once: aibench's connection is
    dropped (sshd logs it), retried with backoff until it gets in, and its sessions queue;
    every step of the host is measured."""
    victim = "abx-h25"
    big.restart_sshd(victim, MaxStartups="1", MaxSessions="2")
    log = big.ssh.host_dir(big.host(victim)) / "sshd.log"
    log.write_text("")
    blocker = socket.create_connection((big.host(victim).address, 22), timeout=5)
    try:
        inv = write_inventory(
            big, tmp_path / "inv.yaml", ssh_retries=10, ssh_backoff_s=0.1, ssh_backoff_max_s=1.0
        )
        proc = start(inv, tmp_path / "out", "abx-h[25-28]")
        deadline = time.monotonic() + 30
        while "MaxStartups" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        dropped = log.read_text()
        blocker.close()
        code, text = finish(proc)
    finally:
        blocker.close()
        big.heal(victim)
    assert "drop connection" in dropped, dropped
    assert "past MaxStartups" in dropped, dropped
    assert code == 0, text
    for steps in by_host(load(tmp_path / "out")).values():
        assert_measured(steps, healthy["facts"])


def test_sigkill_mid_run_then_resume(big: TestBed, healthy: dict[str, Any], tmp_path: Path) -> None:
    """aibench is SIGKILLed after the first round; ``--resume`` finishes the run without
    running again what had finished (each of those steps keeps its start time, raw
    output and facts, and appears once in the journal)."""
    inv = write_inventory(big, tmp_path / "inv.yaml")
    out = tmp_path / "out"
    proc = start(inv, out, "abx-h[1-16]", REPEATED)
    per_round = 16 * healthy["steps"]
    _wait_for_journal(out, lambda rows: len(rows) >= per_round + 5)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    run_dir = the_run_dir(out)
    assert not (run_dir / "run.json").exists()
    journal = (run_dir / "steps.jsonl").read_text().splitlines()
    before = {}
    for ln in journal:
        try:
            r = json.loads(ln)
        except ValueError:
            continue  # a line cut by the kill: that step runs again
        before[r["step_id"]] = r
    raw_before = {sid: (run_dir / r["stdout_path"]).stat().st_mtime_ns for sid, r in before.items()}
    code = subprocess.run(
        [sys.executable, "-m", "aibench", "run", "--resume", str(run_dir), "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    ).returncode  # fmt: skip
    assert code == 0
    run = load(out)
    assert len(run["steps"]) == 3 * per_round
    ids = Counter(
        json.loads(ln)["step_id"]
        for ln in (run_dir / "steps.jsonl").read_text().splitlines()
        if ln.startswith("{") and ln.endswith("}")
    )
    for sid, r in before.items():
        assert ids[sid] == 1, sid  # not run again
        now = next(s for s in run["steps"] if s["step_id"] == sid)
        assert now["started"] == r["started"]
        assert now["facts"] == r["facts"]
        assert (run_dir / r["stdout_path"]).stat().st_mtime_ns == raw_before[sid]
    expected = {(src, name, k) for src, name, _ in healthy["facts"] for k in range(3)}
    for steps in by_host(run).values():
        assert_measured(steps, expected)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    d = tmp_path / "tmpfs"
    d.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(d)], check=True)
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], check=False)


def test_output_disk_full(
    big: TestBed, healthy: dict[str, Any], small_disk: Path, tmp_path: Path
) -> None:
    """The output directory is a 600 KiB tmpfs that fills during the run: aibench stops
    with one line that says so and how to go on (exit 3), writes no run.json (so none is
    corrupt), keeps every finished step in steps.jsonl; with space made, ``--resume``
    finishes it and every host is measured."""
    # 64 at once, so that steps finish before the disk is full: a whole round at once (the
    # default) fills it with the raw output of every command before any has ended
    inv = write_inventory(big, tmp_path / "inv.yaml", max_parallel=64)
    code, text = finish(start(inv, small_disk, "abx-h[1-16]"))
    assert code == 3, text
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert lines[-1].startswith("aibench: error: No space left on device"), text
    assert "Traceback" not in text
    assert "--resume" in lines[-1]
    run_dir = the_run_dir(small_disk)
    assert not (run_dir / "run.json").exists()
    kept = [ln for ln in (run_dir / "steps.jsonl").read_text().splitlines() if ln.strip()]
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
    r = subprocess.run(
        [sys.executable, "-m", "aibench", "run", "--resume", str(run_dir), "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    run = json.loads((run_dir / "run.json").read_text())
    for steps in by_host(run).values():
        assert_measured(steps, healthy["facts"])
    assert len(kept) >= 1
    assert os.path.getsize(run_dir / "run.json") > 0


def test_sessions_beyond_max_sessions_queue_in_aibench(big: TestBed, tmp_path: Path) -> None:
    """Ten commands at once to a host whose sshd allows two sessions per connection:
    the server refuses the third, aibench lowers its cap for the host to two and queues
    the rest; all ten run and exit 0."""
    from aibench.executors.base import Command
    from aibench.executors.policy import ConnectionPolicy
    from aibench.executors.ssh import SSHExecutor
    from aibench.inventory_file import load_inventory

    victim = "abx-h26"
    big.restart_sshd(victim, MaxSessions="2")
    try:
        inv = load_inventory(write_inventory(big, tmp_path / "inv.yaml"))
        node = inv.node(victim)
        ex = SSHExecutor(policy=ConnectionPolicy(max_sessions=8))

        async def go() -> list[Any]:
            try:
                return await asyncio.gather(
                    *(
                        ex.run(node, Command(("sleep", "0.3")), tmp_path / f"{i}.out",
                               tmp_path / f"{i}.err")
                        for i in range(10)
                    )
                )  # fmt: skip
            finally:
                await ex.close()

        results = asyncio.run(go())
    finally:
        big.heal(victim)
    failed = {i: (r.exit_code, r.reason) for i, r in enumerate(results) if r.exit_code != 0}
    assert failed == {}, failed
    assert ex.retried[victim] >= 1
    assert ex._gates[victim].limit == 2
