"""JUnit XML: one testcase per verdict, in the shape Jenkins and GitLab CI read.

``<testsuites>`` holds one ``<testsuite>`` per benchmark (``Verdict.benchmark``, or
``aibench`` when empty); each verdict is a ``<testcase classname="aibench.<benchmark>"
name="<check> [<subject>]">`` (GitLab shows the classname as the suite and drops a
repeated classname + name, so a repeated name gets `` (2)``, `` (3)`` ...). FAIL and
MISSING become ``<failure>``, ERROR becomes ``<error>``, WAIVED becomes ``<skipped>``;
PASS and WARN pass (WARN with a ``<system-out>`` line). The message attribute (Jenkins)
and the first line of the element's text (GitLab shows only the text) read ``expected X,
observed Y unit``. Counts on every suite (tests, failures, errors, skipped) and on the
root (tests, failures, errors: the Jenkins xUnit schema has no skipped there) are
computed from the same lists.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict

from aibench.model import Outcome, Run, Verdict
from aibench.reports import context

_BAD_XML = {c: None for c in range(32) if c not in (9, 10, 13)}


def _clean(text: str) -> str:
    """Drop characters XML 1.0 cannot carry (ElementTree escapes the rest)."""
    return text.translate(_BAD_XML)


def _case(parent: ET.Element, v: Verdict, bench: str, name: str) -> None:
    tc = ET.SubElement(
        parent, "testcase", classname=_clean(f"aibench.{bench}"), name=_clean(name), time="0"
    )
    message = _clean(context.expected_vs_observed(v))
    detail = "\n".join(
        x
        for x in (
            message,
            v.description,
            f"culprits: {', '.join(v.culprits)}" if v.culprits else "",
            f"reason: {v.reason}" if v.reason else "",
            f"evidence: {', '.join(v.evidence)}" if v.evidence else "",
        )
        if x
    )
    if v.outcome in (Outcome.FAIL, Outcome.MISSING):
        el = ET.SubElement(tc, "failure", message=message, type=v.outcome.value)
        el.text = _clean(detail)
    elif v.outcome is Outcome.ERROR:
        el = ET.SubElement(tc, "error", message=message, type=v.outcome.value)
        el.text = _clean(detail)
    elif v.outcome is Outcome.WAIVED:
        reason = (v.waiver or {}).get("reason", "") or v.reason
        el = ET.SubElement(tc, "skipped", message=_clean(f"waived: {reason}".strip()))
        el.text = el.get("message")
    elif v.outcome is Outcome.WARN:
        so = ET.SubElement(tc, "system-out")
        so.text = _clean(f"WARN: {message}")


def render(run: Run) -> str:
    groups: dict[str, list[Verdict]] = defaultdict(list)
    for v in run.verdicts:
        groups[v.benchmark or "aibench"].append(v)
    root = ET.Element("testsuites", name=_clean(f"aibench {run.suite} {run.id}"))
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    seen: dict[tuple[str, str], int] = {}
    for bench in sorted(groups):
        vs = groups[bench]
        c = {
            "tests": len(vs),
            "failures": sum(v.outcome in (Outcome.FAIL, Outcome.MISSING) for v in vs),
            "errors": sum(v.outcome is Outcome.ERROR for v in vs),
            "skipped": sum(v.outcome is Outcome.WAIVED for v in vs),
        }
        for k in totals:
            totals[k] += c[k]
        attrib = {
            "name": _clean(bench),
            **{k: str(n) for k, n in c.items()},
            "time": "0",
            "timestamp": (run.started or "")[:19],
        }
        suite = ET.SubElement(root, "testsuite", attrib)
        if run.generated:
            props = ET.SubElement(suite, "properties")
            ET.SubElement(props, "property", name="generated", value="true")
        for v in vs:
            name = f"{v.check} [{context.subject(v, 8)}]"
            n = seen[(bench, name)] = seen.get((bench, name), 0) + 1
            _case(suite, v, bench, name if n == 1 else f"{name} ({n})")
    for k in ("tests", "failures", "errors"):
        root.set(k, str(totals[k]))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
