"""What a run of millions of measurements costs: all pairs of 1024 and 4096 nodes.

    python bench/run_scale.py [--nodes 1024,4096] [--invocations 4096] [--before DIR]
                              [--report-run DIR | --report-nodes 4096 | --no-report]

For each node count it runs, in a fresh child process per checkout (this one, and the
older checkout given with ``--before`` side by side), the real orchestrator
(``aibench.orchestrator.execute``) over the first ``--invocations`` invocations of the
acceptance suite's ``iperf3-tcp`` step (TCP over every pair of nodes, 3 repeats; the
plan is the whole all-pairs plan, made round by round) on N SSH nodes at TEST-NET-1
addresses. No node is contacted: the executor replays real captured output, the
client's ``iperf3 -J`` (tests/fixtures/iperf3/v3.12_tcp1.json) and ``iperf3 --version``
(tests/fixtures/tool-versions/); every invocation is interpreted, scrubbed and appended
to steps.jsonl as in a run. It prints, measured with tracemalloc in that child:

* ``held +MB``: what the execution holds once its rounds are done over what it held when
  the second round began (garbage collected both times; the first round, after a 2-node
  warm-up run, makes what is made once: probes, caches, Python's table of interned
  names), and that per invocation of those rounds times the invocations of the whole
  step (``at all pairs``; 0 when nothing grew). At 4096 nodes a round is 2048
  invocations: give ``--invocations`` 4096 or more;
* ``end peak``: the peak of the end of the run over what was held before it: what
  ``aibench run`` does once the rounds are done (the results in plan order, the Run
  assembled, judged, run.json and every report written: ``pipeline.assemble``,
  ``judge``, ``store_and_report``; a 2-node run's end first, so that what the end
  imports and caches once is not counted). It is judged by the default spec without its
  ``require`` rows: the first rounds leave most pairs unmeasured, and a coverage verdict
  would name each of them, as many at either size. The child runs twice, over half the
  invocations and over all of them, and ``end +/inv`` is what the end takes more per
  invocation (the two peaks' difference over the invocations'), and that times the
  whole step (``at all pairs``): the part of the end that grows with the run.
  ``+verdicts`` is how many more verdicts the second end judged: most of what grows is a
  verdict per pair, and the first rounds measure a pair once where the whole step does
  it three times, so that ``at all pairs`` is up to three times what the whole step's
  end would take when each invocation of those rounds made a verdict (4096 nodes);
* the wall time of the rounds (traced by tracemalloc, which slows them), the CPU time of
  the end (done again without tracing), and the run.json size per invocation.

Then it renders a GENERATED acceptance-shaped run of ``--report-nodes`` nodes
(tests/reports/gen.py, ``dense``: at 4096 nodes 131,000 steps, 418,000 measurements,
78,000 verdicts, a 340 MB run.json; generating it takes minutes and is not timed; give
``--report-run DIR`` to reuse one, ``bench/report_scale.py --keep DIR`` writes one) with
``aibench report RUN_DIR`` in a child process per checkout, and prints its wall time, CPU
time and peak RSS (``wait4`` of that process alone) with PASS or MISS against the targets
at 4096 nodes: under 20 s and under 2 GB (10^9 bytes). The machine's load is printed:
on a busy machine the wall time is longer than the CPU time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GB, MB = 10**9, 10**6
TARGET_S, TARGET_BYTES = 20.0, 2 * GB

# Runs in the child, in the checkout measured: argv = nodes, invocations, work folder.
CHILD = r"""
import asyncio, dataclasses, gc, json, sys, time, tracemalloc
from pathlib import Path
from aibench import pipeline
from aibench.executors.base import ProcResult
from aibench.orchestrator import Execution, execute
from aibench.plan import build_plan

n, k, d = int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
client_out, version_out = Path(sys.argv[4]).read_bytes(), Path(sys.argv[5]).read_bytes()


def inputs_of(n, path):
    path.write_text(
        "name: generated\ndefaults: {executor: ssh}\n"
        f"ssh: {{user: bench, known_hosts: {d / 'none'}, connect_timeout: 5}}\n"
        f"nodes:\n  - name: node[{'1'.zfill(len(str(n)))}-{n}]\n"
        '    address_pattern: "192.0.2.{index}"\n'
    )
    inputs = pipeline.load_inputs("acceptance", inventory=str(path), steps="iperf3-tcp")
    # the spec without its coverage rows: the first rounds leave most pairs unmeasured,
    # and a coverage verdict would name each of them (as many at either size)
    checks = tuple(c.model_copy(update={"require": None}) for c in inputs.spec.checks)
    return dataclasses.replace(inputs, spec=dataclasses.replace(inputs.spec, checks=checks))


def plan_of(inputs):
    return build_plan(inputs.suite, inputs.inventory)


inputs = inputs_of(n, d / "inventory.yaml")
plan = plan_of(inputs)


class FirstRounds:
    # the plan, cut after the round that reaches k invocations
    def __init__(self, plan, k):
        self._plan, self._k = plan, k

    def __getattr__(self, name):
        return getattr(self._plan, name)

    def iter_rounds(self):
        seen = 0
        for rnd in self._plan.iter_rounds():
            if seen >= self._k:
                return
            seen += len(rnd.invocations)
            yield rnd

    def iter_invocations(self):
        for rnd in self.iter_rounds():
            yield from rnd.invocations

    def run_count(self):
        return sum(1 for _ in self.iter_invocations())


class Server:
    async def stop(self):
        return 0


SERVER = Server()


class Replay:
    # an executor that starts nothing: each command writes the real output captured
    async def check(self, node):
        return ""

    async def run(self, node, cmd, out, err):
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(version_out if "--version" in cmd.argv else client_out)
        err.write_bytes(b"")
        return ProcResult(0, "2026-12-03T00:00:00Z", 5.0)

    async def start(self, node, cmd, out, err, ready):
        return SERVER

    async def close(self):
        pass


replay = Replay()
starts = []  # (memory, invocations done) when each round starts


def progress(label, res, done, total):
    if res is None and len(starts) < 2:
        gc.collect()  # garbage is not held: it goes at the next collection
        starts.append((tracemalloc.get_traced_memory()[0], done))


def end(ex, inputs, run_dir):
    # the end of `aibench run`: the results (the journal's, or held by an older
    # aibench), the Run, its judgement, run.json and every report
    results = getattr(ex, "results_log", ex.results)()
    executed = pipeline.Executed(results=results)
    run = pipeline.assemble(inputs, executed, run_id="scale", started="2026-12-03T00:00:00Z")
    run, _ = pipeline.judge(run, inputs)
    pipeline.store_and_report(run, run_dir)
    return len(results), len(run.verdicts), sum(1 for r in results if r.ok)


# what the first invocations and the end import and set up once: a run of 2 nodes first
(d / "warm-up").mkdir()
warm_inputs = inputs_of(2, d / "warm-up.yaml")
warm = Execution(run_dir=d / "warm-up", plan=plan_of(warm_inputs), executor_for=lambda node: replay)
asyncio.run(execute(warm))
end(warm, warm_inputs, d / "warm-up")
ex = Execution(
    run_dir=d, plan=FirstRounds(plan, k), executor_for=lambda node: replay, progress=progress
)
tracemalloc.start()
base = tracemalloc.get_traced_memory()[0]
t0, c0 = time.perf_counter(), time.process_time()
asyncio.run(execute(ex))
t1, c1 = time.perf_counter(), time.process_time()
gc.collect()
since, before = starts[-1]  # the second round's start: the first made what is made once
held = tracemalloc.get_traced_memory()[0] - since
run_s, run_cpu = t1 - t0, c1 - c0
at_end = tracemalloc.get_traced_memory()[0]
tracemalloc.reset_peak()
done, verdicts, ok = end(ex, inputs, d)
peak = tracemalloc.get_traced_memory()[1] - at_end
tracemalloc.stop()  # the end again, timed without tracing each allocation
gc.collect()
t1, c1 = time.perf_counter(), time.process_time()
end(ex, inputs, d)
t2, c2 = time.perf_counter(), time.process_time()
print(json.dumps({
    "full": plan.run_count(), "done": done, "counted": done - before, "verdicts": verdicts,
    "ok": ok,
    "held": held, "end_peak": peak,
    "run_s": run_s, "run_cpu": run_cpu, "end_s": t2 - t1, "end_cpu": c2 - c1,
    "run_json": (d / "run.json").stat().st_size,
}))
"""

WRAPPER = (  # runs ARGV; prints its exit code, CPU seconds and peak RSS (KiB) alone
    "import os, subprocess, sys; p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL); "
    "_, st, ru = os.wait4(p.pid, 0); "
    "print(os.waitstatus_to_exitcode(st), ru.ru_utime + ru.ru_stime, ru.ru_maxrss)"
)


def fixtures(d: Path) -> tuple[Path, Path]:
    """The captured iperf3 -J output and the captured ``iperf3 --version`` text."""
    client = ROOT / "tests/fixtures/iperf3/v3.12_tcp1.json"
    versions = (ROOT / "tests/fixtures/tool-versions").glob("*.txt")
    for path in sorted(versions):
        text = path.read_text()
        if "@@ tool iperf3\n" in text:
            block = text.split("@@ tool iperf3\n", 1)[1].split("@@ rc", 1)[0]
            version = d / "iperf3-version.txt"
            version.write_text(block.split("\n", 1)[1])  # after the "@@ path" line
            return client, version
    raise SystemExit("no captured iperf3 --version in tests/fixtures/tool-versions")


def env_for(source: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(source), "PYTHONDONTWRITEBYTECODE": "1"}


def run_part(source: Path, n: int, k: int, d: Path, fx: tuple[Path, Path]) -> dict[str, float]:
    d.mkdir(parents=True)
    argv = [sys.executable, "-c", CHILD, str(n), str(k), str(d), *map(str, fx)]
    proc = subprocess.run(
        argv, env=env_for(source), cwd=d, capture_output=True, text=True, check=False
    )
    if proc.returncode:
        raise SystemExit(f"{source}: the run child failed:\n{proc.stderr[-3000:]}")
    got: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return got


def report_part(source: Path, run_dir: Path) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS bytes) of ``aibench report RUN_DIR`` alone."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", WRAPPER, sys.executable, "-m", "aibench", "report", str(run_dir)],
        env=env_for(source), cwd=tempfile.gettempdir(), capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    wall = time.perf_counter() - t0
    rc, cpu, rss = proc.stdout.split()
    if proc.returncode or int(rc) not in (0, 1):  # 1: the generated run has failing checks
        raise SystemExit(f"{source}: aibench report exited {rc}:\n{proc.stderr[-3000:]}")
    return wall, float(cpu), int(rss) * 1024


def generated_run(nodes: int, d: Path) -> Path:
    sys.path.insert(0, str(ROOT))
    from tests.reports.gen import make_run, write_run

    t0 = time.perf_counter()
    run_dir = d / f"generated-{nodes}"
    write_run(make_run(nodes, dense=True), run_dir)
    print(f"generated {nodes}-node run written in {time.perf_counter() - t0:.0f} s (not timed)")
    return run_dir


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--nodes", default="1024,4096")
    ap.add_argument("--invocations", type=int, default=4096, help="run this many (a round more)")
    ap.add_argument("--before", metavar="DIR", help="an older checkout measured side by side")
    ap.add_argument("--report-run", metavar="DIR", help="render this run instead of generating")
    ap.add_argument("--report-nodes", type=int, default=4096)
    ap.add_argument("--no-report", action="store_true", help="the runs only")
    args = ap.parse_args()
    sources = [("before", Path(args.before).resolve())] if args.before else []
    sources.append(("after", ROOT))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="aibench-run-scale-") as tmp:
        d = Path(tmp)
        fx = fixtures(d)
        print(
            f"{'nodes':>5} {'code':<6} {'invoc':>6} {'of all pairs':>12} {'run s':>6} "
            f"{'held +MB':>8} {'at all pairs':>12} {'end cpu s':>9} {'end peak':>9} "
            f"{'end +/inv':>9} {'+verdicts':>9} {'at all pairs':>12} {'json/inv':>8}"
        )
        for n in (int(x) for x in args.nodes.split(",")):
            for name, source in sources:
                half = run_part(source, n, args.invocations // 2, d / f"{name}-{n}-half", fx)
                g = run_part(source, n, args.invocations, d / f"{name}-{n}", fx)
                k, full = g["done"], g["full"]
                grows = max(0.0, g["held"]) / g["counted"] * full  # 0: nothing grew
                # what the end takes per invocation more: the two ends side by side
                per = (g["end_peak"] - half["end_peak"]) / (k - half["done"])
                print(
                    f"{n:>5} {name:<6} {k:>6.0f} {full:>12,.0f} {g['run_s']:>6.1f} "
                    f"{g['held'] / MB:>+8.2f} {grows / GB:>9.2f} GB {g['end_cpu']:>9.1f} "
                    f"{g['end_peak'] / MB:>6.0f} MB {per:>7.0f} B "
                    f"{g['verdicts'] - half['verdicts']:>9.0f} "
                    f"{max(0.0, per) * full / GB:>9.2f} GB {g['run_json'] / k:>6.0f} B",
                    flush=True,
                )
                if g["ok"] != k:
                    raise SystemExit(f"{name}: {k - g['ok']:.0f} invocations not ok")
        if args.no_report:
            return 0
        run_dir = Path(args.report_run) if args.report_run else generated_run(args.report_nodes, d)
        return report(sources, run_dir)


def report(sources: list[tuple[str, Path]], run_dir: Path) -> int:
    size = (run_dir / "run.json").stat().st_size
    print(f"aibench report {run_dir.name} (run.json {size / MB:.0f} MB)")
    missed = 0
    for name, source in sources:
        wall, cpu, rss = report_part(source, run_dir)
        verdicts = []
        for what, got, limit in (("time", wall, TARGET_S), ("memory", rss, TARGET_BYTES)):
            ok = got < limit
            missed += name == "after" and not ok
            verdicts.append(f"{what} {'PASS' if ok else 'MISS'}")
        print(
            f"  {name:<6} wall {wall:6.1f} s (CPU {cpu:6.1f} s)  peak RSS {rss / GB:5.2f} GB  "
            f"targets < {TARGET_S:g} s, < {TARGET_BYTES / GB:g} GB: {', '.join(verdicts)}",
            flush=True,
        )
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
