"""The tools' own warnings (StepResult.notes): stored in run.json, shown beside the numbers."""

from __future__ import annotations

from pathlib import Path

from aibench.model import Measurement, Note, Outcome, Run, StepResult, Verdict
from aibench.reports import html as html_report

WORDS = "Conflicting CPU frequency values detected: 3295.212000 != 5023.444000. <not max>"


def _step(i: int, notes: tuple[Note, ...]) -> StepResult:
    m = Measurement("perftest", "lat_avg", 1.5 + i, "us", nodes=(f"n{i}",))
    return StepResult(
        f"lat/n{i}/r0", "lat", "perftest", (f"n{i}",), 0, "ok", measurements=(m,), notes=notes
    )


def test_notes_round_trip_and_are_absent_from_older_files() -> None:
    step = _step(1, (Note("perftest", WORDS, line=20),))
    d = step.to_dict()
    assert d["notes"] == [{"tool": "perftest", "text": WORDS, "kind": "warning", "line": 20}]
    assert StepResult.from_dict(d) == step
    plain = _step(2, ())
    assert "notes" not in plain.to_dict()  # run.json of runs without notes reads as before
    assert StepResult.from_dict(plain.to_dict()).notes == ()


def test_the_report_shows_a_sections_notes_before_its_numbers(tmp_path: Path) -> None:
    note = Note("perftest", WORDS, line=20)
    steps = (_step(1, (note,)), _step(2, (note,)), _step(3, ()))
    run = Run(
        id="r",
        suite="s",
        spec="p",
        steps=steps,
        verdicts=(Verdict("lat", Outcome.PASS, benchmark="perftest"),),
    )
    html = html_report.render(run, tmp_path)
    sec = html.split('<section id="sec-')[1].split("</section>")[0]
    assert "The tool&#39;s own warnings about these runs" in sec
    assert WORDS.replace("<", "&lt;").replace(">", "&gt;") in sec  # escaped
    assert "<not max>" not in html
    row = sec.split(WORDS.split(":")[0])[1].split("</tr>")[0]
    assert "<td>2</td>" in row  # printed by two steps
    assert "n1, n2" in row
    # the warnings are the section's first table, before the tables of its numbers
    captions = [c.split("<")[0] for c in sec.split("<caption>")[1:]]
    assert captions[0].startswith("The tool&#39;s own warnings")
    assert len(captions) > 1


def test_a_section_without_notes_has_no_warnings_table(tmp_path: Path) -> None:
    run = Run(
        id="r",
        suite="s",
        spec="p",
        steps=(_step(1, ()),),
        verdicts=(Verdict("lat", Outcome.PASS, benchmark="perftest"),),
    )
    assert "own warnings" not in html_report.render(run, tmp_path)
