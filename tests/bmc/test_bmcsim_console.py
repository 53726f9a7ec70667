"""The BMC simulator's console helper finds its prompt among the session lines ipmi_sim
writes to every console while a client polls it, and gives up at its deadline."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import pytest

from tests.bmcsim import _until_prompt

TELNET_OPEN = b"\xff\xfb\x03\xff\xfb\x01\xff\xfe\x01"
SESSION = b"Activate session: Session started, max priv 0\n\r channel=1 netfn=0x6\n\r"


def _feed(s: socket.socket, pieces: list[bytes], every: float) -> threading.Thread:
    def run() -> None:
        with contextlib.suppress(OSError):  # the test closed its end
            for p in pieces:
                s.sendall(p)
                time.sleep(every)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_the_first_prompt_follows_the_telnet_option_bytes() -> None:
    a, b = socket.socketpair()
    with a, b:
        _feed(b, [TELNET_OPEN + b"> "], 0)
        assert _until_prompt(a, time.monotonic() + 5, "prompt").endswith(b"> ")


def test_session_lines_after_the_prompt_do_not_hide_it() -> None:
    """What a polled console sends: the command's echo and prompt, then more session lines
    (the old helper waited for the text to end in a prompt, and waited for ever)."""
    a, b = socket.socketpair()
    with a, b:
        _feed(b, [b"sensor_set_value 0x20 0 3 0 0\n\r> " + SESSION, SESSION, SESSION], 0.05)
        out = _until_prompt(a, time.monotonic() + 5, "prompt")
        assert b"\n\r> " in out


def test_no_prompt_ends_at_the_deadline() -> None:
    a, b = socket.socketpair()
    with a, b:
        feeder = _feed(b, [SESSION] * 40, 0.05)
        t0 = time.monotonic()
        with pytest.raises(TimeoutError, match="no prompt"):
            _until_prompt(a, time.monotonic() + 1.0, "prompt")
        assert time.monotonic() - t0 < 4
    feeder.join(5)


def test_a_silent_console_ends_at_the_deadline_too() -> None:
    a, b = socket.socketpair()
    with a, b, pytest.raises(TimeoutError, match="no prompt"):
        _until_prompt(a, time.monotonic() + 0.5, "prompt")
