"""Instants and their text have one home (aibench/instants.py): UTC, ISO 8601 with a Z,
at the precision asked for; the user's instants read as now or ISO 8601, UTC by default."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from aibench.errors import UserError
from aibench.instants import iso, now_text, parse_instant

ROOT = Path(__file__).resolve().parent.parent


def test_iso_is_utc_with_a_z_at_the_asked_precision() -> None:
    when = datetime(2026, 12, 2, 11, 15, 0, 123456, tzinfo=timezone(timedelta(hours=1)))
    assert iso(when) == "2026-12-02T10:15:00Z"
    assert iso(when, "milliseconds") == "2026-12-02T10:15:00.123Z"
    assert iso(when, "microseconds") == "2026-12-02T10:15:00.123456Z"


def test_now_text_reads_back_as_now() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    text = now_text()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", text)
    assert before <= datetime.fromisoformat(text) <= datetime.now(UTC)
    assert re.fullmatch(r".*T\d\d:\d\d:\d\d\.\d{3}Z", now_text("milliseconds"))


def test_parse_instant() -> None:
    assert parse_instant("2026-12-02") == datetime(2026, 12, 2, tzinfo=UTC)
    assert parse_instant("2026-12-02T10:15:00Z") == datetime(2026, 12, 2, 10, 15, tzinfo=UTC)
    assert parse_instant(" now ").tzinfo is UTC
    with pytest.raises(UserError, match="--as-of 'yesterday': not 'now' or an ISO 8601"):
        parse_instant("yesterday")


def test_judge_keeps_its_names() -> None:
    from aibench import judge

    assert judge.iso is iso
    assert judge.parse_instant is parse_instant


def test_instant_text_is_written_in_one_place() -> None:
    """No module but aibench/instants.py turns "+00:00" into "Z" itself."""
    copies = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "aibench").rglob("*.py")
        if p.name != "instants.py" and '.replace("+00:00", "Z")' in p.read_text(encoding="utf-8")
    ]
    assert copies == []
