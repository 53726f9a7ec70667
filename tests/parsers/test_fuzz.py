"""Property test: mutated real fixtures never make a parser raise anything but OutputError.

Every registered parser is fuzzed with its own golden fixtures (tests/fixtures/<name>/),
mutated by truncation, line deletion, byte flips, whitespace insertion / column shifts
and duplicated lines. A returned Measurement must have a finite value and a known unit.
bench/fuzz_parsers.py runs the same property for 100000 cases.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aibench import parsers
from aibench.errors import OutputError
from aibench.model import Fact, Measurement, Note
from aibench.units import is_known

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SKIP = {"SOURCES.md", "README.md"}


# Escapes found by bench/fuzz_parsers.py in parsers of other areas, while their owners
# fix them: parser name -> reason (the parser's case is then an expected failure).
KNOWN_ESCAPES: dict[str, str] = {}


def _cases() -> list[tuple[str, str]]:
    names = set(parsers.PARSERS.names())
    out = []
    for d in sorted(FIXTURES.iterdir()):
        if d.is_dir() and d.name in names:
            for f in sorted(d.iterdir()):
                if f.is_file() and f.name not in SKIP and not f.name.endswith(".expected.json"):
                    out.append((d.name, f.read_text(encoding="utf-8", errors="replace")))
    return out


CASES = _cases()
FLIP = '0123456789.-+eE,;:=%[]{}()" \t\nxX\x00\u00b5\ufffd'


@st.composite
def mutated(draw: st.DrawFn, name: str) -> str:
    text = draw(st.sampled_from([t for n, t in CASES if n == name]))
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["truncate", "delete", "dup", "flip", "space", "shift"]))
        lines = text.splitlines(keepends=True) or [text]
        if kind == "truncate":
            text = text[: draw(st.integers(0, len(text)))]
        elif kind in ("delete", "dup", "shift"):
            i = draw(st.integers(0, len(lines) - 1))
            if kind == "delete":
                del lines[i]
            elif kind == "dup":
                lines.insert(i, lines[i])
            else:
                end = "\n" if lines[i].endswith("\n") else ""
                tokens = lines[i].rstrip("\n").split(" ")
                j = draw(st.integers(0, len(tokens) - 1))
                if draw(st.booleans()):
                    del tokens[j]
                else:
                    tokens.insert(j, tokens[j])
                lines[i] = " ".join(tokens) + end
            text = "".join(lines)
        elif kind == "flip" and text:
            i = draw(st.integers(0, len(text) - 1))
            text = text[:i] + draw(st.sampled_from(FLIP)) + text[i + 1 :]
        elif kind == "space":
            i = draw(st.integers(0, len(text)))
            text = text[:i] + draw(st.sampled_from([" ", "\t", " 0 ", " x "])) + text[i:]
    return text


def test_every_registered_parser_has_fixtures_to_fuzz() -> None:
    assert {n for n, _ in CASES} == set(parsers.PARSERS.names())


NAMES = sorted({n for n, _ in CASES})


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.xfail(reason=KNOWN_ESCAPES[n], strict=False))
        if n in KNOWN_ESCAPES
        else n
        for n in NAMES
    ],
)
@settings(
    # 250 cases per parser: about 10 s for all parsers together on a 2-core machine;
    # bench/fuzz_parsers.py runs the 100,000-case version
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_only_output_errors_escape(name: str, data: st.DataObject) -> None:
    text = data.draw(mutated(name))
    try:
        records = parsers.get(name).parse(text)
    except OutputError:
        return
    for r in records:
        assert isinstance(r, Measurement | Fact | Note)
        if isinstance(r, Note):
            assert isinstance(r.text, str)
            assert r.text  # the tool's words, never empty
        if isinstance(r, Measurement):
            assert math.isfinite(r.value)
            assert is_known(r.unit), r.unit
