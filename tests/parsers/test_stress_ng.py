"""stress-ng's lengths, as its versions spell them (the lines are quoted from public
outputs; whole outputs are golden fixtures under tests/fixtures/stress-ng)."""

from __future__ import annotations

import pytest

from aibench.parsers import stress_ng

LINES = [
    # stress-ng 0.15.06, captured here
    ("successful run completed in 2.97s", 2.97),
    ("successful run completed in 61.10s (1 min, 1.10 secs)", 61.10),
    # checkbox issue 54 (canonical/checkbox), 5-minute runs
    ("successful run completed in 300.13s (5 mins, 0.13 secs)", 300.13),
    # linuxppc-dev, "stress-ng --class interrupts" on a T4240RDB
    ("unsuccessful run completed in 6352.60s (1 hour, 45 mins, 52.60 secs)", 6352.60),
    # codecarbon docs/edit/test_on_scaleway.rst; openEuler RISC-V report; cygwin-patches
    ("successful run completed in 1 min", 60.0),
    ("successful run completed in 1 min, 1.14 secs", 61.14),
    ("unsuccessful run completed in 5.25 secs", 5.25),
    # a 90-minute soak on Kubernetes (code-index file id 55875039627)
    ("successful run completed in 1 hour, 30 mins", 5400.0),
]


@pytest.mark.parametrize(("line", "seconds"), LINES)
def test_run_lengths_in_every_spelling(line: str, seconds: float) -> None:
    m = stress_ng._COMPLETED.search(line)
    assert m is not None
    assert stress_ng._seconds(m.group(2), 1) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("spelled", "seconds"),
    [
        ("60 second", 60.0),
        ("61 second (1 min, 1.00 secs)", 61.0),
        ("1 min, 0 secs", 60.0),
        ("5 mins", 300.0),
        ("1 hour, 30 mins", 5400.0),
        ("86400 second (1 day, 0.00 secs)", 86400.0),
    ],
)
def test_requested_lengths(spelled: str, seconds: float) -> None:
    assert stress_ng._seconds(spelled, 1) == pytest.approx(seconds)


def test_a_length_it_cannot_read_is_a_parse_error() -> None:
    from aibench.errors import ParseError

    with pytest.raises(ParseError, match="not understood"):
        stress_ng._seconds("a while", 3)
