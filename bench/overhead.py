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
distinct step, and PASS/MISS for each target. Also the CPU time (user + sys) of the aibench
process and everything it started, which a busy machine moves less than wall time; the
targets are judged on it. With ``--profile`` it prints where a one-step run's time goes
(cProfile, cumulative, the top entries). With ``--baseline DIR`` (another checkout of
aibench, e.g. ``git worktree add /tmp/before <commit>``) its runs join the same loop
(``before_1``, ``before_k``, ``before_d``) and its costs are printed beside. Each checkout's
modules are compiled to bytecode first, as an installed package has them (an editable
install under ``PYTHONDONTWRITEBYTECODE=1`` would otherwise compile every module on every
run).

ReFrame, side by side: with ``--reframe EXE`` (or ``AIBENCH_BENCH_REFRAME``, or a
``reframe`` on the PATH) the same fio job also runs as a ReFrame test that the bench writes
(the same argv; the setup commands as ``prerun_cmds``; fio's JSON as the sanity check and its
``bw`` as the performance value), on ReFrame's generic local system with
``--exec-policy=serial``, in the same loop: one test (``reframe_1``), K repeats of it
(``reframe_k``, ``--repeat``) and K distinct tests (``reframe_d``, a parameter of K values).
Its wall and CPU are printed beside aibench's, with the ratios. ReFrame is not a dependency
of aibench; install it into a venv of its own, anywhere outside the checkout::

    python3 -m venv /tmp/reframe && /tmp/reframe/bin/pip install reframe-hpc
    python bench/overhead.py --reframe /tmp/reframe/bin/reframe

    python bench/overhead.py [--runs 5] [--k 10] [--profile] [--baseline DIR] [--reframe EXE]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aibench

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
# the ReFrame test of the same job: the argv aibench plans (setup commands first), checked
# as aibench checks it (fio's JSON came out; its bandwidth is the performance value)
REFRAME_TEST = """\
import shlex

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import parameter, performance_function, run_after, sanity_function

ARGV = {argv!r}


@rfm.simple_test
class FioRead(rfm.RunOnlyRegressionTest):
    step = parameter(range({steps}))
    valid_systems = ["*"]
    valid_prog_environs = ["*"]
    executable = "fio"

    @run_after("init")
    def set_command(self):
        *setup, client = ARGV
        self.prerun_cmds = [shlex.join(a) for a in setup]
        self.executable = client[0]
        self.executable_opts = [shlex.quote(a) for a in client[1:]]

    @sanity_function
    def validate(self):
        return sn.assert_found(r'"jobs"', self.stdout)

    @performance_function("KiB/s")
    def bw(self):
        return sn.extractsingle(r'"bw"\\s*:\\s*(\\d+)', self.stdout, 1, int)
"""


def planned_argv(suite: Path) -> list[list[str]]:
    """The argv of every process aibench plans for the suite (setup first)."""
    from aibench.inventory import local_inventory
    from aibench.plan import build_plan
    from aibench.suite import load_suite

    plan = build_plan(load_suite(str(suite)), local_inventory())
    return [list(p.argv) for inv in plan.invocations for p in (*inv.setup, inv.client)]


def timed(
    argvs: list[list[str]], source: str | None = None, env: dict[str, str] | None = None
) -> tuple[float, float]:
    """Wall seconds of running the argvs one after another, and their children's CPU;
    ``source``: with that checkout of aibench first on the path."""
    env = dict(os.environ, **(env or {}), **({"PYTHONPATH": source} if source else {}))
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


def aibench_argv(suite: Path, spec: Path, out: Path) -> list[str]:
    return [
        sys.executable, "-m", "aibench", "run", "--suite", str(suite), "--spec", str(spec),
        "--output-dir", str(out), "--quiet",
    ]  # fmt: skip


def compile_bytecode(source: Path) -> None:
    """Every module of the checkout at ``source`` compiled, as an installed package is."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(source / "aibench")],
        check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip


def reframe_exe(given: str | None) -> str | None:
    found = given or os.environ.get("AIBENCH_BENCH_REFRAME") or shutil.which("reframe")
    if found and not Path(found).is_file():
        sys.exit(f"overhead: --reframe {found}: no such file")
    return found


class Cases:
    """The cases of the loop: name -> the argvs one measurement runs, and with what."""

    def __init__(self, d: Path, k: int) -> None:
        self.d, self.k = d, k
        work = d / "work"
        work.mkdir()
        self.one, self.many, self.spec = d / "one.yaml", d / "many.yaml", d / "spec.yaml"
        self.distinct = d / "distinct.yaml"
        self.one.write_text(SUITE.format(repeats=1, work=work))
        self.many.write_text(SUITE.format(repeats=k, work=work))
        self.distinct.write_text(
            SUITE.format(repeats=1, work=work)
            + "".join(STEP.format(i=i, work=work) for i in range(1, k))
        )
        self.spec.write_text(SPEC)
        self.direct = {
            "1": planned_argv(self.one), "k": planned_argv(self.many),
            "d": planned_argv(self.distinct),
        }  # fmt: skip

    def suite(self, case: str) -> Path:
        return {"1": self.one, "k": self.many, "d": self.distinct}[case]

    def aibench(self, case: str, i: int, prefix: str = "") -> list[list[str]]:
        return [aibench_argv(self.suite(case), self.spec, self.d / f"{prefix}{case}{i}")]

    def reframe(self, exe: str, case: str, i: int) -> list[list[str]]:
        test = self.d / f"rfm_{case}.py"
        if not test.exists():
            steps = self.k if case == "d" else 1
            test.write_text(REFRAME_TEST.format(argv=self.direct["1"], steps=steps))
        out = self.d / f"rfm{case}{i}"
        argv = [
            exe, "-c", str(test), "-r", "--exec-policy=serial", "--prefix", str(out),
            "--report-file", str(out / "report.json"), "--nocolor",
        ]  # fmt: skip
        return [argv + (["--repeat", str(self.k)] if case == "k" else [])]


def measure(args: argparse.Namespace, c: Cases) -> dict[str, list[tuple[float, float]]]:
    """Every case ``args.runs`` times, interleaved; medians are taken by the caller."""
    base = args.baseline and str(Path(args.baseline).resolve())
    rfm = reframe_exe(args.reframe)
    # ReFrame's log and results database into the bench's folder, not the user's
    rfm_env = {"TMPDIR": str(c.d), "RFM_SQLITE_DB_FILE": str(c.d / "rfm-results.db")}
    timed(c.direct["1"])  # warm the page cache
    timed(c.aibench("1", 0, "warm"))
    if base:
        timed(c.aibench("1", 0, "bwarm"), base)
    if rfm:
        timed(c.reframe(rfm, "1", 0), env=rfm_env)
    rows: dict[str, list[tuple[float, float]]] = {}
    for i in range(args.runs):
        for case in ("1", "k", "d"):
            rows.setdefault(f"direct_{case}", []).append(timed(c.direct[case]))
            rows.setdefault(f"aibench_{case}", []).append(timed(c.aibench(case, i)))
            if base:
                got = timed(c.aibench(case, i, "b"), base)
                rows.setdefault(f"before_{case}", []).append(got)
            if rfm:
                got = timed(c.reframe(rfm, case, i), env=rfm_env)
                rows.setdefault(f"reframe_{case}", []).append(got)
    return rows


def costs(med: dict[str, float], who: str, k: int) -> tuple[float, float, float]:
    """``who``'s fixed cost, and cost per extra repeat and per distinct step, over the
    tool run directly (``med``: the medians of wall or of CPU)."""
    fixed = med[f"{who}_1"] - med["direct_1"]
    per = [
        ((med[f"{who}_{c}"] - med[f"{who}_1"]) - (med[f"direct_{c}"] - med["direct_1"])) / (k - 1)
        for c in ("k", "d")
    ]
    return fixed, per[0], per[1]


def report(args: argparse.Namespace, rows: dict[str, list[tuple[float, float]]]) -> int:
    wall = {k: statistics.median(w for w, _ in v) for k, v in rows.items()}
    cpu = {k: statistics.median(c for _, c in v) for k, v in rows.items()}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.runs} runs each")
    print(f"{'':12} {'wall s':>8} {'cpu s':>8}")
    for k in rows:
        print(f"{k:12} {wall[k]:8.3f} {cpu[k]:8.3f}")
    fixed, per_k, per_d = costs(wall, "aibench", args.k)
    fixed_cpu, per_k_cpu, per_d_cpu = costs(cpu, "aibench", args.k)
    verdict = {True: "PASS", False: "MISS"}
    print(
        f"fixed cost per run: {fixed:.3f} s wall ({fixed_cpu:.3f} s CPU), target "
        f"{args.fixed_target} s CPU: {verdict[fixed_cpu <= args.fixed_target]}"
    )
    for what, w, c in (("repeat", per_k, per_k_cpu), ("distinct step", per_d, per_d_cpu)):
        print(
            f"cost per extra {what}: {w * 1000:.1f} ms wall ({c * 1000:.1f} ms CPU), target "
            f"{args.step_target * 1000:.0f} ms CPU: {verdict[c <= args.step_target]}"
        )
    for who, label in (("before", "baseline"), ("reframe", "ReFrame")):
        if f"{who}_1" in rows:
            bf, bk, bd = costs(wall, who, args.k)
            cf, ck, cd = costs(cpu, who, args.k)
            print(
                f"{label}: fixed cost {bf:.3f} s wall ({cf:.3f} s CPU), per extra repeat "
                f"{bk * 1000:.1f} ms ({ck * 1000:.1f} ms CPU), per distinct step "
                f"{bd * 1000:.1f} ms ({cd * 1000:.1f} ms CPU)"
            )
    if "reframe_1" in rows:
        side_by_side(wall, cpu, args.k)
    worst = max(per_k_cpu, per_d_cpu)
    return 0 if fixed_cpu <= args.fixed_target and worst <= args.step_target else 1


def side_by_side(wall: dict[str, float], cpu: dict[str, float], k: int) -> None:
    print(f"aibench beside ReFrame (--exec-policy=serial), the same fio job, K={k}:")
    print(f"{'':14} {'aibench wall/cpu s':>19} {'ReFrame wall/cpu s':>19} {'ratio wall/cpu':>15}")
    for case, label in (("1", "1 step"), ("k", f"{k} repeats"), ("d", f"{k} distinct")):
        a, r = f"aibench_{case}", f"reframe_{case}"
        print(
            f"{label:14} {wall[a]:9.3f} {cpu[a]:9.3f} {wall[r]:9.3f} {cpu[r]:9.3f} "
            f"{wall[a] / wall[r]:7.2f} {cpu[a] / cpu[r]:7.2f}"
        )


def profile(c: Cases) -> int:
    prof = [sys.executable, "-m", "cProfile", "-s", "cumtime", *c.aibench("1", 0, "p")[0][1:]]
    done = subprocess.run(prof, capture_output=True, text=True, check=False)
    print("\n".join(done.stdout.splitlines()[:45]))
    return done.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--k", type=int, default=10, help="steps of the longer suite")
    ap.add_argument("--fixed-target", type=float, default=0.5, help="s CPU")
    ap.add_argument("--step-target", type=float, default=0.020, help="s CPU")
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--baseline", metavar="DIR", help="another checkout, measured alongside")
    ap.add_argument("--reframe", metavar="EXE", help="ReFrame's reframe, measured alongside")
    args = ap.parse_args()
    compile_bytecode(Path(aibench.__file__).resolve().parents[1])
    if args.baseline:
        compile_bytecode(Path(args.baseline).resolve())
    with tempfile.TemporaryDirectory(prefix="aibench-overhead-") as tmp:
        c = Cases(Path(tmp), args.k)
        if args.profile:
            return profile(c)
        rows = measure(args, c)
    return report(args, rows)


if __name__ == "__main__":
    sys.exit(main())
