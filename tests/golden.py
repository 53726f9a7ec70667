"""Golden fixtures, found by convention.

``tests/fixtures/<parser>/<case>.<ext>`` is a real captured tool output (its source is a
line in the folder's ``SOURCES.md``); ``<case>.expected.json`` beside it is the reviewed
expected result, either::

    {"records": [<Measurement or Fact as to_dict(), with "kind">, ...]}

or, for outputs that must fail::

    {"error": {"type": "ParseError" | "ToolFailure", "line": 12, "reason": "<substring>"},
     "partial": [<records measured before the failure>]}

Regenerate candidates for review with ``python tests/golden.py PARSER [CASE...]``.

A few folders hold real tool output that no parser reads (:data:`OTHER_FOLDERS`); their
own tests use them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aibench.model import Measurement

FIXTURES = Path(__file__).parent / "fixtures"
SKIP_NAMES = {"SOURCES.md", "README.md", "CORPUS.md"}
# Fixture folders that are not named after a parser, and who reads their files.
OTHER_FOLDERS = {
    "mlperf-compliance": "mlperf-logging compliance checker output, read by "
    "aibench.runners.mlperf_training.first_complaint",
    "tool-help": "the real tools' option lists (perftest --help captures, the nccl-tests "
    "README's arguments), read by the test replays tests/programs/*_replay.py",
}


def record_dict(rec: Any) -> dict[str, Any]:
    d: dict[str, Any] = rec.to_dict()
    d["kind"] = type(rec).__name__
    return d


def cases(parser: str | None = None) -> list[tuple[str, Path]]:
    out = []
    for d in sorted(FIXTURES.iterdir()) if FIXTURES.exists() else []:
        if not d.is_dir() or d.name in OTHER_FOLDERS or (parser and d.name != parser):
            continue
        for f in sorted(d.iterdir()):
            if f.name in SKIP_NAMES or f.name.endswith(".expected.json") or f.is_dir():
                continue
            out.append((d.name, f))
    return out


def expected_path(case: Path) -> Path:
    return case.with_name(case.name.rsplit(".", 1)[0] + ".expected.json")


def actual(parser: str, case: Path) -> dict[str, Any]:
    from aibench import parsers
    from aibench.errors import OutputError, ToolFailure

    text = case.read_text(encoding="utf-8", errors="replace")
    try:
        recs = parsers.parse(parser, text)
    except OutputError as exc:
        partial = exc.partial if isinstance(exc, ToolFailure) else []
        return {
            "error": {"type": type(exc).__name__, "line": exc.line, "reason": exc.reason},
            "partial": [record_dict(r) for r in partial],
        }
    return {"records": [record_dict(r) for r in recs]}


def main(argv: list[str]) -> int:
    parser, names = argv[0], set(argv[1:])
    for p, case in cases(parser):
        if names and case.stem not in names and case.name not in names:
            continue
        out = expected_path(case)
        out.write_text(json.dumps(actual(p, case), indent=1, sort_keys=True) + "\n")
        print(f"wrote {out} (review it before committing)")
    return 0


def value_of(recs: Any, metric: str, *, unset: tuple[str, ...] = (), **dims: object) -> float:
    """The value of the one Measurement of ``recs`` with ``metric`` and ``dims`` (a test
    fails when there is none or more than one); a dim named in ``unset`` must be absent
    from it unless ``dims`` asks for it (the summary, not one host's or pass's share)."""
    from aibench.model import Measurement

    found = [
        r.value
        for r in recs
        if isinstance(r, Measurement)
        and r.metric == metric
        and all(r.dims.get(k) == v for k, v in dims.items())
        and all(k in dims or k not in r.dims for k in unset)
    ]
    assert len(found) == 1, (metric, dims, found)
    return float(found[0])


def pick(recs: list[Measurement], metric: str, **dims: object) -> list[Measurement]:
    """The records of ``recs`` with ``metric`` whose dims hold ``dims`` (others may be set)."""
    return [
        r for r in recs if r.metric == metric and all(r.dims.get(k) == v for k, v in dims.items())
    ]


def one(recs: list[Measurement], metric: str, **dims: object) -> Measurement:
    """The one record :func:`pick` finds (a test fails when there is none or more than one)."""
    found = pick(recs, metric, **dims)
    assert len(found) == 1, f"{metric} {dims}: {len(found)} records"
    return found[0]


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    raise SystemExit(main(sys.argv[1:]))
