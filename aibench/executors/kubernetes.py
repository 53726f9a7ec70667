"""Kubernetes executor: a step on a node is a Pod pinned to that node (``nodeName``).

Contract:

* **The same argv** as every other executor runs, in the inventory's image, as the only
  container of a Pod bound to the node by ``nodeName`` (no scheduler decision, no
  placement surprise), ``restartPolicy: Never``. The container's command is a fixed
  ``/bin/sh -c`` wrapper that waits for one line on its stdin and then ``exec``\\ s the
  argv unchanged (no inventory or suite value is ever part of a shell string); the image
  needs ``/bin/sh``.
* **Output is streamed** as it comes: the executor attaches to the container (the
  ``attach`` subresource, stdin + stdout + stderr), then releases the wrapper, so
  nothing the tool prints is missed and stdout and stderr reach their own raw files.
* **Exit code and reason** come from the container's terminated state: the exit code,
  and the reason the kubelet gives when it is not a plain exit (``OOMKilled``, or the
  Pod's ``DeadlineExceeded``); a Pod that never starts (image missing, a Secret missing,
  unschedulable resources) ends the step with the kubelet's reason.
* **Timeouts**: the step's timeout is kept here (the Pod is deleted when it passes) and by
  the cluster (``activeDeadlineSeconds`` = timeout + a start-up allowance), so a Pod whose
  aibench died is still ended.
* **Nothing is left behind**: every Pod is deleted when its step ends, when the step is
  cancelled (Ctrl-C) and when a server is stopped. Each run holds a ``Lease``
  (``aibench-run-…``, renewed every 15 s) that owns all its Pods and Secrets: ``close``
  deletes it, and the garbage collector removes whatever it owned. A run that was killed
  leaves a Lease that is no longer renewed (or whose holder process is gone); the next
  run in the namespace deletes it and its Pods before it starts.
* **Secrets** never appear in a Pod spec or argv: a variable the inventory maps to a
  Secret key (``secret_env``) is a ``secretKeyRef``; a step variable that is secret
  (aibench.secret: a name like ``*_TOKEN``, ``*PASSWORD``..., or one the suite marks in
  ``settings.secret_env``) is put into a Secret of the run, owned by the Lease, and
  referenced the same way.
* **Per role** (:attr:`Command.role`): only ``work`` Pods get the inventory's devices
  (kubernetes_spec.py); ``preflight``, ``probe`` and ``setup`` commands without a secret
  run one at a time through ``exec`` in one batch Pod per node, each with its own output
  files and exit code (the exec stream's status).
* **Watched, not polled**: one watch per run of its Pods (kubernetes_watch.py) wakes the
  steps waiting on a Pod's start or exit; if it breaks for good each waiting step reads
  its Pod every 2 s. A Lease that cannot be renewed for 45 s stops the run cleanly: its
  Pods are deleted and every later step is unreachable with that reason. Expiry of a
  killed run's Lease is judged by the API server's clock (its ``Date`` header).
* **Unreachable**: the API server not answering, or the node missing or not ``Ready``,
  gives ``ProcResult(unreachable=True)`` (``NodeUnreachable`` from ``start``).

Uses the official ``kubernetes`` Python client (the ``kubernetes`` extra); its blocking
calls run in worker threads. Tested with client 37 against Kubernetes 1.20.2 (kubelet with
containerd 1.6).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import os
import re
import secrets
import socket
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from aibench.envnames import check_env_names
from aibench.executors.base import (
    Command,
    NodeUnreachable,
    ProcResult,
    ReadyCheck,
    ServerNotReady,
)
from aibench.executors.kubernetes_mpi import hosts_not_in
from aibench.executors.kubernetes_mpi import slots_of as _slots_of
from aibench.executors.kubernetes_spec import (
    MANAGED,
    RUN_LABEL,
    batch_manifest,
    exec_argv,
    pod_manifest,
    secret_env_of,
    secret_manifest,
)
from aibench.executors.kubernetes_watch import (
    SLOW_POLL_S,
    WATCH_S,
    PodWatch,
    ServerClock,
    WatchGone,
    lease_expired,
)
from aibench.executors.local import result_maker, wait_ready
from aibench.executors.logfile import write_log
from aibench.instants import iso
from aibench.kubeapi import api_client, api_error, pod_security_refusal
from aibench.secret import ScrubbingWriter

if TYPE_CHECKING:
    from aibench.executors.kubernetes_mpi import Rank
    from aibench.executors.kubernetes_mpijob import MpiJobLaunch
    from aibench.inventory import KubernetesSettings, Node

LEASE_S = 60  # a run's Lease expires this long after its last renewal
RENEW_S = 15.0
START_ALLOWANCE_S = 30  # activeDeadlineSeconds beyond the step's own timeout
# Pods that last the whole run (the sampler's, the batch Pods) end this long after the plan's
# estimate times RUN_MARGIN; without an estimate, after UNPLANNED_S
RUN_MARGIN = 1.5
RUN_SLACK_S = 1800
UNPLANNED_S = 6 * 3600
BATCHED = ("preflight", "probe", "setup")  # roles run in the node's batch Pod
# Waiting reasons after which a container will not start by waiting longer.
FATAL_WAITING = {
    "ErrImageNeverPull",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
    "ErrImagePull",
    "ImagePullBackOff",
    "RunContainerError",
}
_DNS = re.compile(r"[^a-z0-9-]+")


def _client(settings: KubernetesSettings) -> Any:
    return api_client(settings.kubeconfig, settings.context)


def pod_name(run: str, seq: int, argv0: str) -> str:
    tool = _DNS.sub("-", os.path.basename(argv0).lower()).strip("-")[:20] or "step"
    return f"{run}-{seq:04d}-{tool}".rstrip("-")


@dataclass
class _Attached:
    """The attach stream of a running container, copied into files as the data comes,
    through the scrubber of the step's secret values."""

    ws: Any
    out: ScrubbingWriter
    err: ScrubbingWriter
    tail: bytearray = field(default_factory=bytearray)
    write_error: OSError | None = None
    release: bool = True  # an attached step's wrapper waits for a line on stdin

    def pump(self, stop: threading.Event) -> None:
        """Copy stdout and stderr until the container's streams end (thread body)."""
        if self.release:
            self.ws.write_stdin("go\n")
        while self.ws.is_open() and not stop.is_set():
            self.ws.update(timeout=0.5)
            self._take()
        self._take()
        for f in (self.out, self.err):  # what the scrubber held back
            with contextlib.suppress(OSError, ValueError):
                f.finish()

    def _take(self) -> None:
        from kubernetes.stream.ws_client import STDERR_CHANNEL, STDOUT_CHANNEL

        for channel, f in ((STDOUT_CHANNEL, self.out), (STDERR_CHANNEL, self.err)):
            data = self.ws.read_channel(channel)
            if data:
                raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
                if channel == STDERR_CHANNEL:
                    self.tail = (self.tail + raw)[-2048:]
                self.write_error = write_log(f, raw, self.write_error)


@dataclass
class _BatchPod:
    """A node's batch Pod: batched commands run in it one at a time."""

    name: str
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    started: bool = False


class KubernetesExecutor:
    """Runs every step of a run's Kubernetes nodes as Pods; one per inventory."""

    name = "kubernetes"

    def __init__(
        self,
        settings: KubernetesSettings,
        kill_grace: int = 3,
        expected_s: float | None = None,
        nodes: Mapping[str, Node] | None = None,
    ) -> None:
        self.settings = settings
        self.nodes = dict(nodes or {})  # name -> Node: the workers of a launch
        self.kill_grace = kill_grace
        self.expected_s = expected_s
        self.run_id = f"aibench-{datetime.now(UTC):%m%d%H%M}-{secrets.token_hex(3)}"
        self._api: Any = None
        self._lease_uid: str | None = None
        self._seq = 0
        self._lock = asyncio.Lock()
        self._renewer: asyncio.Task[None] | None = None
        self._pods: set[str] = set()
        self._batch_pods: dict[str, _BatchPod] = {}  # node name -> its batch Pod
        self._swept = False
        self._watch: PodWatch | None = None
        self.clock = ServerClock()  # the API server's time (Date headers)
        self.lease_lost = ""  # why the run's Lease could not be kept; then nothing runs
        # blocking API calls run here, not in the loop's default pool (a few threads on a
        # small machine, which long calls could fill)
        self._pool = ThreadPoolExecutor(max_workers=32, thread_name_prefix="aibench-k8s")

    async def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(fn, *args, **kwargs))

    # ------------------------------------------------------------------ the run's Lease

    def _core(self) -> Any:
        from kubernetes import client

        if self._api is None:
            self._api = _client(self.settings)
        return client.CoreV1Api(self._api)

    def _coord(self) -> Any:
        from kubernetes import client

        self._core()
        return client.CoordinationV1Api(self._api)

    async def _sweep_once(self) -> None:
        """Remove what killed runs left in the namespace, once per run (before its first
        Pod, or when the nodes are checked)."""
        if not self._swept:
            self._swept = True
            await self._call(sweep_stale, self._core(), self._coord(), self.settings, self.clock)

    async def _ensure_lease(self) -> str:
        async with self._lock:
            if self._lease_uid is None:
                await self._sweep_once()
                self._lease_uid = await self._call(self._create_lease)
                self._renewer = asyncio.ensure_future(self._renew())
                self._start_watch()
            return self._lease_uid

    def _create_lease(self) -> str:
        from kubernetes import client

        now = self.clock.now()
        body = client.V1Lease(
            metadata=client.V1ObjectMeta(
                name=self.run_id, labels={**MANAGED, RUN_LABEL: self.run_id}
            ),
            spec=client.V1LeaseSpec(
                holder_identity=holder_identity(),
                lease_duration_seconds=LEASE_S,
                acquire_time=now,
                renew_time=now,
            ),
        )
        lease = self._coord().create_namespaced_lease(
            self.settings.namespace, body, _request_timeout=30
        )
        return str(lease.metadata.uid)

    async def _renew(self) -> None:
        """Renew the run's Lease every RENEW_S; when it cannot be renewed for longer than
        the Lease lasts minus one period, the run stops cleanly: ``lease_lost`` says why,
        the Pods still running are deleted and no new one is made."""
        last_ok = time.monotonic()
        while True:
            await asyncio.sleep(RENEW_S)
            renewed = iso(self.clock.now(), "microseconds")
            try:
                _, _, headers = await self._call(
                    self._coord().patch_namespaced_lease_with_http_info,
                    self.run_id,
                    self.settings.namespace,
                    {"spec": {"renewTime": renewed}},
                    _request_timeout=10,
                )
            except Exception as exc:
                late = time.monotonic() - last_ok
                gone = getattr(exc, "status", None) == 404  # deleted (by another run's sweep)
                if late < LEASE_S - RENEW_S and not gone:
                    continue
                self.lease_lost = (f"the run's Lease {self.run_id} was not renewed for "
                                   f"{late:.0f} s: {api_error(exc)}")  # fmt: skip
                await self._stop_pods()
                return
            self.clock.saw(headers)
            last_ok = time.monotonic()

    async def _stop_pods(self) -> None:
        for name in list(self._pods):
            await self._delete(name)
        self._batch_pods.clear()

    def _start_watch(self) -> None:
        """One watch of the run's Pods (their phases and container states)."""
        loop = asyncio.get_running_loop()
        self._watch = PodWatch(loop, self._list_pods, self._pod_events)
        threading.Thread(target=self._watch.run, name="aibench-k8s-watch", daemon=True).start()

    def _list_pods(self) -> tuple[list[Any], str]:
        pods = self._core().list_namespaced_pod(
            self.settings.namespace, label_selector=f"{RUN_LABEL}={self.run_id}",
            _request_timeout=30,
        )  # fmt: skip
        return list(pods.items), str(pods.metadata.resource_version)

    def _pod_events(self, version: str) -> Any:
        from kubernetes import watch
        from kubernetes.client.exceptions import ApiException

        watcher: Any = watch.Watch()  # type: ignore[no-untyped-call]
        try:
            yield from watcher.stream(
                self._core().list_namespaced_pod,
                self.settings.namespace,
                label_selector=f"{RUN_LABEL}={self.run_id}",
                resource_version=version,
                timeout_seconds=WATCH_S,
                _request_timeout=WATCH_S + 30,
            )
        except ApiException as exc:
            if exc.status == 410:
                raise WatchGone() from None
            raise

    def _changes(self, name: str) -> asyncio.Event | None:
        """The event the watch sets on the next change of Pod ``name``, cleared; None
        when there is no watch (or it broke): then the Pod is read every SLOW_POLL_S."""
        w = self._watch
        if w is None or w.broken is not None:
            return None
        ev = w.event(name)
        ev.clear()
        return ev

    async def _latest(self, name: str) -> Any:
        """The Pod as last seen by the watch, or read when the watch has not seen it."""
        w = self._watch
        if w is not None and w.broken is None and name in w.pods:
            return w.pods[name]
        core = self._core()
        return await self._call(
            core.read_namespaced_pod, name, self.settings.namespace, _request_timeout=20
        )

    @staticmethod
    async def _next_change(ev: asyncio.Event | None, deadline: float) -> None:
        left = max(0.0, deadline - time.monotonic())
        if ev is None:
            await asyncio.sleep(min(SLOW_POLL_S, left))
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ev.wait(), min(left, 10.0))

    def _owner(self) -> list[dict[str, Any]]:
        return [
            {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "name": self.run_id,
                "uid": self._lease_uid,
            }
        ]

    # ------------------------------------------------------------------ nodes

    async def check(self, node: Node) -> str | None:
        if self.lease_lost:
            return self.lease_lost
        try:
            async with self._lock:
                await self._sweep_once()
            n = await self._call(self._core().read_node, node.name, _request_timeout=20)
        except Exception as exc:
            return f"{node.name}: {api_error(exc)}"
        for cond in n.status.conditions or []:
            if cond.type == "Ready":
                if cond.status == "True":
                    return None
                return f"{node.name}: node not Ready ({cond.reason or cond.status})"
        return f"{node.name}: node has no Ready condition"

    # ------------------------------------------------------------------ pods

    def run_deadline(self) -> int:
        """activeDeadlineSeconds of the Pods that last the whole run: the plan's estimate
        with a margin."""
        if self.expected_s is None:
            return UNPLANNED_S
        return int(self.expected_s * RUN_MARGIN) + RUN_SLACK_S

    def deadline(self, cmd: Command) -> int:
        """activeDeadlineSeconds of a command's Pod: its timeout and a start-up allowance,
        at most the run's deadline for the sampler (which runs until stopped)."""
        own = int(cmd.timeout) + START_ALLOWANCE_S
        return min(own, self.run_deadline()) if cmd.role == "sampler" else own

    async def _create_pod(self, node: Node, cmd: Command) -> str:
        check_env_names(cmd.env)
        await self._ensure_lease()
        self._seq += 1
        name = pod_name(self.run_id, self._seq, cmd.argv[0])
        ns = self.settings.namespace
        secret_env = secret_env_of(cmd)  # by name and marked: aibench.secret
        if secret_env:
            body = secret_manifest(name, self.run_id, secret_env, self._owner())
            await self._call(self._core().create_namespaced_secret, ns, body, _request_timeout=30)
        manifest = pod_manifest(
            name, node, cmd, self.settings, self.run_id, self._owner(), secret_env,
            deadline=self.deadline(cmd),
        )  # fmt: skip
        await self._submit(name, manifest)
        return name

    async def _submit(self, name: str, manifest: dict[str, Any]) -> None:
        self._pods.add(name)
        try:
            await self._call(
                self._core().create_namespaced_pod,
                self.settings.namespace,
                manifest,
                _request_timeout=30,
            )
        except BaseException:
            self._pods.discard(name)
            raise

    async def _delete(self, name: str) -> None:
        """Delete a Pod (and the Secret of the same name, if any); never raises."""
        from kubernetes.client import V1DeleteOptions

        core = self._core()
        ns = self.settings.namespace
        opts = V1DeleteOptions(grace_period_seconds=self.kill_grace)
        for call in (core.delete_namespaced_pod, core.delete_namespaced_secret):
            with contextlib.suppress(Exception):
                await self._call(call, name, ns, body=opts, _request_timeout=20)
        self._pods.discard(name)
        if self._watch is not None:
            self._watch.forget(name)

    async def _wait_started(self, name: str, deadline: float) -> str | None:
        """Wait until the container runs (None) or cannot (the reason), woken by the
        watch."""
        while time.monotonic() < deadline:
            ev = self._changes(name)
            pod = await self._latest(name)
            state = _container_state(pod)
            if state is not None and (state.running or state.terminated):
                return None
            why = _not_starting(pod, state)
            if why:
                return why
            await self._next_change(ev, deadline)
        return "timeout"

    async def _attach(self, name: str, out: ScrubbingWriter, err: ScrubbingWriter) -> _Attached:
        return _Attached(await self._open_stream(name), out, err)

    async def _open_stream(
        self, name: str, command: list[str] | None = None, stdin: bool = True
    ) -> Any:
        """A websocket to the container: ``attach``, or ``exec`` of ``command``."""
        from kubernetes import client
        from kubernetes.stream import stream

        # stream() swaps the transport of the ApiClient it is given while it connects: a
        # client of its own, so that the other threads' calls are not sent over websockets
        self._core()
        core = client.CoreV1Api(client.ApiClient(self._api.configuration))
        call: Any = core.connect_get_namespaced_pod_attach
        extra: dict[str, Any] = {}
        if command is not None:
            call, extra = core.connect_get_namespaced_pod_exec, {"command": command}
        return await self._call(
            stream,
            call,
            name,
            self.settings.namespace,
            container="step",
            stdin=stdin,
            stdout=True,
            stderr=True,
            tty=False,
            _preload_content=False,
            binary=True,
            **extra,
        )

    async def _terminated(self, name: str, wait: float) -> tuple[int | None, str]:
        """The container's exit code and reason, once the kubelet reports them."""
        deadline = time.monotonic() + wait
        while True:
            ev = self._changes(name)
            pod = await self._latest(name)
            state = _container_state(pod)
            if state is not None and state.terminated is not None:
                return exit_and_reason(pod, state.terminated)
            if pod.status.reason == "DeadlineExceeded":
                return None, f"DeadlineExceeded: {pod.status.message or 'pod deadline passed'}"
            if time.monotonic() > deadline:
                return None, "the kubelet reported no exit status"
            await self._next_change(ev, deadline)

    async def run(self, node: Node, cmd: Command, stdout: Path, stderr: Path) -> ProcResult:
        result = result_maker()
        stdout.parent.mkdir(parents=True, exist_ok=True)
        if self.lease_lost:
            stdout.touch()
            stderr.touch()
            return result(unreachable=True, reason=self.lease_lost)
        if cmd.role in BATCHED and not secret_env_of(cmd):
            return await self._run_batched(node, cmd, stdout, stderr, result)
        if cmd.role == "launch" and self.settings.mpi_launch in ("ssh", "mpijob"):
            with stdout.open("wb") as out, stderr.open("wb") as err:
                launch = self._launch(node, cmd)
                try:
                    return await launch.run((out, err), result)
                finally:
                    await asyncio.shield(launch.remove())
        with stdout.open("wb") as out, stderr.open("wb") as err:
            try:
                name = await self._create_pod(node, cmd)
            except Exception as exc:
                return self._not_created(node, exc, result)
            try:
                return await self._run_pod(node, name, cmd, out, err, result)
            except asyncio.CancelledError:
                await asyncio.shield(self._delete(name))
                raise
            finally:
                await asyncio.shield(self._delete(name))

    def _launch(self, node: Node, cmd: Command) -> _Launch | MpiJobLaunch:
        if self.settings.mpi_launch == "mpijob":
            from aibench.executors.kubernetes_mpijob import MpiJobLaunch

            self._seq += 1
            return MpiJobLaunch(self, node, cmd, pod_name(self.run_id, self._seq, "mpijob"))
        return _Launch(self, node, cmd)

    def _not_created(
        self, node: Node, exc: Exception, result: Callable[..., ProcResult]
    ) -> ProcResult:
        """A Pod the API server did not take: refused by Pod Security admission (a
        failure with the fix), else the API unreachable or refusing (the node is
        unreachable)."""
        refused = pod_security_refusal(exc, self.settings.namespace)
        if refused:
            return result(reason=f"{node.name}: {refused}")
        return result(unreachable=True, reason=f"{node.name}: {api_error(exc)}")

    async def _run_pod(
        self,
        node: Node,
        name: str,
        cmd: Command,
        out: IO[bytes],
        err: IO[bytes],
        result: Callable[..., ProcResult],
    ) -> ProcResult:
        t0 = time.monotonic()
        try:
            why = await self._wait_started(name, t0 + cmd.timeout)
        except Exception as exc:
            return result(unreachable=True, reason=f"{node.name}: {api_error(exc)}")
        if why == "timeout":
            return result(timed_out=True, reason=f"timed out after {cmd.timeout:g} s; "
                          f"pod {name} never started on {node.name}; pod deleted")  # fmt: skip
        if why:
            return result(reason=f"pod {name} on {node.name}: {why}")
        attached = await self._attach(name, cmd.secrets.writer(out), cmd.secrets.writer(err))
        stop = threading.Event()
        pump = in_thread(attached.pump, stop)
        left = max(0.0, cmd.timeout - (time.monotonic() - t0))
        try:
            await asyncio.wait_for(asyncio.shield(pump), left)
        except TimeoutError:
            stop.set()
            code, reason = await self._terminated(name, 0.0)
            if reason.startswith("DeadlineExceeded"):
                return result(timed_out=True, reason=reason)
            return result(timed_out=True, reason=f"timed out after {cmd.timeout:g} s; "
                          f"pod {name} deleted")  # fmt: skip
        finally:
            await _end_pump(attached, pump, stop)
        if attached.write_error is not None:
            raise attached.write_error
        code, reason = await self._terminated(name, 30.0)
        if code is None:
            return result(reason=f"pod {name} on {node.name}: {reason}")
        return result(exit_code=code, reason=reason)

    # ------------------------------------------------------------------ batch Pods

    async def _run_batched(
        self,
        node: Node,
        cmd: Command,
        stdout: Path,
        stderr: Path,
        result: Callable[..., ProcResult],
    ) -> ProcResult:
        """Run a preflight, probe or setup command in the node's batch Pod, after the
        ones before it: one Pod per node instead of one per command."""
        batch = self._batch_pods.get(node.name)
        if batch is None:
            self._seq += 1
            batch = self._batch_pods[node.name] = _BatchPod(
                pod_name(self.run_id, self._seq, "node")
            )
        t0 = time.monotonic()
        async with batch.lock:
            try:
                why = await self._batch_pod_ready(node, batch, t0 + cmd.timeout)
            except Exception as exc:
                return self._not_created(node, exc, result)
            if why == "timeout":
                return result(timed_out=True, reason=f"timed out after {cmd.timeout:g} s; "
                              f"pod {batch.name} never started on {node.name}")  # fmt: skip
            if why:
                return result(reason=f"pod {batch.name} on {node.name}: {why}")
            with stdout.open("wb") as out, stderr.open("wb") as err:
                try:
                    return await self._exec(node, batch, cmd, (out, err), result)
                except asyncio.CancelledError:
                    await asyncio.shield(self._drop_batch_pod(node.name))
                    raise

    async def _batch_pod_ready(self, node: Node, batch: _BatchPod, deadline: float) -> str | None:
        """Create the node's batch Pod if needed and wait until it runs (None) or cannot."""
        if batch.started:
            return None
        await self._ensure_lease()
        manifest = batch_manifest(
            batch.name, node, self.settings, self.run_id, self._owner(), self.run_deadline()
        )
        await self._submit(batch.name, manifest)
        why = await self._wait_started(batch.name, deadline)
        if why:
            await self._drop_batch_pod(node.name)
            return why
        batch.started = True
        return None

    async def _drop_batch_pod(self, node_name: str) -> None:
        """Delete a node's batch Pod (a command in it outlived its timeout, or it is
        gone); the next batched command starts a new one."""
        batch = self._batch_pods.pop(node_name, None)
        if batch is not None:
            await self._delete(batch.name)

    async def _exec(
        self,
        node: Node,
        batch: _BatchPod,
        cmd: Command,
        files: tuple[IO[bytes], IO[bytes]],
        result: Callable[..., ProcResult],
    ) -> ProcResult:
        t0 = time.monotonic()
        try:
            ws = await self._open_stream(batch.name, command=exec_argv(cmd), stdin=False)
        except Exception as exc:
            await self._drop_batch_pod(node.name)
            return result(reason=f"pod {batch.name} on {node.name}: exec: {api_error(exc)}")
        out, err = (cmd.secrets.writer(f) for f in files)  # scrubbed as written, as attached
        attached = _Attached(ws, out, err, release=False)
        stop = threading.Event()
        pump = in_thread(attached.pump, stop)
        left = max(0.0, cmd.timeout - (time.monotonic() - t0))
        try:
            await asyncio.wait_for(asyncio.shield(pump), left)
        except TimeoutError:
            await self._drop_batch_pod(node.name)
            return result(timed_out=True, reason=f"timed out after {cmd.timeout:g} s; "
                          f"pod {batch.name} deleted")  # fmt: skip
        finally:
            await _end_pump(attached, pump, stop)
        if attached.write_error is not None:
            raise attached.write_error
        from kubernetes.stream.ws_client import ERROR_CHANNEL

        code, why = exec_status(ws.read_channel(ERROR_CHANNEL))
        return result(exit_code=code, reason=why)

    async def start(
        self, node: Node, cmd: Command, stdout: Path, stderr: Path, ready: ReadyCheck
    ) -> KubernetesServer:
        stdout.parent.mkdir(parents=True, exist_ok=True)
        if self.lease_lost:
            raise NodeUnreachable(self.lease_lost)
        try:
            name = await self._create_pod(node, cmd)
        except Exception as exc:
            refused = pod_security_refusal(exc, self.settings.namespace)
            if refused:
                raise ServerNotReady(f"{node.name}: {refused}") from None
            raise NodeUnreachable(f"{node.name}: {api_error(exc)}") from None
        out, err = cmd.secrets.writer(stdout.open("wb")), cmd.secrets.writer(stderr.open("wb"))
        server = KubernetesServer(self, name, out, err)
        try:
            why = await self._wait_started(name, time.monotonic() + cmd.timeout)
            if why:
                raise ServerNotReady(f"pod {name} on {node.name}: {why}")
            await server.attach()
            await wait_ready(ready, alive=lambda: server.alive, output=stdout, host=node.host)
        except BaseException:
            await server.stop()
            raise
        return server

    async def close(self) -> None:
        """Delete every Pod still here and the run's Lease (which owns its Secrets)."""
        if self._renewer is not None:
            self._renewer.cancel()
        if self._watch is not None:
            self._watch.stop.set()
        for name in list(self._pods):
            await self._delete(name)
        if self._lease_uid is not None:
            from kubernetes.client import V1DeleteOptions

            with contextlib.suppress(Exception):
                await self._call(
                    self._coord().delete_namespaced_lease,
                    self.run_id,
                    self.settings.namespace,
                    body=V1DeleteOptions(propagation_policy="Background"),
                    _request_timeout=20,
                )
            self._lease_uid = None
        if self._api is not None:
            with contextlib.suppress(Exception):
                self._api.close()
            self._api = None
        self._pool.shutdown(wait=False)


class KubernetesServer:
    """A background Pod (an iperf3 server); ``stop`` deletes it."""

    def __init__(
        self, ex: KubernetesExecutor, name: str, out: ScrubbingWriter, err: ScrubbingWriter
    ):
        self._ex = ex
        self.name = name
        self._files = (out, err)
        self._stop = threading.Event()
        self._pump: asyncio.Future[None] | None = None
        self._attached: _Attached | None = None
        self._code: int | None = None
        self._stopped = False

    async def attach(self) -> None:
        self._attached = await self._ex._attach(self.name, *self._files)
        self._pump = in_thread(self._attached.pump, self._stop)

    @property
    def alive(self) -> bool:
        return self._pump is not None and not self._pump.done()

    async def stop(self) -> int | None:
        if self._stopped:
            return self._code
        self._stopped = True
        try:
            await self._ex._delete(self.name)
            self._stop.set()
            if self._pump is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self._pump, 5.0)
            if self._attached is not None:
                with contextlib.suppress(Exception):
                    self._attached.ws.close()
        finally:
            for f in self._files:
                f.close()
        return self._code


class _Launch:
    """One mpirun launch across nodes (kubernetes_mpi.py): a Secret with its keys, a
    ConfigMap with its hostfile, a worker Pod on each node but the launcher's, then the
    launcher Pod, whose output and exit code are the step's; a worker that ended early
    (or is gone) is named with its reason. ``remove`` deletes them all."""

    def __init__(self, ex: KubernetesExecutor, node: Node, cmd: Command) -> None:
        ex._seq += 1
        self.ex, self.node, self.cmd = ex, node, cmd
        self.base = pod_name(ex.run_id, ex._seq, "mpi")
        self.workers: list[tuple[str, Node]] = []
        self.made: list[tuple[str, str]] = []  # (kind, name) of the Secret and ConfigMap
        self.ranks: list[Rank] = []  # a Pod per rank (cmd.per_rank): the workers

    async def run(
        self, files: tuple[IO[bytes], IO[bytes]], result: Callable[..., ProcResult]
    ) -> ProcResult:
        ex, t0 = self.ex, time.monotonic()
        unknown = hosts_not_in(self.cmd, ex.nodes)
        if unknown:
            return result(reason=unknown)
        try:
            await self._prepare()
            for name, worker in self.workers:
                why = await ex._wait_started(name, t0 + self.cmd.timeout)
                if why:
                    return result(timed_out=why == "timeout",
                                  reason=f"worker pod {name} on {worker.name}: {why}")  # fmt: skip
            launcher = f"{self.base}-launcher"
            await self._launcher(launcher)
        except Exception as exc:
            return ex._not_created(self.node, exc, result)
        res = await ex._run_pod(self.node, launcher, self.cmd, *files, result)
        if res.exit_code != 0:
            ended = await self._workers_ended()
            if ended:
                reason = "; ".join(x for x in (res.reason, *ended) if x)
                res = dataclasses.replace(res, reason=reason)
        return res

    async def _prepare(self) -> None:
        from aibench.executors.kubernetes_mpi import (
            Keys,
            hostfile_configmap,
            keys_secret,
            rank_pods,
            ssh_config,
        )

        ex, ns = self.ex, self.ex.settings.namespace
        await ex._ensure_lease()
        core, owner = ex._core(), ex._owner()
        nodes = [ex.nodes[h] for h in self.cmd.hosts]
        slots = _slots_of(self.cmd.argv)
        secret, hosts = f"{self.base}-ssh", f"{self.base}-hosts"
        keys = await ex._call(Keys.generate)
        self.made.append(("secret", secret))
        body = keys_secret(secret, ex.run_id, keys, owner)
        await ex._call(core.create_namespaced_secret, ns, body, _request_timeout=30)
        self.made.append(("config_map", hosts))
        table = [(n.host, slots.get(n.host, 1)) for n in nodes]
        config = None
        if self.cmd.per_rank:
            self.ranks = rank_pods(self.base, nodes, slots, ex.settings.mpi_ssh_port)
            table, config = [(r.name, 1) for r in self.ranks], ssh_config(self.ranks)
        body = hostfile_configmap(hosts, ex.run_id, table, owner, config)
        await ex._call(core.create_namespaced_config_map, ns, body, _request_timeout=30)
        await self._workers(nodes, slots, secret, hosts)

    async def _workers(
        self, nodes: list[Node], slots: dict[str, int], secret: str, hosts: str
    ) -> None:
        """A worker Pod on each node but the launcher's, or one per rank on every node."""
        from aibench.executors.kubernetes_mpi import share, worker_manifest

        ex = self.ex
        pods: list[tuple[str, Node, tuple[int, Any] | None]] = [
            (f"{self.base}-w{i}", n, None) for i, n in enumerate(nodes) if n.name != self.node.name
        ]  # its node's ranks: mpirun starts them itself
        if self.cmd.per_rank:
            pods = [(r.name, r.node, (r.port, share(ex.settings.resources,
                                                    slots.get(r.node.host, 1))))
                    for r in self.ranks]  # fmt: skip
        for name, worker, rank in pods:
            self.workers.append((name, worker))
            manifest = worker_manifest(name, worker, ex.settings, ex.run_id, ex._owner(),
                                       ex.deadline(self.cmd), secret, hosts,
                                       self.cmd.shm_size, rank)  # fmt: skip
            await ex._submit(name, manifest)

    async def _launcher(self, name: str) -> None:
        from aibench.executors.kubernetes_mpi import launcher_manifest, per_rank_argv

        ex, cmd = self.ex, self.cmd
        secret_env = secret_env_of(cmd)
        if secret_env:
            body = secret_manifest(name, ex.run_id, secret_env, ex._owner())
            await ex._call(ex._core().create_namespaced_secret, ex.settings.namespace, body,
                           _request_timeout=30)  # fmt: skip
        if cmd.per_rank:
            cmd = dataclasses.replace(cmd, argv=per_rank_argv(cmd.argv, self.ranks))
        manifest = launcher_manifest(name, self.node, cmd, ex.settings, ex.run_id, ex._owner(),
                                     secret_env, ex.deadline(cmd), f"{self.base}-ssh",
                                     f"{self.base}-hosts", cmd.per_rank)  # fmt: skip
        await ex._submit(name, manifest)

    async def _workers_ended(self) -> list[str]:
        """The workers whose container ended or whose Pod is gone, with the reason."""
        out = []
        for name, worker in self.workers:
            try:
                pod = await self.ex._latest(name)
            except Exception as exc:
                gone = getattr(exc, "status", None) == 404
                why = "deleted (the Pod is gone)" if gone else api_error(exc)
                out.append(f"worker pod {name} on {worker.name}: {why}")
                continue
            state = _container_state(pod)
            if pod.metadata.deletion_timestamp is not None:
                out.append(f"worker pod {name} on {worker.name}: deleted")
            elif state is not None and state.terminated is not None:
                code, why = exit_and_reason(pod, state.terminated)
                out.append(f"worker pod {name} on {worker.name}: " + (why or f"exit {code}"))
        return out

    async def remove(self) -> None:
        from kubernetes.client import V1DeleteOptions

        ex = self.ex
        for name, _ in self.workers:
            await ex._delete(name)
        await ex._delete(f"{self.base}-launcher")
        opts = V1DeleteOptions(grace_period_seconds=0)
        for kind, name in self.made:
            call = getattr(ex._core(), f"delete_namespaced_{kind}")
            with contextlib.suppress(Exception):
                await ex._call(call, name, ex.settings.namespace, body=opts, _request_timeout=20)


def in_thread(fn: Callable[[threading.Event], None], stop: threading.Event) -> asyncio.Future[None]:
    """Run a stream pump in a thread of its own (it lasts as long as its container)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def body() -> None:
        try:
            fn(stop)
        except BaseException as exc:  # handed to the waiting coroutine
            loop.call_soon_threadsafe(_settle, done, exc)
        else:
            loop.call_soon_threadsafe(_settle, done, None)

    threading.Thread(target=body, name="aibench-k8s-stream", daemon=True).start()
    return done


def _settle(fut: asyncio.Future[None], exc: BaseException | None) -> None:
    if fut.done():
        return
    if exc is None:
        fut.set_result(None)
    else:
        fut.set_exception(exc)


async def _end_pump(attached: _Attached, pump: asyncio.Future[None], stop: threading.Event) -> None:
    stop.set()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(asyncio.shield(pump), 5.0)
    with contextlib.suppress(Exception):
        attached.ws.close()


def exec_status(text: str | bytes) -> tuple[int | None, str]:
    """(exit code, reason) from the status an exec stream ends with (a v1 Status on its
    error channel): Success is 0; a NonZeroExitCode names the code in its causes; any
    other failure (the argv's program not found ...) has no exit code and its message."""
    import json

    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not text.strip():
        return None, "the exec stream ended without an exit status"
    try:
        doc = json.loads(text)
    except ValueError:
        return None, f"unreadable exec status: {text.strip()[:200]}"
    if doc.get("status") == "Success":
        return 0, ""
    for cause in (doc.get("details") or {}).get("causes") or []:
        if cause.get("reason") == "ExitCode" and str(cause.get("message", "")).isdigit():
            return int(cause["message"]), ""
    return None, str(doc.get("message") or doc.get("reason") or "exec failed")


def _container_state(pod: Any) -> Any:
    for cs in pod.status.container_statuses or []:
        if cs.name == "step":
            return cs.state
    return None


def _not_starting(pod: Any, state: Any) -> str | None:
    """The reason a Pod will not start by waiting longer, else None."""
    if pod.status.phase in ("Failed", "Succeeded") and state is None:
        return f"{pod.status.reason or pod.status.phase}: {pod.status.message or ''}".strip()
    if state is not None and state.waiting is not None:
        w = state.waiting
        if w.reason in FATAL_WAITING and not _settling(w.message or ""):
            return f"{w.reason}: {w.message or ''}".strip().rstrip(":")
    return None


def _settling(message: str) -> bool:
    """A kubelet still syncing the Secret or ConfigMap the Pod mounts ("failed to sync
    secret cache: timed out waiting for the condition", under load): it retries by itself,
    and the start deadline ends the wait if it never does."""
    return "failed to sync" in message and "cache" in message


def exit_and_reason(pod: Any, term: Any) -> tuple[int | None, str]:
    """(exit code, reason) of a terminated container; the reason is empty for a plain exit."""
    code = term.exit_code
    reason = term.reason or ""
    if pod.status.reason == "DeadlineExceeded":
        return code, f"DeadlineExceeded: {pod.status.message or 'pod deadline passed'}"
    if reason == "OOMKilled":
        return code, f"OOMKilled: the container passed its memory limit (exit {code})"
    if reason in ("Completed", "Error", ""):
        return code, ""
    return code, f"{reason}: {term.message or ''}".strip().rstrip(":")


def holder_identity() -> str:
    """Who holds a run's Lease: host, process id and the process's start time."""
    return f"{socket.gethostname()}/{os.getpid()}/{_start_ticks(os.getpid())}"


def _start_ticks(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "?"
    return stat.rsplit(")", 1)[1].split()[19]


def _holder_gone(identity: str) -> bool:
    """True when the holder ran on this host and its process is gone."""
    host, _, rest = identity.partition("/")
    pid, _, ticks = rest.partition("/")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    return _start_ticks(int(pid)) != ticks


def sweep_stale(
    core: Any, coord: Any, settings: KubernetesSettings, clock: ServerClock | None = None
) -> list[str]:
    """Delete the Leases (and so the Pods and Secrets) of runs that ended without
    cleaning up: expired by the API server's clock (the list's Date header), or held by
    a process of this host that is gone."""
    from kubernetes.client import V1DeleteOptions

    ns = settings.namespace
    selector = ",".join(f"{k}={v}" for k, v in MANAGED.items())
    found, _status, headers = coord.list_namespaced_lease_with_http_info(
        ns, label_selector=selector, _request_timeout=30
    )
    clock = clock or ServerClock()
    clock.saw(headers)
    now = clock.now()
    removed = []
    for lease in found.items:
        spec = lease.spec
        expired = lease_expired(spec, now, LEASE_S)
        if not expired and not _holder_gone(spec.holder_identity or ""):
            continue
        run = lease.metadata.name
        with contextlib.suppress(Exception):
            coord.delete_namespaced_lease(
                run, ns, body=V1DeleteOptions(propagation_policy="Background")
            )
        sel = f"{RUN_LABEL}={run}"
        for kind in ("pod", "secret", "config_map"):
            with contextlib.suppress(Exception):
                getattr(core, f"delete_collection_namespaced_{kind}")(
                    ns, label_selector=sel, grace_period_seconds=0
                )
        removed.append(run)
    return removed
