"""The thresholds engine: a Spec and a Run in, one Verdict per check and subject out.

Contract of :func:`judge`:

* A metric check selects measurements (tool, metric, step, dims), converts each value to
  the check's unit through :mod:`aibench.units` (a unit of another dimension is an ERROR
  verdict, never a silent number), groups them by subject (``scope``: node, pair, rail or
  fleet), summarizes the repeats of each series with ``aggregate`` and combines the
  series of a subject with ``combine``; the value is compared with the fail bounds
  (FAIL), then with the warn bounds (WARN), else PASS.
* Measurements of a step that did not finish OK are never used: its subjects get ERROR
  with the step's own reason. A check that selected nothing is MISSING, never PASS.
* ``max_cv`` turns a PASS with unstable repeats into WARN; ``outliers`` turns a PASS far
  below the fleet median into WARN (see :mod:`aibench.thresholds.outliers`).
* ``require`` adds one coverage verdict that FAILs naming every node, pair or rail of the
  inventory without a measurement.
* Fact checks read :class:`~aibench.model.Fact` records (``source``/``name``) or, with
  source ``environment``, the facts recorded with every run (``Run.environment``).
* Role checks: a check that selects nodes by inventory ``labels`` (``role: training``)
  judges the nodes that carry them. When no node carries them, the check does not apply
  if every label *key* it names is used by some node of the inventory (the cluster
  declares roles and has no inference node: :func:`not_applicable` says so, no verdict);
  it is MISSING when a key is used by no node at all (the nodes were never labelled, so
  the check cannot know which nodes to judge: never a silent pass).
* Storage checks (``requires``): a check of storage the inventory does not declare (no
  shared file system, object store or cache) does not apply, as the suite's steps of it
  are not planned; :func:`not_applicable` says so.
* Waivers: an active waiver turns WARN/FAIL/MISSING/ERROR into WAIVED; a waived check that
  passes stays PASS and says the waiver can go. An expired waiver fails: PASS and WARN
  become FAIL ("renew or remove it", with what the check found), FAIL/MISSING/ERROR keep
  their own outcome; the reason says the waiver expired.
"""

from __future__ import annotations

import itertools
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from aibench import stats, units
from aibench.model import Fact, Measurement, Outcome, Run, StepResult, Verdict
from aibench.thresholds.outliers import fleet_outliers
from aibench.thresholds.spec import (
    FACT_SYMBOLS,
    Check,
    FactSelect,
    Spec,
    _version,
    dim_matches,
)

Subject = tuple[str, ...]


def judge(spec: Spec, run: Run, *, now: datetime | None = None) -> list[Verdict]:
    """Every check of ``spec`` evaluated on ``run``; waivers are judged against ``now``."""
    today = (now or datetime.now(UTC)).date()
    nodes = inventory_nodes(run)
    scopes = [(check, *label_scope(check, run)) for check in spec.checks]
    found, sources = _gather([c for c, state, _ in scopes if state == "apply"], run)
    out: list[Verdict] = []
    for check, state, why in scopes:
        if state == "skip":
            continue
        if state == "missing":
            verdicts = [Verdict(**_base(check), outcome=Outcome.MISSING, reason=why)]
        elif check.fact:
            verdicts = _judge_fact(check, run, nodes, sources)
        else:
            verdicts = _judge_metric(check, run, nodes, found[id(check)])
        out.extend(apply_waiver(check, v, today) for v in verdicts)
    return out


def _gather(checks: Sequence[Check], run: Run) -> tuple[dict[int, _Found], _FactSources]:
    """What ``checks`` (those that apply to the run) read of its steps, in one pass over
    them (the steps of a large run stay on disk and are read again on each pass): for
    each metric check (by ``id``), and for the sources of the fact checks."""
    labels = node_labels(run)
    metric = [c for c in checks if not c.fact]
    found = {id(c): _Found() for c in metric}
    by_tool: dict[str, list[Check]] = defaultdict(list)
    for c in metric:
        assert c.select is not None
        by_tool[c.select.tool].append(c)
    sources = _FactSources(
        {c.fact.source for c in checks if c.fact and c.fact.source != "environment"}
    )
    if not (by_tool or sources.wanted):
        return found, sources
    for s in run.steps:
        for c in by_tool.get(s.tool, ()):
            found[id(c)].add(c, s, labels)
        if sources.wanted:
            sources.add(s)
    return found, sources


def _check_labels(check: Check) -> dict[str, str]:
    if check.fact is not None:
        return dict(check.fact.labels or {})
    if check.select is not None:
        return dict(check.select.labels or {})
    return {}


def _has_preflight(run: Run) -> bool:
    """Whether the run's suite has a preflight step (its recorded steps; else the steps
    the run holds)."""
    suite_steps = (run.inputs.get("suite") or {}).get("steps")
    if suite_steps:
        return any(len(x) > 1 and x[1] == "preflight" for x in suite_steps)
    from aibench.model import step_kinds

    return any(tool == "preflight" for _, tool in step_kinds(run.steps))


def label_scope(check: Check, run: Run) -> tuple[str, str]:
    """Whether a check with ``labels`` applies to this run's inventory, and why not.

    ``("apply", "")``: no labels, or some node carries them. ``("skip", why)``: no node
    carries them although every label key is in use (a cluster without inference
    nodes). ``("missing", why)``: a label key is used by no node (the nodes are not
    labelled, so the check cannot choose its nodes).
    """
    if check.requires == "preflight":
        if not _has_preflight(run):
            return "skip", f"{check.id}: not applicable: the suite runs no preflight step"
    elif check.requires and not _declares(run, check.requires):
        from aibench.inventory import STORAGE_KINDS

        word = STORAGE_KINDS[check.requires][1]
        return "skip", f"{check.id}: not applicable: the inventory declares no {word}"
    want = _check_labels(check)
    if not want:
        return "apply", ""
    labels = node_labels(run)
    if not labels or any(_has_labels(labels, [n], want) for n in labels):
        return "apply", ""
    asked = ", ".join(f"{k}={v}" for k, v in sorted(want.items()))
    unused = sorted(k for k in want if not any(k in lab for lab in labels.values()))
    if unused:
        keys = ", ".join(unused)
        return "missing", (
            f"no node of the inventory has a {keys} label, so no node can be judged as "
            f"{asked}: label the nodes in the inventory (labels: {{{unused[0]}: ...}})"
        )
    seen = sorted({f"{k}={lab[k]}" for lab in labels.values() for k in want if k in lab})
    return "skip", (
        f"{check.id}: not applicable: no node is labelled {asked} "
        f"(the inventory has {', '.join(seen)})"
    )


def not_applicable(spec: Spec, run: Run) -> list[str]:
    """One line per check of ``spec`` that does not apply to ``run`` (see label_scope)."""
    out = []
    for check in spec.checks:
        state, why = label_scope(check, run)
        if state == "skip":
            out.append(why)
    return out


def _declares(run: Run, kind: str) -> bool:
    """Whether a node of the run's inventory declares storage of ``kind``."""
    from aibench.inventory import declares

    nodes = run.inventory.get("nodes", []) if isinstance(run.inventory, Mapping) else []
    return any(isinstance(n, Mapping) and declares(n.get("facts") or {}, kind) for n in nodes)


def inventory_nodes(run: Run) -> list[str]:
    nodes = run.inventory.get("nodes", []) if isinstance(run.inventory, Mapping) else []
    return [str(n["name"]) for n in nodes if isinstance(n, Mapping) and "name" in n]


# ---------------------------------------------------------------- metric checks


@dataclass
class _Group:
    """What one subject collected: values per series, evidence, problems."""

    series: dict[tuple[Any, ...], list[float]] = field(default_factory=dict)
    evidence: set[str] = field(default_factory=set)
    failed: list[StepResult] = field(default_factory=list)
    unit_error: str = ""


def num(x: float) -> str:
    """A number as people read it: 5000, 369, 0.82, 1.5e-05."""
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 0.01:
        return f"{x:.3g}"
    return f"{x:.3g}"


def expected_text(check: Check) -> str:
    lo, hi = check.fail_bounds()
    if lo is None and hi is None:
        lo, hi = check.warn_bounds()
    u = check.unit or ""
    if lo is not None and hi is not None:
        text = f"{num(lo)}..{num(hi)} {u}"
    elif lo is not None:
        text = f">= {num(lo)} {u}"
    elif hi is not None:
        text = f"<= {num(hi)} {u}"
    else:
        text = ""
    if check.reference is not None:
        tol = []
        if check.lower is not None:
            tol.append(f"{check.lower * 100:+g}%")
        if check.upper is not None:
            tol.append(f"{check.upper * 100:+g}%")
        text += f" ({num(check.reference)} {u} {'/'.join(tol)})".replace(" )", ")")
    return text.strip()


def _subjects_of(check: Check, nodes: tuple[str, ...], dims: Mapping[str, Any]) -> list[Subject]:
    if check.scope == "fleet":
        return [()]
    if check.scope == "pair":
        return [tuple(nodes)]
    if check.scope == "rail":
        rail = tuple(f"{d}={dims[d]}" for d in check.rail_dims if d in dims)
        return [(n, *rail) for n in nodes] if nodes else [rail]
    return [(n,) for n in nodes] if nodes else [()]


def _step_selected(check: Check, s: StepResult) -> bool:
    sel = check.select
    assert sel is not None
    if s.tool != sel.tool:
        return False
    if sel.step is not None:
        wanted = [sel.step] if isinstance(sel.step, str) else sel.step
        if s.step not in wanted:
            return False
    return True


def node_labels(run: Run) -> dict[str, dict[str, str]]:
    nodes = run.inventory.get("nodes", []) if isinstance(run.inventory, Mapping) else []
    return {
        str(n["name"]): dict(n.get("labels") or {})
        for n in nodes
        if isinstance(n, Mapping) and "name" in n
    }


def _has_labels(
    labels: Mapping[str, Mapping[str, str]], nodes: Iterable[str], want: Mapping[str, str] | None
) -> bool:
    if not want:
        return True
    names = list(nodes)
    return bool(names) and all(
        all(labels.get(n, {}).get(k) == v for k, v in want.items()) for n in names
    )


def _measurement_selected(
    check: Check, m: Measurement, labels: Mapping[str, Mapping[str, str]]
) -> bool:
    sel = check.select
    assert sel is not None
    if m.tool != sel.tool or m.metric != sel.metric:
        return False
    if sel.nodes is not None and not set(m.nodes) & set(sel.nodes):
        return False
    if not _has_labels(labels, m.nodes, sel.labels):
        return False
    if sel.node_count is not None and not dim_matches(sel.node_count, len(set(m.nodes))):
        return False
    return all(dim_matches(rule, m.dims.get(k)) for k, rule in sel.dims.items())


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _largest(check: Check, selected: Sequence[tuple[str, Measurement]]) -> dict[Subject, Any]:
    """With ``largest: DIM``: the largest value of DIM each subject reached, so that each
    subject is judged at the end of its own sweep (a node whose sweep stopped short is
    judged at its own largest point, not left without a verdict). Empty without it."""
    dim = check.select.largest if check.select else None
    if not dim:
        return {}
    top: dict[Subject, Any] = {}
    for _, m in selected:
        v = m.dims.get(dim)
        if not _number(v):
            continue
        for subj in _subjects_of(check, m.nodes, m.dims):
            if subj not in top or v > top[subj]:
                top[subj] = v
    return top


def _judge_metric(check: Check, run: Run, inventory: list[str], found: _Found) -> list[Verdict]:
    sel = check.select
    assert sel is not None
    assert check.unit is not None
    labels = node_labels(run)
    base = _base(check)
    if not found.of_tool:
        where = f" named {sel.step}" if sel.step else ""
        return [
            Verdict(
                **base,
                outcome=Outcome.MISSING,
                reason=f"no {sel.tool} step{where} in this run",
            )
        ]
    if sel.labels:
        inventory = [n for n in inventory if _has_labels(labels, [n], sel.labels)]
    groups = _groups(check, found)
    if check.scope == "rail":
        _failed_nodes_cover_their_rails(groups)
    if check.scope == "fleet" and any(g.failed for g in groups.values()):
        failed = [s for g in groups.values() for s in g.failed]
        groups = defaultdict(_Group, {(): _Group(failed=failed)})
    verdicts = [_verdict(check, subj, g, base) for subj, g in sorted(groups.items())]
    if not verdicts:
        verdicts = [
            Verdict(
                **base,
                outcome=Outcome.MISSING,
                reason=f"{found.steps} {sel.tool} step result(s), none with a measurement "
                f"matching {sel.metric} {_dims_text(check)}".rstrip(),
                evidence=tuple(sorted(found.ids)),
            )
        ]
    verdicts = _flag_outliers(check, verdicts)
    if check.require:
        verdicts.append(_coverage(check, groups, inventory, _declared_rails(check, run)))
    return verdicts


@dataclass
class _Found:
    """What one pass over a run's steps keeps for a metric check, and no step itself but
    the failed ones: the selected measurements with their step ids, the failed steps, how
    many steps were selected (``of_tool``: before the check's labels choose among them),
    and their ids while none has a selected measurement (a MISSING's evidence)."""

    of_tool: int = 0
    steps: int = 0
    ids: list[str] = field(default_factory=list)
    selected: list[tuple[str, Measurement]] = field(default_factory=list)
    failed: list[StepResult] = field(default_factory=list)

    def add(self, check: Check, s: StepResult, labels: Mapping[str, Mapping[str, str]]) -> None:
        if not _step_selected(check, s):
            return
        self.of_tool += 1
        want = check.select.labels if check.select else None
        if want and not _has_labels(labels, s.nodes, want):
            return
        self.steps += 1
        if not s.ok:
            self.failed.append(s)
        else:
            self.selected += (
                (s.step_id, m) for m in s.measurements if _measurement_selected(check, m, labels)
            )
        if self.selected:
            self.ids.clear()  # the evidence is in the verdicts
        else:
            self.ids.append(s.step_id)


def _groups(check: Check, found: _Found) -> dict[Subject, _Group]:
    """The selected values of the steps by subject (node, pair, rail, the fleet), in the
    check's unit, and the failed steps of each subject."""
    sel = check.select
    assert sel is not None
    assert check.unit is not None
    groups: dict[Subject, _Group] = defaultdict(_Group)
    for s in found.failed:
        span = sel.node_count
        if span is not None and not dim_matches(span, len(set(s.nodes))):
            continue
        for subj in _subjects_of(check, s.nodes, {}):
            if check.scope == "rail":
                subj = subj[:1]
            groups[subj].failed.append(s)
    selected = found.selected
    largest = check.select.largest if check.select else None
    top = _largest(check, selected)
    for step_id, m in selected:
        if largest and not _number(m.dims.get(largest)):
            continue
        try:
            value = units.convert(m.value, m.unit, check.unit)
        except units.UnitError as exc:
            for subj in _subjects_of(check, m.nodes, m.dims):
                groups[subj].unit_error = f"{m.tool} {m.metric} in {m.unit}: {exc}"
            continue
        for subj in _subjects_of(check, m.nodes, m.dims):
            if largest and m.dims.get(largest) != top.get(subj):
                continue
            g = groups[subj]
            g.series.setdefault((m.nodes, m.step, m.dims), []).append(value)
            g.evidence.add(step_id)
    return groups


def _failed_nodes_cover_their_rails(groups: dict[Subject, _Group]) -> None:
    """A failed step of a node also covers that node's rails (in place)."""
    for subj in [k for k in groups if len(k) == 1 and groups[k].failed]:
        for other in list(groups):
            if len(other) > 1 and other[0] == subj[0]:
                groups[other].failed.extend(groups[subj].failed)
        if any(len(o) > 1 and o[0] == subj[0] for o in groups):
            del groups[subj]


def _declared_rails(check: Check, run: Run) -> dict[str, list[tuple[str, ...]]]:
    """Rails the inventory declares (``hcas:`` names), for ``require: every_rail``."""
    if check.require != "every_rail" or check.rail_dims != ["device"]:
        return {}
    nodes = run.inventory.get("nodes", []) if isinstance(run.inventory, Mapping) else []
    out: dict[str, list[tuple[str, ...]]] = {}
    for n in nodes:
        facts = n.get("facts") if isinstance(n, Mapping) else None
        hcas = facts.get("hcas") if isinstance(facts, Mapping) else None
        if isinstance(hcas, list):
            out[str(n["name"])] = [
                (f"device={h['name']}",) for h in hcas if isinstance(h, Mapping) and "name" in h
            ]
    return out


def _dims_text(check: Check) -> str:
    sel = check.select
    if sel is None or not sel.dims:
        return ""
    return "with " + ", ".join(f"{k}={v}" for k, v in sel.dims.items())


def _base(check: Check) -> dict[str, Any]:
    sel = check.select
    return {
        "check": check.id,
        "description": check.description,
        "expected": expected_text(check) if sel else _fact_expected(check),
        "unit": check.unit or "",
        "reference": check.reference,
        "bounds": check.fail_bounds() if sel else (None, None),
        "benchmark": sel.tool if sel else (check.fact.source if check.fact else ""),
    }


def _verdict(check: Check, subj: Subject, g: _Group, base: Mapping[str, Any]) -> Verdict:
    """The verdict of one subject; ``base`` (:func:`_base`, made once a check: a check of
    all pairs has a verdict per pair, and each shares its texts)."""
    culprit_nodes = tuple(n for n in subj if "=" not in n)
    if g.failed:
        return _unfinished(check, subj, g, culprit_nodes)
    if g.unit_error:
        return Verdict(
            **base,
            outcome=Outcome.ERROR,
            subject=subj,
            reason=g.unit_error,
            evidence=tuple(sorted(g.evidence)),
        )
    per_series = [stats.aggregate(check.aggregate, v) for v in g.series.values()]
    value = stats.aggregate(check.combine or check.aggregate, per_series)
    outcome, reason = _held_to_bounds(check, value)
    if check.max_cv is not None:
        worst = max(stats.cv(v) for v in g.series.values())
        if worst > check.max_cv:
            note = f"unstable: repeats vary by CV {worst * 100:.1f}% (> {check.max_cv * 100:g}%)"
            reason = f"{reason}; {note}" if reason else note
            if outcome is Outcome.PASS:
                outcome = Outcome.WARN
    return Verdict(
        **base,
        outcome=outcome,
        subject=subj,
        observed=value,
        aggregate=_aggregate_text(check, g),
        samples=sum(len(v) for v in g.series.values()),
        culprits=culprit_nodes if outcome is Outcome.FAIL else (),
        evidence=tuple(sorted(g.evidence)),
        reason=reason,
    )


def _unfinished(check: Check, subj: Subject, g: _Group, culprit_nodes: Subject) -> Verdict:
    """An ERROR naming the steps of the subject that did not finish (the first three)."""
    first = sorted(g.failed, key=lambda s: s.step_id)
    why = "; ".join(
        f"{s.step_id} {s.status.value}" + (f": {s.reason}" if s.reason else "") for s in first[:3]
    )
    more = f" (+{len(first) - 3} more)" if len(first) > 3 else ""
    nodes = sorted({n for s in first for n in s.nodes})
    return Verdict(
        **_base(check),
        outcome=Outcome.ERROR,
        subject=subj,
        reason=f"the measuring step did not finish: {why}{more}",
        culprits=tuple(nodes) if check.scope == "fleet" else culprit_nodes,
        evidence=tuple(sorted({s.step_id for s in first} | g.evidence)),
    )


def _aggregate_text(check: Check, g: _Group) -> str:
    """How the observed value was made: of how many repeats, their range and CV."""
    if len(g.series) == 1:
        (only,) = g.series.values()
        agg = f"{check.aggregate} of {len(only)} repeat(s)"
        if len(only) > 1:
            agg += f" ({num(min(only))}..{num(max(only))}, CV {stats.cv(only) * 100:.1f}%)"
            return agg
        return sys.intern(agg)  # the same words for each subject measured once
    combine = check.combine or check.aggregate
    return sys.intern(f"{check.aggregate} of repeats, {combine} of {len(g.series)} series")


def _held_to_bounds(check: Check, value: float) -> tuple[Outcome, str]:
    """FAIL outside the fail bounds, WARN outside the warn bounds, else PASS; and why."""
    lo, hi = check.fail_bounds()
    wlo, whi = check.warn_bounds()
    if lo is not None and value < lo:
        return Outcome.FAIL, f"{num(value)} {check.unit} is below {num(lo)}"
    if hi is not None and value > hi:
        return Outcome.FAIL, f"{num(value)} {check.unit} is above {num(hi)}"
    if wlo is not None and value < wlo:
        return Outcome.WARN, f"{num(value)} {check.unit} is below the warn bound {num(wlo)}"
    if whi is not None and value > whi:
        return Outcome.WARN, f"{num(value)} {check.unit} is above the warn bound {num(whi)}"
    return Outcome.PASS, ""


def _flag_outliers(check: Check, verdicts: list[Verdict]) -> list[Verdict]:
    if check.outliers is None or check.scope == "fleet":
        return verdicts
    values = {v.subject: v.observed for v in verdicts if v.observed is not None}
    flags = fleet_outliers(
        {k: x for k, x in values.items() if x is not None},
        mads=check.outliers.mads,
        min_drop=check.outliers.min_drop,
        min_subjects=check.outliers.min_subjects,
        higher_is_better=_higher_is_better(check),
    )
    out = []
    for v in verdicts:
        flag = flags.get(v.subject)
        if flag and v.outcome is Outcome.PASS:
            v = _replace(
                v,
                outcome=Outcome.WARN,
                reason=flag.text,
                culprits=tuple(n for n in v.subject if "=" not in n),
            )
        out.append(v)
    return out


def _higher_is_better(check: Check) -> bool:
    """An upper bound alone says lower is better; else the tool says (aibench.tools)."""
    from aibench import tools

    lo, hi = check.fail_bounds()
    if lo is None and hi is not None:
        return False
    if check.select is None:
        return True
    return tools.higher_is_better(check.select.tool, check.select.metric, check.unit or "")


def _wanted(
    require: str | None,
    seen: set[Subject],
    inventory: list[str],
    declared_rails: Mapping[str, list[tuple[str, ...]]] | None,
) -> tuple[list[Subject], list[Subject], str]:
    """The subjects a coverage requirement wants (every node, every pair of nodes, or every
    rail of every node: those measured anywhere and those the node declares), the ones of
    them not ``seen``, and what they are called."""
    want: list[Subject]
    if require == "every_node":
        have = {n for k in seen for n in k if "=" not in n}
        want = [(n,) for n in inventory]
        return want, [w for w in want if w[0] not in have], "nodes"
    if require == "every_pair":
        have_pairs = {tuple(sorted(k)) for k in seen}
        if len(inventory) == 1:
            want = [(inventory[0], inventory[0])]
        else:
            want = [tuple(p) for p in itertools.combinations(sorted(inventory), 2)]
        return want, [w for w in want if tuple(sorted(w)) not in have_pairs], "pairs"
    rails = sorted({k[1:] for k in seen if len(k) > 1})
    declared = declared_rails or {}
    want = []
    for n in inventory:
        mine = sorted({*rails, *declared.get(n, [])})
        want += [(n, *r) for r in mine] if mine else [(n,)]
    return want, [w for w in want if w not in seen], "rails"


def _coverage(
    check: Check,
    groups: Mapping[Subject, _Group],
    inventory: list[str],
    declared_rails: Mapping[str, list[tuple[str, ...]]] | None = None,
) -> Verdict:
    base = _base(check)
    seen = {k for k, g in groups.items() if g.series}
    want, missing, what = _wanted(check.require, seen, inventory, declared_rails)
    shown = ["+".join(m) if check.require == "every_pair" else ":".join(m) for m in missing]
    text = f"{len(want) - len(missing)} of {len(want)} {what} measured"
    return Verdict(
        check=f"{check.id}.coverage",
        outcome=Outcome.FAIL if missing or not want else Outcome.PASS,
        description=f"coverage of {check.id}: {check.require}",
        expected=str(check.require).replace("_", " "),
        observed_text=text,
        samples=len(want) - len(missing),
        culprits=tuple(shown),
        reason=(
            f"no measurement for: {', '.join(shown[:20])}"
            + (f" (+{len(shown) - 20} more)" if len(shown) > 20 else "")
        )
        if missing
        else ("" if want else "the inventory lists no nodes"),
        benchmark=base["benchmark"],
        origin="coverage",
    )


# ---------------------------------------------------------------- fact checks


def _fact_expected(check: Check) -> str:
    op = check.op or ""
    if op in ("present", "absent"):
        return op
    symbol = FACT_SYMBOLS[op]
    value = check.value
    shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
    return f"{symbol} {shown}"


def _environment_facts(run: Run, source_name: str) -> list[Fact]:
    out = []
    env = run.environment if isinstance(run.environment, Mapping) else {}
    for node, facts in env.items():
        if node.startswith("_") or not isinstance(facts, Mapping):
            continue
        cur: Any = facts
        for part in source_name.split("."):
            cur = cur.get(part) if isinstance(cur, Mapping) else None
        if cur is not None and not isinstance(cur, Mapping | list):
            out.append(Fact(source="environment", name=source_name, value=cur, nodes=(node,)))
    return out


def _fact_compare(check: Check, value: Any) -> tuple[bool, str]:
    op, arg = check.op, check.value
    if op == "present":
        return value is not None, ""
    if op == "absent":
        return value is None, ""
    if op in ("version_ge", "version_le"):
        have, want = _version(value), _version(arg)
        if have is None or want is None:
            return False, f"{value!r} is not a dotted numeric version"
        n = max(len(have), len(want))
        have, want = have + (0,) * (n - len(have)), want + (0,) * (n - len(want))
        return (have >= want) if op == "version_ge" else (have <= want), ""
    if op == "eq":
        return _loose_eq(value, arg), ""
    if op == "ne":
        return not _loose_eq(value, arg), ""
    if op == "in":
        return any(_loose_eq(value, a) for a in (arg if isinstance(arg, list) else [arg])), ""
    try:
        a, b = float(value), float(arg)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False, f"{value!r} is not a number"
    return {"ge": a >= b, "le": a <= b, "gt": a > b, "lt": a < b}[str(op)], ""


def _loose_eq(a: Any, b: Any) -> bool:
    """10 == "10" for facts read from text; "Enabled" == "enabled"; True is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return str(a).lower() == str(b).lower()
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a).strip().lower() == str(b).strip().lower()


def _judge_fact(
    check: Check, run: Run, inventory: list[str], sources: _FactSources
) -> list[Verdict]:
    fs = check.fact
    assert fs is not None
    base = _base(check)
    facts, steps, unreachable = _fact_sources(fs, run, sources)
    if fs.labels:
        labels = node_labels(run)
        inventory = [n for n in inventory if _has_labels(labels, [n], fs.labels)]
        facts = [f for f in facts if _has_labels(labels, f.nodes, fs.labels)]
    by_node: dict[str, list[Fact]] = defaultdict(list)
    for f in facts:
        for n in f.nodes or ("",):
            by_node[n].append(f)
    failed_by_node: dict[str, list[StepResult]] = defaultdict(list)
    for s in steps:
        if not s.ok:
            for n in s.nodes:
                failed_by_node[n].append(s)
    nodes = sorted(set(inventory) | set(by_node))
    if not nodes:
        return [Verdict(**base, outcome=Outcome.MISSING, reason="no node in the run")]
    out = []
    for n in nodes:
        evidence = tuple(sorted(s.step_id for s in steps if n in s.nodes))
        if n not in by_node:
            why_not = unreachable.get(n)
            failed = failed_by_node.get(n, [])
            out.append(_fact_not_measured(check, base, n, evidence, why_not, failed))
        else:
            out.append(_fact_verdict(check, base, n, by_node[n], evidence))
    return out


@dataclass
class _FactSources:
    """The facts of each source the fact checks read (``wanted``), and the steps that
    should have recorded them (the source's own, and any step with a fact of it), in
    step order: gathered in the one pass of :func:`_gather`."""

    wanted: set[str]
    facts: dict[str, list[Fact]] = field(default_factory=lambda: defaultdict(list))
    steps: dict[str, list[StepResult]] = field(default_factory=lambda: defaultdict(list))

    def add(self, s: StepResult) -> None:
        has = set()
        for f in s.facts:
            if f.source in self.wanted:
                self.facts[f.source].append(f)
                has.add(f.source)
        if s.tool in self.wanted:
            has.add(s.tool)
        for source in has:
            self.steps[source].append(s)


def _fact_sources(
    fs: FactSelect, run: Run, sources: _FactSources
) -> tuple[list[Fact], list[StepResult], dict[str, str]]:
    """The facts a fact check reads, the steps that should have recorded them, and the
    nodes the environment could not reach (with why)."""
    if fs.source == "environment":
        env = run.environment if isinstance(run.environment, Mapping) else {}
        unreachable = {
            str(n): str(f["unreachable"])
            for n, f in env.items()
            if isinstance(f, Mapping) and f.get("unreachable")
        }
        return _environment_facts(run, fs.name), [], unreachable
    facts = [
        f
        for f in sources.facts.get(fs.source, ())
        if f.name == fs.name and all(dim_matches(r, f.dims.get(k)) for k, r in fs.dims.items())
    ]
    return facts, list(sources.steps.get(fs.source, ())), {}


def _fact_not_measured(
    check: Check,
    base: dict[str, Any],
    node: str,
    evidence: tuple[str, ...],
    unreachable: str | None,
    failed: Sequence[StepResult],
) -> Verdict:
    """A node without the fact: unreachable, its step failed (both errors), or missing."""
    fs = check.fact
    assert fs is not None
    subj = (node,) if node else ()
    if unreachable is not None:
        return Verdict(
            **base,
            outcome=Outcome.ERROR,
            subject=subj,
            culprits=subj,
            reason=f"node unreachable: {unreachable}",
        )
    if failed:
        s = failed[0]
        return Verdict(
            **base,
            outcome=Outcome.ERROR,
            subject=subj,
            culprits=subj,
            evidence=evidence,
            reason=f"{s.step_id} {s.status.value}: {s.reason}".rstrip(": "),
        )
    return Verdict(
        **base,
        outcome=Outcome.MISSING,
        subject=subj,
        evidence=evidence,
        reason=f"no {fs.source} fact {fs.name} recorded for {node or 'the run'}",
    )


def _fact_verdict(
    check: Check, base: dict[str, Any], node: str, items: list[Fact], evidence: tuple[str, ...]
) -> Verdict:
    """A node's values of the fact, each held against the check."""
    fs = check.fact
    assert fs is not None
    subj = (node,) if node else ()
    bad: list[str] = []
    shown: list[str] = []
    for f in items:
        label = ",".join(f"{k}={v}" for k, v in f.dims.items())
        text = "absent" if f.absent else str(f.value)
        shown.append(f"{label}: {text}" if label else text)
        if f.absent and check.op != "absent":
            if not check.allow_absent:
                bad.append(f"{label or fs.name} absent" + (f" ({f.reason})" if f.reason else ""))
            continue
        ok, why = _fact_compare(check, f.value)
        if not ok:
            bad.append(f"{label + ': ' if label else ''}{text}" + (f" ({why})" if why else ""))
    uniq = sorted(set(shown))
    failed = Outcome.WARN if check.severity == "warn" else Outcome.FAIL
    return Verdict(
        **base,
        outcome=failed if bad else Outcome.PASS,
        subject=subj,
        observed_text="; ".join(uniq[:8]) + (f" (+{len(uniq) - 8} more)" if len(uniq) > 8 else ""),
        samples=len(items),
        culprits=subj if bad and failed is Outcome.FAIL else (),
        evidence=evidence,
        reason=(f"{fs.name} {'; '.join(bad[:5])}, expected {base['expected']}" if bad else ""),
    )


# ---------------------------------------------------------------- waivers


def _subject_name(subject: Sequence[str]) -> str:
    return "+".join(subject)


def apply_waiver(check: Check, v: Verdict, today: date) -> Verdict:
    return v if check.waiver is None else waive(check.waiver, v, today)


def waive(w: Any, v: Verdict, today: date) -> Verdict:
    """``v`` under waiver ``w`` (a :class:`~aibench.thresholds.spec.Waiver`) on ``today``:
    WAIVED while it holds and the verdict fails; an expired one fails."""
    if w.subjects is not None and not _waiver_covers(w.subjects, v.subject):
        return v
    active = today <= w.expires
    who = f"{w.owner}, until {w.expires.isoformat()}"
    info = {"reason": w.reason, "owner": w.owner, "expires": w.expires.isoformat()}
    changes: dict[str, Any]
    if not active:
        info["state"] = "expired"
        note = f"waiver expired on {w.expires.isoformat()} ({w.owner}: {w.reason})"
        if v.outcome in (Outcome.PASS, Outcome.WARN):
            found = f"the check itself is {v.outcome.value}" + (f": {v.reason}" if v.reason else "")
            changes = {
                "outcome": Outcome.FAIL,
                "reason": f"{note}: renew or remove it; {found}",
                "culprits": v.culprits or tuple(n for n in v.subject if "=" not in n),
            }
        else:
            changes = {"reason": f"{note}; {v.reason}" if v.reason else note}
    elif v.outcome is Outcome.PASS:
        info["state"] = "not needed"
        changes = {"reason": f"passes although waived ({who}): the waiver can be removed"}
    else:
        info["state"] = "active"
        was = f"{v.outcome.value}" + (f": {v.reason}" if v.reason else "")
        changes = {"outcome": Outcome.WAIVED, "reason": f"waived ({who}: {w.reason}); was {was}"}
    return _replace(v, waiver=info, **changes)


def _waiver_covers(subjects: Iterable[str], subject: Sequence[str]) -> bool:
    names = set(subjects)
    return _subject_name(subject) in names or any(n in names for n in subject)


def _replace(v: Verdict, **changes: Any) -> Verdict:
    import dataclasses

    return dataclasses.replace(v, **changes)
