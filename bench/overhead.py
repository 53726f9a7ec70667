"""What does aibench itself cost on top of the tool it runs? Targets: a fixed cost under
0.5 s CPU per run and under 20 ms per extra step, a repeat or a distinct step, on a 2-core
machine.

Runs, side by side and interleaved in one loop:

* the fio commands aibench plans for a small size-bound read job, run directly (the same
  argv, built by aibench's own planner): ``direct_1`` for one job, ``direct_k`` for K;
* ``aibench run`` of a suite with that one step (``aibench_1``) and of the same step
  repeated K times (``aibench_k``), each a fresh process that plans, runs, judges, stores
  and renders every report;
* K distinct steps (``aibench_d``, ``direct_d``): the same job under K names, each its own
  step with its own records, checks and report rows.

and prints the medians, the fixed cost ``aibench_1 - direct_1``, the cost per extra
repeat ``((aibench_k - aibench_1) - (direct_k - direct_1)) / (K - 1)``, the same per
distinct step, and PASS/MISS for each target. Also the CPU time (user + sys) of the aibench process alone, which a busy machine
moves less than wall time. With ``--profile`` it prints where a one-step run's time goes
(cProfile, cumulative, the top entries). With ``--baseline DIR`` (another checkout of
aibench, e.g. ``git worktree add /tmp/before <commit>``) its runs join the same loop
(``before_1``, ``before_k``) and its fixed cost and cost per step are printed beside.

    python bench/overhead.py [--runs 5] [--k 10] [--profile] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUITE = """\
schema_version: 1
name: overhead
steps:
  - name: fio-read
    tool: fio
    repeats: {repeats}
    options: {{rw: read, bs: 1M, size: 16M, runtime: null, ioengine: psync, iodepth: 1,
               direct: false, directory: {work}}}
"""
STEP = """\
  - name: fio-read-{i}
    tool: fio
    options: {{rw: read, bs: 1M, size: 16M, runtime: null, ioengine: psync, iodepth: 1,
               direct: false, directory: {work}}}
"""
SPEC = """\
schema_version: 1
name: overhead
checks:
  - id: read-bw
    select: {tool: fio, metric: bw, step: fio-read}
    unit: MB/s
    min: 0.001
"""


def planned_argv(suite: Path) -> list[list[str]]:
    """The argv of every process aibench plans for the suite (setup first)."""
    from aibench.inventory import local_inventory
    from aibench.plan import build_plan
    from aibench.suite import load_suite

    plan = build_plan(load_suite(str(suite)), local_inventory())
    return [list(p.argv) for inv in plan.invocations for p in (*inv.setup, inv.client)]


def timed(argvs: list[list[str]], source: str | None = None) -> tuple[float, float]:
    """Wall seconds of running the argvs one after another, and their children's CPU;
    ``source``: with that checkout of aibench first on the path."""
    env = dict(os.environ, PYTHONPATH=source) if source else None
    cwd = tempfile.gettempdir()  # python -m puts the working directory first on the path
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    for argv in argvs:
        subprocess.run(
            argv, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
            cwd=cwd,
        )  # fmt: skip
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def aibench(suite: Path, spec: Path, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "aibench", "run", "--suite", str(suite), "--spec", str(spec),
        "--output-dir", str(out), "--quiet",
    ]  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--k", type=int, default=10, help="steps of the longer suite")
    ap.add_argument("--fixed-target", type=float, default=0.5, help="s CPU")
    ap.add_argument("--step-target", type=float, default=0.020)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--baseline", metavar="DIR", help="another checkout, measured alongside")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="aibench-overhead-") as tmp:
        d = Path(tmp)
        work = d / "work"
        work.mkdir()
        one, many, spec = d / "one.yaml", d / "many.yaml", d / "spec.yaml"
        distinct = d / "distinct.yaml"
        one.write_text(SUITE.format(repeats=1, work=work))
        many.write_text(SUITE.format(repeats=args.k, work=work))
        distinct.write_text(
            SUITE.format(repeats=1, work=work)
            + "".join(STEP.format(i=i, work=work) for i in range(1, args.k))
        )
        spec.write_text(SPEC)
        direct_1, direct_k = planned_argv(one), planned_argv(many)
        direct_d = planned_argv(distinct)
        if args.profile:
            prof = [sys.executable, "-m", "cProfile", "-s", "cumtime", *aibench(one, spec, d)[1:]]
            done = subprocess.run(prof, capture_output=True, text=True, check=False)
            print("\n".join(done.stdout.splitlines()[:45]))
            return done.returncode
        timed(direct_1)  # warm the page cache and bytecode
        timed([aibench(one, spec, d / "warm")])
        rows: dict[str, list[tuple[float, float]]] = {
            "direct_1": [], "aibench_1": [], "direct_k": [], "aibench_k": [],
            "direct_d": [], "aibench_d": [],
        }  # fmt: skip
        base = args.baseline and str(Path(args.baseline).resolve())
        if base:
            rows.update(before_1=[], before_k=[])
            timed([aibench(one, spec, d / "warm")], base)
        for i in range(args.runs):
            rows["direct_1"].append(timed(direct_1))
            rows["aibench_1"].append(timed([aibench(one, spec, d / f"o{i}")]))
            if base:
                rows["before_1"].append(timed([aibench(one, spec, d / f"bo{i}")], base))
            rows["direct_k"].append(timed(direct_k))
            rows["aibench_k"].append(timed([aibench(many, spec, d / f"m{i}")]))
            if base:
                rows["before_k"].append(timed([aibench(many, spec, d / f"bm{i}")], base))
            rows["direct_d"].append(timed(direct_d))
            rows["aibench_d"].append(timed([aibench(distinct, spec, d / f"d{i}")]))
    wall = {k: statistics.median(w for w, _ in v) for k, v in rows.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in rows.items()}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.runs} runs each")
    print(f"{'':12} {'wall s':>8} {'cpu s':>8}")
    for k in rows:
        print(f"{k:12} {wall[k]:8.3f} {cpu[k]:8.3f}")
    fixed = wall["aibench_1"] - wall["direct_1"]
    fixed_cpu = cpu["aibench_1"] - cpu["direct_1"]
    per_step = _per_step(wall, "k", args.k)
    per_distinct = _per_step(wall, "d", args.k)
    print(
        f"fixed cost per run: {fixed:.3f} s wall ({fixed_cpu:.3f} s CPU), target "
        f"{args.fixed_target} s CPU: {'PASS' if fixed_cpu <= args.fixed_target else 'MISS'}"
    )
    for what, cost in (("repeat", per_step), ("distinct step", per_distinct)):
        print(
            f"cost per extra {what}: {cost * 1000:.1f} ms, target "
            f"{args.step_target * 1000:.0f} ms: {'PASS' if cost <= args.step_target else 'MISS'}"
        )
    if "before_1" in rows:
        b_fixed = wall["before_1"] - wall["direct_1"]
        b_cpu = cpu["before_1"] - cpu["direct_1"]
        b_extra = (wall["before_k"] - wall["before_1"]) - (wall["direct_k"] - wall["direct_1"])
        print(
            f"baseline: fixed cost {b_fixed:.3f} s wall ({b_cpu:.3f} s CPU), "
            f"per extra step {b_extra / (args.k - 1) * 1000:.1f} ms"
        )
    worst = max(per_step, per_distinct)
    return 0 if fixed_cpu <= args.fixed_target and worst <= args.step_target else 1


def _per_step(wall: dict[str, float], case: str, k: int) -> float:
    """Seconds aibench adds per step beyond the first, the tool's own time taken out."""
    extra = (wall[f"aibench_{case}"] - wall["aibench_1"]) - (
        wall[f"direct_{case}"] - wall["direct_1"]
    )
    return extra / (k - 1)


if __name__ == "__main__":
    sys.exit(main())
