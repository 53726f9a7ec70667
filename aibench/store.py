"""Run directories: where a run's raw logs, results and reports live.

Layout of ``runs/<YYYYmmdd-HHMMSS>-<suite>/``::

    run.json          the Run (schema_version), written atomically once the run is judged
                      (and again by aibench check / report --write), a step at a time;
                      read back a step at a time too, and beyond LAZY_BYTES its steps are
                      left in it (RunJsonSteps);
                      it keeps what the run was judged with (Run.inputs: the spec's and
                      the suite's text, Run.inventory, Run.judgements), so that aibench
                      check judges it again from this file alone
    run-config.json   what was asked (suite, spec, inventory paths, options): for --resume
    steps.jsonl       one StepResult per line (with its invocation's place in the plan,
                      ``plan_index``), appended as each invocation finishes; not held during
                      the run, nor at its end: the judgement, run.json and the reports read
                      it again a step at a time on each pass (orchestrator.JournalResults)
    raw/<step>/...    stdout/stderr of every process, written as they arrive
    report.html, junit.xml, summary.md, metrics.prom, manifest.sha256
"""

from __future__ import annotations

import contextlib
import json
import os
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from aibench.errors import UserError
from aibench.manifest import AlteredError
from aibench.model import Run, Shared, StepResult, StepSource, Verdict, check_schema

RUN_JSON = "run.json"
RUN_CONFIG = "run-config.json"


def new_run_dir(base: Path, suite: str, now: datetime | None = None) -> Path:
    now = now or datetime.now(UTC)
    stamp = now.strftime("%Y%m%d-%H%M%S")
    base.mkdir(parents=True, exist_ok=True)
    for n in range(100):
        name = f"{stamp}-{suite}" if n == 0 else f"{stamp}-{suite}-{n}"
        d = base / name
        try:
            d.mkdir()
        except FileExistsError:
            continue
        return d
    raise UserError(f"{base}: cannot create a new run directory")


def write_json_atomic(path: Path, data: Any) -> None:
    from aibench.textio import write_atomic

    write_atomic(path, json.dumps(data, indent=1, sort_keys=False) + "\n")


def save_run(run: Run, run_dir: Path) -> Path:
    """Write ``run_dir/run.json`` atomically, the same bytes as ``json.dumps(run.to_dict(),
    indent=1)``, but a step and a verdict at a time: a run of millions of measurements is
    never held a second time as one dict tree and one string."""
    from aibench.textio import write_atomic_with

    path = run_dir / RUN_JSON
    write_atomic_with(path, lambda f: f.writelines(run_json_chunks(run)))
    return path


# The record's arrays written an item at a time (each item the bulk of a large run).
_STREAMED = ("steps", "verdicts")


def run_json_chunks(run: Run) -> Iterator[str]:
    """``json.dumps(run.to_dict(), indent=1) + "\\n"`` in pieces: the small fields whole,
    ``steps`` and ``verdicts`` one item at a time, indented as they would be inside."""
    fields = run.replace(steps=(), verdicts=()).to_dict()  # the arrays empty, in their place
    yield "{"
    for i, (key, value) in enumerate(fields.items()):
        yield ("\n " if i == 0 else ",\n ") + json.dumps(key) + ": "
        items = getattr(run, key) if key in _STREAMED else ()
        if items:
            yield from _array(items)
        else:
            yield _indented(json.dumps(value, indent=1), 1)
    yield "\n}\n"


def _array(items: Any) -> Iterator[str]:
    yield "["
    for i, item in enumerate(items):
        yield ("\n  " if i == 0 else ",\n  ") + _indented(json.dumps(item.to_dict(), indent=1), 2)
    yield "\n ]"


def _indented(text: str, level: int) -> str:
    """``text`` (json.dumps with indent=1) as it is nested ``level`` deep: every line but
    the first shifted by ``level`` spaces (a JSON string holds no raw newline)."""
    return text.replace("\n", "\n" + " " * level) if level else text


# A run.json larger than this keeps its steps on disk when it is read (RunJsonSteps): a
# run of all pairs of 1024 nodes writes about 6 GB. Below it, the steps are held: each
# pass over steps read from disk decodes them again.
LAZY_BYTES = 1 << 30


def load_run(run_dir: Path, *, lazy: bool | None = None) -> Run:
    """The Run of a run directory (or of a run.json). ``lazy``: its steps are left in
    the file and read again a step at a time on each pass (:class:`RunJsonSteps`);
    default: when the file is larger than :data:`LAZY_BYTES`."""
    path = run_dir / RUN_JSON if run_dir.is_dir() else run_dir
    try:
        if path.is_symlink():
            raise AlteredError(f"{path}: a symbolic link; a run's record is never followed")
        if lazy is None:
            lazy = path.stat().st_size > LAZY_BYTES
        if lazy:
            with _open_text(path, "ascii") as f:  # json.dumps writes ASCII: chars are bytes
                return read_run(f, steps_in=path)
        with _open_text(path, "utf-8") as f:
            return read_run(f)
    except FileNotFoundError:
        raise UserError(
            f"{path}: no run.json here", hint="give a run directory made by aibench run"
        ) from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except UnicodeDecodeError:
        if lazy:  # not as json.dumps writes it: read it whole
            return load_run(path, lazy=False)
        raise UserError(f"{path}: not a run.json (not UTF-8 text)") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise UserError(f"{path}: cannot read this run: {exc}") from None


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _open_text(path: Path, encoding: str) -> TextIO:
    """``path`` opened for reading as text, never through a symbolic link."""
    return open(os.open(path, os.O_RDONLY | _NOFOLLOW), encoding=encoding)


def read_run(
    f: TextIO,
    chunk: int = 1 << 20,
    *,
    steps_in: Path | None = None,
    keep: Callable[[StepResult], bool] | None = None,
) -> Run:
    """The Run of a run.json, read a piece at a time: each step and verdict becomes its
    record as it is read, so that the file's text and its dict tree are never held whole
    beside the records. ``steps_in`` (the path of ``f``, read as ASCII): each step is
    read and checked, and only where it is in the file is kept (:class:`RunJsonSteps`).
    ``keep``: only the steps it says yes to are kept (each is read and checked)."""
    reader = _JsonReader(f, chunk)
    reader.expect("{")
    fields: dict[str, Any] = {}
    records: dict[str, Sequence[Any]] = {}
    shared = Shared()  # one copy of each name, node tuple and dims for the whole run
    while reader.peek() != "}":
        if fields or records:
            reader.expect(",")
        if reader.peek() != '"':
            reader.error("expected a key")
        key = reader.value()
        reader.expect(":")
        if key in _STREAMED and reader.peek() == "[" and "schema_version" in fields:
            check_schema(fields["schema_version"])
            if key == "steps" and steps_in is not None:
                records[key] = RunJsonSteps.read(reader, steps_in)
                continue
            if key == "steps":
                steps = (StepResult.from_dict(item, shared) for item in reader.items())
                records[key] = [s for s in steps if keep is None or keep(s)]
                continue
            records[key] = [Verdict.from_dict(item, shared) for item in reader.items()]
        else:
            fields[key] = reader.value()
    reader.expect("}")
    reader.end()
    return Run.from_dict(fields, shared).replace(**records)


class RunJsonSteps(StepSource):
    """The steps of a run.json left in the file: where each one is (16 bytes a step),
    read again a step at a time on each pass. The file stays open, so that a run.json
    written again in its place (``aibench check`` records its judgement) does not move
    the steps under it."""

    __slots__ = ("_fd", "_kinds", "ends", "path", "starts")

    def __init__(
        self,
        path: Path,
        starts: array[int],
        ends: array[int],
        kinds: frozenset[tuple[str, str]] | None = None,
    ) -> None:
        self.path, self.starts, self.ends, self._kinds = path, starts, ends, kinds
        self._fd = os.open(path, os.O_RDONLY | _NOFOLLOW)

    def __del__(self) -> None:
        with contextlib.suppress(AttributeError, OSError):
            os.close(self._fd)

    @classmethod
    def read(cls, reader: _JsonReader, path: Path) -> RunJsonSteps:
        """The steps array at ``reader``'s place in ``path``, each one read and checked."""
        starts, ends = array("q"), array("q")
        shared = Shared(tuples=False)
        kinds = set()
        for start, item in reader.spans():
            s = StepResult.from_dict(item, shared)  # a damaged step is an error now
            kinds.add((s.step, s.tool))
            starts.append(start)
            ends.append(reader.offset())
        return cls(path, starts, ends, frozenset(kinds))

    def __len__(self) -> int:
        return len(self.starts)

    def _pick(self, indices: Iterable[int]) -> Iterator[StepResult]:
        shared = Shared(tuples=False)  # names and dims shared; pairs are not kept
        for i in indices:
            start, end = self.starts[i], self.ends[i]
            yield StepResult.from_dict(json.loads(os.pread(self._fd, end - start, start)), shared)


class _JsonReader:
    """A JSON text read from a file a chunk at a time (``raw_decode`` of one value at a
    time; a value cut by the chunk's end is read again with more text)."""

    def __init__(self, f: TextIO, chunk: int = 1 << 20) -> None:
        self.f, self.chunk = f, chunk
        self.buf, self.pos, self.eof = "", 0, False
        self.dropped = 0  # characters read before ``buf``
        self.lines = 0  # lines read before ``buf``: an error names the line of the file
        self.decoder = json.JSONDecoder()

    def _more(self, size: int) -> bool:
        text = self.f.read(size)
        self.lines += self.buf.count("\n", 0, self.pos)
        self.dropped += self.pos
        self.buf, self.pos = self.buf[self.pos :] + text, 0
        self.eof = not text
        return bool(text)

    def peek(self) -> str:
        """The next character that is not white space ("" at the end)."""
        while True:
            n = len(self.buf)
            while self.pos < n and self.buf[self.pos] in " \t\n\r":
                self.pos += 1
            if self.pos < n:
                return self.buf[self.pos]
            if not self._more(self.chunk):
                return ""

    def expect(self, char: str) -> None:
        if self.peek() != char:
            self.error(f"expected {char!r}")
        self.pos += 1

    def value(self) -> Any:
        self.peek()
        size = self.chunk
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if self.eof:
                    exc.lineno += self.lines
                    raise
            else:
                if end < len(self.buf) or self.eof:  # a number may go on in the next piece
                    self.pos = end
                    return value
            self._more(size)  # then decoded again: positions are of the new text
            size *= 2  # a long value: read on in larger pieces

    def offset(self) -> int:
        """Where the reader is, in characters from the start of the text."""
        return self.dropped + self.pos

    def items(self) -> Iterator[Any]:
        """The values of the array that starts here, one at a time."""
        for _start, value in self.spans():
            yield value

    def spans(self) -> Iterator[tuple[int, Any]]:
        """(where it starts, value) of each value of the array that starts here, one at
        a time; where it ends is :meth:`offset` when it is given."""
        self.expect("[")
        if self.peek() == "]":
            self.pos += 1
            return
        while True:
            self.peek()
            start = self.offset()
            yield start, self.value()
            if self.peek() == "]":
                self.pos += 1
                return
            self.expect(",")

    def end(self) -> None:
        if self.peek():
            self.error("extra data")

    def error(self, what: str) -> None:
        exc = json.JSONDecodeError(what, self.buf, self.pos)
        exc.lineno += self.lines
        raise exc
