"""The orchestrator: plan a suite over an inventory, run it, keep everything it measured.

``build_plan`` is pure: suite + inventory -> rounds of invocations (what ``aibench plan``
prints). ``execute`` runs a plan through the executors:

* rounds run one after another; the invocations of a round run concurrently, capped by
  the inventory's ``max_parallel`` and, for network tests, ``max_network_parallel``;
* servers are started first, waited on until ready, and always stopped, also when the
  client fails or the run is interrupted;
* every finished invocation is parsed at once and appended to ``steps.jsonl`` in the run
  directory, so an interrupted run keeps what it measured and ``--resume`` runs only
  what is missing;
* a node that cannot be reached, a tool that hangs, crashes or is missing, a server that
  never becomes ready: each gives that invocation a status and a one-line reason, and the
  run goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aibench import hostlist
from aibench.errors import ConfigError, OutputError, ParseError, ToolFailure, UserError
from aibench.executors.base import Command, Executor, ProcResult, ServerNotReady, redact_env
from aibench.inventory import Inventory, Node
from aibench.model import Fact, Measurement, ProcessRecord, StepResult, StepStatus
from aibench.parsers import Record
from aibench.plan import schedule
from aibench.runners import RUNNERS, Invocation, ProcessSpec, Slot
from aibench.runners.base import Output
from aibench.suite import Step, Suite

JOURNAL = "steps.jsonl"


@dataclass(frozen=True)
class PlannedRound:
    step: str
    tool: str
    repeat: int
    round: int
    invocations: tuple[Invocation, ...]


@dataclass(frozen=True)
class Plan:
    suite: Suite
    inventory: Inventory
    rounds: tuple[PlannedRound, ...]

    @property
    def invocations(self) -> list[Invocation]:
        return [inv for r in self.rounds for inv in r.invocations]

    def at_once(self, rnd: PlannedRound) -> int:
        """How many invocations of the round run at the same time under the inventory's
        ``max_parallel`` and ``max_network_parallel`` (the network ones count against both)."""
        limits = self.inventory.limits
        n = len(rnd.invocations)
        net = sum(1 for i in rnd.invocations if i.network)
        capped = min(net, limits.max_network_parallel) if limits.max_network_parallel else net
        return min(max(1, limits.max_parallel), n - net + capped)

    def estimated_seconds(self) -> float:
        """Rough wall time: per round, the longest expected run, times the waves the
        concurrency limits make of the round (rounds run one after another)."""
        limits = self.inventory.limits
        total = 0.0
        for r in self.rounds:
            if not r.invocations:
                continue
            longest = max(_expected_seconds(i) for i in r.invocations)
            waves = math.ceil(len(r.invocations) / max(1, limits.max_parallel))
            net = [_expected_seconds(i) for i in r.invocations if i.network]
            t = waves * longest
            if net and limits.max_network_parallel:
                t = max(t, math.ceil(len(net) / limits.max_network_parallel) * max(net))
            total += t
        return total


def _expected_seconds(inv: Invocation) -> float:
    """What an invocation is expected to take (from its options, not its timeout)."""
    argv = inv.client.argv
    for a in argv:
        if a.startswith("--runtime="):
            return float(a.split("=", 1)[1]) + 1.0
    if "-t" in argv:
        with contextlib.suppress(ValueError, IndexError):
            return float(argv[argv.index("-t") + 1]) + 1.0
    return min(inv.client.timeout, 60.0)


def select_nodes(step: Step, inventory: Inventory, suite: Suite | None = None) -> list[Node]:
    """The inventory's nodes a step runs on: its ``nodes:`` (names or hostlists) and
    ``labels:``. A bad hostlist or a name the inventory lacks is a ConfigError naming the
    suite file and the key (``steps[i].nodes[j]``)."""
    nodes = list(inventory.nodes)
    m = step.model
    where = _step_key(suite, step)
    file = suite.source if suite is not None else f"step {m.name}"
    if m.nodes:
        wanted: list[str] = []
        for j, expr in enumerate(m.nodes):
            try:
                wanted.extend(hostlist.expand(expr) if hostlist.is_expression(expr) else [expr])
            except ValueError as exc:
                raise ConfigError(file, f"{where}.nodes[{j}]", str(exc)) from None
        known = {x.name for x in nodes}
        unknown = [n for n in dict.fromkeys(wanted) if n not in known]
        if unknown:
            shown = ", ".join(unknown[:10]) + (
                f" (and {len(unknown) - 10} more)" if len(unknown) > 10 else ""
            )
            raise ConfigError(
                file,
                f"{where}.nodes",
                f"not in the inventory {inventory.name}: {shown}",
                hint="check the suite's nodes: list against the inventory",
            )
        nodes = [n for n in nodes if n.name in set(wanted)]
    if m.labels:
        nodes = [n for n in nodes if all(n.labels.get(k) == v for k, v in m.labels.items())]
    return nodes


def _step_key(suite: Suite | None, step: Step) -> str:
    """``steps[i]``: the step's place in the suite file (kept when steps are filtered)."""
    raw = suite.raw.get("steps") if suite is not None and isinstance(suite.raw, dict) else None
    if isinstance(raw, list):
        for i, d in enumerate(raw):
            if isinstance(d, dict) and d.get("name") == step.name:
                return f"steps[{i}]"
    return f"step {step.name}"


def build_plan(suite: Suite, inventory: Inventory) -> Plan:
    rounds: list[PlannedRound] = []
    for step in suite.steps:
        if not step.model.enabled:
            continue
        runner = RUNNERS.get(step.tool)
        nodes = select_nodes(step, inventory, suite)
        placement = step.model.placement or runner.default_placement
        kwargs: dict[str, Any] = {}
        if step.model.sample is not None:
            kwargs["k"] = step.model.sample
        if step.model.group_by is not None:
            kwargs["labels"] = {n.name: n.labels.get(step.model.group_by, "") for n in nodes}
        groups_by_round = schedule(placement, [n.name for n in nodes], **kwargs)
        for repeat in range(step.model.repeats):
            for r_index, rnd in enumerate(groups_by_round):
                invs: list[Invocation] = []
                for index, group in enumerate(rnd):
                    slot = Slot(
                        round=r_index,
                        index=index,
                        repeat=repeat,
                        base_port=suite.settings.base_port,
                        workdir=suite.settings.workdir,
                    )
                    members = [inventory.node(n) for n in group]
                    for inv in runner.invocations(step.name, step.options, members, slot):
                        if step.model.timeout is not None:
                            inv = _with_timeout(inv, step.model.timeout)
                        invs.append(inv)
                rounds.append(PlannedRound(step.name, step.tool, repeat, r_index, tuple(invs)))
    return Plan(suite=suite, inventory=inventory, rounds=tuple(rounds))


def _with_timeout(inv: Invocation, timeout: float) -> Invocation:
    from dataclasses import replace

    client = replace(inv.client, timeout=timeout)
    servers = tuple(replace(s, timeout=timeout + 10.0) for s in inv.servers)
    return replace(inv, client=client, servers=servers)


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
        for inv in self.plan.invocations:
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
    nodes = {n for inv in ex.plan.invocations for n in (*inv.nodes, inv.client.host)}

    async def one(name: str) -> None:
        node = ex.plan.inventory.node(name)
        reason = await ex.executor_for(node).check(node)
        if reason:
            ex.unreachable[name] = reason

    await asyncio.gather(*(one(n) for n in sorted(nodes)))


@dataclass(frozen=True)
class VersionProbe:
    """One version command on one node: of a step's tool, or of the launcher it runs."""

    host: str
    name: str  # the tool (runner) name, or the launcher's name (mpirun, srun)
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()
    launcher: bool = False


def version_probes(inv: Invocation) -> list[VersionProbe]:
    """What to run to learn the versions an invocation uses.

    The tool's: the runner's ``version_argv_for(inv)`` (the binary the step runs, e.g.
    under its bin_dir) or else ``version_argv()``, on every node of the invocation. The
    launcher's: when the client is a launcher of :mod:`aibench.launchers` (mpirun, srun),
    its ``--version`` with the path and the environment the step gives it, on the node
    that starts it.
    """
    from aibench.launchers import LAUNCHERS

    runner = RUNNERS.get(inv.tool)
    for_inv = getattr(runner, "version_argv_for", None)
    argv = for_inv(inv) if for_inv is not None else runner.version_argv()
    probes = (
        [VersionProbe(n, inv.tool, tuple(argv)) for n in dict.fromkeys(inv.nodes)] if argv else []
    )
    if inv.client.role == "launcher" and inv.client.argv:
        path = inv.client.argv[0]
        name = path.rsplit("/", 1)[-1]
        launcher = LAUNCHERS.get(name) if name in LAUNCHERS else None
        l_argv = getattr(launcher, "version_argv", None)
        if launcher is not None and l_argv is not None:
            probes.append(
                VersionProbe(
                    inv.client.host,
                    name,
                    (path, *l_argv()[1:]),
                    tuple(sorted(inv.client.env.items())),
                    launcher=True,
                )
            )
    return probes


async def capture_versions(ex: Execution, raw: Path) -> None:
    """Run each version command once per node (a tool, a binary, a launcher).

    The result lands in ``ex.versions`` per probe (what each step records) and in
    ``ex.tool_versions[node][name]`` (run.json's environment; two binaries of one tool
    on one node that differ are both named).
    """
    from aibench.launchers import LAUNCHERS

    probes = sorted(
        {p for inv in ex.plan.invocations for p in version_probes(inv)},
        key=lambda p: (p.host, p.name, p.argv, p.env),
    )
    seen: dict[tuple[str, str], int] = {}

    async def one(p: VersionProbe, k: int) -> None:
        if p.host in ex.unreachable:
            return
        parser: Any = LAUNCHERS.get(p.name) if p.launcher else RUNNERS.get(p.name)
        ok_codes = getattr(parser, "version_exit_codes", (0,))
        node = ex.plan.inventory.node(p.host)
        stem = f"{p.host}.{p.name}" + (f".{k}" if k else "")
        out, err = raw / "versions" / f"{stem}.out", raw / "versions" / f"{stem}.err"
        cmd = Command(p.argv, env=dict(p.env), timeout=20)
        res = await ex.executor_for(node).run(node, cmd, out, err)
        text = _read(out) + _read(err)
        version = parser.parse_version(text) if res.exit_code in ok_codes else ""
        if version:
            ex.versions[p] = (version, "")
        else:
            cmd_text = " ".join(p.argv)
            if res.reason:
                why = res.reason
            elif res.exit_code not in ok_codes:
                why = f"{cmd_text}: exit code {res.exit_code}: {_tail(text, 1) or 'no output'}"
            else:
                why = f"{cmd_text}: no version in its output"
            ex.versions[p] = ("", why)

    jobs = []
    for p in probes:
        k = seen.get((p.host, p.name), 0)
        seen[(p.host, p.name)] = k + 1
        jobs.append(one(p, k))
    await asyncio.gather(*jobs)
    named: dict[tuple[str, str], list[tuple[VersionProbe, str]]] = {}
    for p in probes:
        if p in ex.versions:
            named.setdefault((p.host, p.name), []).append((p, _version_text(ex.versions[p])))
    for (host, name), got in named.items():
        texts = list(dict.fromkeys(t for _, t in got))
        ex.tool_versions.setdefault(host, {})[name] = (
            texts[0] if len(texts) == 1 else "; ".join(f"{t} ({p.argv[0]})" for p, t in got)
        )


def _version_text(found: tuple[str, str]) -> str:
    version, why = found
    return version or (f"absent ({why})" if "not found" in why else f"unknown ({why})")


def _read(p: Path, limit: int = 50_000_000) -> str:
    try:
        with p.open("rb") as f:
            return f.read(limit).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def _tail(text: str, lines: int = 3) -> str:
    got = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(got[-lines:])


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
        tool_version = (probed[0] if probed else "") or _version_fact(facts)
        if not tool_version and probed:
            tool_version = _version_text(probed)
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
            why = r.reason or _tail(_read(raw / f"{stem}.setup{i}.stderr")) or f"exit {r.exit_code}"
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
                why = _tail(_read(s_err)) or _tail(_read(s_out))
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


def _version_fact(facts: Sequence[Fact]) -> str:
    """A tool without a version command reports its version in its output (nccl-tests)."""
    for f in facts:
        if f.name == "version" and isinstance(f.value, str) and f.value:
            return f.value
    return ""


def interpret(
    inv: Invocation,
    proc: ProcResult,
    out_path: Path,
    err_path: Path,
    result: Callable[..., StepResult],
    duration: float,
) -> StepResult:
    """Turn a finished process into a StepResult: status, reason, records."""
    stdout, stderr = _read(out_path), _read(err_path)
    extra: list[ProcessRecord] = []  # processes ``collect`` reports (filled in place)
    base: dict[str, Any] = {
        "exit_code": proc.exit_code,
        "started": proc.started,
        "duration": duration,
        "processes": extra,
    }
    if proc.unreachable:
        return result(StepStatus.UNREACHABLE, proc.reason or "node unreachable", **base)
    runner = RUNNERS.get(inv.tool)
    collect = getattr(runner, "collect", None)
    records: list[Record] = []
    problem: OutputError | None = None
    try:
        if collect is not None:
            out = Output(stdout, stderr, proc.exit_code, out_path.parent, proc.reason, extra)
            records = list(collect(inv, out))
        elif proc.exit_code is not None or stdout.strip():
            from aibench import parsers

            records = parsers.parse(inv.parser, stdout)
    except ToolFailure as exc:
        problem = exc
        records = [r for r in exc.partial if isinstance(r, Measurement | Fact)]
    except ParseError as exc:
        problem = exc
    measurements, facts = _split(inv, records)
    if proc.timed_out:
        return result(
            StepStatus.TIMEOUT, proc.reason, measurements=measurements, facts=facts, **base
        )
    if proc.exit_code is None and collect is None:
        return result(StepStatus.FAILED, proc.reason or "did not start", **base)
    if problem is not None:
        return result(
            StepStatus.FAILED, str(problem), measurements=measurements, facts=facts, **base
        )
    if proc.exit_code not in (0, None) and collect is None:
        why = _tail(stderr) or _tail(stdout) or "no output"
        return result(
            StepStatus.FAILED,
            f"exit code {proc.exit_code}: {why}",
            measurements=measurements,
            facts=facts,
            **base,
        )
    if not measurements and not facts:
        return result(StepStatus.FAILED, "the tool reported nothing that could be measured", **base)
    return result(StepStatus.OK, measurements=measurements, facts=facts, **base)


def _split(inv: Invocation, records: Sequence[Record]) -> tuple[list[Measurement], list[Fact]]:
    from dataclasses import replace

    ms: list[Measurement] = []
    fs: list[Fact] = []
    for r in records:
        if isinstance(r, Measurement):
            ms.append(replace(r, nodes=inv.nodes, step=inv.step, repeat=inv.repeat))
        else:
            fs.append(replace(r, nodes=r.nodes or inv.nodes))
    return ms, fs


async def execute(ex: Execution) -> list[StepResult]:
    """Run every round of the plan that the journal does not already hold."""
    raw = ex.run_dir / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    await check_nodes(ex)
    await capture_versions(ex, raw)
    limits = ex.plan.inventory.limits
    sem = asyncio.Semaphore(max(1, limits.max_parallel))
    net = asyncio.Semaphore(limits.max_network_parallel) if limits.max_network_parallel else None
    total = len(ex.plan.invocations)

    async def one(inv: Invocation) -> None:
        async with sem:
            if inv.network and net is not None:
                async with net:
                    res = await run_invocation(ex, inv)
            else:
                res = await run_invocation(ex, inv)
        await ex._record(res)
        if ex.progress:
            ex.progress("done", res, len(ex.done), total)

    for rnd in ex.plan.rounds:
        todo = [inv for inv in rnd.invocations if inv.step_id not in ex.done]
        if not todo:
            continue
        if ex.progress:
            label = f"{rnd.step} round {rnd.round + 1} repeat {rnd.repeat + 1}"
            ex.progress(label, None, len(ex.done), total)
        await asyncio.gather(*(one(inv) for inv in todo))
    return ex.results()
