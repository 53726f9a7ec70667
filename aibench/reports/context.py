"""Plain data the report formats share: counts, failing checks, log tails, environment diffs.

Nothing here knows HTML, XML or Markdown; every format renders these values with its own
escaping. Reading raw logs never leaves the run directory (a path that points outside it,
or is absolute, is not read).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aibench.manifest import open_inside, sha256_file
from aibench.model import Outcome, Run, StepResult, StepStatus, Verdict
from aibench.reports.i18n import _, ngettext, pgettext

OUTCOME_ORDER = (
    Outcome.FAIL,
    Outcome.ERROR,
    Outcome.MISSING,
    Outcome.WARN,
    Outcome.WAIVED,
    Outcome.PASS,
)
SYMBOL = {
    Outcome.PASS: "✔",
    Outcome.WARN: "▲",
    Outcome.FAIL: "✖",
    Outcome.WAIVED: "⊘",
    Outcome.MISSING: "?",
    Outcome.ERROR: "‼",
}
ARTEFACTS = (
    "report.html",
    "junit.xml",
    "summary.md",
    "metrics.prom",
    "run.json",
    "manifest.sha256",
)


def outcome_label(o: Outcome) -> str:
    """The outcome as the report's language names it (``PASS`` in English)."""
    labels = {
        Outcome.PASS: pgettext("outcome", "PASS"),
        Outcome.WARN: pgettext("outcome", "WARN"),
        Outcome.FAIL: pgettext("outcome", "FAIL"),
        Outcome.WAIVED: pgettext("outcome", "WAIVED"),
        Outcome.MISSING: pgettext("outcome", "MISSING"),
        Outcome.ERROR: pgettext("outcome", "ERROR"),
    }
    return labels.get(o, o.value)


def status_label(s: StepStatus) -> str:
    """A step status in the report's language (``ok``, ``failed`` ... in English)."""
    labels = {
        StepStatus.OK: pgettext("step status", "ok"),
        StepStatus.FAILED: pgettext("step status", "failed"),
        StepStatus.TIMEOUT: pgettext("step status", "timeout"),
        StepStatus.UNREACHABLE: pgettext("step status", "unreachable"),
        StepStatus.NOT_RUN: pgettext("step status", "not_run"),
    }
    return labels.get(s, str(s))


def kind_label(kind: str) -> str:
    """A fault-localization suspect kind (node, link, group) in the report's language."""
    labels = {
        "node": pgettext("suspect kind", "node"),
        "link": pgettext("suspect kind", "link"),
        "group": pgettext("suspect kind", "group"),
        "suspect": pgettext("suspect kind", "suspect"),
    }
    return labels.get(kind, kind)


def counts(verdicts: Iterable[Verdict]) -> dict[Outcome, int]:
    c = Counter(v.outcome for v in verdicts)
    return {o: c.get(o, 0) for o in OUTCOME_ORDER}


def judged(run: Run) -> str:
    """Who gave the verdicts shown, when, with which spec, and how many judgements the
    run's record holds ("" for a run stored before judgements were recorded)."""
    if not run.judgements:
        return ""
    last = run.judgements[-1]
    sha = str(last.get("spec_sha256", ""))[:12]
    text = _("{by} at {at} with spec {spec}").format(
        by=last.get("by", "?"), at=last.get("at", "?"), spec=last.get("spec", "?")
    )
    text += f" (sha256 {sha}…)" if sha else ""
    if last.get("as_of"):
        text += "; " + _("as of {when}").format(when=last["as_of"])
    if last.get("label"):
        text += f"; {last['label']}"
    if last.get("history"):
        text += f"; {last['history']}"
    earlier = len(run.judgements) - 1
    if earlier:
        text += "; " + ngettext(
            "%(num)d earlier judgement kept in run.json",
            "%(num)d earlier judgements kept in run.json",
            earlier,
        ) % {"num": earlier}
    return text


def partial_line(run: Run) -> str:
    """The line every twin shows first for a run of part of its suite or inventory: it is
    never the suite's acceptance; the checks it left out follow from the run's notes."""
    left = next((n for n in run.notes if "not judged: their steps were not selected" in n), "")
    line = _("{partial}: not the acceptance of suite {suite}").format(
        partial=run.partial, suite=run.suite
    )
    return f"{line}; {left}" if left else line


def failing(run: Run) -> list[Verdict]:
    rank = {o: i for i, o in enumerate(OUTCOME_ORDER)}
    bad = [v for v in run.verdicts if v.outcome.failing]
    return sorted(bad, key=lambda v: (rank[v.outcome], v.benchmark, v.check, v.subject))


def fmt_number(x: float | None) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return ""
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 1e6 or a < 1e-3:
        return f"{x:.4g}"
    if a >= 100:
        return f"{x:,.0f}" if a >= 10000 else f"{x:.1f}"
    return f"{x:.3g}"


def fmt_bytes(x: float | str) -> str:
    """1073741824 -> '1 GiB'; 65536 -> '64 KiB'; a non-power keeps its digits."""
    try:
        n = float(x)
    except (TypeError, ValueError):
        return str(x)
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            q = n / size
            return f"{q:.0f} {unit}" if q == int(q) else f"{q:.3g} {unit}"
    return f"{n:.0f} B"


def observed(v: Verdict) -> str:
    if v.observed is not None:
        text = f"{fmt_number(v.observed)} {v.unit}".strip()
        return f"{text} ({v.observed_text})" if v.observed_text else text
    return v.observed_text or _("(nothing observed)")


def subject(v: Verdict, limit: int = 6) -> str:
    if not v.subject:
        return _("(whole run)")
    if len(v.subject) > limit:
        head = ngettext("{n} node: ", "{n} nodes: ", len(v.subject)).format(n=len(v.subject))
        return head + ", ".join(v.subject[:3]) + ", …"
    return ", ".join(v.subject)


def expected_vs_observed(v: Verdict) -> str:
    return _("expected {expected}, observed {observed}").format(
        expected=v.expected or _("(no bound)"), observed=observed(v)
    )


def steps_by_id(run: Run, ids: Collection[str] | None = None) -> dict[str, StepResult]:
    """The steps of the run by step id; only those of ``ids`` when given (one pass: the
    steps of a large run are read from disk, not held)."""
    if ids is not None and not ids:
        return {}
    return {s.step_id: s for s in run.steps if ids is None or s.step_id in ids}


def safe_relpath(rel: str) -> str | None:
    """``rel`` if it is a plain relative path inside the run directory, else None."""
    if not rel or rel.startswith(("/", "\\")) or "\\" in rel or ":" in rel.split("/")[0]:
        return None
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return None
    return rel


def log_tail(run_dir: Path, rel: str, lines: int = 12, max_bytes: int = 3000) -> str:
    """The last ``lines`` lines (at most ``max_bytes``) of a raw log, decoded leniently."""
    ok = safe_relpath(rel)
    if ok is None:
        return ""
    try:  # never through a link: a received run directory's log may point at a key
        with open_inside(run_dir, ok) as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(max(0, size - max_bytes))
            data = f.read()
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:])


def evidence_excerpt(run_dir: Path, v: Verdict, steps: Mapping[str, StepResult]) -> tuple[str, str]:
    """(log path, tail) of the first evidence step that has a non-empty log."""
    for sid in v.evidence:
        s = steps.get(sid)
        if s is None:
            continue
        for rel in (s.stderr_path, s.stdout_path) if not s.ok else (s.stdout_path, s.stderr_path):
            tail = log_tail(run_dir, rel)
            if tail.strip():
                return rel, tail
    return "", ""


def run_digest(run: Run, run_dir: Path) -> tuple[str, str]:
    """(sha256 of run.json, how it was obtained)."""
    path = run_dir / "run.json"
    if path.is_file() and not path.is_symlink():
        return sha256_file(path), _("sha256 of run.json")
    data = json.dumps(run.to_dict(), sort_keys=True).encode()
    return hashlib.sha256(data).hexdigest(), _("sha256 of the run record (run.json not written)")


@dataclass(frozen=True)
class EnvKey:
    key: str
    values: dict[str, int]  # value text -> number of nodes, most common first
    modal: str
    odd: dict[str, list[str]]  # value text -> nodes having it (only values != modal)

    @property
    def unique(self) -> bool:
        """Every node has its own value (hostname, serial number): identity, not drift."""
        return len(self.values) > 2 and all(n == 1 for n in self.values.values())

    @property
    def differs(self) -> bool:
        return len(self.values) > 1 and not self.unique


def _text(value: Any) -> str:
    if value is None:
        return _("(absent)")
    if isinstance(value, Mapping | list | tuple):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def environment(run: Run) -> tuple[list[str], list[str], dict[str, dict[str, str]], list[EnvKey]]:
    """(nodes, keys, node -> key -> text, per-key summary) of ``Run.environment``."""
    env = run.environment or {}
    nodes = sorted(k for k in env if not str(k).startswith("_"))  # "_controller" is no node
    keys: list[str] = []
    seen: set[str] = set()
    table: dict[str, dict[str, str]] = {}
    for node in nodes:
        facts = env[node] if isinstance(env[node], Mapping) else {"value": env[node]}
        row = {}
        flat: dict[str, Any] = {}
        for k, val in facts.items():
            if isinstance(val, Mapping):  # {"tools": {"fio": "3.33"}} -> "tools.fio"
                flat.update({f"{k}.{k2}": v2 for k2, v2 in val.items()})
            else:
                flat[str(k)] = val
        for k, val in flat.items():
            if k not in seen:
                seen.add(k)
                keys.append(k)
            row[k] = _text(val)
        table[node] = row
    summary = []
    absent = _("(absent)")
    for k in keys:
        c = Counter(table[n].get(k, absent) for n in nodes)
        ordered = dict(sorted(c.items(), key=lambda kv: (-kv[1], kv[0])))
        modal = next(iter(ordered))
        odd: dict[str, list[str]] = {}
        for n in nodes:
            val = table[n].get(k, absent)
            if val != modal:
                odd.setdefault(val, []).append(n)
        summary.append(EnvKey(k, ordered, modal, odd))
    return nodes, keys, table, summary


def extra_environment(run: Run) -> dict[str, dict[str, str]]:
    """Entries of ``Run.environment`` that are not nodes (keys starting with ``_``)."""
    env = run.environment or {}
    out = {}
    for k in sorted(env):
        if str(k).startswith("_"):
            v = env[k]
            items = v.items() if isinstance(v, Mapping) else [("value", v)]
            out[str(k).lstrip("_")] = {str(a): _text(b) for a, b in items}
    return out


def groups(run: Run, nodes: Sequence[str]) -> dict[str, str]:
    """node -> group label (inventory label rack/group/leaf..., else blocks of sorted names)."""
    inv_nodes = run.inventory.get("nodes", []) if isinstance(run.inventory, Mapping) else []
    labels: dict[str, Mapping[str, Any]] = {}
    for entry in inv_nodes:
        if isinstance(entry, Mapping) and "name" in entry:
            labels[str(entry["name"])] = entry.get("labels") or {}
    for key in ("rack", "group", "leaf", "switch", "pod", "row"):
        got = {n: str(labels[n][key]) for n in nodes if n in labels and key in labels[n]}
        if len(got) == len(nodes) and len(set(got.values())) > 1:
            return got
    ordered = sorted(nodes)
    size = max(1, math.ceil(len(ordered) / 64))
    out = {}
    for i in range(0, len(ordered), size):
        block = ordered[i : i + size]
        label = f"{block[0]}…{block[-1]}" if len(block) > 1 else block[0]
        for n in block:
            out[n] = label
    return out


_RATE_STEPS = {
    "bit/s": ("bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s"),
    "B/s": ("B/s", "kB/s", "MB/s", "GB/s", "TB/s"),
}


def readable(value: float, unit: str) -> str:
    """'31500000000 bit/s' -> '31.5 Gbit/s': a data rate in the prefix that keeps it short."""
    from aibench import units

    for base, ladder in _RATE_STEPS.items():
        if unit in ladder:
            try:
                in_base = units.convert(float(value), unit, base)
            except ValueError:
                break
            best = base
            for u in ladder:
                if abs(units.convert(in_base, base, u)) >= 1:
                    best = u
            return f"{fmt_number(units.convert(in_base, base, best))} {best}"
    return f"{fmt_number(value)} {unit}".rstrip()


@dataclass(frozen=True)
class SuspectRow:
    """One entry of the run's fault-localization suspects, as plain text."""

    kind: str  # node | link | group
    name: str
    summary: str
    source: str  # the measurements it was found from (tool / metric), when stated
    evidence: tuple[str, ...]  # "a ↔ b: value", worst first


def _get(item: Any, key: str) -> Any:
    if isinstance(item, Mapping):
        return item.get(key)
    return getattr(item, key, None)


def suspects(run: Run) -> list[SuspectRow]:
    """``Run.suspects`` (fault localization) as rows; absent or empty gives no rows.

    Each suspect may be a mapping (as read from run.json), an object with the same
    attributes, or a (tool, suspect) pair: kind, name, and optionally slow_pairs, pairs,
    median_ratio (else text), tool, metric, unit and evidence ((a, b, value) triples).
    """
    raw = getattr(run, "suspects", None) or ()
    if isinstance(raw, Mapping | str | bytes):
        return []
    out = []
    for entry in raw:
        item, tool = entry, None
        if isinstance(entry, tuple | list) and len(entry) == 2 and isinstance(entry[0], str):
            tool, item = entry  # (tool, suspect), as localization returns them
        kind = str(_get(item, "kind") or "suspect")
        name = str(_get(item, "name") or "?")
        slow, pairs, ratio = (_get(item, k) for k in ("slow_pairs", "pairs", "median_ratio"))
        parts = []
        if isinstance(slow, int) and isinstance(pairs, int):
            parts.append(_("{slow} of {pairs} pairs slow").format(slow=slow, pairs=pairs))
        if isinstance(ratio, int | float) and math.isfinite(ratio):
            share = f"{ratio * 100:.0f}%"
            parts.append(_("at {share} of the fleet median").format(share=share))
        summary = _(", ").join(parts)
        if not summary:  # only a sentence was stored: without its "kind name: " head
            summary = str(_get(item, "text") or "").removeprefix(f"{kind} {name}: ")
        unit = str(_get(item, "unit") or "")
        source = " ".join(str(_get(item, k)) for k in ("tool", "metric") if _get(item, k))
        source = source or (tool or "")
        series = _get(item, "series")
        if isinstance(series, list | tuple) and series:
            source += ": " + "; ".join(str(x) for x in series)
        evidence = []
        for e in list(_get(item, "evidence") or ())[:10]:
            if isinstance(e, list | tuple) and len(e) == 3:
                a, b, value = e
                shown = readable(value, unit) if isinstance(value, int | float) else str(value)
                evidence.append(f"{a} ↔ {b}: {shown}".rstrip())
            else:
                evidence.append(_text(e))
        out.append(SuspectRow(kind, name, str(summary or ""), source, tuple(evidence)))
    return out
