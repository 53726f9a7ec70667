"""run.json written and read a piece at a time: the same bytes and the same Run as the
whole-document way, errors that name the line of the file, one copy of repeated values."""

from __future__ import annotations

import io
import json
from array import array
from pathlib import Path

import pytest

from aibench.errors import UserError
from aibench.model import Measurement, Run, Shared
from aibench.store import load_run, read_run, save_run
from tests.reports.gen import make_run


@pytest.fixture(scope="module")
def run() -> Run:
    gen = make_run(4).run
    return gen.replace(
        inputs={"suite": {"name": "s", "text": "a: 1\n"}},
        telemetry={"t0": "2026-12-02T10:15:00Z", "series": [{"node": "gpu0001", "v": [1.5]}]},
    )


def test_save_run_writes_the_bytes_of_the_whole_document(tmp_path: Path, run: Run) -> None:
    for r in (run, Run(id="empty", suite="s", spec="p")):
        path = save_run(r, tmp_path)
        assert path.read_text() == json.dumps(r.to_dict(), indent=1) + "\n"
        assert load_run(tmp_path) == r


def test_read_run_in_small_pieces_is_the_same_run(run: Run) -> None:
    text = json.dumps(run.to_dict(), indent=1)
    whole = Run.from_dict(json.loads(text))
    assert whole == run
    for chunk in (1, 7, 4096):
        assert read_run(io.StringIO(text), chunk) == whole
    # any layout of the same JSON, the keys in another order
    d = run.to_dict()
    shuffled = json.dumps(dict(reversed(list(d.items()))))
    assert read_run(io.StringIO(shuffled), 64) == whole


def test_a_damaged_run_json_names_its_line(tmp_path: Path, run: Run) -> None:
    text = json.dumps(run.to_dict(), indent=1)
    lines = text.splitlines()
    cut = len(lines) * 2 // 3  # inside the steps
    lines[cut] = lines[cut] + "x"
    (tmp_path / "run.json").write_text("\n".join(lines))
    try:
        json.loads("\n".join(lines))
    except json.JSONDecodeError as exc:
        want = exc.lineno
    with pytest.raises(UserError, match=rf"not valid JSON \(line {want}:"):
        load_run(tmp_path)
    (tmp_path / "run.json").write_text(text + " x")
    with pytest.raises(UserError, match="not valid JSON"):
        load_run(tmp_path)
    (tmp_path / "run.json").write_text("[1, 2]")
    with pytest.raises(UserError, match="not valid JSON"):
        load_run(tmp_path)
    (tmp_path / "run.json").write_text(
        text.replace('"schema_version": "1.', '"schema_version": "9.')
    )
    with pytest.raises(UserError, match="schema_version 9"):
        load_run(tmp_path)


def test_repeated_values_are_one_object_and_keep_their_type(run: Run) -> None:
    sh = Shared()
    m = run.measurements[0].to_dict()
    dims = [sh.dims({"k": v}) for v in (1, True, 1.0, 1)]
    assert [type(d["k"]) for d in dims] == [int, bool, float, int]
    assert dims[0] is dims[3]
    assert dims[0] is not dims[1]
    again = [Measurement.from_dict(m, sh) for _ in range(3)]
    assert again[0] == run.measurements[0]
    assert again[0].dims is again[1].dims
    assert again[0].nodes is again[2].nodes
    assert again[0].metric is again[1].metric


@pytest.mark.parametrize("layout", ["written", "compact", "small pieces"])
def test_a_large_run_json_keeps_its_steps_in_the_file(
    tmp_path: Path, run: Run, layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above LAZY_BYTES (or with ``lazy=True``) the steps stay in run.json: where each is
    (its characters are its bytes: json.dumps writes ASCII) is kept, each pass reads them
    again, and the Run is the one read whole, whatever the file's layout."""
    from aibench import store

    text = {
        "written": json.dumps(run.to_dict(), indent=1),
        "compact": json.dumps(run.to_dict(), separators=(",", ":")),
        "small pieces": json.dumps(run.to_dict(), indent=1),
    }[layout]
    (tmp_path / "run.json").write_text(text)
    if layout == "small pieces":  # values cut by the reader's chunks
        real = store.read_run
        monkeypatch.setattr(store, "read_run", lambda f, **kw: real(f, 7, **kw))
    monkeypatch.setattr(store, "LAZY_BYTES", len(text) - 1)
    lazy = load_run(tmp_path)
    assert isinstance(lazy.steps, store.RunJsonSteps)
    assert len(lazy.steps) == len(run.steps)
    assert tuple(lazy.steps) == run.steps
    assert tuple(lazy.steps) == run.steps  # a second pass reads them again
    assert (lazy.steps[2], lazy.steps[-1], lazy.steps[1:3]) == (
        run.steps[2],
        run.steps[-1],
        list(run.steps[1:3]),
    )
    assert lazy.replace(steps=()) == run.replace(steps=())
    assert lazy.steps.kinds() == {(s.step, s.tool) for s in run.steps}
    picked = lazy.steps.subset(array("q", [0, 2]))
    assert (len(picked), list(picked), picked[-1]) == (
        2,
        [run.steps[0], run.steps[2]],
        run.steps[2],
    )
    monkeypatch.setattr(store, "LAZY_BYTES", len(text))
    assert isinstance(load_run(tmp_path).steps, tuple)


def test_steps_left_in_run_json_stay_readable_when_it_is_written_again(
    tmp_path: Path, run: Run
) -> None:
    """``aibench check`` writes run.json again in its place (its judgement recorded, so the
    fields before the steps may change length): the steps read after it are the same."""
    save_run(run, tmp_path)
    lazy = load_run(tmp_path, lazy=True)
    save_run(lazy.replace(notes=("a much longer note than before " * 40,)), tmp_path)
    assert tuple(lazy.steps) == run.steps
    again = load_run(tmp_path, lazy=True)
    assert tuple(again.steps) == run.steps
    assert again.notes[0].startswith("a much longer note")


def test_a_damaged_step_is_an_error_when_run_json_is_read_not_later(
    tmp_path: Path, run: Run
) -> None:
    """A large run.json is still read whole once: a step that is not a step is an error
    naming the file at load time; a file that is not ASCII is read as a whole run."""
    d = run.to_dict()
    d["steps"][1] = {"step_id": "x"}
    (tmp_path / "run.json").write_text(json.dumps(d, indent=1))
    with pytest.raises(UserError, match=r"run.json: cannot read this run: 'step'"):
        load_run(tmp_path, lazy=True)
    d = run.to_dict()
    d["notes"] = ["café"]
    (tmp_path / "run.json").write_text(json.dumps(d, indent=1, ensure_ascii=False))
    read = load_run(tmp_path, lazy=True)
    assert isinstance(read.steps, tuple)
    assert read.notes == ("café",)
