"""The Kubernetes test bed as a pytest fixture (session): two nodes, shared by the tests of
this folder, removed after them (and before, when an earlier session left one behind)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.k8s.cluster import LAYOUT, STATE, Cluster, missing_tools, write_kubeconfig
from tests.testbed import bed

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture(scope="session")
def k8s_cluster() -> Iterator[Cluster]:
    reason = missing_tools()
    if reason:
        pytest.skip(reason)
    # one bed on this machine at a time: a second session's ``up`` would remove this one
    bed._held_here[LAYOUT.prefix] = bed._lock(LAYOUT)
    try:
        cluster = Cluster.up(2)
        try:
            yield cluster
        finally:
            cluster.down()
    finally:
        bed._release(LAYOUT)


@pytest.fixture(scope="session")
def k8s_runner(k8s_cluster: Cluster) -> Path:
    """A kubeconfig for the ``aibench`` service account of examples/kubernetes-rbac.yaml:
    the tests run with the rights that manifest grants and no more. The token comes from
    the TokenRequest API, as ``kubectl create token aibench -n aibench`` gets it on a
    current cluster (the auto-created token Secret is gone since Kubernetes 1.24)."""
    k8s_cluster.kubectl("apply", "-f", str(ROOT / "examples" / "kubernetes-rbac.yaml"))
    request = STATE / "token-request.json"
    request.write_text(json.dumps({
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"audiences": [], "expirationSeconds": 7200},
    }))  # fmt: skip
    url = "/api/v1/namespaces/aibench/serviceaccounts/aibench/token"
    deadline = time.monotonic() + 60
    while True:  # the service account may not exist a moment after the apply
        r = k8s_cluster.kubectl("create", "--raw", url, "-f", str(request), check=False)
        if r.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert r.returncode == 0, r.stderr
    token = json.loads(r.stdout)["status"]["token"]
    assert token, "the TokenRequest API gave no token for the aibench service account"
    path = STATE / "aibench-runner.kubeconfig"
    write_kubeconfig(path, token, "aibench")
    return path
