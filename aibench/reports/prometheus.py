"""Prometheus text exposition (format 0.0.4) for node-exporter's textfile collector.

Metrics (all gauges):

* ``aibench_run_timestamp_seconds{suite,run}``: when the run finished (else started).
* ``aibench_run_outcome{suite,run,outcome}``: 1 for the run's outcome.
* ``aibench_checks{suite,outcome}``: number of verdicts per outcome.
* ``aibench_check_outcome{check,benchmark,subject,outcome}``: 1 per verdict.
* ``aibench_check_observed{check,benchmark,subject,unit}``: the observed value, if any.
* ``aibench_measurement{tool,metric,unit,node,pair,<dims>}``: every measurement; ``node``
  for a single node, ``pair`` (``a,b``) for two, ``nodes`` (the count) for more.
* ``aibench_generated``: 1 when the data came from a generator (tests), else 0.

Label values are escaped per the format (backslash, double quote, newline); label names
from dims are sanitized to ``[a-zA-Z_][a-zA-Z0-9_]*`` and never shadow the fixed labels.
Repeated samples with identical labels get a ``repeat`` label so no series is duplicated.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime

from aibench.model import Run
from aibench.reports import context

_NAME = re.compile(r"[^a-zA-Z0-9_]")
_FIXED = {"tool", "metric", "unit", "node", "pair", "nodes", "repeat", "step"}


def escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def label_name(name: str) -> str:
    n = _NAME.sub("_", name)
    if not n or n[0].isdigit():
        n = "_" + n
    if n.startswith("__"):
        n = "x" + n
    return n


def labels(items: Mapping[str, object]) -> str:
    return "{" + ",".join(f'{k}="{escape(str(v))}"' for k, v in items.items()) + "}"


def _num(x: float) -> str:
    return repr(float(x))


def _timestamp(text: str) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def render(run: Run) -> str:
    out: list[str] = []

    def header(name: str, help_text: str) -> None:
        out.append(f"# HELP {name} {help_text}")
        out.append(f"# TYPE {name} gauge")

    base = {"suite": run.suite, "run": run.id}
    ts = _timestamp(run.finished) or _timestamp(run.started)
    if ts is not None:
        header("aibench_run_timestamp_seconds", "When the run finished (Unix time).")
        out.append(f"aibench_run_timestamp_seconds{labels(base)} {_num(ts)}")
    header("aibench_run_outcome", "1 for the overall outcome of the run.")
    out.append(f"aibench_run_outcome{labels({**base, 'outcome': run.outcome.value})} 1")
    header("aibench_generated", "1 when the data were generated, not measured.")
    out.append(f"aibench_generated{labels(base)} {1 if run.generated else 0}")
    header("aibench_checks", "Number of verdicts per outcome.")
    for o, n in context.counts(run.verdicts).items():
        out.append(f"aibench_checks{labels({'suite': run.suite, 'outcome': o.value})} {n}")
    header("aibench_check_outcome", "1 per verdict, labelled with its outcome.")
    seen: set[str] = set()
    observed: list[str] = []
    for v in run.verdicts:
        vlab = {"check": v.check, "benchmark": v.benchmark, "subject": ",".join(v.subject)}
        key = labels(vlab)
        if key in seen:
            continue
        seen.add(key)
        out.append(f"aibench_check_outcome{labels({**vlab, 'outcome': v.outcome.value})} 1")
        if v.observed is not None:
            observed.append(
                f"aibench_check_observed{labels({**vlab, 'unit': v.unit})} {_num(v.observed)}"
            )
    if observed:
        header("aibench_check_observed", "The value a check observed, in its unit.")
        out += observed
    ms = run.measurements
    if ms:
        header("aibench_measurement", "Every measurement of the run, in its unit.")
        used: dict[str, int] = {}
        for m in ms:
            lab: dict[str, object] = {"tool": m.tool, "metric": m.metric, "unit": m.unit}
            if len(m.nodes) == 1:
                lab["node"] = m.nodes[0]
            elif len(m.nodes) == 2:
                lab["pair"] = ",".join(m.nodes)
            elif m.nodes:
                lab["nodes"] = len(m.nodes)
            for k, val in m.dims.items():
                name = label_name(k)
                if name not in _FIXED and name not in lab:
                    lab[name] = val
            key = labels(lab)
            if key in used:
                used[key] += 1
                lab["repeat"] = used[key]
                key = labels(lab)
            else:
                used[key] = 0
            out.append(f"aibench_measurement{key} {_num(m.value)}")
    return "\n".join(out) + "\n"
