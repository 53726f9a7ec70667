"""A launch across Kubernetes nodes as an MPIJob (``mpi_launch: mpijob``): the MPI
operator (kubeflow.org/v2beta1) runs it; aibench makes the object
(kubernetes_mpi.mpijob_manifest), owned by the run's Lease, waits for the launcher Pod the
operator creates, reads its log and exit status, and deletes the MPIJob after.

Without the MPIJob resource in the cluster (the API's discovery has no
``kubeflow.org/v2beta1`` ``mpijobs``) the run is refused before any step runs
(:func:`refuse_without_mpijob`), with one line naming the missing
CustomResourceDefinition; a step that still finds it missing (removed meanwhile) fails
before anything is made, with the same line. An MPIJob whose launcher does not appear
within ``mpi_job_start_s`` fails the step with that reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from typing import IO, TYPE_CHECKING, Any

from aibench.errors import UserError
from aibench.executors.kubernetes_mpi import (
    JOB_NAME_LABEL,
    JOB_ROLE_LABEL,
    MPIJOB_CRD,
    MPIJOB_GROUP,
    MPIJOB_PLURAL,
    MPIJOB_VERSION,
    hosts_not_in,
    mpijob_manifest,
    slots_of,
)
from aibench.executors.kubernetes_spec import CONTAINER, secret_env_of, secret_manifest
from aibench.kubeapi import api_client, api_error

if TYPE_CHECKING:
    from aibench.executors.base import Command, ProcResult
    from aibench.inventory import KubernetesSettings, Node

POLL_S = 1.0


def missing_crd(custom: Any) -> str | None:
    """None when the API serves MPIJobs (kubeflow.org/v2beta1), else the one-line reason."""
    from kubernetes.client.exceptions import ApiException

    try:
        found = custom.get_api_resources(MPIJOB_GROUP, MPIJOB_VERSION, _request_timeout=20)
    except ApiException as exc:
        if exc.status != 404:
            raise
        found = None
    names = [r.name for r in getattr(found, "resources", None) or []]
    if MPIJOB_PLURAL in names:
        return None
    return (
        f"mpi_launch: mpijob: the cluster has no MPIJob resource ({MPIJOB_GROUP}/"
        f"{MPIJOB_VERSION}; CustomResourceDefinition {MPIJOB_CRD} not installed): install "
        "the MPI operator, or set mpi_launch: ssh"
    )


def refuse_without_mpijob(launches: Sequence[tuple[str, KubernetesSettings]]) -> None:
    """Before any step runs: one discovery call to each cluster that ``launches`` (step
    name, its settings) make MPIJobs in; a cluster without the resource refuses the run
    with one line (UserError)."""
    asked = set()
    for step, settings in launches:
        where = (settings.kubeconfig, settings.context)
        if where in asked:
            continue
        asked.add(where)
        refused = _asked(*where)
        if refused:
            raise UserError(f"step {step}: {refused}")


def _asked(kubeconfig: str | None, context: str | None) -> str | None:
    """:func:`missing_crd` of one cluster; None as well when it cannot be asked (no
    kubeconfig, the API not answering): the steps meet that and say so, each with its
    reason."""
    from kubernetes.client import CustomObjectsApi

    try:
        api = api_client(kubeconfig, context)
    except Exception:
        return None
    try:
        return missing_crd(CustomObjectsApi(api))
    except Exception:
        return None
    finally:
        api.close()


class MpiJobLaunch:
    """One launch as an MPIJob; ``remove`` deletes it (and so, through the operator's
    ownership, its Pods). ``ex`` is the run's KubernetesExecutor (not imported here: that
    module imports this one)."""

    def __init__(self, ex: Any, node: Node, cmd: Command, name: str) -> None:
        self.ex, self.node, self.cmd, self.name = ex, node, cmd, name
        self.created = False
        self.secret: str | None = None

    def _custom(self) -> Any:
        from kubernetes.client import CustomObjectsApi

        self.ex._core()  # the API client, made once
        return CustomObjectsApi(self.ex._api)

    async def run(
        self, files: tuple[IO[bytes], IO[bytes]], result: Callable[..., ProcResult]
    ) -> ProcResult:
        ex, t0 = self.ex, time.monotonic()
        unknown = hosts_not_in(self.cmd, ex.nodes)
        if unknown:
            return result(reason=unknown)
        try:
            refused = await ex._call(missing_crd, self._custom())
            if refused:
                return result(reason=refused)
            await self._create()
            launcher = await self._launcher_pod(t0 + ex.settings.mpi_job_start_s)
        except Exception as exc:
            done: ProcResult = ex._not_created(self.node, exc, result)
            return done
        if launcher is None:
            wait = ex.settings.mpi_job_start_s
            why = f"MPIJob {self.name} not started within {wait:g} s: is the MPI operator running?"
            return result(reason=why)
        try:
            return await self._follow(launcher, files, result, t0)
        except Exception as exc:  # the launcher Pod gone, the API unreachable
            return result(reason=f"MPIJob {self.name}: launcher pod {launcher}: {api_error(exc)}")

    async def _create(self) -> None:
        ex, cmd = self.ex, self.cmd
        await ex._ensure_lease()
        ns, owner = ex.settings.namespace, ex._owner()
        secret_env = secret_env_of(cmd)
        if secret_env:
            self.secret = f"{self.name}-launcher"
            body = secret_manifest(self.secret, ex.run_id, secret_env, owner)
            await ex._call(ex._core().create_namespaced_secret, ns, body, _request_timeout=30)
        nodes = [ex.nodes[h] for h in cmd.hosts]
        others = [n for n in nodes if n.name != self.node.name] or nodes
        slots = max(slots_of(cmd.argv).values(), default=1)
        body = mpijob_manifest(self.name, self.node, others, cmd, ex.settings, ex.run_id,
                               owner, secret_env, ex.deadline(cmd), slots)  # fmt: skip
        await ex._call(self._custom().create_namespaced_custom_object, MPIJOB_GROUP,
                       MPIJOB_VERSION, ns, MPIJOB_PLURAL, body, _request_timeout=30)  # fmt: skip
        self.created = True

    async def _launcher_pod(self, until: float) -> str | None:
        """The name of the launcher Pod the operator made, or None by ``until``."""
        ex = self.ex
        selector = f"{JOB_NAME_LABEL}={self.name},{JOB_ROLE_LABEL}=launcher"
        while True:
            found = await ex._call(ex._core().list_namespaced_pod, ex.settings.namespace,
                                   label_selector=selector, _request_timeout=20)  # fmt: skip
            if found.items:
                return str(found.items[0].metadata.name)
            if time.monotonic() >= until:
                return None
            await asyncio.sleep(POLL_S)

    async def _follow(
        self,
        pod: str,
        files: tuple[IO[bytes], IO[bytes]],
        result: Callable[..., ProcResult],
        t0: float,
    ) -> ProcResult:
        """Wait for the launcher's container to end (the step's timeout), then its log is
        the step's output and its exit status the step's. The operator's Pods carry the
        template's labels, so the run's watch follows the launcher like any step Pod."""
        ex, core, ns = self.ex, self.ex._core(), self.ex.settings.namespace
        left = max(0.0, self.cmd.timeout - (time.monotonic() - t0))
        code, reason = await ex._terminated(pod, left)
        if code is None and time.monotonic() - t0 >= self.cmd.timeout:
            return result(timed_out=True, reason=f"timed out after {self.cmd.timeout:g} s; "
                          f"MPIJob {self.name} deleted")  # fmt: skip
        log = await ex._call(core.read_namespaced_pod_log, pod, ns, container=CONTAINER,
                             _preload_content=False, _request_timeout=60)  # fmt: skip
        writer = self.cmd.secrets.writer(files[0])
        writer.write(log.data)
        writer.flush()
        return result(exit_code=code, reason=reason)

    async def remove(self) -> None:
        from kubernetes.client import V1DeleteOptions

        ex, ns = self.ex, self.ex.settings.namespace
        opts = V1DeleteOptions(propagation_policy="Background", grace_period_seconds=0)
        if self.created:
            with contextlib.suppress(Exception):
                await ex._call(self._custom().delete_namespaced_custom_object, MPIJOB_GROUP,
                               MPIJOB_VERSION, ns, MPIJOB_PLURAL, self.name, body=opts,
                               _request_timeout=20)  # fmt: skip
        if self.secret:
            with contextlib.suppress(Exception):
                await ex._call(ex._core().delete_namespaced_secret, self.secret, ns,
                               body=opts, _request_timeout=20)  # fmt: skip
