"""Execution: run a plan through the executors and keep everything it measured.

``execute`` runs a :class:`~aibench.plan.Plan` (built by :func:`aibench.plan.build_plan`):

* the nodes are checked once up front and the versions probed once per node
  (:mod:`aibench.versions`);
* rounds run one after another, each made from the plan when its turn comes (a plan of
  a million runs is never held whole); the invocations of a round run concurrently, capped by
  the inventory's ``max_parallel`` (left out: the whole round, up to what the controller
  holds, its open-file limit raised first) and, for network tests, ``max_network_parallel``;
* servers are started first, waited on until ready, and always stopped, also when the
  client fails or the run is interrupted;
* every finished invocation is interpreted at once (:mod:`aibench.interpret`) and
  appended to ``steps.jsonl`` in the run directory, so an interrupted run keeps what it
  measured and ``--resume`` runs only what is missing. The results are not held while the
  run goes on (memory stays flat over millions of invocations): at the end,
  :meth:`Execution.results_log` gives them in plan order, read from the journal a step at a
  time each time they are gone over;
* a node that cannot be reached, a tool that hangs, crashes or is missing, a server that
  never becomes ready: each gives that invocation a status and a one-line reason, and the
  run goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import itertools
import json
import os
import time
from array import array
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from aibench.errors import UserError
from aibench.executors.base import (
    Command,
    Executor,
    NodeUnreachable,
    ReadyCheck,
    ServerNotReady,
)
from aibench.executors.capacity import raise_open_files
from aibench.interpret import interpret, version_fact
from aibench.inventory import Node
from aibench.model import (
    Fact,
    Measurement,
    ProcessRecord,
    Shared,
    StepResult,
    StepSource,
    StepStatus,
)
from aibench.plan import Plan
from aibench.runners import RUNNERS, Invocation, ProcessSpec
from aibench.secret import Secrets
from aibench.textio import read_text, tail
from aibench.versions import VersionProbe, version_probes, version_text

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
    # step ids of the results an earlier execution left in the journal (--resume): not
    # run again. Results of this execution are only counted: each runs once.
    done: set[str] = field(default_factory=set)
    recorded: int = 0  # results appended to the journal by this execution
    # where the results of this execution begin in the journal: at its end when it was
    # made (a journal already there is not this run's, unless load_journal takes it)
    since: int = -1
    unreachable: dict[str, str] = field(default_factory=dict)
    running: set[str] = field(default_factory=set)  # step ids of the invocations in flight
    tool_versions: dict[str, dict[str, str]] = field(default_factory=dict)
    versions: dict[VersionProbe, tuple[str, str]] = field(
        default_factory=dict
    )  # (version, why not)
    _journal_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    resumed: bool = False  # the journal of an earlier execution was taken (load_journal)
    _options: dict[str, str] | None = None

    @functools.cached_property
    def secrets(self) -> Secrets:
        """The run's secret names (aibench.secret), without values."""
        return self.plan.secrets()

    @property
    def journal(self) -> Path:
        return self.run_dir / JOURNAL

    @property
    def options(self) -> dict[str, str]:
        """Each step's options hash (:func:`options_sha256`), by step name."""
        if self._options is None:
            self._options = options_sha256(self.plan.suite)
        return self._options

    def same_options(self, line: Mapping[str, Any]) -> bool:
        """Whether a journal line was run with the options its step has in this plan (a
        line of an older aibench, without the hash, is taken as it is)."""
        sha = line.get(OPTIONS)
        return sha is None or sha == self.options.get(str(line.get("step")))

    def __post_init__(self) -> None:
        if self.since < 0:
            self.since = self.journal.stat().st_size if self.journal.exists() else 0

    @property
    def finished(self) -> int:
        """Results in the journal: those of an earlier execution and of this one."""
        return len(self.done) + self.recorded

    def load_journal(self) -> None:
        """Note the finished results of an earlier, interrupted execution (for --resume);
        a last line cut by the interruption is dropped (that invocation runs again). Only
        each line's step id and status are read here; the records themselves are read
        at the end (:meth:`results`, :meth:`results_log`)."""
        self.since, self.resumed = 0, True
        self.done = {d["step_id"] for _, d in self._finished_lines() if self.same_options(d)}

    def _finished_lines(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """(byte offset, decoded line) of each finished result in the journal, in the
        order written (a not_run line is no result). A line that does not decode is
        damaged: an error naming it, unless it is the last one (cut by the
        interruption), which is dropped so that what a resume appends does not glue
        onto it."""
        if not self.journal.exists():
            return
        damaged: tuple[int, Exception] | None = None
        cut = 0
        with self.journal.open("rb") as f:
            f.seek(self.since)
            pos = self.since
            for lineno, line in enumerate(f, 1):  # one line at a time: the journal is large
                at, pos = pos, pos + len(line)
                if not line.strip():
                    continue
                if damaged is not None:
                    no, exc = damaged
                    raise UserError(f"{self.journal}: line {no} is damaged ({exc})")
                try:
                    d = json.loads(line)
                    finished = StepStatus(d["status"]) is not StepStatus.NOT_RUN
                    if not isinstance(d["step_id"], str):
                        raise TypeError(f"step_id {d['step_id']!r} is not text")
                except (ValueError, KeyError, TypeError) as exc:
                    damaged, cut = (lineno, exc), at
                    continue
                if finished:
                    yield at, d
        if damaged is not None:
            os.truncate(self.journal, cut)

    async def _record(self, res: StepResult, index: int) -> None:
        """Append ``res`` to the journal with ``index``, its invocation's place in the
        plan (how :meth:`results_log` finds it again without a table of step ids)."""
        sha = self.options.get(res.step)
        line = json.dumps({**res.to_dict(), PLAN_INDEX: index, OPTIONS: sha}, sort_keys=True)
        line += "\n"
        async with self._journal_lock:
            with self.journal.open("a", encoding="utf-8") as f:
                f.write(line)
                f.flush()
            self.recorded += 1

    def results_of(self, step: str) -> Iterator[StepResult]:
        """The results of ``step`` the journal holds so far, read from it now: what the
        second phase of a ``cover`` step is planned from when its turn comes."""
        for _, d in self._finished_lines():
            if d.get("step") == step:
                yield StepResult.from_dict(d)

    def results(self) -> list[StepResult]:
        """Every planned invocation's result, in plan order (not_run where missing), read
        back from the journal and held (see :meth:`results_log` for a large run)."""
        return list(self.results_log())

    def results_log(self) -> JournalResults:
        """Every planned invocation's result, in plan order (not_run where missing), left
        in the journal: the results are read from it each time they are gone over, and
        what is held is the byte offset of each (8 bytes an invocation). The last line
        of a step id wins; a line run with other options than its step has now is not
        this plan's result, and after a resume each line's place is checked against the
        plan's invocation there (:meth:`_replace`)."""
        offsets = array("q", [-1]) * self.plan.run_count()
        ids = array("q", [0]) * len(offsets) if self.resumed else None
        by_id: dict[str, int] | None = None  # made only for lines written without an index
        kinds: set[tuple[str, str]] = set()
        for at, d in self._finished_lines():
            if not self.same_options(d):
                continue
            index = d.get(PLAN_INDEX)
            if type(index) is not int or not 0 <= index < len(offsets):
                if by_id is None:
                    by_id = {inv.step_id: i for i, inv in enumerate(self.plan.iter_invocations())}
                index = by_id.get(d["step_id"])
                if index is None:  # not a step of this plan
                    continue
            offsets[index] = at
            if ids is not None:
                ids[index] = hash(d["step_id"])
            kinds.add((str(d.get("step")), str(d.get("tool"))))
        if ids is not None:
            self._replace(offsets, ids)
        if -1 in offsets:  # not run: the plan says what they are
            missing = zip(self.plan.iter_invocations(), offsets, strict=True)
            kinds.update((inv.step, inv.tool) for inv, at in missing if at < 0)
        return JournalResults(self.journal, self.plan, offsets, frozenset(kinds))

    def _replace(self, offsets: array[int], ids: array[int]) -> None:
        """Put each result where the plan has its step id: a journal line's place in the
        plan is that of the plan it was run by, and a suite edited since (a step
        inserted before it) moves it. ``ids``: the hash of each placed line's step id."""
        misplaced: list[int] = []
        for i, inv in enumerate(self.plan.iter_invocations()):
            if offsets[i] >= 0 and ids[i] != hash(inv.step_id):
                misplaced.append(offsets[i])
                offsets[i] = -1
        if not misplaced:
            return
        by_id = {inv.step_id: i for i, inv in enumerate(self.plan.iter_invocations())}
        with self.journal.open("rb") as f:
            for at in misplaced:
                f.seek(at)
                index = by_id.get(json.loads(f.readline())["step_id"])
                if index is not None and offsets[index] < at:  # the last line wins
                    offsets[index] = at


PLAN_INDEX = "plan_index"  # the key of a journal line's place in the plan
OPTIONS = "options_sha256"  # the key of the hash of the options a journal line ran with


def options_sha256(suite: Any) -> dict[str, str]:
    """Each step's hash of what it runs: its definition in the suite (tool, placement,
    repeats, timeout, nodes, options ...) without its description. Finished work is
    taken by a resume only where its step id and this hash both match."""
    out = {}
    for step in suite.steps:
        model = step.model.model_dump(mode="json", exclude={"description"})
        text = json.dumps(model, sort_keys=True, separators=(",", ":"))
        out[step.name] = hashlib.sha256(text.encode()).hexdigest()
    return out


class JournalResults(StepSource):
    """The results of a plan as the journal holds them (see Execution.results_log): each
    pass over them reads the journal again, a step at a time, and makes the not_run
    result of an invocation the journal lacks from the plan."""

    __slots__ = ("_kinds", "journal", "offsets", "plan")

    def __init__(
        self,
        journal: Path,
        plan: Plan,
        offsets: array[int],
        kinds: frozenset[tuple[str, str]] | None = None,
    ) -> None:
        self.journal, self.plan, self.offsets, self._kinds = journal, plan, offsets, kinds

    def __len__(self) -> int:
        return len(self.offsets)

    def _pick(self, indices: Iterable[int]) -> Iterator[StepResult]:
        shared = Shared(tuples=False)  # names and dims shared; pairs are not kept
        plan: Iterator[Invocation] | None = None  # made at the first invocation not run
        marked = Secrets()  # the run's secret names, with it
        done = 0  # invocations of ``plan`` gone over
        with contextlib.ExitStack() as opened:
            f: BinaryIO | None = None  # opened at the first result it holds
            for i in indices:
                at = self.offsets[i]
                if at >= 0:
                    if f is None:
                        f = opened.enter_context(self.journal.open("rb"))
                    yield self._read(f, at, shared)
                    continue
                if plan is None:
                    plan, marked = self.plan.iter_invocations(), self.plan.secrets()
                inv = next(itertools.islice(plan, i - done, None))
                done = i + 1
                yield _interrupted(inv, marked)

    def _read(self, f: BinaryIO, at: int, shared: Shared) -> StepResult:
        if f.tell() != at:
            f.seek(at)
        return StepResult.from_dict(json.loads(f.readline()), shared)


def _interrupted(inv: Invocation, marked: Secrets) -> StepResult:
    return not_run(inv, "not run (interrupted)", secrets=invocation_secrets(marked, inv))


def step_result(inv: Invocation, status: StepStatus, reason: str, **outcome: Any) -> StepResult:
    """The result of ``inv``: what the invocation names, with its status, reason and
    ``outcome`` (the other fields of :class:`StepResult`)."""
    return StepResult(
        step_id=inv.step_id,
        step=inv.step,
        tool=inv.tool,
        nodes=inv.nodes,
        repeat=inv.repeat,
        round=inv.round,
        status=status,
        reason=reason,
        **outcome,
    )


def not_run(
    inv: Invocation,
    reason: str,
    status: StepStatus = StepStatus.NOT_RUN,
    *,
    secrets: Secrets,
) -> StepResult:
    """The result of an invocation that did not run; its process records are scrubbed
    as those of one that ran (``secrets``: :func:`invocation_secrets`)."""
    processes = tuple(_record_of(p, secrets) for p in (*inv.servers, inv.client))
    return step_result(inv, status, secrets.scrub(reason), processes=processes)


def invocation_secrets(marked: Secrets, inv: Invocation) -> Secrets:
    """The secret names of the run and the values of every process of ``inv``."""
    return marked.with_values(p.env for p in (*inv.setup, *inv.servers, inv.client))


def _record_of(p: ProcessSpec, secrets: Secrets, exit_code: int | None = None) -> ProcessRecord:
    return ProcessRecord(
        host=p.host,
        argv=tuple(secrets.scrub(a) for a in p.argv),
        env=secrets.redact_env(p.env),
        role=p.role,
        exit_code=exit_code,
    )


async def together(coros: Iterable[Coroutine[Any, Any, None]]) -> None:
    """Run ``coros`` side by side. On the first error the others are cancelled and awaited
    before it is raised: each of them may fail the same way meanwhile (a full disk hits
    every writer), and an error nobody awaited would be printed as a traceback when the
    event loop shuts down. Cancelled from outside, it cancels and awaits them all too."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    if not tasks:
        return
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        errors = [t.exception() for t in tasks if t.done() and not t.cancelled()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    first = next((e for e in errors if e is not None), None)
    if first is not None:
        raise first


async def check_nodes(ex: Execution) -> None:
    """Find unreachable nodes once, up front, so their invocations fail fast."""
    nodes = set(ex.plan.hosts())
    nodes.update(inv.client.host for inv in ex.plan.sample_invocations())

    async def one(name: str) -> None:
        node = ex.plan.inventory.node(name)
        reason = await ex.executor_for(node).check(node)
        if reason:
            ex.unreachable[name] = reason

    await together(one(n) for n in sorted(nodes))


async def capture_versions(ex: Execution, raw: Path) -> None:
    """Run each version command (:func:`aibench.versions.version_probes`) once per node.

    The result lands in ``ex.versions`` per probe (what each step records) and in
    ``ex.tool_versions[node][name]`` (run.json's environment; two binaries of one tool
    on one node that differ are both named).
    """
    probes = sorted(
        {p for inv in ex.plan.sample_invocations() for p in version_probes(inv)},
        key=lambda p: (p.host, p.name, p.argv, p.env),
    )
    seen: dict[tuple[str, str], int] = {}
    jobs = []
    for p in probes:
        k = seen.get((p.host, p.name), 0)
        seen[(p.host, p.name)] = k + 1
        jobs.append(_probe_version(ex, raw, p, k))
    await together(jobs)
    named: dict[tuple[str, str], list[tuple[VersionProbe, str]]] = {}
    for p in probes:
        if p in ex.versions:
            named.setdefault((p.host, p.name), []).append((p, version_text(ex.versions[p])))
    for (host, name), got in named.items():
        texts = list(dict.fromkeys(t for _, t in got))
        ex.tool_versions.setdefault(host, {})[name] = (
            texts[0] if len(texts) == 1 else "; ".join(f"{t} ({p.argv[0]})" for p, t in got)
        )


async def _probe_version(ex: Execution, raw: Path, p: VersionProbe, k: int) -> None:
    """Run one version command (the ``k``-th of its tool on its node): ``ex.versions[p]``
    is then (version, "") or ("", why not)."""
    from aibench.launchers import LAUNCHERS

    if p.host in ex.unreachable:
        return
    parser: Any = LAUNCHERS.get(p.name) if p.launcher else RUNNERS.get(p.name)
    ok_codes = getattr(parser, "version_exit_codes", (0,))
    node = ex.plan.inventory.node(p.host)
    stem = f"{p.host}.{p.name}" + (f".{k}" if k else "")
    out, err = raw / "versions" / f"{stem}.out", raw / "versions" / f"{stem}.err"
    env = dict(p.env)
    cmd = Command(p.argv, env=env, timeout=20, secrets=ex.secrets.with_values([env]), role="probe")
    res = await ex.executor_for(node).run(node, cmd, out, err)
    text = read_text(out) + read_text(err)
    version = parser.parse_version(text) if res.exit_code in ok_codes else ""
    if version:
        ex.versions[p] = (version, "")
        return
    cmd_text = " ".join(p.argv)
    if res.reason:
        why = res.reason
    elif res.exit_code not in ok_codes:
        why = f"{cmd_text}: exit code {res.exit_code}: {tail(text, 1) or 'no output'}"
    else:
        why = f"{cmd_text}: no version in its output"
    ex.versions[p] = ("", why)


@dataclass
class _Outcome:
    """What every result of one invocation shares: where its output goes, its processes
    (their exit codes filled in as they end), the versions probed for it."""

    ex: Execution
    inv: Invocation
    raw: Path
    stem: str
    records: list[ProcessRecord]
    probes: list[VersionProbe]
    secrets: Secrets

    @classmethod
    def of(cls, ex: Execution, inv: Invocation) -> _Outcome:
        raw = ex.run_dir / "raw" / inv.step
        raw.mkdir(parents=True, exist_ok=True)
        secrets = invocation_secrets(ex.secrets, inv)
        records = [_record_of(p, secrets) for p in (*inv.setup, *inv.servers, inv.client)]
        stem = f"{inv.label}.r{inv.repeat}"
        return cls(ex, inv, raw, stem, records, version_probes(inv), secrets)

    def command(self, p: ProcessSpec, **extra: Any) -> Command:
        """What an executor runs for ``p``: its output written through the secrets;
        ``extra``: the command's role and what the Kubernetes executor reads of it."""
        return Command(p.argv, env=p.env, timeout=p.timeout, secrets=self.secrets, **extra)

    @property
    def out_path(self) -> Path:
        return self.raw / f"{self.stem}.stdout"

    @property
    def err_path(self) -> Path:
        return self.raw / f"{self.stem}.stderr"

    def launcher_facts(self) -> list[Fact]:
        """The launcher's version: a fact of the node that starts it, on every step it starts."""
        versions = self.ex.versions
        return [
            Fact(p.name, "version", versions[p][0] or None, nodes=(p.host,), reason=versions[p][1])
            for p in self.probes
            if p.launcher and p in versions
        ]

    def tool_version(self, facts: Sequence[Fact]) -> str:
        """The probed version of the tool on the client's node, else the one its output
        gave, else why it is not known."""
        host = self.inv.client.host
        probe = next((p for p in self.probes if not p.launcher and p.host == host), None)
        probed = self.ex.versions.get(probe) if probe is not None else None
        version = (probed[0] if probed else "") or version_fact(facts)
        if not version and probed:
            version = version_text(probed)
        return version

    def result(
        self,
        status: StepStatus,
        reason: str = "",
        exit_code: int | None = None,
        measurements: Sequence[Measurement] = (),
        facts: Sequence[Fact] = (),
        started: str = "",
        duration: float = 0.0,
        processes: Sequence[ProcessRecord] = (),
    ) -> StepResult:
        return step_result(
            self.inv,
            status,
            reason[:500],
            exit_code=exit_code,
            started=started,
            duration_s=round(duration, 3),
            processes=(*self.records, *processes),
            stdout_path=str(self.out_path.relative_to(self.ex.run_dir)),
            stderr_path=str(self.err_path.relative_to(self.ex.run_dir)),
            measurements=tuple(measurements),
            facts=(*facts, *self.launcher_facts()),
            tool_version=self.tool_version(facts),
        )


def _client_command(ex: Execution, inv: Invocation, out: _Outcome) -> Command:
    """The command of an invocation's client, with its role: preflight, a launch across
    the invocation's nodes (a launcher over more than one node, or mpirun on any number
    when the suite asks for a Kubernetes Pod per rank), else work; its output written
    through the secrets (``out.command``)."""
    c = inv.client
    settings = ex.plan.suite.settings
    per_rank = getattr(getattr(settings, "kubernetes", None), "pods", "") == "per_rank"
    per_rank = per_rank and c.role == "launcher" and c.argv[0] == "mpirun"
    role = "preflight" if inv.tool == "preflight" else "work"
    hosts: tuple[str, ...] = ()
    if c.role == "launcher" and (len(inv.nodes) > 1 or per_rank):
        role, hosts = "launch", inv.nodes
    shm = getattr(settings, "shm_size", None)
    return out.command(c, role=role, hosts=hosts, shm_size=shm, per_rank=per_rank)


def _scrubbed(ex: Execution, inv: Invocation, res: StepResult) -> StepResult:
    """The values of secret variables (aibench.secret: by name, or marked by the suite or
    inventory) scrubbed from the invocation's raw output (written through them already:
    this catches what a remote copy wrote in pieces), its reason and every process
    record, those a runner added included."""
    secrets = invocation_secrets(ex.secrets, inv)
    processes = tuple(
        dataclasses.replace(
            p, env=secrets.redact_env(p.env), argv=tuple(secrets.scrub(a) for a in p.argv)
        )
        for p in res.processes
    )
    if secrets.values:
        raw = ex.run_dir / "raw" / inv.step
        secrets.scrub_files(raw.glob(f"{inv.label}.r{inv.repeat}.*"))
    return dataclasses.replace(res, reason=secrets.scrub(res.reason), processes=processes)


async def run_invocation(ex: Execution, inv: Invocation) -> StepResult:
    """Run one invocation: setup, servers, client; always stop the servers."""
    for host in {inv.client.host, *(s.host for s in inv.servers)}:
        if host in ex.unreachable:
            return not_run(
                inv,
                f"{host}: unreachable: {ex.unreachable[host]}",
                StepStatus.UNREACHABLE,
                secrets=invocation_secrets(ex.secrets, inv),
            )
    out = _Outcome.of(ex, inv)
    t0 = time.monotonic()
    failed = await _run_setup(out)
    if failed is not None:
        return failed
    servers: list[tuple[ProcessSpec, Any]] = []
    try:
        failed = await _start_servers(out, servers, t0)
        if failed is not None:
            return failed
        node = ex.plan.inventory.node(inv.client.host)
        proc = await ex.executor_for(node).run(
            node,
            _client_command(ex, inv, out),
            out.out_path,
            out.err_path,
        )
    finally:
        await _stop_servers(out, servers)
    out.records[-1] = _record_of(inv.client, out.secrets, proc.exit_code)
    return interpret(inv, proc, out.out_path, out.err_path, out.result, time.monotonic() - t0)


async def _run_setup(out: _Outcome) -> StepResult | None:
    """Run the invocation's setup commands in order; the result of the first that fails."""
    for i, spec in enumerate(out.inv.setup):
        node = out.ex.plan.inventory.node(spec.host)
        r = await out.ex.executor_for(node).run(
            node,
            out.command(spec, role="setup"),
            out.raw / f"{out.stem}.setup{i}.stdout",
            out.raw / f"{out.stem}.setup{i}.stderr",
        )
        if r.exit_code != 0:
            status = StepStatus.UNREACHABLE if r.unreachable else StepStatus.FAILED
            err = read_text(out.raw / f"{out.stem}.setup{i}.stderr")
            why = r.reason or tail(err) or f"exit {r.exit_code}"
            return out.result(
                status, f"setup {' '.join(spec.argv)} on {spec.host}: {why}", r.exit_code
            )
    return None


async def _start_servers(
    out: _Outcome, servers: list[tuple[ProcessSpec, Any]], t0: float
) -> StepResult | None:
    """Start the servers, each waited on until ready and added to ``servers`` (which the
    caller stops); the result when one cannot be started."""
    for spec in out.inv.servers:
        node = out.ex.plan.inventory.node(spec.host)
        s_out = out.raw / f"{out.stem}.server-{spec.host}.stdout"
        s_err = out.raw / f"{out.stem}.server-{spec.host}.stderr"
        try:
            server = await out.ex.executor_for(node).start(
                node,
                out.command(spec),
                s_out,
                s_err,
                spec.ready or ReadyCheck(timeout=5.0),
            )
        except ServerNotReady as exc:
            why = tail(read_text(s_err)) or tail(read_text(s_out))
            return out.result(
                StepStatus.FAILED,
                f"server {spec.argv[0]} on {spec.host} not ready: {exc}"
                + (f" ({why})" if why else ""),
                duration=time.monotonic() - t0,
            )
        except NodeUnreachable as exc:
            return out.result(StepStatus.UNREACHABLE, f"{spec.host}: unreachable: {exc}")
        servers.append((spec, server))
    return None


async def _stop_servers(out: _Outcome, servers: list[tuple[ProcessSpec, Any]]) -> None:
    """Stop every started server (also when the run is cancelled) and record its exit code."""
    codes = []
    for _spec, server in servers:
        codes.append(await asyncio.shield(server.stop()))
    for k, (spec, _s) in enumerate(servers):
        idx = len(out.inv.setup) + out.inv.servers.index(spec)
        out.records[idx] = _record_of(spec, out.secrets, codes[k])


async def execute(ex: Execution) -> None:
    """Run every round of the plan that the journal does not already hold (the results:
    ``ex.results()``, read back from the journal)."""
    raw = ex.run_dir / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    raise_open_files()  # a round of 512 pairs keeps 2048 log files open
    await check_nodes(ex)
    await capture_versions(ex, raw)
    limits = ex.plan.limits
    sem = asyncio.Semaphore(max(1, limits.max_parallel or 1))
    net = asyncio.Semaphore(limits.max_network_parallel) if limits.max_network_parallel else None
    total = ex.plan.run_count()

    async def one(index: int, inv: Invocation) -> None:
        async with sem:
            ex.running.add(inv.step_id)
            try:
                if inv.network and net is not None:
                    async with net:
                        res = await run_invocation(ex, inv)
                else:
                    res = await run_invocation(ex, inv)
            finally:
                ex.running.discard(inv.step_id)
        res = _scrubbed(ex, inv, res)
        await ex._record(res, index)
        if ex.progress:
            ex.progress("done", res, ex.finished, total)

    first = 0  # the plan index of the round's first invocation
    for rnd in ex.plan.iter_rounds(ex.results_of):  # each round made when it is its turn
        todo = [
            (first + k, inv) for k, inv in enumerate(rnd.invocations) if inv.step_id not in ex.done
        ]
        first += len(rnd.invocations)
        if not todo:
            continue
        if ex.progress:
            label = f"{rnd.step} round {rnd.round + 1} repeat {rnd.repeat + 1}"
            ex.progress(label, None, ex.finished, total)
        await together(one(k, inv) for k, inv in todo)
