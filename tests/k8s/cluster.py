"""A real Kubernetes 1.20 cluster for the test bed, started here and removed after.

The control plane runs in the root network namespace: etcd (127.0.0.1:22379), and
kube-apiserver, kube-controller-manager and kube-scheduler on the bed's bridge address
``10.213.27.254`` (the apiserver at port 6443). Each node is a network-namespace host of
its own (``k8-h1`` at 10.213.27.1, ``k8-h2`` at 10.213.27.2, on the bridge ``k8br0``)
running one containerd and one kubelet, started together by ``node.sh`` in a mount
namespace of their own (``unshare --mount``), in which the node's directories are
bind-mounted over ``/var/log/pods``, ``/var/log/containers`` and ``/var/lib/kubelet``,
so that the two kubelets of one machine do not collect each other's logs. Pods run
under the cgroup root ``/aibench-k8-hN`` (cgroupfs), with a bridge + host-local CNI
network inside the node's namespace. The control plane reaches each node's Pod subnet
through the node, and in each node the ``kubernetes`` Service's ClusterIP leads to the API
server (what kube-proxy does; the bed runs none), so a Pod's in-cluster configuration
works; Pods get projected, bound service-account tokens (``BoundServiceAccountTokenVolume``,
the default from 1.21 on).

Binaries: kube-* built by ``build-cluster.sh`` from Debian's ``kubernetes`` source package
and cached in ``$AIBENCH_K8S_CACHE`` (default ``/var/cache/aibench-k8s``); etcd,
containerd, runc and the CNI plugins are Debian's. Images come from ``images.py``.
Clients authenticate with static tokens (the admin's is in group system:masters; each
kubelet's is ``system:node:NAME``); the apiserver authorizes with Node and RBAC.

``down()`` stops every process it started by PID (and whatever is left in the nodes'
namespaces and cgroups), then removes the namespaces, the bridge, the nodes' CNI
namespaces, ``KUBE-*`` iptables chains, the cgroups and every directory it made. A stale
bed of an earlier, killed session is removed the same way before a new one starts.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import secrets
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tests.k8s import images
from tests.testbed.net import Host, Layout, kill_pids, netns_pids, sh
from tests.testbed.net import create as create_hosts
from tests.testbed.net import remove_all as remove_hosts

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("AIBENCH_K8S_CACHE", "/var/cache/aibench-k8s"))
STATE = Path("/var/lib/aibench-k8s")
RUN = Path("/run/aibench-k8s")
LAYOUT = Layout(prefix="k8-h", veth="k8v", bridge="k8br0", subnet="10.213.27")
API_ADDRESS = LAYOUT.gateway
API = f"https://{API_ADDRESS}:6443"
SERVICE_IP = "10.32.0.1"  # the ``kubernetes`` Service's, first of --service-cluster-ip-range
ETCD = "http://127.0.0.1:22379"
# the hierarchies of cgroup v1 that the kubelet's cgroupfs manager uses
CGROUPS = ("cpu", "cpuacct", "cpuset", "memory", "pids", "blkio", "devices", "freezer",
           "hugetlb", "systemd")  # fmt: skip
SHARED_DIRS = (Path("/var/log/pods"), Path("/var/log/containers"), Path("/var/lib/kubelet"))
VERSION = "v1.20.2"


def binaries() -> Path:
    """The cached kube-* binaries, built first when the cache has none (~11 min, 2 cores)."""
    subprocess.run(["bash", str(HERE / "build-cluster.sh")], check=True, stdout=subprocess.DEVNULL)
    return CACHE / "bin"


def missing_tools() -> str | None:
    for tool in ("etcd", "containerd", "runc", "ctr", "kubectl", "openssl", "gcc", "busybox"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (make system-packages)"
    if not Path("/usr/lib/cni/bridge").exists():
        return "containernetworking-plugins is not installed (make system-packages)"
    if os.geteuid() != 0:
        return "the Kubernetes test bed needs root"
    return None


@dataclass
class Node:
    host: Host
    token: str

    @property
    def name(self) -> str:
        return self.host.name

    @property
    def dir(self) -> Path:
        return STATE / self.name

    @property
    def sock(self) -> Path:
        return RUN / self.name / "containerd.sock"

    @property
    def cgroup(self) -> str:
        return f"aibench-{self.name}"


@dataclass
class Cluster:
    nodes: list[Node]
    admin_token: str
    bin: Path
    tools_image: str
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    cni_before: set[str] = field(default_factory=set)

    @property
    def kubeconfig(self) -> Path:
        return STATE / "admin.kubeconfig"

    # ------------------------------------------------------------------ start

    @classmethod
    def up(cls, n_nodes: int = 2) -> Cluster:
        down()
        bin_dir = binaries()
        tars, tools_ref = images.build(CACHE / "images")
        for d in (STATE, RUN):
            d.mkdir(parents=True, exist_ok=True)
        hosts = create_hosts(n_nodes, LAYOUT)
        nodes = [Node(h, secrets.token_hex(16)) for h in hosts]
        c = cls(nodes, secrets.token_hex(16), bin_dir, tools_ref, cni_before=_cni_netns())
        try:
            c._certs()
            c._start_control_plane()
            for node in nodes:
                c._start_node(node)
                _pod_network_routes(node)
            with ThreadPoolExecutor(len(nodes) * len(tars)) as pool:
                list(pool.map(lambda job: _import(*job), [(n, t) for n in nodes for t in tars]))
            c._wait_ready(120.0)
        except BaseException:
            _keep_logs(CACHE / "failed-start")
            c.down()
            raise
        return c

    def _certs(self) -> None:
        d = STATE / "pki"
        d.mkdir(parents=True, exist_ok=True)
        ssl = ("openssl", "req", "-x509", "-nodes", "-days", "3", "-newkey", "rsa:2048")
        sh(*ssl, "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.crt", "-subj", "/CN=aibench-k8s-ca")
        sans = f"subjectAltName=IP:{API_ADDRESS},IP:127.0.0.1,IP:{SERVICE_IP},DNS:kubernetes"
        sh(*ssl, "-CA", f"{d}/ca.crt", "-CAkey", f"{d}/ca.key", "-keyout",
           f"{d}/apiserver.key", "-out", f"{d}/apiserver.crt", "-subj", "/CN=kube-apiserver",
           "-addext", sans)  # fmt: skip
        sh("openssl", "genrsa", "-out", f"{d}/sa.key", "2048")
        sh("openssl", "rsa", "-in", f"{d}/sa.key", "-pubout", "-out", f"{d}/sa.pub")
        rows = [f"{self.admin_token},aibench-admin,aibench-admin,system:masters"]
        rows += [f'{n.token},system:node:{n.name},{n.name},"system:nodes"' for n in self.nodes]
        (d / "tokens.csv").write_text("\n".join(rows) + "\n")
        os.chmod(d / "tokens.csv", 0o600)
        write_kubeconfig(self.kubeconfig, self.admin_token, "aibench-admin")
        for n in self.nodes:
            n.dir.mkdir(parents=True, exist_ok=True)
            write_kubeconfig(n.dir / "kubelet.kubeconfig", n.token, f"system:node:{n.name}")

    def _spawn(self, name: str, argv: list[str]) -> None:
        (STATE / "logs").mkdir(exist_ok=True)
        log = (STATE / "logs" / f"{name}.log").open("ab")
        self.procs[name] = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        log.close()
        pids = {k: p.pid for k, p in self.procs.items()}
        (STATE / "pids.json").write_text(json.dumps(pids))

    def _start_control_plane(self) -> None:
        (STATE / "logs").mkdir(exist_ok=True)
        pki = STATE / "pki"
        self._spawn("etcd", [
            "etcd", "--data-dir", str(STATE / "etcd"), "--name", "aibench-k8s",
            "--listen-client-urls", ETCD, "--advertise-client-urls", ETCD,
            "--listen-peer-urls", "http://127.0.0.1:22380",
            "--initial-advertise-peer-urls", "http://127.0.0.1:22380",
            "--initial-cluster", "aibench-k8s=http://127.0.0.1:22380",
            "--unsafe-no-fsync",
        ])  # fmt: skip
        b = self.bin
        self._spawn("kube-apiserver", [
            str(b / "kube-apiserver"), "--etcd-servers", ETCD,
            "--bind-address", API_ADDRESS, "--advertise-address", API_ADDRESS,
            "--secure-port", "6443", "--insecure-port", "0",
            "--cert-dir", str(pki), "--tls-cert-file", f"{pki}/apiserver.crt",
            "--tls-private-key-file", f"{pki}/apiserver.key", "--client-ca-file", f"{pki}/ca.crt",
            "--token-auth-file", f"{pki}/tokens.csv", "--authorization-mode", "Node,RBAC",
            "--service-cluster-ip-range", "10.32.0.0/24", "--allow-privileged=true",
            "--service-account-key-file", f"{pki}/sa.pub",
            "--service-account-signing-key-file", f"{pki}/sa.key",
            "--service-account-issuer", "https://kubernetes.default.svc",
            # each Pod's token is a projected, bound one (TokenRequest), as from 1.21 on
            "--feature-gates", "BoundServiceAccountTokenVolume=true",
            "--kubelet-preferred-address-types", "InternalIP,Hostname",
            "--enable-admission-plugins", "NodeRestriction",
            "--event-ttl", "10m",
        ])  # fmt: skip
        self._wait_api(90.0)
        kc = str(self.kubeconfig)
        self._spawn("kube-controller-manager", [
            str(b / "kube-controller-manager"), "--kubeconfig", kc,
            "--service-account-private-key-file", f"{pki}/sa.key",
            "--root-ca-file", f"{pki}/ca.crt", "--controllers", "*,-nodeipam",
            "--leader-elect=false", "--port", "0", "--bind-address", API_ADDRESS,
            "--node-monitor-grace-period", "20s", "--pod-eviction-timeout", "30s",
        ])  # fmt: skip
        self._spawn("kube-scheduler", [
            str(b / "kube-scheduler"), "--kubeconfig", kc, "--leader-elect=false",
            "--port", "0", "--bind-address", API_ADDRESS,
        ])  # fmt: skip

    def _wait_api(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.procs["kube-apiserver"].poll() is not None:
                log = STATE / "logs" / "kube-apiserver.log"  # removed with the bed: quoted here
                tail = log.read_text(errors="replace")[-1500:] if log.exists() else "(no log)"
                raise RuntimeError(f"kube-apiserver exited; the end of its log:\n{tail}")
            r = self.kubectl("get", "--raw", "/readyz", check=False)
            if r.returncode == 0 and r.stdout.strip() == "ok":
                return
            time.sleep(1.0)
        raise RuntimeError(f"kube-apiserver not ready in {timeout:g} s")

    def _start_node(self, node: Node) -> None:
        d = node.dir
        for sub in ("log/pods", "log/containers", "kubelet", "cni", "ipam", "containerd", "opt"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        node.sock.parent.mkdir(parents=True, exist_ok=True)
        for shared in SHARED_DIRS:
            shared.mkdir(parents=True, exist_ok=True)
        _make_cgroups(node.cgroup)
        (d / "containerd.toml").write_text(_containerd_toml(node))
        (d / "cni" / "10-aibench.conflist").write_text(_cni_conf(node))
        (d / "kubelet.yaml").write_text(_kubelet_yaml(node))
        kubelet = [
            str(self.bin / "kubelet"), "--config", str(d / "kubelet.yaml"),
            "--kubeconfig", str(d / "kubelet.kubeconfig"),
            "--container-runtime", "remote",
            "--container-runtime-endpoint", f"unix://{node.sock}",
            "--hostname-override", node.name, "--node-ip", node.host.address,
            "--root-dir", "/var/lib/kubelet",
        ]  # fmt: skip
        # a mount namespace of its own (not `ip netns exec`, which remounts /sys and so
        # hides the cgroup hierarchies the kubelet needs), in the node's network namespace
        self._spawn(node.name, [
            "unshare", "--mount", "--propagation", "slave",
            "nsenter", f"--net={node.host.netns_path}",
            "sh", str(HERE / "node.sh"), str(d), str(node.sock), *kubelet,
        ])  # fmt: skip
        _wait_socket(node.sock, 60.0, self.procs[node.name])

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        names = {n.name for n in self.nodes}
        while time.monotonic() < deadline:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError(f"{name} exited; see {CACHE}/failed-start")
            r = self.kubectl("get", "nodes", "-o", "json", check=False)
            if r.returncode == 0 and names <= _ready_nodes(r.stdout):
                return
            time.sleep(1.0)
        raise RuntimeError(f"nodes not Ready in {timeout:g} s")

    # ------------------------------------------------------------------ use

    def load_image(self, tar: Path, nodes: list[Node] | None = None) -> None:
        """Import an image tar (``images.py``'s layout) into the containerd of ``nodes``
        (default: every node)."""
        into = self.nodes if nodes is None else nodes
        with ThreadPoolExecutor(len(into)) as pool:
            list(pool.map(lambda node: _import(node, tar), into))

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return sh("kubectl", "--kubeconfig", str(self.kubeconfig), *args, check=check,
                  timeout=60)  # fmt: skip

    # ------------------------------------------------------------------ stop

    def down(self) -> None:
        for p in self.procs.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, 15)
        kill_pids([p.pid for p in self.procs.values()], grace=5.0)
        for p in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(5)
        self.procs.clear()
        down(self.cni_before)


def write_kubeconfig(path: Path, token: str, user: str) -> None:
    ca = base64.b64encode((STATE / "pki" / "ca.crt").read_bytes()).decode()
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "aibench-k8s",
                      "cluster": {"server": API, "certificate-authority-data": ca}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "aibench-k8s",
                      "context": {"cluster": "aibench-k8s", "user": user}}],
        "current-context": "aibench-k8s",
    }  # fmt: skip
    path.write_text(json.dumps(cfg, indent=1))
    os.chmod(path, 0o600)


def _keep_logs(dest: Path) -> None:
    """Copy the bed's logs out of its state directory before it is removed."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    for log in [*STATE.glob("logs/*.log"), *STATE.glob("*/*.log")]:
        with contextlib.suppress(OSError):
            shutil.copy(log, dest / f"{log.parent.name}-{log.name}")


def _import(node: Node, tar: Path) -> None:
    sh("ctr", "--address", str(node.sock), "-n", "k8s.io", "images", "import", str(tar),
       timeout=300)  # fmt: skip


def _pod_network_routes(node: Node) -> None:
    """What a cluster's network and kube-proxy give a Pod that is not on the node's network:
    the control plane reaches the node's Pod subnet through the node (which forwards), and
    the ``kubernetes`` Service's ClusterIP (10.32.0.1:443, what a Pod's in-cluster
    configuration dials) leads to the API server (its Endpoints, the advertise address)."""
    sh("ip", "route", "replace", f"10.227.{node.host.index}.0/24", "via", node.host.address)
    ns = ("ip", "netns", "exec", node.host.netns)
    sh(*ns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
    dnat = ("-d", SERVICE_IP, "-p", "tcp", "--dport", "443",
            "-j", "DNAT", "--to-destination", f"{API_ADDRESS}:6443")  # fmt: skip
    for chain in ("PREROUTING", "OUTPUT"):
        sh(*ns, "iptables", "-t", "nat", "-A", chain, *dnat)


def _ready_nodes(text: str) -> set[str]:
    ready = set()
    for item in json.loads(text).get("items", []):
        for cond in item.get("status", {}).get("conditions", []):
            if cond.get("type") == "Ready" and cond.get("status") == "True":
                ready.add(item["metadata"]["name"])
    return ready


def _wait_socket(path: Path, timeout: float, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.is_socket():
            return
        if proc.poll() is not None:
            raise RuntimeError(f"containerd did not start; see {path.parent}")
        time.sleep(0.2)
    raise RuntimeError(f"containerd socket {path} did not appear in {timeout:g} s")


def _make_cgroups(name: str) -> None:
    for ctrl in CGROUPS:
        base = Path("/sys/fs/cgroup") / ctrl
        if not base.is_dir():
            continue
        d = base / name
        d.mkdir(exist_ok=True)
        if ctrl == "cpuset":
            for f in ("cpuset.cpus", "cpuset.mems"):
                (d / f).write_text((base / f).read_text())


def _remove_cgroups(name: str) -> None:
    for ctrl in CGROUPS:
        top = Path("/sys/fs/cgroup") / ctrl / name
        if not top.is_dir():
            continue
        # deepest first; the kubelet and containerd may still be removing theirs, so a
        # directory that is gone by the time it is read is simply done
        for here, _subdirs, _files in os.walk(top, topdown=False):
            d = Path(here)
            with contextlib.suppress(OSError):
                pids = [int(x) for x in (d / "cgroup.procs").read_text().split()]
                kill_pids(pids, grace=0.5)
                d.rmdir()


def _cni_netns() -> set[str]:
    r = sh("ip", "netns", "list", check=False)
    return {ln.split()[0] for ln in r.stdout.splitlines() if ln.startswith("cni-")}


def _containerd_toml(node: Node) -> str:
    d, run = node.dir, RUN / node.name
    return f"""version = 2
root = "{d}/containerd"
state = "{run}/state"
oom_score = 0
[grpc]
  address = "{node.sock}"
[ttrpc]
  address = "{run}/ttrpc.sock"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "{d}/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{images.PAUSE}"
  restrict_oom_score_adj = true
  disable_apparmor = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        Root = "{run}/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{d}/cni"
"""


def _cni_conf(node: Node) -> str:
    n = node.host.index
    conf = {
        "cniVersion": "0.4.0",
        "name": f"aibench-{node.name}",
        "plugins": [
            {
                "type": "bridge",
                "bridge": "k8cni0",
                "isGateway": True,
                "ipMasq": False,
                "ipam": {
                    "type": "host-local",
                    "dataDir": str(node.dir / "ipam"),
                    "ranges": [[{"subnet": f"10.227.{n}.0/24"}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                },
            },
            {"type": "loopback"},
        ],
    }
    return json.dumps(conf, indent=1)


def _kubelet_yaml(node: Node) -> str:
    cfg = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False},
                           "x509": {}},
        "authorization": {"mode": "AlwaysAllow"},
        "address": node.host.address,
        "healthzBindAddress": "127.0.0.1",
        "readOnlyPort": 0,
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": f"/{node.cgroup}",
        "failSwapOn": False,
        "resolvConf": "",
        "clusterDomain": "cluster.local",
        "maxPods": 30,
        "serializeImagePulls": False,
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "evictionHard": {"memory.available": "1Mi", "nodefs.available": "1%",
                         "imagefs.available": "1%", "nodefs.inodesFree": "1%"},
        "nodeStatusUpdateFrequency": "5s",
        # a deleted Pod whose container still ran was gone 8 to 18 s after the delete with
        # 10 s, 6.0 s every time with 1 s (measured on the bed); the tests wait for that
        "syncFrequency": "1s",
        "fileCheckFrequency": "60s",
        "volumeStatsAggPeriod": "0s",
    }  # fmt: skip
    return json.dumps(cfg, indent=1)


def down(cni_before: set[str] | None = None) -> None:
    """Remove a bed: this one, or a stale one of a killed session (by its pid file)."""
    pidfile = STATE / "pids.json"
    if pidfile.exists():
        with contextlib.suppress(ValueError, OSError):
            pids = list(json.loads(pidfile.read_text()).values())
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, 9)
            kill_pids(pids, grace=1.0)
    hosts = [Host(i, LAYOUT) for i in (1, 2)]
    for h in hosts:
        kill_pids(netns_pids(h), grace=1.0)
        _remove_cgroups(f"aibench-{h.name}")
    new_cni = _cni_netns() - (cni_before if cni_before is not None else _cni_netns())
    for ns in new_cni:
        sh("ip", "netns", "del", ns, check=False)
    remove_hosts(LAYOUT)
    _remove_iptables()
    for d in (STATE, RUN):
        shutil.rmtree(d, ignore_errors=True)
    if not Path("/run/containerd/containerd.sock").exists():
        # no containerd of the machine's own: the shims' sockets were the bed's
        shutil.rmtree("/run/containerd", ignore_errors=True)
    for shared in SHARED_DIRS:
        with contextlib.suppress(OSError):
            shared.rmdir()  # only when empty: the bed bind-mounted its own over it


def _remove_iptables() -> None:
    """Drop the KUBE-* chains a kubelet made in the root namespace's filter and nat tables."""
    for table in ("filter", "nat", "mangle"):
        r = sh("iptables", "-t", table, "-S", check=False)
        if r.returncode != 0:
            continue
        chains = [ln.split()[1] for ln in r.stdout.splitlines()
                  if ln.startswith("-N KUBE-")]  # fmt: skip
        for ln in r.stdout.splitlines():
            if ln.startswith("-A ") and "KUBE-" in ln and not ln.split()[1].startswith("KUBE-"):
                sh("iptables", "-t", table, *ln.replace("-A ", "-D ", 1).split(), check=False)
        for chain in chains:
            sh("iptables", "-t", table, "-F", chain, check=False)
        for chain in chains:
            sh("iptables", "-t", table, "-X", chain, check=False)
