"""The inventory file: its schema (pydantic models, unknown keys forbidden) and
:func:`load_inventory`, which reads a YAML file into the :class:`~aibench.inventory.Inventory`
of :mod:`aibench.inventory` (where the file's format is shown).

Kept apart from the runtime values: a run on this machine alone reads no inventory file
and builds none of these models.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from aibench import envnames
from aibench.config import Strict, read_yaml, validate
from aibench.errors import ConfigError
from aibench.inventory import (
    Inventory,
    KubernetesSettings,
    Limits,
    Node,
    SlurmSettings,
    SSHSettings,
    safe_name,
)

# A label key/value, a user name: the same, without ':'; a path: no shell metacharacters.
_SAFE_WORD = r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$"
_SAFE_PATH = r"^[A-Za-z0-9_./~][A-Za-z0-9_./~+@%=:,\-]*$"
# srun options aibench sets itself; extra_args must not override them.
_SRUN_OWN = (
    "--nodelist",
    "-w",
    "--nodes",
    "-N",
    "--ntasks-per-node",
    "--overlap",
    "--mpi",
    "--time",
    "-t",
    "--jobid",
    "--ntasks",
    "-n",
    "--chdir",
    "-D",
    "--export",
)


# ------------------------------------------------------------------------ file schema

SafeWord = Annotated[str, Field(pattern=_SAFE_WORD, max_length=128)]
SafePath = Annotated[str, Field(pattern=_SAFE_PATH, max_length=4096)]


def _check_host(value: str | None, what: str) -> str | None:
    if value is not None:
        safe_name(value, what)
    return value


class GPUModel(Strict):
    """The accelerators of a node, as the spec expects them."""

    model: str = Field(max_length=128, description="model name, e.g. H100-SXM5-80GB")
    count: Annotated[int, Field(ge=0, le=1024)] = Field(description="accelerators per node")


class HCAModel(Strict):
    """One RDMA adapter port used by perftest and NCCL."""

    name: SafeWord = Field(description="RDMA device name, e.g. mlx5_0")
    netdev: SafeWord | None = Field(None, description="its network interface, e.g. ib0")
    port: Annotated[int, Field(ge=1, le=255)] = Field(1, description="the device's port number")
    gid_index: Annotated[int, Field(ge=0, le=255)] | None = Field(
        None, description="RoCE GID index (perftest -x); none for InfiniBand"
    )
    rate_gbps: Annotated[float, Field(gt=0)] | None = Field(
        None, description="the link's nominal rate in Gbit/s (400 for NDR)"
    )


class SSHModel(Strict):
    """How to reach nodes over SSH; at top level for all nodes, per node to override."""

    user: SafeWord | None = Field(None, description="login user; default: the current user")
    port: Annotated[int, Field(ge=1, le=65535)] | None = Field(None, description="sshd port (22)")
    identity_file: SafePath | None = Field(None, description="private key file")
    known_hosts: SafePath | None = Field(
        None,
        description="known_hosts file; host keys are always checked (default ~/.ssh/known_hosts)",
    )
    jump_host: str | None = Field(
        None, description="a bastion to connect through: host, user@host or user@host:port"
    )
    connect_timeout: Annotated[float, Field(gt=0, le=300)] | None = Field(
        None, description="seconds to connect and authenticate (10)"
    )
    config_file: SafePath | None = Field(
        None, description="an ssh_config for tools that run ssh themselves (mpirun)"
    )

    @field_validator("jump_host")
    @classmethod
    def _jump(cls, v: str | None) -> str | None:
        if v is None:
            return v
        host = v.rsplit("@", 1)[-1]
        user = v.rsplit("@", 1)[0] if "@" in v else None
        if user is not None and not re.match(_SAFE_WORD, user):
            raise ValueError(f"invalid jump_host user {user!r}")
        if re.match(r"^.+:\d{1,5}$", host) and host.count(":") == 1:
            host = host.rsplit(":", 1)[0]
        safe_name(host, "jump_host")
        return v


class SlurmModel(Strict):
    """How to run steps through Slurm; at top level for all nodes."""

    partition: SafeWord | None = Field(None, description="srun/salloc --partition")
    account: SafeWord | None = Field(None, description="srun/salloc --account")
    time_limit_min: Annotated[int, Field(ge=1)] | None = Field(
        None, description="--time for an allocation aibench makes itself (minutes)"
    )
    extra_args: list[str] = Field(
        default_factory=list,
        description="more srun options, each '--name' or '--name=value' "
        "(not the ones aibench sets: --nodelist, -N, --ntasks-per-node, --overlap, "
        "--mpi, --time ...)",
    )

    @field_validator("extra_args")
    @classmethod
    def _extra(cls, v: list[str]) -> list[str]:
        for a in v:
            if not re.match(r"^--[a-z][a-z0-9-]*(=[A-Za-z0-9_.,:/@%+=\-]*)?$", a):
                raise ValueError(f"invalid srun option {a!r}: use --name or --name=value")
            name = a.split("=", 1)[0]
            if name in _SRUN_OWN:
                raise ValueError(f"srun option {name} is set by aibench itself")
        return v

    def settings(self) -> SlurmSettings:
        return SlurmSettings(
            partition=self.partition,
            account=self.account,
            extra_args=tuple(self.extra_args),
            time_limit_min=self.time_limit_min,
        )


_K8S_NAME = r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$"
_K8S_LABEL = r"^([a-z0-9.\-]{1,253}/)?[A-Za-z0-9]([A-Za-z0-9_.\-]{0,61}[A-Za-z0-9])?$"
_K8S_QUANTITY = r"^[0-9]+(\.[0-9]+)?([EPTGMK]i?|[munk]|e[0-9]+)?$"


class SecretRefModel(Strict):
    """A key of a Kubernetes Secret, given to a step's container as a variable."""

    secret: str = Field(pattern=_K8S_NAME, description="the Secret's name (in the namespace)")
    key: str = Field(pattern=r"^[-._a-zA-Z0-9]+$", description="the key within it")


class TolerationModel(Strict):
    """A Pod toleration, as in the Pod spec."""

    key: str | None = Field(None, pattern=_K8S_LABEL)
    operator: Literal["Exists", "Equal"] = "Equal"
    value: str | None = Field(None, max_length=63)
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    tolerationSeconds: int | None = None  # the Pod spec's spelling


class KubernetesModel(Strict):
    """How to run steps on a Kubernetes cluster: each step is a Pod on its node."""

    kubeconfig: SafePath | None = Field(
        None, description="kubeconfig file (default ~/.kube/config; in-cluster when run in a Pod)"
    )
    context: str | None = Field(None, max_length=253, description="kubeconfig context")
    namespace: str = Field("default", pattern=_K8S_NAME, description="namespace of the Pods")
    image: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:/@\-]*$",
        max_length=512,
        description="the image with the tools (and /bin/sh)",
    )
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = Field("IfNotPresent")
    node_selector: dict[str, str] = Field(
        default_factory=dict,
        description="labels that pick the nodes when the inventory lists none",
    )
    resources: dict[Literal["requests", "limits"], dict[str, str]] = Field(
        default_factory=dict,
        description="container resources, e.g. {limits: {nvidia.com/gpu: '8', rdma/ib: '1'}}",
    )
    host_network: bool = Field(
        True, description="Pods use the node's network (iperf3 and NCCL measure the node's)"
    )
    host_pid: bool = Field(False, description="Pods see the node's processes")
    privileged: bool = Field(False, description="privileged containers")
    capabilities: list[Annotated[str, Field(pattern=r"^[A-Z_]+$")]] = Field(
        default_factory=list, description="capabilities added, e.g. [IPC_LOCK, SYS_ADMIN]"
    )
    service_account: str | None = Field(
        None, pattern=_K8S_NAME, description="the Pods' service account (none mounted if unset)"
    )
    tolerations: list[TolerationModel] = Field(default_factory=list)
    host_paths: list[SafePath] = Field(
        default_factory=list,
        description="node directories mounted read-write at the same path (data_dirs are too)",
    )
    host_paths_ro: list[SafePath] = Field(
        default_factory=list, description="node directories mounted read-only (preflight facts)"
    )
    secret_env: dict[Annotated[str, Field(pattern=envnames.PATTERN)], SecretRefModel] = Field(
        default_factory=dict, description="variables taken from Secrets (secretKeyRef)"
    )
    shm_size: str | None = Field(
        None,
        pattern=_K8S_QUANTITY,
        description="/dev/shm of the Pods that do a step's work: a memory emptyDir of this "
        "size (e.g. 64Gi; NCCL and MPI ranks in one Pod need more than the 64Mi default)",
    )
    runtime_class: str | None = Field(
        None, pattern=_K8S_NAME, description="the Pods' runtimeClassName (e.g. nvidia)"
    )
    image_pull_secrets: list[Annotated[str, Field(pattern=_K8S_NAME)]] = Field(
        default_factory=list, description="Secrets to pull the image with (imagePullSecrets)"
    )
    priority_class: str | None = Field(
        None, pattern=_K8S_NAME, description="the Pods' priorityClassName"
    )
    host_ipc: bool = Field(False, description="Pods share the node's IPC namespace")
    annotations: dict[str, Annotated[str, Field(max_length=4096)]] = Field(
        default_factory=dict,
        description="annotations of the Pods that do a step's work, e.g. "
        "{k8s.v1.cni.cncf.io/networks: rdma-net} (Multus)",
    )
    observer_env: dict[Annotated[str, Field(pattern=envnames.PATTERN)], str] = Field(
        default_factory=dict,
        description="environment of the Pods that request no device (preflight, probes, the "
        "sampler), e.g. {NVIDIA_VISIBLE_DEVICES: all} to let nvidia-smi see the GPUs",
    )
    mpi_launch: Literal["none", "ssh", "mpijob"] = Field(
        "none",
        description="launches across nodes (mpirun): none (refused when planned), ssh "
        "(worker Pods with sshd and a launcher Pod, as the MPI operator v2 does) or mpijob "
        "(an MPIJob of kubeflow.org/v2beta1, run by the MPI operator)",
    )
    mpi_ssh_port: Annotated[int, Field(ge=1, le=65535)] = Field(
        2222, description="the workers' sshd port (on the node's network: must be free)"
    )
    mpi_sshd: SafePath = Field("/usr/sbin/sshd", description="sshd in the image")
    mpi_job_start_s: Annotated[float, Field(gt=0, le=86400)] = Field(
        300.0,
        description="mpi_launch: mpijob: seconds the MPI operator has to start the "
        "launcher Pod before the step fails",
    )
    label_results: bool = Field(
        False, description="label each node aibench.io/acceptance=PASS|FAIL after a run"
    )
    result_valid_h: Annotated[float, Field(gt=0, le=8760)] = Field(
        24.0, description="hours the result label is valid (the aibench.io/valid-until annotation)"
    )

    @model_validator(mode="after")
    def _launch_network(self) -> KubernetesModel:
        if self.mpi_launch != "none" and not self.host_network:
            raise ValueError(
                f"mpi_launch: {self.mpi_launch} needs host_network: true (mpirun reaches "
                "the nodes at their addresses)"
            )
        return self

    @field_validator("node_selector")
    @classmethod
    def _selector(cls, v: dict[str, str]) -> dict[str, str]:
        for key, value in v.items():
            if not re.match(_K8S_LABEL, key) or not re.match(r"^[A-Za-z0-9_.\-]{0,63}$", value):
                raise ValueError(f"invalid node_selector entry {key!r}: {value!r}")
        return v

    @field_validator("annotations")
    @classmethod
    def _annotations(cls, v: dict[str, str]) -> dict[str, str]:
        for key in v:
            if not re.match(_K8S_LABEL, key) or key.startswith("aibench.io/"):
                raise ValueError(f"invalid annotation key {key!r}")
        return v

    @field_validator("resources")
    @classmethod
    def _resources(cls, v: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        for kind in v.values():
            for name, qty in kind.items():
                if not re.match(_K8S_LABEL, name) or not re.match(_K8S_QUANTITY, str(qty)):
                    raise ValueError(f"invalid resource {name!r}: {qty!r}")
        return v

    def settings(self) -> KubernetesSettings:
        return KubernetesSettings(
            image=self.image,
            kubeconfig=self.kubeconfig,
            context=self.context,
            namespace=self.namespace,
            image_pull_policy=self.image_pull_policy,
            node_selector=dict(self.node_selector),
            resources={k: dict(v) for k, v in self.resources.items()},
            host_network=self.host_network,
            host_pid=self.host_pid,
            privileged=self.privileged,
            capabilities=tuple(self.capabilities),
            service_account=self.service_account,
            tolerations=tuple(t.model_dump(exclude_none=True) for t in self.tolerations),
            host_paths=tuple(self.host_paths),
            host_paths_ro=tuple(self.host_paths_ro),
            secret_env={k: (r.secret, r.key) for k, r in self.secret_env.items()},
            shm_size=self.shm_size,
            runtime_class=self.runtime_class,
            image_pull_secrets=tuple(self.image_pull_secrets),
            priority_class=self.priority_class,
            host_ipc=self.host_ipc,
            annotations=dict(self.annotations),
            observer_env=dict(self.observer_env),
            mpi_launch=self.mpi_launch,
            mpi_ssh_port=self.mpi_ssh_port,
            mpi_sshd=self.mpi_sshd,
            mpi_job_start_s=self.mpi_job_start_s,
            label_results=self.label_results,
            result_valid_h=self.result_valid_h,
        )


class EndpointModel(Strict):
    """An OpenAI-compatible inference endpoint served from a node (the serving step).

    The API key is named, never given: ``api_key_env`` (a variable in the environment of
    the node that drives the load) or ``api_key_file`` (a file on that node); the load
    generator reads it there, so it reaches no log, run.json, report or argv.
    """

    name: SafeWord = Field(description="the endpoint's name in suites, checks and reports")
    url: str = Field(
        pattern=r"^https?://[A-Za-z0-9_.:\-\[\]]+(/[A-Za-z0-9_./\-]*)?$",
        max_length=2048,
        description="base URL, e.g. http://10.0.0.5:8000 (the API path is added)",
    )
    model: str = Field(pattern=r"^[A-Za-z0-9_./:\-]+$", max_length=256, description="model name")
    role: Literal["endpoint", "backend", "balancer"] = Field(
        "endpoint", description="backend: one replica; balancer: in front of ``backends``"
    )
    backends: list[SafeWord] = Field(
        default_factory=list, description="balancer: the names of its backend endpoints"
    )
    api_key_env: str | None = Field(
        None, pattern=envnames.PATTERN, description="variable holding the API key"
    )
    api_key_file: SafePath | None = Field(None, description="file holding the API key")

    @model_validator(mode="after")
    def _one_key(self) -> EndpointModel:
        if self.api_key_env and self.api_key_file:
            raise ValueError("give api_key_env or api_key_file, not both")
        return self


_BMC_HOST = re.compile(r"^[A-Za-z0-9_.:\[\]{}][A-Za-z0-9_.:\-\[\]{}]*$")


class BmcModel(Strict):
    """A node's BMC (inventory ``bmc:``; read by :mod:`aibench.bmc`). The password is named,
    never given."""

    address: str = Field(
        description="BMC host or IP; {name} and {n} (the node name's last number) are replaced"
    )
    protocol: Literal["ipmi", "redfish"] = Field(description="ipmi (ipmitool lanplus) | redfish")
    port: Annotated[int, Field(ge=1, le=65535)] | None = Field(
        None, description="default 623 (ipmi), 443/80 (redfish https/http)"
    )
    username: str = Field(pattern=r"^[A-Za-z0-9_.@\-]+$", max_length=64)
    password_env: str | None = Field(None, description="environment variable holding the password")
    password_file: Annotated[str, Field(pattern=_SAFE_PATH)] | None = Field(
        None, description="file whose first line is the password"
    )
    cipher_suite: Annotated[int, Field(ge=0, le=17)] | None = Field(
        None, description="ipmi: ipmitool -C (e.g. 17 or 3); default ipmitool's choice"
    )
    scheme: Literal["https", "http"] = Field(
        "https", description="redfish: https (default); http only with insecure_http: true"
    )
    insecure_http: bool = Field(
        False,
        description="redfish: allow scheme http, which sends the BMC password in clear text",
    )
    ca_bundle: Annotated[str, Field(pattern=_SAFE_PATH)] | None = Field(
        None, description="redfish: CA bundle to verify the BMC's certificate with"
    )
    timeout: float = Field(10.0, gt=0, le=120, description="seconds per BMC request")

    @field_validator("address")
    @classmethod
    def _address(cls, v: str) -> str:
        if not _BMC_HOST.match(v) or re.search(r"\{(?!(?:name|n)\})", v):
            raise ValueError(f"not a BMC address: {v!r} (a host, an IP, {{name}}, {{n}})")
        return v

    @field_validator("password_env")
    @classmethod
    def _env(cls, v: str | None) -> str | None:
        if v is not None and not envnames.is_env_name(v):
            raise ValueError(f"not an environment variable name: {v!r}")
        return v

    @model_validator(mode="after")
    def _one_secret(self) -> BmcModel:
        if (self.password_env is None) == (self.password_file is None):
            raise ValueError("give password_env or password_file (one of them)")
        if self.scheme == "http" and not self.insecure_http:
            raise ValueError(
                "scheme http sends the BMC password in clear text; use https, or set "
                "insecure_http: true to accept that"
            )
        return self


class S3EndpointModel(Strict):
    """An S3 service (a Ceph RADOS gateway, MinIO ...) that the node's load reaches
    (the s5cmd step); usually given once in ``defaults``.

    Credentials are named, never given: ``credentials_file`` (an AWS credentials file on
    the node, ``[profile]`` with ``aws_access_key_id`` and ``aws_secret_access_key``; keep
    it 0600) or ``access_key_env`` and ``secret_key_env`` (variables in the environment of
    the node). The S3 client reads them there, so the key reaches no argv, log, run.json
    or report. With neither, the client's own defaults apply (``AWS_ACCESS_KEY_ID`` ...).
    """

    name: SafeWord = Field(description="the endpoint's name in suites, checks and reports")
    url: str = Field(
        pattern=r"^https?://[A-Za-z0-9_.:\-\[\]]+/?$",
        max_length=2048,
        description="the service's URL, e.g. http://10.0.0.9:7480",
    )
    bucket: str | None = Field(
        None,
        pattern=r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$",
        description="the bucket the S3 steps use (made when absent); default: the step's",
    )
    credentials_file: SafePath | None = Field(None, description="AWS credentials file (a path)")
    profile: SafeWord | None = Field(None, description="the profile of credentials_file")
    access_key_env: str | None = Field(
        None, pattern=envnames.PATTERN, description="variable holding the key id"
    )
    secret_key_env: str | None = Field(
        None, pattern=envnames.PATTERN, description="variable holding the secret"
    )

    @model_validator(mode="after")
    def _one_source(self) -> S3EndpointModel:
        by_env = self.access_key_env is not None or self.secret_key_env is not None
        if by_env and (self.access_key_env is None or self.secret_key_env is None):
            raise ValueError("give both access_key_env and secret_key_env")
        if by_env and self.credentials_file:
            raise ValueError("give credentials_file or the *_env variables, not both")
        if self.profile and not self.credentials_file:
            raise ValueError("profile needs credentials_file")
        return self


class SharedFsModel(Strict):
    """A file system every node of the entry mounts at the same path (a parallel file
    system, CephFS, NFS ...); usually given once in ``defaults``. The acceptance suite's
    shared-storage steps (``requires: shared_filesystem``) measure it from the nodes."""

    name: SafeWord = Field(description="the file system's name in suites, checks and reports")
    mount: SafePath = Field(description="where the nodes mount it, e.g. /mnt/cephfs")
    type: SafeWord = Field(description="what it is: cephfs, lustre, gpfs, nfs, weka ...")
    directory: SafeWord = Field(
        "aibench", description="the directory under the mount the steps write in (made)"
    )

    @field_validator("mount")
    @classmethod
    def _absolute(cls, v: str) -> str:
        if not v.startswith("/"):
            raise ValueError(f"mount must be an absolute path: {v!r}")
        return v


class RedisEndpointModel(Strict):
    """A Redis server (the cache) that the node's redis-benchmark reaches; usually given
    once in ``defaults``. No password: redis-benchmark 7 takes one only on its command
    line (``-a``), where every user of the node can read it; benchmark a server (or an
    ACL default user) that lets the benchmark's nodes in without one."""

    name: SafeWord = Field(description="the endpoint's name in suites, checks and reports")
    host: str = Field(max_length=253, description="address or name of the server")
    port: Annotated[int, Field(ge=1, le=65535)] = Field(6379, description="its TCP port")

    @field_validator("host")
    @classmethod
    def _host(cls, v: str) -> str:
        return safe_name(v, "redis host")


class NodeFields(Strict):
    """What a node entry and ``defaults`` may say about nodes."""

    executor: Literal["local", "ssh", "slurm", "kubernetes"] | None = Field(
        None,
        description="how to reach the node: local | ssh | slurm | kubernetes (default ssh; "
        "kubernetes when the file has a kubernetes block)",
    )
    labels: dict[SafeWord, SafeWord] | None = Field(
        None, description="free labels (rack, leaf, role); placements group by them"
    )
    gpus: GPUModel | None = Field(None, description="the node's accelerators")
    hcas: list[HCAModel] | None = Field(None, description="the node's RDMA adapters")
    data_dirs: list[SafePath] | None = Field(None, description="scratch directories for fio")
    data_address: str | None = Field(
        None, description="address for data traffic (iperf3) when not the SSH address"
    )
    tool_dirs: dict[SafeWord, SafePath] | None = Field(
        None,
        description="per tool, the directory of its binaries, e.g. {nccl-tests: /opt/nccl-tests/"
        "build, rccl-tests: /opt/rccl-tests/build}; a tool not named is found on the PATH",
    )
    nccl_tests_dir: SafePath | None = Field(
        None, description="the same as tool_dirs: {nccl-tests: DIR} (kept for older files)"
    )
    ssh: SSHModel | None = Field(None, description="per-node SSH overrides")
    endpoints: list[EndpointModel] | None = Field(
        None, description="inference endpoints this node serves (the serving step)"
    )
    bmc: BmcModel | None = Field(None, description="the node's BMC (BmcModel)")
    s3_endpoints: list[S3EndpointModel] | None = Field(
        None, description="S3 services the node's load reaches (the s5cmd step)"
    )
    redis_endpoints: list[RedisEndpointModel] | None = Field(
        None, description="Redis servers the node's redis-benchmark reaches (the cache step)"
    )
    shared_filesystems: list[SharedFsModel] | None = Field(
        None, description="file systems the node mounts (the shared-storage steps)"
    )

    @field_validator("data_address")
    @classmethod
    def _data_address(cls, v: str | None) -> str | None:
        return _check_host(v, "data_address")


class NodeModel(NodeFields):
    """One node, or one per name of a hostlist expression."""

    name: str = Field(description="a node name or a hostlist expression: gpu[001-128]")
    address: str | None = Field(
        None,
        description="address to connect to: one address, or a hostlist expression with as "
        "many names as ``name`` has; default: the name",
    )
    address_pattern: str | None = Field(
        None,
        description="address made from each name: {name}, {index} (1-based position in this "
        "entry) and {n} (the name's last number) are replaced",
    )

    @model_validator(mode="after")
    def _one_address(self) -> NodeModel:
        if self.address is not None and self.address_pattern is not None:
            raise ValueError("give address or address_pattern, not both")
        if self.address_pattern is not None and re.search(
            r"\{(?!(?:name|index|n)\})", self.address_pattern
        ):
            raise ValueError(
                f"address_pattern {self.address_pattern!r}: "
                "only {name}, {index} and {n} may appear"
            )
        return self


class LimitsModel(Strict):
    """How much runs at once."""

    max_parallel: Annotated[int, Field(ge=1, le=100_000)] | None = Field(
        None,
        description="invocations running at once, over all nodes; left out: a whole round "
        "at once (its pairs share no node), up to what the controller holds (its open-file "
        "limit, raised to the hard limit, and its memory; `aibench plan` says which)",
    )
    max_network_parallel: Annotated[int, Field(ge=0, le=100_000)] = Field(
        0, description="network tests running at once (a fabric-load cap); 0 = no extra cap"
    )
    # The SSH connection policy (aibench.executors.policy).
    ssh_retries: Annotated[int, Field(ge=0, le=20)] = Field(
        3,
        description="extra tries of an SSH connection the host refused or dropped, or of a "
        "session it refused (MaxStartups, MaxSessions, sshd restarting); never past the "
        "node's connect_timeout for connections",
    )
    ssh_backoff_s: Annotated[float, Field(gt=0, le=60)] = Field(
        0.25, description="first retry wait in seconds; doubles per retry, random jitter"
    )
    ssh_backoff_max_s: Annotated[float, Field(gt=0, le=600)] = Field(
        4.0, description="longest wait between two tries, seconds"
    )
    ssh_max_handshakes: Annotated[int, Field(ge=1, le=10_000)] = Field(
        32, description="SSH connections being set up at once, over all hosts"
    )
    ssh_max_sessions: Annotated[int, Field(ge=1, le=1_000)] = Field(
        8,
        description="commands at once over one host's connection (sshd's MaxSessions "
        "defaults to 10); lowered by itself to what a server accepts",
    )
    ssh_host_failures: Annotated[int, Field(ge=0, le=1_000)] = Field(
        3,
        description="a host whose SSH connection failed this many times is skipped for "
        "the rest of the run; 0 = never",
    )


class InventoryModel(Strict):
    """The inventory file."""

    schema_version: Literal[1] = Field(1, description="the file format version")
    name: SafeWord = Field("cluster", description="the cluster's name in reports")
    defaults: NodeFields = Field(default_factory=NodeFields, description="applied to every node")
    ssh: SSHModel = Field(default_factory=SSHModel, description="SSH settings for every node")
    slurm: SlurmModel = Field(default_factory=SlurmModel, description="Slurm settings")
    limits: LimitsModel = Field(default_factory=LimitsModel, description="concurrency caps")
    kubernetes: KubernetesModel | None = Field(
        None, description="the Kubernetes cluster whose nodes run the steps as Pods"
    )
    nodes: list[NodeModel] = Field(
        default_factory=list,
        description="the nodes (with a kubernetes block: default, every node the cluster's "
        "node_selector picks)",
    )


# ------------------------------------------------------------------------ loading


def _merge_ssh(*layers: SSHModel | None) -> SSHSettings:
    values: dict[str, Any] = {}
    for layer in layers:
        if layer is not None:
            values.update(layer.model_dump(exclude_none=True))
    return SSHSettings(**values)


def _pick(node: NodeModel, defaults: NodeFields, key: str) -> Any:
    value = getattr(node, key)
    return value if value is not None else getattr(defaults, key)


def _address_for(entry: NodeModel, name: str, index: int, addresses: list[str] | None) -> str:
    if addresses is not None:
        return addresses[index - 1]
    if entry.address_pattern is not None:
        nums = re.findall(r"\d+", name)
        n = str(int(nums[-1])) if nums else ""
        return (
            entry.address_pattern.replace("{name}", name)
            .replace("{index}", str(index))
            .replace("{n}", n)
        )
    return entry.address or ""


_FACT_KEYS = (
    "gpus", "hcas", "data_dirs", "data_address", "tool_dirs", "endpoints", "bmc",
    "s3_endpoints", "redis_endpoints", "shared_filesystems",
)  # fmt: skip


def _names_and_addresses(
    entry: NodeModel, file: str, where: str
) -> tuple[list[str], list[str] | None]:
    """The names of a node entry's hostlist, and its addresses when they are a hostlist
    too (one per name)."""
    from aibench import hostlist

    try:
        names = hostlist.expand(entry.name)
    except ValueError as exc:
        raise ConfigError(file, f"{where}.name", str(exc)) from None
    addresses = None
    if entry.address is not None and hostlist.is_expression(entry.address):
        try:
            addresses = hostlist.expand(entry.address)
        except ValueError as exc:
            raise ConfigError(file, f"{where}.address", str(exc)) from None
        if len(addresses) != len(names):
            raise ConfigError(
                file,
                f"{where}.address",
                f"{len(addresses)} addresses for {len(names)} names in {entry.name!r}",
            )
    _check_pattern_addresses(entry, names, file, where)
    return names, addresses


def _check_pattern_addresses(entry: NodeModel, names: list[str], file: str, where: str) -> None:
    """An address pattern must make an address for every name of the range: one that reads
    as an IP address (only digits and dots, or a ':') must be one (``10.0.1.{n}`` makes
    ``10.0.1.256`` for ``gpu256``); the first bad one is named."""
    import ipaddress

    if entry.address_pattern is None:
        return
    for index, name in enumerate(names, start=1):
        address = _address_for(entry, name, index, None)
        if ":" not in address and address.strip("0123456789."):
            continue  # a host name
        try:
            ipaddress.ip_address(address)
        except ValueError:
            raise ConfigError(
                file,
                f"{where}.address_pattern",
                f"{entry.address_pattern!r} makes {address!r} for node {name!r}, not an IP address",
                hint="use a pattern that stays in range for every name, or list the "
                "addresses as a hostlist in 'address'",
            ) from None


def _node_facts(entry: NodeModel, d: NodeFields) -> dict[str, Any]:
    """What a node entry (else the defaults) says of its hardware and tools, as facts."""
    facts: dict[str, Any] = {}
    for key in _FACT_KEYS:
        value = _pick(entry, d, key)
        if value is None:
            continue
        if key in ("gpus", "bmc"):
            value = value.model_dump(exclude_none=key == "bmc")
        elif key in ("hcas", "endpoints", "s3_endpoints", "redis_endpoints", "shared_filesystems"):
            value = [h.model_dump(exclude_none=True) for h in value]
        elif key == "data_dirs":
            value = list(value)
        elif key == "tool_dirs":
            value = dict(value)
        facts[key] = value
    old_dir = _pick(entry, d, "nccl_tests_dir")
    if old_dir is not None:
        facts["tool_dirs"] = {"nccl-tests": old_dir, **facts.get("tool_dirs", {})}
    return facts


def _node(entry: NodeModel, file: str, where: str, **fields: Any) -> Node:
    """One Node of the entry at ``where``; a name or address it refuses is a ConfigError
    at the key of the entry that gave it (``name``, ``address`` or ``address_pattern``)."""
    try:
        return Node(**fields)
    except ValueError as exc:
        key = "address" if fields["address"] and "address" in str(exc) else "name"
        if entry.address_pattern is not None and key == "address":
            key = "address_pattern"
        raise ConfigError(file, f"{where}.{key}", str(exc)) from None


def build_inventory(
    model: InventoryModel, file: str, raw: Mapping[str, Any] | None = None
) -> Inventory:
    """Expand hostlists, apply defaults, check names: the validated model as an Inventory."""
    d = model.defaults
    slurm = model.slurm.settings()
    k8s = model.kubernetes.settings() if model.kubernetes is not None else None
    entries, k8s_addresses = _kubernetes_nodes(model, file)
    nodes: list[Node] = []
    seen: dict[str, str] = {}
    for i, entry in enumerate(entries):
        where = f"nodes[{i}]"
        names, addresses = _names_and_addresses(entry, file, where)
        labels = {**(d.labels or {}), **(entry.labels or {})}
        facts = _node_facts(entry, d)
        ssh = _merge_ssh(model.ssh, d.ssh, entry.ssh)
        executor = _pick(entry, d, "executor") or ("kubernetes" if k8s else "ssh")
        if executor == "kubernetes" and k8s is None:
            raise ConfigError(file, f"{where}.executor", "executor kubernetes needs a "
                              "top-level kubernetes block")  # fmt: skip
        for j, name in enumerate(names, start=1):
            if name in seen:
                raise ConfigError(
                    file, f"{where}.name", f"node {name!r} is already defined in {seen[name]}"
                )
            seen[name] = where
            address = _address_for(entry, name, j, addresses)
            if executor == "kubernetes" and not address:
                address = k8s_addresses.get(name, "")
            node = _node(
                entry,
                file,
                where,
                name=name,
                address=address,
                executor=executor,
                labels=labels,
                facts=dict(facts),
                ssh=ssh,
                slurm=slurm,
                kubernetes=k8s if executor == "kubernetes" else None,
            )
            nodes.append(node)
    limits = Limits(**model.limits.model_dump())
    return Inventory(
        name=model.name, nodes=tuple(nodes), limits=limits, source=file, raw=dict(raw or {})
    )


def _kubernetes_nodes(model: InventoryModel, file: str) -> tuple[list[NodeModel], dict[str, str]]:
    """The node entries (every node the cluster's selector picks when none are listed) and
    the InternalIP of each Kubernetes node, read from the API when some are needed."""
    k = model.kubernetes
    if k is None:
        if not model.nodes:
            why = "List should have at least 1 item (or a kubernetes block to read them from)"
            raise ConfigError(file, "nodes", why)
        return list(model.nodes), {}
    listed_k8s = [
        e for e in model.nodes
        if (e.executor or model.defaults.executor or "kubernetes") == "kubernetes"
    ]  # fmt: skip
    if model.nodes and all(e.address or e.address_pattern for e in listed_k8s):
        return list(model.nodes), {}
    from aibench.kubeapi import api_error, node_addresses

    try:
        found = node_addresses(k.kubeconfig, k.context, k.node_selector)
    except ImportError:
        raise ConfigError(file, "kubernetes", "the kubernetes Python client is not installed "
                          "(pip install 'aibench-cluster[kubernetes]')") from None  # fmt: skip
    except Exception as exc:
        raise ConfigError(file, "kubernetes", f"cannot list the nodes: {api_error(exc)}") from None
    if model.nodes:
        return list(model.nodes), found
    if not found:
        raise ConfigError(file, "kubernetes.node_selector", "no node of the cluster matches")
    return [NodeModel(name=n) for n in sorted(found)], found


def load_inventory(path: Path | str) -> Inventory:
    """Read and check an inventory file; any problem is a ConfigError (file + key path)."""
    p = Path(path)
    data = read_yaml(p)
    model = validate(InventoryModel, data, str(path))
    return build_inventory(model, str(path), data)
