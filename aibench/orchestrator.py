"""Execution: run a plan through the executors and keep everything it measured.

``execute`` runs a :class:`~aibench.plan.Plan` (built by :func:`aibench.plan.build_plan`):

* the nodes are checked once up front and the versions probed once per node
  (:mod:`aibench.versions`);
* rounds run one after another, each made from the plan when its turn comes (a plan of
  a million runs is never held whole); the invocations of a round run concurrently, capped by
  the inventory's ``max_parallel`` and, for network tests, ``max_network_parallel``;
* servers are started first, waited on until ready, and always stopped, also when the
  client fails or the run is interrupted;
* every finished invocation is interpreted at once (:mod:`aibench.interpret`) and
  appended to ``steps.jsonl`` in the run directory, so an interrupted run keeps what it
  measured and ``--resume`` runs only what is missing;
* a node that cannot be reached, a tool that hangs, crashes or is missing, a server that
  never becomes ready: each gives that invocation a status and a one-line reason, and the
  run goes on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aibench.errors import UserError
from aibench.executors.base import (
    Command,
    Executor,
    ServerNotReady,
    redact_env,
    scrub,
    scrub_files,
    secret_values,
)
from aibench.interpret import interpret, version_fact
from aibench.inventory import Node
from aibench.model import Fact, Measurement, ProcessRecord, StepResult, StepStatus
from aibench.plan import Plan
from aibench.runners import Invocation, ProcessSpec
from aibench.textio import read_text, tail
from aibench.versions import VersionProbe, capture_versions, version_probes, version_text

JOURNAL = "steps.jsonl"


# --------------------------------------------------------------------------- execution


ExecutorFor = Callable[[Node], Executor]
Progress = Callable[[str, StepResult | None, int, int], None]


@dataclass
class Execution:
    """Mutable state of one run while it executes."""

    run_dir: Path
    plan: Plan
    executor_for: ExecutorFor
    progress: Progress | None = None
    done: dict[str, StepResult] = field(default_factory=dict)
    unreachable: dict[str, str] = field(default_factory=dict)
    tool_versions: dict[str, dict[str, str]] = field(default_factory=dict)
    versions: dict[VersionProbe, tuple[str, str]] = field(
        default_factory=dict
    )  # (version, why not)
    _journal_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def journal(self) -> Path:
        return self.run_dir / JOURNAL

    def load_journal(self) -> None:
        """Read finished results of an earlier, interrupted execution (for --resume)."""
        if not self.journal.exists():
            return
        for lineno, line in enumerate(self.journal.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                res = StepResult.from_dict(json.loads(line))
            except (ValueError, KeyError) as exc:
                # A line cut by the interruption: that invocation runs again.
                if lineno < len(self.journal.read_text().splitlines()):
                    raise UserError(f"{self.journal}: line {lineno} is damaged ({exc})") from None
                # drop it, so that what a resume appends does not glue onto it
                keep = self.journal.read_text().rstrip("\n").rpartition("\n")[0]
                self.journal.write_text(keep + "\n" if keep else "")
                continue
            if res.status is not StepStatus.NOT_RUN:
                self.done[res.step_id] = res

    async def _record(self, res: StepResult) -> None:
        async with self._journal_lock:
            with self.journal.open("a", encoding="utf-8") as f:
                f.write(json.dumps(res.to_dict(), sort_keys=True) + "\n")
                f.flush()
            self.done[res.step_id] = res

    def results(self) -> list[StepResult]:
        """Every planned invocation's result, in plan order (not_run where missing)."""
        out = []
        for inv in self.plan.iter_invocations():
            res = self.done.get(inv.step_id)
            out.append(res if res is not None else not_run(inv, "not run (interrupted)"))
        return out


def not_run(inv: Invocation, reason: str, status: StepStatus = StepStatus.NOT_RUN) -> StepResult:
    return StepResult(
        step_id=inv.step_id,
        step=inv.step,
        tool=inv.tool,
        nodes=inv.nodes,
        repeat=inv.repeat,
        round=inv.round,
        status=status,
        reason=reason,
        processes=tuple(_record_of(p) for p in (*inv.servers, inv.client)),
    )


def _record_of(p: ProcessSpec, exit_code: int | None = None) -> ProcessRecord:
    return ProcessRecord(
        host=p.host, argv=p.argv, env=redact_env(p.env), role=p.role, exit_code=exit_code
    )


async def check_nodes(ex: Execution) -> None:
    """Find unreachable nodes once, up front, so their invocations fail fast."""
    nodes = set(ex.plan.hosts())
    nodes.update(inv.client.host for inv in ex.plan.sample_invocations())

    async def one(name: str) -> None:
        node = ex.plan.inventory.node(name)
        reason = await ex.executor_for(node).check(node)
        if reason:
            ex.unreachable[name] = reason

    await asyncio.gather(*(one(n) for n in sorted(nodes)))


def _scrubbed(ex: Execution, inv: Invocation, res: StepResult) -> StepResult:
    """The values of secret variables (by name, or marked by the suite's
    ``settings.secret_env``) scrubbed from the invocation's raw output and its reason."""
    marked = getattr(ex.plan.suite.settings, "secret_env", ())
    values = secret_values((p.env for p in (*inv.setup, *inv.servers, inv.client)), marked)
    if not values:
        return res
    raw = ex.run_dir / "raw" / inv.step
    scrub_files(raw.glob(f"{inv.label}.r{inv.repeat}.*"), values)
    processes = tuple(
        dataclasses.replace(
            p, env=redact_env({k: scrub(v, values) for k, v in p.env.items()}, marked)
        )
        for p in res.processes
    )
    return dataclasses.replace(res, reason=scrub(res.reason, values), processes=processes)


async def run_invocation(ex: Execution, inv: Invocation) -> StepResult:
    """Run one invocation: setup, servers, client; always stop the servers."""
    inventory = ex.plan.inventory
    for host in {inv.client.host, *(s.host for s in inv.servers)}:
        if host in ex.unreachable:
            return not_run(
                inv, f"{host}: unreachable: {ex.unreachable[host]}", StepStatus.UNREACHABLE
            )
    raw = ex.run_dir / "raw" / inv.step
    raw.mkdir(parents=True, exist_ok=True)
    stem = f"{inv.label}.r{inv.repeat}"
    out_path, err_path = raw / f"{stem}.stdout", raw / f"{stem}.stderr"
    rel_out = str(out_path.relative_to(ex.run_dir))
    rel_err = str(err_path.relative_to(ex.run_dir))
    records = [_record_of(p) for p in (*inv.setup, *inv.servers, inv.client)]
    probes = version_probes(inv)
    tool_probe = next((p for p in probes if not p.launcher and p.host == inv.client.host), None)
    # the launcher's version is a fact of the node that starts it, on every step it starts
    launcher_facts = [
        Fact(
            p.name, "version", ex.versions[p][0] or None, nodes=(p.host,), reason=ex.versions[p][1]
        )
        for p in probes
        if p.launcher and p in ex.versions
    ]

    def result(
        status: StepStatus,
        reason: str = "",
        exit_code: int | None = None,
        measurements: Sequence[Measurement] = (),
        facts: Sequence[Fact] = (),
        started: str = "",
        duration: float = 0.0,
        processes: Sequence[ProcessRecord] = (),
    ) -> StepResult:
        probed = ex.versions.get(tool_probe) if tool_probe is not None else None
        tool_version = (probed[0] if probed else "") or version_fact(facts)
        if not tool_version and probed:
            tool_version = version_text(probed)
        return StepResult(
            step_id=inv.step_id,
            step=inv.step,
            tool=inv.tool,
            nodes=inv.nodes,
            repeat=inv.repeat,
            round=inv.round,
            status=status,
            exit_code=exit_code,
            started=started,
            duration_s=round(duration, 3),
            processes=(*records, *processes),
            stdout_path=rel_out,
            stderr_path=rel_err,
            measurements=tuple(measurements),
            facts=(*facts, *launcher_facts),
            reason=reason[:500],
            tool_version=tool_version,
        )

    t0 = time.monotonic()
    for i, spec in enumerate(inv.setup):
        node = inventory.node(spec.host)
        r = await ex.executor_for(node).run(
            node,
            Command(spec.argv, env=spec.env, timeout=spec.timeout),
            raw / f"{stem}.setup{i}.stdout",
            raw / f"{stem}.setup{i}.stderr",
        )
        if r.exit_code != 0:
            status = StepStatus.UNREACHABLE if r.unreachable else StepStatus.FAILED
            err = read_text(raw / f"{stem}.setup{i}.stderr")
            why = r.reason or tail(err) or f"exit {r.exit_code}"
            return result(status, f"setup {' '.join(spec.argv)} on {spec.host}: {why}", r.exit_code)

    servers: list[tuple[ProcessSpec, Any]] = []
    try:
        for spec in inv.servers:
            node = inventory.node(spec.host)
            s_out = raw / f"{stem}.server-{spec.host}.stdout"
            s_err = raw / f"{stem}.server-{spec.host}.stderr"
            try:
                from aibench.executors.base import NodeUnreachable, ReadyCheck

                server = await ex.executor_for(node).start(
                    node,
                    Command(spec.argv, env=spec.env, timeout=spec.timeout),
                    s_out,
                    s_err,
                    spec.ready or ReadyCheck(timeout=5.0),
                )
            except ServerNotReady as exc:
                why = tail(read_text(s_err)) or tail(read_text(s_out))
                return result(
                    StepStatus.FAILED,
                    f"server {spec.argv[0]} on {spec.host} not ready: {exc}"
                    + (f" ({why})" if why else ""),
                    duration=time.monotonic() - t0,
                )
            except NodeUnreachable as exc:
                return result(StepStatus.UNREACHABLE, f"{spec.host}: unreachable: {exc}")
            servers.append((spec, server))

        node = inventory.node(inv.client.host)
        proc = await ex.executor_for(node).run(
            node,
            Command(inv.client.argv, env=inv.client.env, timeout=inv.client.timeout),
            out_path,
            err_path,
        )
    finally:
        codes = []
        for _spec, server in servers:
            codes.append(await asyncio.shield(server.stop()))
        for k, (spec, _s) in enumerate(servers):
            idx = len(inv.setup) + inv.servers.index(spec)
            records[idx] = _record_of(spec, codes[k])
    records[-1] = _record_of(inv.client, proc.exit_code)
    return interpret(inv, proc, out_path, err_path, result, time.monotonic() - t0)


async def execute(ex: Execution) -> list[StepResult]:
    """Run every round of the plan that the journal does not already hold."""
    raw = ex.run_dir / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    await check_nodes(ex)
    await capture_versions(ex, raw)
    limits = ex.plan.inventory.limits
    sem = asyncio.Semaphore(max(1, limits.max_parallel))
    net = asyncio.Semaphore(limits.max_network_parallel) if limits.max_network_parallel else None
    total = ex.plan.run_count()

    async def one(inv: Invocation) -> None:
        async with sem:
            if inv.network and net is not None:
                async with net:
                    res = await run_invocation(ex, inv)
            else:
                res = await run_invocation(ex, inv)
        res = _scrubbed(ex, inv, res)
        await ex._record(res)
        if ex.progress:
            ex.progress("done", res, len(ex.done), total)

    for rnd in ex.plan.iter_rounds():  # each round made when it is its turn
        todo = [inv for inv in rnd.invocations if inv.step_id not in ex.done]
        if not todo:
            continue
        if ex.progress:
            label = f"{rnd.step} round {rnd.round + 1} repeat {rnd.repeat + 1}"
            ex.progress(label, None, len(ex.done), total)
        await asyncio.gather(*(one(inv) for inv in todo))
    return ex.results()
