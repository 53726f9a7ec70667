"""The Kubernetes test bed as a pytest fixture (session): two nodes, shared by the tests of
this folder, removed after them (and before, when an earlier session left one behind)."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.k8s.cluster import STATE, Cluster, missing_tools, write_kubeconfig

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture(scope="session")
def k8s_cluster() -> Iterator[Cluster]:
    reason = missing_tools()
    if reason:
        pytest.skip(reason)
    cluster = Cluster.up(2)
    try:
        yield cluster
    finally:
        cluster.down()


@pytest.fixture(scope="session")
def k8s_runner(k8s_cluster: Cluster) -> Path:
    """A kubeconfig for the ``aibench`` service account of examples/kubernetes-rbac.yaml:
    the tests run with the rights that manifest grants and no more."""
    k8s_cluster.kubectl("apply", "-f", str(ROOT / "examples" / "kubernetes-rbac.yaml"))
    deadline = time.monotonic() + 60
    token = ""
    while not token and time.monotonic() < deadline:
        r = k8s_cluster.kubectl("-n", "aibench", "get", "secrets", "-o", "json")
        for item in json.loads(r.stdout)["items"]:
            ann = item["metadata"].get("annotations") or {}
            if ann.get("kubernetes.io/service-account.name") == "aibench":
                token = base64.b64decode(item["data"]["token"]).decode()
        if not token:
            time.sleep(0.5)
    assert token, "the token controller made no token for the aibench service account"
    path = STATE / "aibench-runner.kubeconfig"
    write_kubeconfig(path, token, "aibench")
    return path
