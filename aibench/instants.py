"""Instants and their text: one home for "now in UTC" and its ISO 8601 form.

Every instant aibench writes (a run's start and end, a process's start, a judgement's
``as_of``, a Kubernetes lease's renew time) is UTC, written ISO 8601 with a ``Z``:
``2026-12-02T10:15:00Z``, to the second unless a finer ``timespec`` is asked for (a
process's start: milliseconds; a lease's renew time: microseconds, as the API's MicroTime
wants). An instant read from the user (``--as-of``, a stored ``as_of``) is ``now`` or an
ISO 8601 date or time, UTC unless it says otherwise.
"""

from __future__ import annotations

from datetime import UTC, datetime

from aibench.errors import UserError


def iso(when: datetime, timespec: str = "seconds") -> str:
    """``when`` in UTC as ISO 8601 text ending in ``Z``."""
    return when.astimezone(UTC).isoformat(timespec=timespec).replace("+00:00", "Z")


def as_given(when: datetime) -> str:
    """``when`` to the second with the offset it was given (``Z`` for UTC; UTC when it
    has none): an instant a user gave (``check --as-of 2026-12-05T08:00+08:00``) is
    stored as given, so that it is judged again on the same local day when read back."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.isoformat(timespec="seconds").replace("+00:00", "Z")


def now_text(timespec: str = "seconds") -> str:
    """Now, in UTC, as :func:`iso` writes it."""
    return iso(datetime.now(UTC), timespec)


def parse_instant(text: str, what: str = "--as-of") -> datetime:
    """``now``, an ISO 8601 date or time (UTC unless it says otherwise); a UserError
    names ``what`` when it is neither."""
    if text.strip().lower() == "now":
        return datetime.now(UTC).replace(microsecond=0)
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UserError(f"{what} {text!r}: not 'now' or an ISO 8601 date/time") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)
