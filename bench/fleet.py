"""A round of 512 pairs at once, and a covering acceptance run, on a simulated fleet of
1024 SSH hosts; beside the code of another checkout (``main`` by default).

    python bench/fleet.py [--hosts 1024] [--before REF] [--duration 5] [--full-acceptance]
                          [--skip-cover]

The fleet is ``tests/fleetsim.py``: real SSH servers (asyncssh) on loopback addresses
127.1.x.y, one process, answering like nodes (the preflight batch, fio and iperf3
replaying real captures with their durations; one slow host, one bad link). Every
``aibench run`` is the real CLI in a child process of its own, its CPU time and peak RSS
read with ``wait4`` of that process alone. It prints:

1. ``aibench plan --suite acceptance`` at 1024 and 4096 generated nodes, for this
   checkout and for ``--before`` (``git archive REF`` into a temporary folder);
2. a round: the ``iperf3 --bidir`` over a ring of the hosts (two rounds of hosts/2 disjoint
   pairs, ``-t DURATION``) with each checkout's defaults (here a whole round at once;
   main: ``max_parallel: 64``): the wall time, the most iperf3 sessions open at once (the
   fleet counts them; each pair is a server and a client session), the controller's CPU
   seconds per 1000 sessions run and its peak RSS over that of a one-pair run per 1000
   concurrent sessions, and the gap between the two rounds (from the run's progress
   lines: the last result of the first round to the start of the second);
3. the acceptance suite with the covering placement at that size (its steps' repeats set
   to 1 unless ``--full-acceptance``): wall, CPU, peak RSS, the pairs its second phase
   measured and the suspects the report names (the slow host and the bad link, which is
   picked among the pairs the first phase measures).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
SLOW = "sim0007"
RING = """\
schema_version: 1
name: round
settings: {{workdir: /var/tmp/aibench-fleet, base_port: 18000}}
steps:
  - name: iperf3-tcp
    tool: iperf3
    placement: ring
    options: {{duration: {duration}, streams: 4, bidir: true}}
"""


def checkout(ref: str, into: Path) -> Path:
    """``git archive ref`` of this repository, unpacked into ``into``."""
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def measured(argv: list[str], code: Path, cwd: Path) -> tuple[float, float, int, str]:
    """Run ``argv`` with ``code`` first on the path: wall s, CPU s, peak RSS bytes, and its
    output, each line after the monotonic second it was read at (``t<TAB>line``)."""
    env = dict(os.environ, PYTHONPATH=str(code), PYTHONDONTWRITEBYTECODE="1")
    t0 = time.monotonic()
    proc = subprocess.Popen(
        argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    lines = [f"{time.monotonic():.3f}\t{line.rstrip()}" for line in proc.stdout]
    _pid, _status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, "\n".join(lines)


def round_gaps(text: str) -> list[float]:
    """From a run's progress lines: per round after the first, the seconds from the last
    result of the round before to the round's start (its ``aibench: STEP round N`` line)."""
    gaps, last = [], None
    for line in text.splitlines():
        t, _, what = line.partition("\t")
        if what.startswith("aibench: ") and " round " in what:
            if last is not None:
                gaps.append(float(t) - last)
            last = None
        elif what.startswith("["):
            last = float(t)
    return gaps


def start_fleet(hosts: int, root: Path, bad: tuple[str, str] | None) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "tests.fleetsim", "--hosts", str(hosts), "--dir", str(root)]
    argv += ["--slow", SLOW] + (["--bad-link", ",".join(bad)] if bad else [])
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        raise SystemExit("the simulated fleet did not start")
    return proc


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    proc.wait(60)


def run_aibench(code: Path, suite: Path, inventory: Path, out: Path) -> tuple[Any, ...]:
    argv = [sys.executable, "-m", "aibench", "run", "--suite", str(suite), "--inventory"]
    argv += [str(inventory), "--output-dir", str(out)]
    wall, cpu, rss, text = measured(argv, code, code)
    runs = sorted(out.iterdir())
    if not runs:
        raise SystemExit(f"aibench run left no run directory:\n{text[-2000:]}")
    return wall, cpu, rss, runs[-1], text


def journal(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "steps.jsonl").read_text().splitlines()
    return [json.loads(x) for x in lines if x.strip()]


def fleet_sessions(fleet: subprocess.Popen[str], root: Path) -> int:
    """The most SSH sessions the fleet held at once since it was last asked."""
    (root / "sessions").unlink(missing_ok=True)
    fleet.send_signal(signal.SIGUSR1)
    for _ in range(600):
        if (root / "sessions").is_file() and (root / "sessions").read_text().endswith("\n"):
            return int((root / "sessions").read_text())
        time.sleep(0.1)
    raise SystemExit("the simulated fleet did not say how many sessions it held")


def concurrency(steps: list[dict[str, Any]]) -> int:
    """The most invocations at once (each from its client's start over its duration)."""
    events: list[tuple[float, int]] = []
    for s in steps:
        t0 = datetime.fromisoformat(s["started"]).timestamp()
        events += [(t0, 1), (t0 + float(s["duration_s"] or 0.0), -1)]
    most = now = 0
    for _t, d in sorted(events):
        now += d
        most = max(most, now)
    return most


def plans(code: Path, work: Path) -> None:
    for n in (1024, 4096):
        inv = work / f"plan{n}.yaml"
        nodes = [{"name": f"n[0001-{n}]", "address_pattern": "10.1.0.{index}"}]
        inv.write_text(
            yaml.safe_dump({"name": f"g{n}", "defaults": {"executor": "ssh"}, "nodes": nodes})
        )
        argv = [
            sys.executable,
            "-m",
            "aibench",
            "plan",
            "--suite",
            "acceptance",
            "--inventory",
            str(inv),
        ]
        text = measured(argv, code, code)[3]
        heads = ("suite ", "warning", "step ", "  placement", "  (every", "  every pair")
        keep = [
            ln
            for ln in (x.partition("\t")[2] for x in text.splitlines())
            if ln.startswith(heads) or (ln.startswith("  ") and " runs in " in ln)
        ]
        print(f"  {n} nodes:")
        for ln in keep:
            print(f"    {ln[:200]}")


def round_bench(args: argparse.Namespace, codes: dict[str, Path], work: Path) -> None:
    fleet = start_fleet(args.hosts, work / "hosts", None)
    inventory = work / "hosts" / "inventory.yaml"
    suite = work / "round.yaml"
    suite.write_text(RING.format(duration=args.duration))
    one = work / "one.yaml"
    data = yaml.safe_load(inventory.read_text())
    data["nodes"] = data["nodes"][:2]
    one.write_text(yaml.safe_dump(data))
    try:
        for label, code in codes.items():
            base = run_aibench(code, suite, one, work / f"runs-one-{label}")[2]
            sessions = fleet_sessions(fleet, work / "hosts")  # counted from here
            wall, cpu, rss, run_dir, text = run_aibench(
                code, suite, inventory, work / f"runs-{label}"
            )
            sessions = fleet_sessions(fleet, work / "hosts")
            steps = journal(run_dir)
            ok = sum(s["status"] == "ok" for s in steps)
            most = concurrency(steps)
            gap = max(round_gaps(text), default=float("nan"))
            print(
                f"  {label:<8} {len(steps)} pairs ({ok} ok) in {wall:.0f} s; at most {sessions} "
                f"iperf3 sessions open at once (the fleet's count; {most} pairs overlap in the "
                f"journal, each from its client's start over its whole duration); controller {cpu:.1f} s CPU "
                f"({cpu / len(steps) * 1000 / 2:.2f} s per 1000 sessions), peak RSS "
                f"{rss / 2**20:.0f} MiB ({(rss - base) / 2**20 / sessions * 1000:.0f} MiB over a "
                f"one-pair run per 1000 concurrent sessions); gap between the rounds {gap:.2f} s"
            )
    finally:
        stop(fleet)


def cover_bench(args: argparse.Namespace, code: Path, work: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from aibench.inventory_file import load_inventory
    from aibench.plan import build_plan
    from aibench.suite import load_suite

    suite = load_suite("acceptance")
    raw = suite.raw
    if not args.full_acceptance:
        for step in raw["steps"]:
            step["repeats"] = 1
    raw.setdefault("settings", {})["workdir"] = "/var/tmp/aibench-fleet"
    path = work / "acceptance.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    fleet = start_fleet(args.hosts, work / "cover-hosts", None)
    stop(fleet)
    inventory = work / "cover-hosts" / "inventory.yaml"
    plan = build_plan(load_suite(str(path)), load_inventory(str(inventory)))
    first = next(s for s in plan.steps if s.name == "iperf3-tcp")
    bad = next(
        (a, b) for rnd in first.schedule for a, b in rnd if SLOW not in (a, b) and a > "sim0100"
    )
    fleet = start_fleet(args.hosts, work / "cover-hosts", bad)
    try:
        wall, cpu, rss, run_dir, _ = run_aibench(code, path, inventory, work / "runs-cover")
    finally:
        stop(fleet)
    run = json.loads((run_dir / "run.json").read_text())
    steps = run["steps"]
    counts: dict[str, int] = {}
    for s in steps:
        counts[s["step"]] = counts.get(s["step"], 0) + 1
    bad_steps = [s["step_id"] for s in steps if s["status"] != "ok"]
    print(
        f"  {len(steps)} runs in {wall:.0f} s ({', '.join(f'{k} {v}' for k, v in counts.items())})"
    )
    print(f"  not ok: {len(bad_steps)} {bad_steps[:3]}")
    print(f"  controller {cpu:.0f} s CPU, peak RSS {rss / 2**20:.0f} MiB")
    print(f"  slow host {SLOW}, bad link {'+'.join(sorted(bad))}; the report names:")
    for s in run.get("suspects", []):
        print(f"    {s['text']}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--hosts", type=int, default=1024)
    p.add_argument("--before", default="main", help="the checkout to compare with (a git ref)")
    p.add_argument("--duration", type=float, default=5.0, help="iperf3 -t of the round")
    p.add_argument("--full-acceptance", action="store_true", help="the suite's own repeats")
    p.add_argument("--skip-cover", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="aibench-fleet-") as tmp:
        work = Path(tmp)
        codes = {"this": ROOT, args.before: checkout(args.before, work / "before")}
        print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
        for label, code in codes.items():
            print(f"aibench plan --suite acceptance ({label}):")
            plans(code, work)
        print(f"a ring of {args.hosts} simulated hosts, iperf3 --bidir -t {args.duration:g}:")
        round_bench(args, codes, work)
        if not args.skip_cover:
            print(f"the acceptance suite, covering placement, {args.hosts} simulated hosts:")
            cover_bench(args, ROOT, work)


if __name__ == "__main__":
    main()
