"""Choosing the executor of a node: ``for_node(node, inventory)``.

``Node.executor`` names it: ``local`` (this machine, :class:`LocalExecutor`), ``ssh``
(:class:`SSHExecutor`), ``slurm`` (:class:`SlurmExecutor`) or ``kubernetes``
(:class:`KubernetesExecutor`: Pods). Every ssh node of one
inventory gets the same SSHExecutor, so its connection pool serves the whole run; the
same holds for slurm (one allocation per run). Call ``close()`` on what you got (once per
distinct executor) at the end of the run.
"""

from __future__ import annotations

from typing import Any

from aibench.errors import UserError
from aibench.executors.base import Executor
from aibench.inventory import Inventory, Node

EXECUTORS = ("local", "ssh", "slurm", "kubernetes")

# id(inventory) -> (inventory, {kind: executor}); the inventory is kept so its id stays valid.
_SHARED: dict[int, tuple[Inventory | None, dict[str, Any]]] = {}
# id(inventory) -> the plan's estimate of the run in seconds (see :func:`expect`)
_EXPECTED: dict[int, float] = {}


def expect(inventory: Inventory, seconds: float) -> None:
    """Tell the executors of ``inventory`` how long the run is planned to take: the
    kubernetes executor sets the deadline of the Pods that last the whole run from it."""
    _EXPECTED[id(inventory)] = seconds


def for_node(node: Node, inventory: Inventory | None = None) -> Executor:
    """The executor that reaches ``node``; shared per inventory and executor kind."""
    kind = node.executor
    if kind not in EXECUTORS:
        raise UserError(
            f"node {node.name}: unknown executor {kind!r}; valid: {', '.join(EXECUTORS)}"
        )
    key = id(inventory)
    _inv, shared = _SHARED.setdefault(key, (inventory, {}))
    ex = shared.get(kind)
    if ex is None:
        ex = _make(kind, inventory)
        shared[kind] = ex
    return ex  # type: ignore[no-any-return]


def _make(kind: str, inventory: Inventory | None) -> Any:
    if kind == "local":
        from aibench.executors.local import LocalExecutor

        return LocalExecutor()
    if kind == "ssh":
        from aibench.executors.policy import ConnectionPolicy
        from aibench.executors.ssh import SSHExecutor

        limits = inventory.limits if inventory is not None else None
        return SSHExecutor(policy=ConnectionPolicy.from_limits(limits) if limits else None)
    if kind == "kubernetes":
        from aibench.executors.kubernetes import KubernetesExecutor

        settings = next((n.kubernetes for n in inventory or () if n.kubernetes), None)
        if settings is None:
            raise UserError("executor kubernetes needs the inventory's kubernetes block")
        expected = _EXPECTED.get(id(inventory)) if inventory is not None else None
        nodes = {n.name: n for n in inventory or ()}
        return KubernetesExecutor(settings, expected_s=expected, nodes=nodes)
    from aibench.executors.slurm import SlurmExecutor

    return SlurmExecutor(inventory)


def forget(inventory: Inventory | None) -> None:
    """Drop the shared executors of ``inventory`` (after they were closed)."""
    _SHARED.pop(id(inventory), None)
    _EXPECTED.pop(id(inventory), None)
