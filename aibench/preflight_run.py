"""Run the preflight suite over an inventory and keep what it found.

:func:`collect` runs the pipeline's plan and execute stages (aibench/pipeline.py) with the
``preflight`` suite and returns the step results; :func:`table` renders the per-node
table that ``aibench preflight`` prints, marking the values that differ from the fleet's
majority.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from aibench.inventory import Inventory
from aibench.model import Fact, FactValue, StepResult
from aibench.preflight import BOM_KEYS, HEALTH_KEYS, environment_from_facts, fact_key, vendor
from aibench.suite import Suite

TABLE_KEYS = BOM_KEYS + tuple(k for k in HEALTH_KEYS if k not in BOM_KEYS)

MARK = "*"
WIDTH = 36


def collect(
    suite: Suite,
    inventory: Inventory,
    run_dir: Path,
    executor_for: Any,
    progress: Callable[[str, StepResult | None, int, int], None] | None = None,
) -> tuple[list[StepResult], dict[str, str]]:
    """Run ``suite`` (the preflight suite or one like it) through the pipeline's execute
    stage; results and unreachable nodes. A Ctrl-C is raised on, as from any command."""
    from aibench.pipeline import execute
    from aibench.plan import build_plan

    done = execute(
        build_plan(suite, inventory),
        run_dir,
        progress=progress,
        environment_facts=False,
        executor_for=executor_for,
    )
    if done.interrupted:
        raise KeyboardInterrupt
    return list(done.results), done.unreachable


def facts_of(results: Sequence[StepResult]) -> list[Fact]:
    return [f for r in results for f in r.facts]


def _show(v: FactValue, unit: str | None = None) -> str:
    if v is None:
        return "absent"
    text = f"{v} {unit}" if unit and unit != "count" and not isinstance(v, str) else str(v)
    return text if len(text) <= WIDTH else text[: WIDTH - 1] + "…"


def _mark(values: list[str]) -> list[str]:
    """Mark the values that differ from the majority (all of them when there is a tie)."""
    counted = Counter(v for v in values if v != "-")
    if len(counted) < 2:
        return values
    ranked = counted.most_common()
    tie = ranked[0][1] == ranked[1][1]
    top = ranked[0][0]
    return [v + MARK if v != "-" and (tie or v != top) else v for v in values]


def _not_on_any_node(env: dict[str, dict[str, FactValue]], nodes: Sequence[str]) -> set[str]:
    """AMD / Ascend rows absent on every node: an NVIDIA cluster's table leaves them out."""
    return {
        f"{source}.{name}"
        for source, name in TABLE_KEYS
        if source in vendor.SOURCES
        and all(env.get(n, {}).get(f"{source}.{name}") is None for n in nodes)
    }


def table(facts: Sequence[Fact], nodes: Sequence[str]) -> str:
    """The per-node table: bill of materials and health facts, odd values marked ``*``."""
    env = environment_from_facts(facts, TABLE_KEYS)
    units = {fact_key(f): f.unit for f in facts if f.unit}
    hidden = _not_on_any_node(env, nodes)
    reasons: dict[str, dict[str, list[str]]] = {}
    for f in facts:
        key = fact_key(f)
        if f.value is None and (f.source, f.name) in TABLE_KEYS and key not in hidden:
            for n in f.nodes:
                if env.get(n, {}).get(key, "") is None:
                    who = reasons.setdefault(key, {}).setdefault(f.reason or "no reason given", [])
                    if n not in who:
                        who.append(n)
    rows: list[list[str]] = []
    for source, name in TABLE_KEYS:
        key = f"{source}.{name}"
        if key in hidden or not any(key in env.get(n, {}) for n in nodes):
            continue
        values = [
            _show(env[n][key], units.get(key)) if key in env.get(n, {}) else "-" for n in nodes
        ]
        cells = _mark(values) if len(nodes) > 1 else values
        rows.append([key, *cells])
    header = ["fact", *nodes]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    if len(nodes) > 1:
        lines.append(f"({MARK} differs from the other nodes; - not reported)")
    if reasons:
        lines.append("absent:")
        for key, by_reason in reasons.items():
            for reason, who in by_reason.items():
                lines.append(f"  {key}: {reason} ({', '.join(who)})")
    return "\n".join(lines)
