"""Fixtures for the report tests: generated runs written to disk and rendered once.

``beacon`` is a real HTTP server on loopback that records every request; the hostile run
plants its URL as an image source, so a browser test can prove the report never fetched it.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from aibench.reports import write_all
from tests.reports.gen import Generated, make_run, write_run


@dataclass(frozen=True)
class Rendered:
    gen: Generated
    run_dir: Path
    files: dict[str, Path]

    @property
    def html(self) -> str:
        return (self.run_dir / "report.html").read_text(encoding="utf-8")


@dataclass
class Beacon:
    url: str
    hits: list[str] = field(default_factory=list)


def _render(
    tmp: Path, n: int, hostile: bool = False, beacon: str = "", lang: str = "en"
) -> Rendered:
    gen = make_run(n, hostile=hostile, beacon=beacon)
    run_dir = tmp / "run"
    write_run(gen, run_dir)
    return Rendered(gen, run_dir, write_all(gen.run, run_dir, lang=lang))


@pytest.fixture(scope="session")
def beacon() -> Iterator[Beacon]:
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    yield Beacon(f"http://127.0.0.1:{server.server_address[1]}/leak.png", hits)
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    return _render(tmp_path_factory.mktemp("r8"), 8)


@pytest.fixture(scope="session")
def rendered_zh(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    """The same generated run as ``rendered``, reported in Chinese (``lang="zh"``)."""
    return _render(tmp_path_factory.mktemp("r8zh"), 8, lang="zh")


@pytest.fixture(scope="session")
def hostile(tmp_path_factory: pytest.TempPathFactory, beacon: Beacon) -> Rendered:
    return _render(tmp_path_factory.mktemp("hostile"), 6, hostile=True, beacon=beacon.url)
