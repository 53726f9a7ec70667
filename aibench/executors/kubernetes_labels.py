"""A run's verdict on each Kubernetes node, written where the cluster looks for it.

With ``label_results: true`` in the inventory's kubernetes block, after a run of the
whole suite on the whole inventory each node gets the label
``aibench.io/acceptance=PASS|FAIL`` and the annotations ``aibench.io/valid-until``
(now + ``result_valid_h``, ISO 8601 UTC), ``aibench.io/checked-at``, ``aibench.io/suite``,
``aibench.io/spec-sha256``, ``aibench.io/run`` (the run's id) and ``aibench.io/run-dir``
(the run directory's name), so that a scheduler rule or a health controller can select
on them. A partial run (a tool name, ``--steps``, ``--nodes``: :attr:`Run.partial`) is not
the suite's acceptance and never labels: the labels of the last full run stay.
A node gets PASS only when some verdict is about it and no failing one blames it (its
culprits, else its subject, else, for a verdict on the whole run, every node; a check
that was not measured is never a PASS); a node nothing was measured on is left
unlabelled. Nothing is ever cordoned, drained or tainted.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aibench.inventory import Inventory
    from aibench.model import Run, Verdict

LABEL = "aibench.io/acceptance"


def node_verdicts(verdicts: Iterable[Verdict], nodes: Sequence[str]) -> dict[str, str]:
    """Node name -> "PASS" or "FAIL" (nodes with no verdict about them are left out)."""
    seen: set[str] = set()
    failed: set[str] = set()
    wanted = set(nodes)
    for v in verdicts:
        about = (set(v.subject) | set(v.culprits)) & wanted
        seen |= about
        if not v.outcome.failing:
            continue
        # the culprits when the verdict names them, else its subject, else every node
        blamed = set(v.culprits) or set(v.subject) or wanted
        failed |= blamed & wanted
    out = {n: "FAIL" for n in nodes if n in failed}
    out.update({n: "PASS" for n in nodes if n in seen and n not in failed})
    return out


def not_labelled_why(run: Run) -> str:
    """Why this run must not label nodes ("" when it may): a partial run, or a run that
    has no verdict or no spec."""
    if run.partial:
        return f"{run.partial}: not the acceptance of suite {run.suite}"
    if not run.verdicts:
        return "the run has no verdict"
    return ""


def spec_sha256(run: Run) -> str:
    """The sha256 of the spec the run's last judgement used."""
    if run.judgements:
        return str(run.judgements[-1].get("spec_sha256") or run.spec_sha256)
    return run.spec_sha256


def patch_body(
    verdict: str, run: Run, run_dir: str, valid_h: float, now: datetime
) -> dict[str, Any]:
    until = now + timedelta(hours=valid_h)
    iso = "%Y-%m-%dT%H:%M:%SZ"
    return {
        "metadata": {
            "labels": {LABEL: verdict},
            "annotations": {
                "aibench.io/valid-until": until.strftime(iso),
                "aibench.io/checked-at": now.strftime(iso),
                "aibench.io/suite": run.suite,
                "aibench.io/spec-sha256": spec_sha256(run),
                "aibench.io/run": run.id,
                "aibench.io/run-dir": run_dir[:253],
            },
        }
    }


def label_nodes(inventory: Inventory, run: Run, run_dir: str) -> list[str]:
    """Label the inventory's Kubernetes nodes that ask for it, after a full run; returns
    one line per node that could not be labelled, or one line saying why none was (the
    run's result stands either way)."""
    from kubernetes import client

    from aibench.executors.kubernetes import _client
    from aibench.kubeapi import api_error

    k8s = [n for n in inventory.nodes if n.kubernetes is not None and n.kubernetes.label_results]
    if not k8s:
        return []
    why = not_labelled_why(run)
    if why:
        return [f"nodes not labelled: {why}"]
    settings = k8s[0].kubernetes
    assert settings is not None
    results = node_verdicts(run.verdicts, [n.name for n in k8s])
    api = client.CoreV1Api(_client(settings))
    now = datetime.now(UTC)
    problems = []
    for name, verdict in results.items():
        body = patch_body(verdict, run, run_dir, settings.result_valid_h, now)
        try:
            api.patch_node(name, body, _request_timeout=20)
        except Exception as exc:
            problems.append(f"{name}: label not set: {api_error(exc)}")
    return problems
