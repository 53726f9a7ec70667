"""MLPerf Training runner: N runs of a user's training command, checked and scored.

A benchmark result in MLPerf Training is a set of runs: the rules ask for a number of
runs per benchmark (:func:`aibench.mlperf_rules.min_runs`: 10 for dlrm_dcnv2, 3 for
llama31_405b ...), drop the fastest and the slowest and average the rest. So one
invocation of this runner is one benchmark result: its client runs the runs one after
another through this module's own sequencer::

    PYTHON -m aibench.runners.mlperf_training --runs N --benchmark B --ruleset R
           --run-dir DIR --seed S --run-timeout T -- COMMAND...

The command (an argv list: a container launch, a script, usually ``srun``/``sbatch``
lines) may hold only these placeholders, replaced per run: ``{log_dir}`` (the run's own
directory, ``DIR/run_<k>``, emptied before the run), ``{run_index}`` (0 ...) and
``{seed}`` (``seed + k``). Each run's stdout and stderr go to its directory, and
``DIR/runs.json`` records each run's argv, exit code and wall time. ``DIR`` is
``<dir>/mlperf-training/<step>/<label>.r<repeat>``, ``<dir>`` being the option
``shared_dir`` or else the suite's workdir. PYTHON is the option ``python``; by default
this interpreter on a local node, else ``python3`` (the launch node must have aibench).
On ``executor: slurm`` nodes the sequencer itself runs inside a one-node job step, where
``srun`` sees only that node: submit each run as its own job (``sbatch --wait``) there,
or run aibench on the login node with the launch node as ``executor: local``.

``collect`` (run here, so the run directory must be on this machine or on a file system
it shares with the launch node: ``shared_dir``) takes each run's MLLOG file (the option
``log_file``, default ``{log_dir}/result.txt``, always under ``{log_dir}``; with
``log_file: stdout`` the run's stdout), copies it into the step's raw folder as
``<label>.r<repeat>.result_<k>.txt`` (the MLPerf submission name), runs mlperf-logging's
checker on it::

    python -m mlperf_logging.compliance_checker --usage training --ruleset X
           --log_output RAW/<label>.r<repeat>.result_<k>.compliance.log LOG

(``--log_output`` so nothing lands in the working directory) and parses it with the
``mlperf-training`` parser. The step's processes in run.json add, besides the planned
ones, each run as the sequencer started it (role ``run``: the filled-in argv, the
environment, the exit code) and each checker run (role ``checker``, host ``_controller``:
this machine). Emitted, per run (dim ``run_index``): ``time_to_train`` (ms,
run_stop - run_start, dims ``benchmark``, ``status``) and the Facts ``compliance``
(``passed`` / ``failed``, the checker's first complaint as the reason) and ``status``.
Per benchmark: Measurement ``score`` (ms, dim ``benchmark``: the mean after dropping the
fastest and slowest, one non-converged run counting as the slowest), Facts
``runs_required`` (from mlperf-logging's benchmark_meta for ``ruleset``), ``runs`` and
``runs_satisfied``, ``quality_target`` (per quality value, dims ``key`` and ``metric``: the
target of the ruleset's closed compliance config, in the unit the parser gives the
values, its name and direction in the reason),
``score_valid`` (False with the reason: too few runs, too many non-converged ...),
``mlperf_logging_version`` (the checker's package). A run
that fails compliance makes the step fail with the checker's reason (what was measured is
kept as evidence). mlperf-logging comes with the ``mlperf`` extra; where it is not
installed, the reason says so and names the extra (the checker never runs in-process).

Rulesets: those the installed mlperf-logging has compliance rules for (4.1.68: 0.6.0 to
6.1.0). Tested with mlperf-logging 4.1.68 (training rulesets 6.0.0) on a CPU training loop
and with its checker on a published 5.1 llama31_8b log (ruleset 5.1.0).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import Field, field_validator, model_validator

from aibench import mlperf_rules, parsers
from aibench.config import Strict
from aibench.envnames import check_env
from aibench.errors import OutputError, ToolFailure
from aibench.inventory import Node
from aibench.model import Fact, FrozenDims, Measurement, ProcessRecord
from aibench.parsers import Record
from aibench.runners.base import Invocation, Output, ProcessSpec, Slot, label_for
from aibench.runners.mlperf_inference import check_placeholders, fill
from aibench.secret import Secrets

TOOL = "mlperf-training"
PLACEHOLDERS = ("log_dir", "run_index", "seed")
RUNS_FILE = "runs.json"
CONTROLLER = "_controller"  # the host of processes run here, by aibench itself (the checker)
_PATH = re.compile(r"^/[A-Za-z0-9_./+@%=-]*$")
_LOG_FILE = re.compile(r"^[A-Za-z0-9_./{}+@%=-]+$")


class MlperfTrainingOptions(Strict):
    """Options of an MLPerf Training step (suite ``options:``)."""

    benchmark: str = Field(
        pattern=r"^[a-z0-9_]+$", description="submission_benchmark: llama31_8b, dlrm_dcnv2 ..."
    )
    command: list[str] = Field(
        min_length=1, description="argv of one run; placeholders {log_dir} {run_index} {seed}"
    )
    ruleset: str = Field("6.0.0", pattern=r"^\d+\.\d+\.\d+$", description="training ruleset")
    runs: Annotated[int, Field(ge=1, le=100)] | None = Field(
        None, description="runs to make; default: what the rules ask for the benchmark"
    )
    seed: Annotated[int, Field(ge=0)] = Field(0, description="{seed} of run 0; run k gets seed+k")
    log_file: str = Field(
        "{log_dir}/result.txt", description="where a run's MLLOG file is, or 'stdout'"
    )
    shared_dir: str | None = Field(
        None,
        description="a directory this machine and the launch node share (logs are read "
        "here); default: the suite's workdir, right when the launch node is this machine",
    )
    python: str | None = Field(None, description="interpreter on the launch node")
    env: dict[str, str] = Field(default_factory=dict, description="environment of every run")
    run_timeout: Annotated[float, Field(gt=0)] = Field(
        24 * 3600.0, description="seconds one run may take"
    )

    @field_validator("command")
    @classmethod
    def _command(cls, v: list[str]) -> list[str]:
        check_placeholders(v, PLACEHOLDERS)
        return v

    @field_validator("log_file")
    @classmethod
    def _log_file(cls, v: str) -> str:
        if v != "stdout":
            if not _LOG_FILE.match(v) or not v.startswith("{log_dir}/") or ".." in v:
                raise ValueError(f"log_file {v!r}: a path under {{log_dir}}/, or 'stdout'")
            check_placeholders([v], PLACEHOLDERS)
        return v

    @field_validator("shared_dir", "python")
    @classmethod
    def _path(cls, v: str | None) -> str | None:
        if v is not None and not (_PATH.match(v) or re.match(r"^python3?(\.\d+)?$", v)):
            raise ValueError(f"{v!r}: an absolute path without spaces")
        return v

    @field_validator("env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        return check_env(v)

    @model_validator(mode="after")
    def _rules(self) -> MlperfTrainingOptions:
        if self.runs is None:
            try:
                mlperf_rules.min_runs(self.benchmark, self.ruleset)
            except mlperf_rules.RulesError as exc:
                raise ValueError(f"{exc}; or give runs") from None
        return self

    def run_count(self) -> int:
        return self.runs or mlperf_rules.min_runs(self.benchmark, self.ruleset)


class MlperfTrainingRunner:
    name: ClassVar[str] = "mlperf-training"
    tool: ClassVar[str] = TOOL
    default_placement: ClassVar[str] = "all"
    Options: ClassVar[type[Strict]] = MlperfTrainingOptions

    def invocations(
        self, step: str, options: MlperfTrainingOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        o = options
        head = group[0]
        names = tuple(n.name for n in group)
        label = label_for(names)
        base = (o.shared_dir or slot.workdir).rstrip("/")
        run_dir = f"{base}/mlperf-training/{step}/{label}.r{slot.repeat}"
        python = o.python or (sys.executable if head.executor == "local" else "python3")
        n = o.run_count()
        argv = [python, "-m", "aibench.runners.mlperf_training", "--runs", str(n)]
        argv += ["--benchmark", o.benchmark, "--ruleset", o.ruleset]
        argv += ["--run-dir", run_dir, "--seed", str(o.seed)]
        argv += ["--run-timeout", f"{o.run_timeout:g}", "--", *o.command]
        return [
            Invocation(
                step=step,
                tool=self.tool,
                nodes=names,
                label=label,
                repeat=slot.repeat,
                round=slot.round,
                parser="mlperf-training",
                network=len(group) > 1,
                setup=(
                    ProcessSpec(head.name, ("mkdir", "-p", run_dir), role="setup", timeout=30),
                    # a record left by an earlier run must never be read as this one's
                    ProcessSpec(
                        head.name, ("rm", "-f", f"{run_dir}/{RUNS_FILE}"), role="setup", timeout=30
                    ),
                ),
                client=ProcessSpec(
                    head.name,
                    tuple(argv),
                    env=dict(o.env),
                    role="launcher",
                    timeout=n * o.run_timeout + 60.0,
                ),
                artifacts=tuple(_log_path(o.log_file, f"{run_dir}/run_{k}") for k in range(n)),
            )
        ]

    def version_argv(self) -> tuple[str, ...] | None:
        return None  # the training code is the user's; the checker's version is recorded

    def parse_version(self, text: str) -> str:
        return ""

    def collect(self, inv: Invocation, out: Output) -> list[Record]:
        o = _options_of(inv)
        runs = self._runs(inv, out, Path(o["run_dir"]))
        records: list[Record] = []
        times: list[float] = []
        converged: list[bool] = []
        failures: list[str] = []
        benchmark = o["benchmark"]
        # the checker is a process per log: check the runs' logs side by side (the parser
        # registry is loaded first, here: its first load is not meant for threads)
        parsers.get("mlperf-training")
        with ThreadPoolExecutor(max_workers=4) as pool:
            checked = list(
                pool.map(
                    lambda kr: self._one_run(
                        inv, out.raw_dir, kr[0], kr[1], benchmark, o["ruleset"]
                    ),
                    enumerate(runs),
                )
            )
        for k, (got, problem, checker) in enumerate(checked):
            records += got
            if checker is not None:
                out.processes.append(checker)
            if problem:
                failures.append(f"run {k}: {problem}")
                continue
            t, ok = mlperf_rules.run_outcome(got)
            if t is not None:
                times.append(t)
                converged.append(ok)
            else:
                failures.append(f"run {k}: no time to train")
        records += self._score(benchmark, o["ruleset"], len(runs), times, converged)
        records.append(checker_version())
        if failures:
            more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
            raise ToolFailure(TOOL, failures[0] + more, partial=list(records))
        return records

    def _runs(self, inv: Invocation, out: Output, run_dir: Path) -> list[dict[str, Any]]:
        """The runs the sequencer made (its runs file, kept with the raw output), each
        one's filled-in argv recorded as a process of the step."""
        runs_file = run_dir / RUNS_FILE
        if not runs_file.is_file():
            why = out.failure()
            raise ToolFailure(
                TOOL,
                f"no {RUNS_FILE} in {run_dir}: the runs did not start or their directory is "
                f"not readable here ({why})",
            )
        runs: list[dict[str, Any]] = json.loads(runs_file.read_text(encoding="utf-8"))["runs"]
        shutil.copyfile(runs_file, out.raw_dir / f"{inv.label}.r{inv.repeat}.{RUNS_FILE}")
        # each run's filled-in argv, as the sequencer started it on the launch node
        env = Secrets().redact_env(inv.client.env)  # the marked ones too: aibench.orchestrator
        out.processes.extend(
            ProcessRecord(inv.client.host, tuple(r["argv"]), env, "run", r.get("exit_code"))
            for r in runs
        )
        return runs

    def _one_run(
        self, inv: Invocation, raw: Path, k: int, run: dict[str, Any], benchmark: str, ruleset: str
    ) -> tuple[list[Record], str, ProcessRecord | None]:
        dims = {"run_index": k}
        log = Path(inv.artifacts[k]) if k < len(inv.artifacts) else None
        if log is None or not log.is_file():
            code, why = run.get("exit_code"), run.get("reason") or ""
            return (
                [Fact(TOOL, "compliance", None, dims=FrozenDims(dims), reason="no log")],
                (f"no MLLOG file {log} (exit code {code}{': ' + why if why else ''})"),
                None,
            )
        stem = f"{inv.label}.r{inv.repeat}.result_{k}"
        kept = raw / f"{stem}.txt"
        shutil.copyfile(log, kept)
        checked = compliance(kept, ruleset, raw / f"{stem}.compliance.log")
        passed, reason = checked.passed, (checked.complaint, checked.output)
        checker = ProcessRecord(CONTROLLER, checked.argv, {}, "checker", checked.exit_code)
        (raw / f"{stem}.compliance.txt").write_text(reason[1], encoding="utf-8")
        out: list[Record] = [
            Fact(
                TOOL,
                "compliance",
                "passed" if passed else "failed",
                None,
                FrozenDims(dims),
                reason="" if passed else reason[0],
            )
        ]
        try:
            parsed = parsers.parse("mlperf-training", kept.read_text(encoding="utf-8"))
        except ToolFailure as exc:
            parsed = [r for r in exc.partial if isinstance(r, Measurement | Fact)]
            out += [_with_dims(r, dims, benchmark) for r in parsed]
            return out, exc.reason if passed else f"compliance checker: {reason[0]}", checker
        except OutputError as exc:
            return out, f"{exc.reason}", checker
        out += [_with_dims(r, dims, benchmark) for r in parsed]
        if run.get("exit_code") != 0:
            return out, f"exit code {run.get('exit_code')}", checker
        if not passed:
            return out, f"compliance checker: {reason[0]}", checker
        return out, "", checker

    def _score(
        self, benchmark: str, ruleset: str, n: int, times: list[float], converged: list[bool]
    ) -> list[Record]:
        dims = FrozenDims({"benchmark": benchmark})
        out: list[Record] = []
        try:
            required: int | None = mlperf_rules.min_runs(benchmark, ruleset)
        except mlperf_rules.RulesError as exc:
            required = None
            out.append(Fact(TOOL, "runs_required", None, None, dims, reason=str(exc)))
        else:
            out.append(Fact(TOOL, "runs_required", required, None, dims))
        out.append(Fact(TOOL, "runs", n, None, dims))
        if required is not None:
            short = "" if n >= required else f"{n} runs, the rules ask for {required}"
            out.append(Fact(TOOL, "runs_satisfied", n >= required, None, dims, reason=short))
        out += _quality_target(benchmark, ruleset, dims)
        drop = mlperf_rules.drop_count(benchmark)
        scored = mlperf_rules.olympic_score(times, converged, drop=drop)
        if scored.valid and scored.score is not None:
            out.append(Measurement(TOOL, "score", scored.score, "ms", dims))
        complete = mlperf_rules.olympic_score(times, converged, drop=drop, required=required)
        reason = complete.reason or scored.reason
        if len(times) < n:
            reason = reason or f"{n - len(times)} of {n} runs gave no time"
        out.append(
            Fact(TOOL, "score_valid", complete.valid and len(times) == n, None, dims, reason=reason)
        )
        return out


def _quality_target(benchmark: str, ruleset: str, dims: FrozenDims) -> list[Record]:
    """Fact ``quality_target`` per quality value: the target of ``ruleset``'s closed
    compliance config (mlperf-logging), with the metric's name, unit and direction."""
    from aibench import mlperf_logging_meta

    try:
        found = mlperf_logging_meta.bounds(benchmark, ruleset)
    except mlperf_logging_meta.MetaError as exc:
        return [Fact(TOOL, "quality_target", None, None, dims, reason=str(exc))]
    parts = {(b.key, b.part) for b in found if b.targets}
    if not parts:
        why = f"no quality target for {benchmark} in mlperf-logging's {ruleset} rules"
        return [Fact(TOOL, "quality_target", None, None, dims, reason=why)]
    out: list[Record] = []
    for key, part in sorted(parts):
        q = mlperf_rules.quality(benchmark, part, key=key, ruleset=ruleset)
        d = FrozenDims({**dims, "key": key, **({"metric": part} if part else {})})
        target = q.targets[0] if len(q.targets) == 1 else None
        where = f"{q.name or key} {q.direction} is better; {q.source}"
        reason = where if target is not None else f"several targets {q.targets}: {where}"
        out.append(Fact(TOOL, "quality_target", target, q.unit, d, reason=reason))
    return out


@dataclass(frozen=True)
class Compliance:
    """One run of the compliance checker: its verdict and the exact process."""

    passed: bool
    complaint: str  # the first complaint when it failed
    output: str  # everything it printed
    argv: tuple[str, ...]
    exit_code: int


MLPERF_EXTRA = "pip install 'aibench-cluster[mlperf]'"


def compliance(log: Path, ruleset: str, log_output: Path) -> Compliance:
    """Run mlperf-logging's compliance checker on ``log`` (here, on this machine)."""
    argv = (
        sys.executable,
        "-m",
        "mlperf_logging.compliance_checker",
        "--usage",
        "training",
        "--ruleset",
        ruleset,
        "--log_output",
        str(log_output),
        str(log),
    )
    proc = subprocess.run(
        argv, capture_output=True, text=True, timeout=300, cwd=log_output.parent, check=False
    )
    text = proc.stdout + proc.stderr
    complaint = first_complaint(text) if proc.returncode else ""
    if proc.returncode and "No module named 'mlperf_logging'" in text:
        complaint = f"mlperf-logging is not installed here ({MLPERF_EXTRA})"
    return Compliance(proc.returncode == 0, complaint, text, argv, proc.returncode)


def checker_version() -> Fact:
    """The mlperf-logging version whose checker judged the logs (it runs here)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return Fact(TOOL, "mlperf_logging_version", version("mlperf-logging"))
    except PackageNotFoundError:
        return Fact(
            TOOL,
            "mlperf_logging_version",
            None,
            reason=f"mlperf-logging not installed ({MLPERF_EXTRA})",
        )


def first_complaint(text: str) -> str:
    """The checker's first WARNING/ERROR, with the failed test when it names one."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("WARNING -"):
            msg = line.removeprefix("WARNING -").strip()
            for follow in lines[i + 1 : i + 4]:
                if follow.startswith("failed test:"):
                    msg += " " + follow.strip()
                    break
            return msg
    for line in lines:
        if line.startswith("ERROR -") and "FAILED" not in line:
            return line.removeprefix("ERROR -").strip()
    return "FAILED (no reason given)"


def _log_path(pattern: str, log_dir: str) -> str:
    return f"{log_dir}/stdout.txt" if pattern == "stdout" else pattern.replace("{log_dir}", log_dir)


def _options_of(inv: Invocation) -> dict[str, str]:
    """run_dir, benchmark and ruleset: the sequencer's own options in the client argv."""
    argv = list(inv.client.argv)
    head = argv[: argv.index("--")]
    return {
        k: head[head.index(f"--{k.replace('_', '-')}") + 1]
        for k in ("run_dir", "benchmark", "ruleset")
    }


def _with_dims(r: Record, dims: dict[str, Any], benchmark: str) -> Record:
    if isinstance(r, Measurement):
        return replace(r, dims=FrozenDims({**r.dims, **dims, "benchmark": benchmark}))
    if isinstance(r, Fact):
        return replace(r, dims=FrozenDims({**r.dims, **dims}))
    return r  # a Note: the tool's words, no dims


# ------------------------------------------------------------------ the sequencer


def sequence(
    runs: int, run_dir: Path, seed: int, command: Sequence[str], run_timeout: float
) -> int:
    """Run ``command`` ``runs`` times, one after another; record each in runs.json."""
    run_dir.mkdir(parents=True, exist_ok=True)
    done: list[dict[str, Any]] = []
    for k in range(runs):
        log_dir = run_dir / f"run_{k}"
        shutil.rmtree(log_dir, ignore_errors=True)  # nothing of an earlier run is read
        log_dir.mkdir(parents=True)
        argv = fill(command, {"log_dir": str(log_dir), "run_index": str(k), "seed": str(seed + k)})
        t0 = time.monotonic()
        print(f"mlperf-training: run {k} of {runs}: {' '.join(argv)}", flush=True)
        with (log_dir / "stdout.txt").open("wb") as so, (log_dir / "stderr.txt").open("wb") as se:
            try:
                code: int | None = subprocess.run(
                    list(argv), stdout=so, stderr=se, timeout=run_timeout, check=False
                ).returncode
                why = ""
            except subprocess.TimeoutExpired:
                code, why = None, f"timed out after {run_timeout:g} s"
            except OSError as exc:
                code, why = 127, f"cannot start {argv[0]}: {exc.strerror}"
        seconds = round(time.monotonic() - t0, 3)
        done.append(
            {"index": k, "argv": list(argv), "exit_code": code, "seconds": seconds, "reason": why}
        )
        print(f"mlperf-training: run {k} exit {code} after {seconds} s {why}".rstrip(), flush=True)
        tmp = run_dir / f".{RUNS_FILE}.tmp"
        tmp.write_text(json.dumps({"runs": done}, indent=1), encoding="utf-8")
        tmp.replace(run_dir / RUNS_FILE)
    return 0 if all(r["exit_code"] == 0 for r in done) else 1


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m aibench.runners.mlperf_training")
    ap.add_argument("--runs", type=int, required=True)
    ap.add_argument("--run-dir", required=True)
    ap.add_argument("--benchmark", default="", help="recorded only (collect scores by it)")
    ap.add_argument("--ruleset", default="", help="recorded only")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--run-timeout", type=float, default=24 * 3600.0)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not command:
        ap.error("no command after --")
    return sequence(a.runs, Path(a.run_dir), a.seed, command, a.run_timeout)


RUNNER = MlperfTrainingRunner()

if __name__ == "__main__":
    sys.exit(main())
