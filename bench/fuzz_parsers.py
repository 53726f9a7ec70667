"""Fuzz every registered parser with mutated real fixtures.

Property: ``parser.parse(text)`` either returns records or raises an
``aibench.errors.OutputError`` (ParseError / ToolFailure); nothing else escapes, and
every returned Measurement has a finite value and a unit known to ``aibench.units`` (and
every Note has text).

Inputs are the golden fixtures under ``tests/fixtures/<parser>/``, each mutated 1-3
times by: truncation, line deletion, byte flip, whitespace insertion / column shift
(a token of a line removed or doubled), line duplication.

    python bench/fuzz_parsers.py                 # 100000 cases
    python bench/fuzz_parsers.py --cases 5000 --seed 7

Prints the number of cases, per-parser counts, the escapes found (exception, parser,
fixture, and a reproducer shrunk line by line) and the time taken. Exit status 1 when
something escaped.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aibench import parsers  # noqa: E402
from aibench.errors import OutputError  # noqa: E402
from aibench.model import Fact, Measurement, Note  # noqa: E402
from aibench.units import is_known  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
SKIP = {"SOURCES.md", "README.md"}
FLIP_CHARS = '0123456789.-+eE,;:=%[]{}()" \t\nxX\x00\u00b5\ufffd'


def fixture_cases() -> list[tuple[str, str, str]]:
    """(parser name, fixture name, text) for every registered parser's fixtures."""
    out = []
    names = set(parsers.PARSERS.names())
    for d in sorted(FIXTURES.iterdir()):
        if not d.is_dir() or d.name not in names:
            continue
        for f in sorted(d.iterdir()):
            if f.is_dir() or f.name in SKIP or f.name.endswith(".expected.json"):
                continue
            out.append((d.name, f.name, f.read_text(encoding="utf-8", errors="replace")))
    return out


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True) or [text]


def truncate(rng: random.Random, text: str) -> str:
    return text[: rng.randrange(len(text) + 1)]


def delete_line(rng: random.Random, text: str) -> str:
    lines = _lines(text)
    del lines[rng.randrange(len(lines))]
    return "".join(lines)


def duplicate_line(rng: random.Random, text: str) -> str:
    lines = _lines(text)
    i = rng.randrange(len(lines))
    lines.insert(i, lines[i])
    return "".join(lines)


def flip(rng: random.Random, text: str) -> str:
    if not text:
        return text
    i = rng.randrange(len(text))
    return text[:i] + rng.choice(FLIP_CHARS) + text[i + 1 :]


def insert_space(rng: random.Random, text: str) -> str:
    i = rng.randrange(len(text) + 1)
    return text[:i] + rng.choice([" ", "  ", "\t", " 0 ", " x "]) + text[i:]


def shift_column(rng: random.Random, text: str) -> str:
    lines = _lines(text)
    i = rng.randrange(len(lines))
    end = "\n" if lines[i].endswith("\n") else ""
    tokens = lines[i].rstrip("\n").split(" ")
    if not tokens:
        return text
    j = rng.randrange(len(tokens))
    if rng.random() < 0.5:
        del tokens[j]
    else:
        tokens.insert(j, tokens[j])
    lines[i] = " ".join(tokens) + end
    return "".join(lines)


MUTATIONS: dict[str, Callable[[random.Random, str], str]] = {
    "truncate": truncate,
    "delete_line": delete_line,
    "duplicate_line": duplicate_line,
    "flip": flip,
    "insert_space": insert_space,
    "shift_column": shift_column,
}


def problem(parser_name: str, text: str) -> str | None:
    """None when the property holds, else what went wrong."""
    parser = parsers.get(parser_name)
    try:
        recs = parser.parse(text)
    except OutputError:
        return None
    except Exception as exc:  # finding these is the point
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        where = f"{Path(frame.filename).name}:{frame.lineno}"
        return f"{type(exc).__name__} at {where}: {str(exc)[:160]}"
    for r in recs:
        if isinstance(r, Measurement):
            if not math.isfinite(r.value):
                return f"Measurement {r.metric} is not finite: {r.value}"
            if not is_known(r.unit):
                return f"Measurement {r.metric} has unknown unit {r.unit!r}"
        elif isinstance(r, Note):
            if not isinstance(r.text, str) or not r.text:
                return f"Note with no text: {r!r}"
        elif not isinstance(r, Fact):
            return f"parse returned a {type(r).__name__}, not a Measurement, Fact or Note"
    return None


def shrink(parser_name: str, text: str, kind: str) -> str:
    """Drop lines, then trailing characters, while the same kind of problem remains."""

    def same(t: str) -> bool:
        p = problem(parser_name, t)
        return p is not None and p.split(":")[0] == kind.split(":")[0]

    lines = _lines(text)
    i = 0
    while i < len(lines) and len(lines) > 1:
        trial = lines[:i] + lines[i + 1 :]
        if same("".join(trial)):
            lines = trial
        else:
            i += 1
    out = "".join(lines)
    step = max(1, len(out) // 8)
    while step >= 1:
        while len(out) > step and same(out[:-step]):
            out = out[:-step]
        step //= 2
    return out


@dataclass
class Escape:
    parser: str
    fixture: str
    mutations: list[str]
    problem: str
    text: str


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=20261202)
    ap.add_argument("--only", metavar="PARSER", help="fuzz only this parser")
    args = ap.parse_args(argv)

    rng = random.Random(args.seed)
    cases = [c for c in fixture_cases() if not args.only or c[0] == args.only]
    if not cases:
        print("no fixtures found", file=sys.stderr)
        return 2
    by_parser: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for p, f, t in cases:
        by_parser[p].append((f, t))
    names = sorted(by_parser)
    counts: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    escapes: dict[tuple[str, str], Escape] = {}
    kinds = list(MUTATIONS)
    t0 = time.perf_counter()
    for _ in range(args.cases):
        p = rng.choice(names)  # every parser gets an equal share
        fixture, text = rng.choice(by_parser[p])
        applied = [rng.choice(kinds) for _ in range(rng.randint(1, 3))]
        for k in applied:
            text = MUTATIONS[k](rng, text)
        counts[p] += 1
        found = problem(p, text)
        if found is None:
            outcomes["ok"] += 1
            continue
        outcomes["escape"] += 1
        key = (p, found.split(":")[0] + found.split(":")[1] if ":" in found else found)
        if key not in escapes:
            escapes[key] = Escape(p, fixture, applied, found, text)
    elapsed = time.perf_counter() - t0

    print(
        f"cases: {sum(counts.values())}  seed: {args.seed}  time: {elapsed:.1f} s "
        f"({sum(counts.values()) / elapsed:,.0f} cases/s)"
    )
    print(f"fixtures: {len(cases)} across {len(names)} parsers")
    print(f"{'parser':<28}{'cases':>8}{'escapes':>9}")
    per_escape = Counter(e.parser for e in escapes.values())
    for p in names:
        print(f"{p:<28}{counts[p]:>8}{per_escape[p]:>9}")
    print(f"distinct escapes: {len(escapes)}")
    for e in escapes.values():
        small = shrink(e.parser, e.text, e.problem)
        print(f"\n[{e.parser}] {e.problem}")
        print(f"  from fixture {e.fixture} after {', '.join(e.mutations)}")
        print(f"  reproducer ({len(small)} chars): {small[:400]!r}")
    return 1 if escapes else 0


if __name__ == "__main__":
    raise SystemExit(main())
