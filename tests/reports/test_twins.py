"""JUnit XML (validated against a JUnit schema) and Markdown summary (Prometheus: test_prometheus.py)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import xmlschema

from aibench.model import Outcome, Run, Verdict
from aibench.reports import junit, markdown

HERE = Path(__file__).parent


def test_junit_validates_against_schema(rendered):
    schema = xmlschema.XMLSchema(HERE / "junit.xsd")
    schema.validate(rendered.files["junit.xml"])


def test_junit_counts_match_the_testcases_per_suite_and_in_total(rendered):
    """Jenkins and GitLab count from the testcases; the attributes must say the same."""
    run = rendered.gen.run
    root = ET.parse(rendered.files["junit.xml"]).getroot()
    c = Counter(v.outcome for v in run.verdicts)
    assert int(root.get("tests")) == len(run.verdicts)
    assert int(root.get("failures")) == c[Outcome.FAIL] + c[Outcome.MISSING]
    assert int(root.get("errors")) == c[Outcome.ERROR]
    assert root.get("skipped") is None  # not an attribute of <testsuites> in junit-10.xsd
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == len(run.verdicts)
    assert len(root.findall("./testsuite/testcase/failure")) == int(root.get("failures"))
    assert len(root.findall("./testsuite/testcase/error")) == int(root.get("errors"))
    assert len(root.findall("./testsuite/testcase/skipped")) == c[Outcome.WAIVED]
    for suite in root.findall("testsuite"):
        tcs = suite.findall("testcase")
        assert int(suite.get("tests")) == len(tcs)
        assert int(suite.get("failures")) == sum(tc.find("failure") is not None for tc in tcs)
        assert int(suite.get("errors")) == sum(tc.find("error") is not None for tc in tcs)
        assert int(suite.get("skipped")) == sum(tc.find("skipped") is not None for tc in tcs)
    for total in ("tests", "failures", "errors"):
        assert int(root.get(total)) == sum(int(s.get(total)) for s in root.iter("testsuite"))


def test_junit_groups_testcases_by_benchmark_through_classname(rendered):
    """GitLab shows the classname as the suite: it must be the benchmark, as the testsuite."""
    root = ET.parse(rendered.files["junit.xml"]).getroot()
    benchmarks = {v.benchmark or "aibench" for v in rendered.gen.run.verdicts}
    assert {s.get("name") for s in root.iter("testsuite")} == benchmarks
    for suite in root.iter("testsuite"):
        assert {tc.get("classname") for tc in suite.iter("testcase")} == {
            f"aibench.{suite.get('name')}"
        }
    keys = [(tc.get("classname"), tc.get("name")) for tc in root.iter("testcase")]
    assert len(keys) == len(set(keys)), "GitLab drops a repeated classname + name"


def test_junit_failure_message_names_expected_and_observed(rendered):
    root = ET.parse(rendered.files["junit.xml"]).getroot()
    bad = rendered.gen.bad_node
    case = next(tc for tc in root.iter("testcase") if tc.get("name") == f"fio-seq-read-bw [{bad}]")
    assert case.get("classname") == "aibench.fio"
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("message") == "expected >= 5000 MB/s, observed 3100.0 MB/s"
    # GitLab shows the element's text only: it starts with the same line
    assert failure.text.splitlines()[0] == failure.get("message")
    assert bad in failure.text
    for el in root.iter():
        if el.tag in ("failure", "error"):
            assert el.get("message").startswith("expected ")
            assert ", observed " in el.get("message")
            assert el.text.splitlines()[0] == el.get("message")
        if el.tag == "skipped":
            assert el.text == el.get("message")
            assert el.text.startswith("waived: ")


def test_junit_repeated_names_are_made_distinct():
    vs = tuple(
        Verdict("rack-busbw", Outcome.FAIL if i == 1 else Outcome.PASS, (), benchmark="nccl")
        for i in range(3)
    )
    root = ET.fromstring(junit.render(Run(id="r", suite="s", spec="p", verdicts=vs)).encode())
    names = [tc.get("name") for tc in root.iter("testcase")]
    assert names == [
        "rack-busbw [(whole run)]",
        "rack-busbw [(whole run)] (2)",
        "rack-busbw [(whole run)] (3)",
    ]


def test_junit_written_a_testcase_at_a_time_is_the_indented_tree(rendered, monkeypatch):
    """junit.xml is written in pieces (a run of all pairs has a verdict per pair): the text
    is what ElementTree writes of the whole tree, indented. Repeated names are found by
    their hashes, and a hash seen twice is only a hint: names that merely share one are
    not numbered."""
    text = rendered.files["junit.xml"].read_text()
    head, body = text.split("\n", 1)
    assert head == '<?xml version="1.0" encoding="UTF-8"?>'
    root = ET.fromstring(body.encode())
    ET.indent(root)
    assert body == ET.tostring(root, encoding="unicode") + "\n"
    run = rendered.gen.run
    monkeypatch.setattr(junit, "hash", lambda _: 7, raising=False)  # every name collides
    assert junit.render(run) == text
    vs = tuple(Verdict("c", Outcome.PASS, (n,)) for n in ("a", "b", "a", "c", "a"))
    root = ET.fromstring(junit.render(Run(id="r", suite="s", spec="p", verdicts=vs)).encode())
    names = [tc.get("name") for tc in root.iter("testcase")]
    assert names == ["c [a]", "c [b]", "c [a] (2)", "c [c]", "c [a] (3)"]


def test_junit_survives_control_characters_and_markup():
    v = Verdict(
        'c\x01<&>"',
        Outcome.FAIL,
        ("n1",),
        expected="<5",
        observed=1.0,
        unit="s",
        reason="bad\x00 ]]> text",
    )
    text = junit.render(Run(id="r", suite="s", spec="p", verdicts=(v,)))
    root = ET.fromstring(text.encode())
    tc = root.find("./testsuite/testcase")
    assert tc.get("name") == 'c<&>" [n1]'
    assert "]]> text" in tc.find("failure").text
    xmlschema.XMLSchema(HERE / "junit.xsd").validate(text)


def test_markdown_headline_counts_and_failing_table(rendered):
    md = rendered.files["summary.md"].read_text()
    run = rendered.gen.run
    assert md.splitlines()[0] == "## ✖ aibench acceptance: **FAIL**"
    assert "FAIL **5**" in md
    assert "PASS **" in md
    rows = [
        line
        for line in md.splitlines()
        if (line.startswith("| ") and "FAIL" in line)
        or (line.startswith("| ") and ("ERROR" in line or "MISSING" in line))
    ]
    assert len(rows) == sum(v.outcome.failing for v in run.verdicts)
    assert "`junit.xml`" in md
    assert "`report.html`" in md
    assert "GENERATED DATA" in md


def test_markdown_cells_cannot_break_the_table():
    v = Verdict("a|b", Outcome.FAIL, ("n<1>",), reason="x\ny | <script>")
    md = markdown.render(Run(id="r", suite="s", spec="p", verdicts=(v,)))
    row = next(line for line in md.splitlines() if line.startswith("| ✖"))
    assert row.count(" | ") == 6  # seven cells, none split by the pipes in the data
    assert "<script>" not in md
    assert "a\\|b" in md
