"""Versions of what a run used: each tool's binary and each launcher, once per node.

:func:`version_probes` says what to run for one invocation (the runner's
``version_argv_for(inv)`` or ``version_argv()``, and the launcher's ``--version`` when the
client is mpirun or srun); :func:`aibench.orchestrator.capture_versions` runs each
distinct probe once per node before the first round (read from the rounds of each step in
which every node of it runs: :meth:`aibench.plan.Plan.sample_invocations`) and records
what it found (or why not) on the execution, from where every step and run.json's
environment take it; :func:`version_text` is how a version (or why not) reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from aibench.runners import RUNNERS, Invocation


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


def version_text(found: tuple[str, str]) -> str:
    version, why = found
    return version or (f"absent ({why})" if "not found" in why else f"unknown ({why})")
