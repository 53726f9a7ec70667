"""Interpretation: a finished process and its output become one StepResult.

The status (ok, failed, timeout, unreachable), the one-line reason in the tool's own
words, and the records: the runner's ``collect`` where it has one, else the parser named
by the invocation on the client's stdout. Measurements are given their provenance here
(the invocation's tool, nodes, step and repeat; parsers know no hosts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from aibench.errors import OutputError, ParseError, ToolFailure
from aibench.executors.base import ProcResult
from aibench.model import (
    Fact,
    Measurement,
    Note,
    ProcessRecord,
    StepResult,
    StepStatus,
    with_notes,
)
from aibench.parsers import Record
from aibench.runners import RUNNERS, Invocation
from aibench.runners.base import Output
from aibench.textio import read_text, tail


def version_fact(facts: Sequence[Fact]) -> str:
    """A tool without a version command reports its version in its output (nccl-tests)."""
    for f in facts:
        if f.name == "version" and isinstance(f.value, str) and f.value:
            return f.value
    return ""


def read_records(
    inv: Invocation, collect: Callable[..., Any] | None, out: Output
) -> tuple[list[Record], OutputError | None]:
    """The records of a finished process, by the runner's ``collect`` or else the
    invocation's parser on stdout (nothing to parse when the process never started and
    wrote nothing), and the error that cut the reading short (with the complete records
    a ToolFailure kept)."""
    records: list[Record] = []
    problem: OutputError | None = None
    try:
        if collect is not None:
            records = list(collect(inv, out))
        elif out.exit_code is not None or out.stdout.strip():
            from aibench import parsers

            records = parsers.parse(inv.parser, out.stdout)
    except ToolFailure as exc:
        problem = exc
        records = [r for r in exc.partial if isinstance(r, Measurement | Fact | Note)]
    except ParseError as exc:
        problem = exc
    return records, problem


def interpret(
    inv: Invocation,
    proc: ProcResult,
    out_path: Path,
    err_path: Path,
    result: Callable[..., StepResult],
    duration: float,
) -> StepResult:
    """Turn a finished process into a StepResult: status, reason, records."""
    stdout, stderr = read_text(out_path), read_text(err_path)
    extra: list[ProcessRecord] = []  # processes ``collect`` reports (filled in place)
    base: dict[str, Any] = {
        "exit_code": proc.exit_code,
        "started": proc.started,
        "duration": duration,
        "processes": extra,
    }
    if proc.unreachable:
        return result(StepStatus.UNREACHABLE, proc.reason or "node unreachable", **base)
    runner = RUNNERS.get(inv.tool)
    collect = getattr(runner, "collect", None)
    out = Output(stdout, stderr, proc.exit_code, out_path.parent, proc.reason, extra)
    records, problem = read_records(inv, collect, out)
    result = with_notes(result, [r for r in records if isinstance(r, Note)])  # tool warnings
    measurements, facts = split(inv, records)
    if proc.timed_out:
        return result(
            StepStatus.TIMEOUT, proc.reason, measurements=measurements, facts=facts, **base
        )
    if proc.exit_code is None and collect is None:
        return result(StepStatus.FAILED, proc.reason or "did not start", **base)
    if problem is not None:
        return result(
            StepStatus.FAILED,
            _and_why(str(problem), proc.reason),
            measurements=measurements,
            facts=facts,
            **base,
        )
    if proc.exit_code not in (0, None) and collect is None:
        why = _and_why(tail(stderr) or tail(stdout), proc.reason) or "no output"
        return result(
            StepStatus.FAILED,
            f"exit code {proc.exit_code}: {why}",
            measurements=measurements,
            facts=facts,
            **base,
        )
    if not measurements and not facts:
        return result(StepStatus.FAILED, "the tool reported nothing that could be measured", **base)
    return result(StepStatus.OK, measurements=measurements, facts=facts, **base)


def _and_why(text: str, reason: str) -> str:
    """What the output says, then what the executor saw of the process (a Pod killed for
    its memory, a worker of a launch gone), which the output cannot say."""
    if reason and reason not in text:
        return f"{text}; {reason}" if text else reason
    return text


def split(inv: Invocation, records: Sequence[Record]) -> tuple[list[Measurement], list[Fact]]:
    from dataclasses import replace

    ms: list[Measurement] = []
    fs: list[Fact] = []
    for r in records:
        if isinstance(r, Measurement):
            # stamped with the invocation's tool: a runner that reuses another tool's
            # parser (rccl-tests reads NCCL-tests tables) owns its records; the nodes are
            # the invocation's unless the runner named them (one client of many)
            nodes = r.nodes or inv.nodes
            ms.append(replace(r, tool=inv.tool, nodes=nodes, step=inv.step, repeat=inv.repeat))
        elif isinstance(r, Fact):
            fs.append(replace(r, nodes=r.nodes or inv.nodes))
    return ms, fs
