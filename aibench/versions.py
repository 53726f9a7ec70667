"""Versions of what a run used: each tool's binary and each launcher, once per node.

:func:`version_probes` says what to run for one invocation (the runner's
``version_argv_for(inv)`` or ``version_argv()``, and the launcher's ``--version`` when the
client is mpirun or srun); :func:`capture_versions` runs each distinct probe once per node
before the first round (read from the rounds of each step in which every node of it
runs: :meth:`aibench.plan.Plan.sample_invocations`) and records what it found (or why
not) on the execution, from where every step and run.json's environment take it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aibench.executors.base import Command
from aibench.runners import RUNNERS, Invocation
from aibench.textio import read_text, tail

if TYPE_CHECKING:
    from aibench.orchestrator import Execution


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
        {p for inv in ex.plan.sample_invocations() for p in version_probes(inv)},
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
        text = read_text(out) + read_text(err)
        version = parser.parse_version(text) if res.exit_code in ok_codes else ""
        if version:
            ex.versions[p] = (version, "")
        else:
            cmd_text = " ".join(p.argv)
            if res.reason:
                why = res.reason
            elif res.exit_code not in ok_codes:
                why = f"{cmd_text}: exit code {res.exit_code}: {tail(text, 1) or 'no output'}"
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
            named.setdefault((p.host, p.name), []).append((p, version_text(ex.versions[p])))
    for (host, name), got in named.items():
        texts = list(dict.fromkeys(t for _, t in got))
        ex.tool_versions.setdefault(host, {})[name] = (
            texts[0] if len(texts) == 1 else "; ".join(f"{t} ({p.argv[0]})" for p, t in got)
        )


def version_text(found: tuple[str, str]) -> str:
    version, why = found
    return version or (f"absent ({why})" if "not found" in why else f"unknown ({why})")
