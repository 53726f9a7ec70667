"""Golden-config consistency: facts that must be identical on every node of the fleet.

For each fact of :func:`golden` the value of every node is found (per-GPU and per-HCA
facts become one value per node, see :func:`aibench.preflight.node_value`; an absent fact
is the value ``absent``). The most common value is the majority; every node with another
value gets a :class:`Verdict` (outcome FAIL or WARN per fact, check ``consistency.<fact>``,
subject and culprit the node, ``observed_text`` its value, ``expected``
``"majority: X (N of M nodes)"``). With no unique majority (a tie) every node outside the
first of the tied values is named, and ``expected`` lists the tie. Nodes that did not
report the fact at all (a failed step) are left out of that comparison; the failed step
says why. A fleet of one node has nothing to compare and gives no verdicts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from aibench.model import Fact, Outcome, StepResult, Verdict
from aibench.preflight import by_node, node_value

ABSENT = "absent"


def golden() -> tuple[tuple[str, str, str, Outcome], ...]:
    """(check name, source, fact name, outcome for the odd node out) of every fact a tool
    declares must be the same on every node (``Traits.consistency``, aibench/tools.py);
    the preflight declares the node's drivers, firmware, kernel, OS and models."""
    from aibench import tools

    return tuple(
        (c.check, c.source, c.name, Outcome.WARN if c.severity == "warn" else Outcome.FAIL)
        for c in tools.consistency()
    )


def _text(v: object) -> str:
    return ABSENT if v is None else str(v)


def check_results(results: Iterable[StepResult]) -> list[Verdict]:
    """:func:`check` over the facts of step results, with the steps as evidence."""
    results = list(results)
    evidence: dict[tuple[str, str], list[str]] = {}
    for r in results:
        for f in r.facts:
            for node in f.nodes:
                ids = evidence.setdefault((node, f"{f.source}.{f.name}"), [])
                if r.step_id not in ids:
                    ids.append(r.step_id)
    return check([f for r in results for f in r.facts], evidence)


def check(
    facts: Iterable[Fact], evidence: Mapping[tuple[str, str], Sequence[str]] | None = None
) -> list[Verdict]:
    """Verdicts for every node whose golden facts differ from the fleet's majority.

    ``evidence`` maps (node, "source.name") to the step ids that reported the fact.
    """
    nodes = by_node(facts)
    verdicts: list[Verdict] = []
    for check_name, source, name, outcome in golden():
        key = f"{source}.{name}"
        values = {
            node: _text(node_value(named[key])) for node, named in nodes.items() if key in named
        }
        if len(values) < 2:
            continue
        counts = Counter(values.values())
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        top_value, top_n = ranked[0]
        tied = [v for v, n in ranked if n == top_n]
        total = len(values)
        if len(tied) > 1:
            expected = "no majority: " + ", ".join(f"{v} ({top_n} of {total} nodes)" for v in tied)
        else:
            expected = f"majority: {top_value} ({top_n} of {total} nodes)"
        for node, value in sorted(values.items()):
            if value == top_value:
                continue
            verdicts.append(
                Verdict(
                    check=f"consistency.{check_name}",
                    outcome=outcome,
                    subject=(node,),
                    description=f"{key} must be the same on every node",
                    expected=expected,
                    observed_text=value,
                    samples=total,
                    culprits=(node,),
                    evidence=tuple((evidence or {}).get((node, key), ())),
                    reason=f"{node} has {key} {value}, the majority {top_value}",
                    benchmark="preflight",
                    origin="consistency",
                )
            )
    return verdicts
