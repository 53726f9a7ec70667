"""The Chinese report in a real headless chromium: every character chromium draws is in the
character map of a font chromium says it drew it with, so no glyph is missing (a box or a
blank); chromium uses a CJK font for the Chinese text; the first screen is captured.

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: JSON
messages ending in a NUL byte on file descriptors 3 and 4), so no library is needed.
``CSS.getPlatformFontsForNode`` names the fonts that rendered an element's text;
fontconfig (``fc-list``) gives their files and fontTools their character maps. The
control runs the same check with a fontconfig that knows only DejaVu and must find the
Chinese characters missing.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.reports.conftest import Rendered
from tests.reports.test_browser import CHROMIUM, FLAGS

FC_LIST = shutil.which("fc-list")
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed"),
    pytest.mark.skipif(FC_LIST is None, reason="fc-list (fontconfig) is not installed"),
]


def _is_cjk(ch: str) -> bool:
    return "\u3000" <= ch <= "\u9fff" or "\uff00" <= ch <= "\uffef"


class DevTools:
    """One headless chromium, spoken to over the DevTools pipe."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        assert CHROMIUM is not None
        self.profile = tempfile.TemporaryDirectory(prefix="aibench-chromium-")
        to_child, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()

        def at_3_and_4() -> None:  # the pipe ends chromium expects: it reads 3, writes 4
            a = fcntl.fcntl(to_child, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [
                CHROMIUM,
                *FLAGS,
                f"--user-data-dir={self.profile.name}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=at_3_and_4,
            pass_fds=(3, 4),
            env=dict(env) if env is not None else None,
        )
        os.close(to_child)
        os.close(from_child_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_child], [], [], left)[0]:
                raise TimeoutError("chromium did not answer on the DevTools pipe")
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise EOFError("chromium closed the DevTools pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        msg: dict[str, Any] = json.loads(raw)
        return msg

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + 60
        while True:
            got = self._read_message(deadline)
            if got.get("id") == self._id:
                if "error" in got:
                    raise RuntimeError(f"{method}: {got['error']}")
                result: dict[str, Any] = got.get("result", {})
                return result
            self.events.append(got)

    def wait_event(self, method: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._read_message(deadline))

    def open(self, url: str, width: int = 1280, height: int = 1000) -> str:
        """A new page showing ``url``, loaded; returns its session id."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = str(
            self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        )
        self.call("Page.enable", session)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            session,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        self.call("Page.navigate", session, url=url)
        self.wait_event("Page.loadEventFired")
        return session

    def close(self) -> None:
        with contextlib.suppress(EOFError, TimeoutError, RuntimeError, OSError):
            self.call("Browser.close")
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_child)
        os.close(self._from_child)
        self.profile.cleanup()


@dataclass
class Coverage:
    checked: set[str] = field(default_factory=set)  # characters drawn by a known font
    missing: dict[str, set[str]] = field(default_factory=dict)  # char -> fonts that lack it
    cjk_fonts: set[str] = field(default_factory=set)  # fonts that drew Chinese text
    elements: int = 0


def _text_elements(node: dict[str, Any]) -> Iterator[tuple[int, str]]:
    """(nodeId, text of its own text children) for every element with visible-ish text."""
    kids = node.get("children", [])
    own = "".join(k.get("nodeValue", "") for k in kids if k.get("nodeType") == 3)
    if (
        node.get("nodeType") == 1
        and own.strip()
        and node.get("nodeName") not in ("STYLE", "SCRIPT")
    ):
        yield node["nodeId"], own
    for k in kids:
        yield from _text_elements(k)


class FontFiles:
    """PostScript name -> character map, from the files fontconfig knows."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        assert FC_LIST is not None
        out = subprocess.run(
            [FC_LIST, "--format", "%{postscriptname}\t%{file}\t%{index}\n"],
            capture_output=True,
            text=True,
            check=True,
            env=dict(env) if env is not None else None,
        ).stdout
        self.files = {}
        for line in out.splitlines():
            name, path, index = line.split("\t")
            self.files.setdefault(name, (path, int(index)))
        self._maps: dict[str, frozenset[int]] = {}

    def cmap(self, postscript: str) -> frozenset[int]:
        if postscript not in self._maps:
            from fontTools.ttLib import TTFont

            path, index = self.files[postscript]
            font = TTFont(path, fontNumber=index, lazy=True)
            self._maps[postscript] = frozenset(font.getBestCmap())
            font.close()
        return self._maps[postscript]


def glyph_coverage(
    url: str, env: Mapping[str, str] | None = None, shot: Path | None = None
) -> Coverage:
    fonts = FontFiles(env)
    browser = DevTools(env)
    cov = Coverage()
    try:
        session = browser.open(url)
        if shot is not None:
            png = browser.call("Page.captureScreenshot", session, format="png")["data"]
            shot.write_bytes(base64.b64decode(png))
        browser.call("DOM.enable", session)
        browser.call("CSS.enable", session)
        root = browser.call("DOM.getDocument", session, depth=-1)["root"]
        for node_id, text in _text_elements(root):
            used = browser.call("CSS.getPlatformFontsForNode", session, nodeId=node_id)["fonts"]
            if not used:  # not rendered (display: none, <title>)
                continue
            cov.elements += 1
            names = [f.get("postScriptName") or f["familyName"] for f in used]
            known = [n for n in names if n in fonts.files]
            have = frozenset().union(*(fonts.cmap(n) for n in known))
            for ch in set(text) - set(" \t\r\n\u00a0"):
                if ord(ch) in have:
                    cov.checked.add(ch)
                else:
                    cov.missing.setdefault(ch, set()).update(names)
            if any(_is_cjk(ch) for ch in text):
                cov.cjk_fonts.update(
                    n for n in known if any(_is_cjk(c) and ord(c) in fonts.cmap(n) for c in text)
                )
    finally:
        browser.close()
    return cov


def test_chinese_report_has_no_missing_glyphs(rendered_zh: Rendered, artifacts_dir: Path) -> None:
    shot = artifacts_dir / "report_zh_first_screen.png"
    shot.unlink(missing_ok=True)
    cov = glyph_coverage((rendered_zh.run_dir / "report.html").as_uri(), shot=shot)
    assert cov.missing == {}, f"characters no font had: {sorted(cov.missing)[:40]}"
    page_cjk = {ch for ch in rendered_zh.html if _is_cjk(ch)}
    drawn_cjk = {ch for ch in cov.checked if _is_cjk(ch)}
    assert len(page_cjk) > 200
    # every Chinese character of the visible text was drawn by a font that has it (the
    # rest sit in <title> and in attributes, which have no rendered text node)
    assert len(drawn_cjk) >= 0.95 * len(page_cjk), sorted(page_cjk - drawn_cjk)[:40]
    assert any("CJK" in f for f in cov.cjk_fonts), cov.cjk_fonts
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000


def test_control_without_a_cjk_font_the_check_finds_missing_glyphs(
    rendered_zh: Rendered, tmp_path: Path
) -> None:
    """Only DejaVu known to fontconfig: the Chinese characters have no glyph, and the
    check says so (it is able to fail)."""
    dejavu = Path("/usr/share/fonts/truetype/dejavu")
    if not dejavu.is_dir():
        pytest.skip("fonts-dejavu-core is not installed")
    conf = tmp_path / "fonts.conf"
    conf.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n'
        f"<dir>{dejavu}</dir>\n<cachedir>{tmp_path / 'fc-cache'}</cachedir>\n</fontconfig>\n"
    )
    env = {**os.environ, "FONTCONFIG_FILE": str(conf)}
    cov = glyph_coverage((rendered_zh.run_dir / "report.html").as_uri(), env=env)
    assert cov.elements > 100
    missing_cjk = {ch for ch in cov.missing if _is_cjk(ch)}
    assert len(missing_cjk) > 200
    assert not any("CJK" in f for f in cov.cjk_fonts)
