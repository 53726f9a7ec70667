"""The Kubernetes API as the inventory and the kubernetes executor reach it.

A client for a kubeconfig and context (or the in-cluster service account), one line for a
failed call, and the cluster's nodes with their addresses (the inventory's node list when
it names none). Uses the official ``kubernetes`` Python client (the ``kubernetes`` extra).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any


def api_client(kubeconfig: str | None, context: str | None) -> Any:
    """An ApiClient for ``kubeconfig`` and ``context``; in-cluster when no file is named
    and aibench runs in a Pod; else ``~/.kube/config``."""
    from kubernetes import client, config

    cfg = client.Configuration()
    path = os.path.expanduser(kubeconfig) if kubeconfig else None
    if path is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    else:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=path, context=context, client_configuration=cfg
        )
    cfg.connection_pool_maxsize = 64
    return client.ApiClient(cfg)


def api_error(exc: Exception) -> str:
    """One line for a failed API call: the status and the server's message when it
    answered, else that it is unreachable."""
    status = getattr(exc, "status", None)
    reason = getattr(exc, "reason", None) or (str(exc).splitlines() or [""])[0]
    if status:
        said = api_message(exc)
        return f"Kubernetes API: {status} {reason}" + (f": {said}" if said else "")
    return f"Kubernetes API unreachable: {reason}"


def api_message(exc: Exception) -> str:
    """The ``message`` of the Status the API server answered with (first line), or ""."""
    import json

    body = getattr(exc, "body", None)
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if not isinstance(body, str) or not body.strip():
        return ""
    try:
        doc = json.loads(body)
    except ValueError:
        return ""
    message = doc.get("message") if isinstance(doc, dict) else None
    return str(message).splitlines()[0][:500] if message else ""


def pod_security_refusal(exc: Exception, namespace: str) -> str:
    """One line when the API server refused a Pod by Pod Security admission (a 403 whose
    message says it violates PodSecurity), naming the fix; else ""."""
    said = api_message(exc)
    if getattr(exc, "status", None) != 403 or "violates PodSecurity" not in said:
        return ""
    return (
        f"refused by Pod Security admission in namespace {namespace}: {said} (hostNetwork "
        f"and hostPath Pods need the label pod-security.kubernetes.io/enforce=privileged "
        f"on the namespace)"
    )


def node_addresses(
    kubeconfig: str | None, context: str | None, selector: Mapping[str, str]
) -> dict[str, str]:
    """Node name -> InternalIP of the nodes ``selector`` picks (every node when empty)."""
    from kubernetes import client

    api = client.CoreV1Api(api_client(kubeconfig, context))
    wanted = ",".join(f"{k}={v}" for k, v in selector.items())
    nodes = api.list_node(label_selector=wanted or None, _request_timeout=30).items
    out: dict[str, str] = {}
    for n in nodes:
        addresses: Any = n.status.addresses if n.status else None
        ips = [a.address for a in addresses or [] if a.type == "InternalIP"]
        out[str(n.metadata.name if n.metadata else "")] = ips[0] if ips else ""
    return out
