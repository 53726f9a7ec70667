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

import itertools
import xml.etree.ElementTree as ET
from array import array
from collections import defaultdict
from collections.abc import Iterator, Sequence
from pathlib import Path

from aibench.model import Outcome, Run, Verdict
from aibench.reports import context

_BAD_XML = {c: None for c in range(32) if c not in (9, 10, 13)}


def _clean(text: str) -> str:
    """Drop characters XML 1.0 cannot carry (ElementTree escapes the rest)."""
    return text.translate(_BAD_XML)


def _case(v: Verdict, bench: str, name: str) -> ET.Element:
    tc = ET.Element("testcase", classname=_clean(f"aibench.{bench}"), name=_clean(name), time="0")
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
    return tc


def render(run: Run) -> str:
    return "".join(pieces(run))


def write(run: Run, path: Path) -> Path:
    """:func:`render` written to ``path`` (atomically) a testcase at a time: a run of all
    pairs has a verdict per pair, and its XML is never held whole."""
    from aibench.textio import write_atomic_with

    return write_atomic_with(path, lambda f: f.writelines(pieces(run)))


def pieces(run: Run) -> Iterator[str]:
    """The XML text, in pieces: the tags of the root and of each suite, and each testcase
    (indented as ``ET.indent`` indents the whole tree). What is kept is the verdicts of
    each benchmark (a reference each) and 8 bytes a verdict to find repeated names."""
    groups: dict[str, list[Verdict]] = defaultdict(list)
    for v in run.verdicts:
        groups[v.benchmark or "aibench"].append(v)
    counts = {bench: _counts(vs) for bench, vs in groups.items()}
    totals = {k: sum(c[k] for c in counts.values()) for k in ("tests", "failures", "errors")}
    partial = f" ({run.partial}: not the acceptance of the suite)" if run.partial else ""
    root = {"name": _clean(f"aibench {run.suite} {run.id}{partial}")}
    if not groups:
        yield from _nothing_judged(root)
        return
    root.update((k, str(n)) for k, n in totals.items())
    yield '<?xml version="1.0" encoding="UTF-8"?>\n'
    yield _start("testsuites", root) + "\n"
    for bench in sorted(groups):
        vs = groups[bench]
        attrib = {
            "name": _clean(bench),
            **{k: str(n) for k, n in counts[bench].items()},
            "time": "0",
            "timestamp": (run.started or "")[:19],
        }
        yield "  " + _start("testsuite", attrib) + "\n"
        if run.generated:
            props = ET.Element("properties")
            ET.SubElement(props, "property", name="generated", value="true")
            yield _indented(props)
        yield from _cases(vs, bench)
        yield "  </testsuite>\n"
    yield "</testsuites>\n"


def _nothing_judged(root: dict[str, str]) -> Iterator[str]:
    """A run that judged nothing: one failing testcase, so that no CI reads it as green."""
    yield '<?xml version="1.0" encoding="UTF-8"?>\n'
    root.update(tests="1", failures="1", errors="0")
    top = ET.Element("testsuites", root)
    suite = ET.SubElement(top, "testsuite", name="aibench", tests="1", failures="1", errors="0")
    suite.set("skipped", "0")
    case = ET.SubElement(suite, "testcase", classname="aibench", name="verdicts")
    message = "no check was judged: this run proves nothing (MISSING)"
    ET.SubElement(case, "failure", message=message, type="MISSING").text = message
    ET.indent(top)
    yield ET.tostring(top, encoding="unicode") + "\n"


def _counts(vs: Sequence[Verdict]) -> dict[str, int]:
    return {
        "tests": len(vs),
        "failures": sum(v.outcome in (Outcome.FAIL, Outcome.MISSING) for v in vs),
        "errors": sum(v.outcome is Outcome.ERROR for v in vs),
        "skipped": sum(v.outcome is Outcome.WAIVED for v in vs),
    }


def _cases(vs: Sequence[Verdict], bench: str) -> Iterator[str]:
    """Each verdict's testcase; a name seen before in the suite gets `` (2)``, `` (3)``.
    The names are not kept: their hashes are, and only the names whose hash is seen twice
    are counted (a verdict per pair names each pair once)."""
    hashes = array("q", sorted(hash(_name(v)) for v in vs))
    twice = {a for a, b in itertools.pairwise(hashes) if a == b}
    del hashes
    seen: dict[str, int] = {}
    for v in vs:
        name = _name(v)
        n = 1
        if hash(name) in twice:
            n = seen[name] = seen.get(name, 0) + 1
        yield _indented(_case(v, bench, name if n == 1 else f"{name} ({n})"))


def _name(v: Verdict) -> str:
    return f"{v.check} [{context.subject(v, 8)}]"


def _start(tag: str, attrib: dict[str, str]) -> str:
    """The start tag of ``tag`` as ElementTree writes it (its escaping, its order)."""
    empty = ET.tostring(ET.Element(tag, attrib), encoding="unicode")
    return empty[: -len(" />")] + ">"


def _indented(el: ET.Element) -> str:
    """``el`` (a child of a testsuite) written as in the indented whole tree."""
    ET.indent(el, level=2)
    return "    " + ET.tostring(el, encoding="unicode") + "\n"
