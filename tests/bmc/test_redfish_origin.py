"""A hostile BMC cannot lead the Redfish reader's credentials elsewhere: a chassis link of
``@other.host/redfish/...`` (which glued after the BMC's address makes the BMC's address
a user name and the other host the server), an absolute URL of another host, or a
redirect to one, never reaches the other host; the link is refused with one line."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from aibench import bmc

PASSWORD = "Rf-Origin-77"


class _Other(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict[str, str]]]

    def do_GET(self) -> None:
        type(self).seen.append(dict(self.headers))
        body = json.dumps({"Members": []}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return None


def _bmc_handler(link: str) -> type[BaseHTTPRequestHandler]:
    class Bmc(_Other):
        seen: ClassVar[list[dict[str, str]]] = []

        def do_GET(self) -> None:
            if self.path == "/redfish/v1/Chassis":
                body = json.dumps({"Members": [{"@odata.id": link}]}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            else:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

    return Bmc


def _serve(host: str, handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer((host, 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def other() -> Iterator[tuple[ThreadingHTTPServer, list[dict[str, str]]]]:
    class Other(_Other):
        seen: ClassVar[list[dict[str, str]]] = []

    server = _serve("127.0.0.2", Other)  # another host: another loopback address
    try:
        yield server, Other.seen
    finally:
        server.shutdown()
        server.server_close()


def _read(port: int, monkeypatch: pytest.MonkeyPatch) -> bmc.BmcReading:
    monkeypatch.setenv("AIBENCH_TEST_RF_PW", PASSWORD)
    t = bmc.BmcTarget(
        node="gpu01", address="127.0.0.1", protocol="redfish", username="admin", port=port,
        password_env="AIBENCH_TEST_RF_PW", scheme="http", insecure_http=True, timeout=5,
    )  # fmt: skip
    return bmc.read(t)


@pytest.mark.parametrize(
    "form",
    ["@{host}:{port}/redfish/v1/Chassis/1", "http://{host}:{port}/redfish/v1/Chassis/1"],
)
def test_a_link_to_another_host_never_gets_the_credentials(
    other: tuple[ThreadingHTTPServer, list[dict[str, str]]],
    monkeypatch: pytest.MonkeyPatch,
    form: str,
) -> None:
    server, seen = other
    link = form.format(host="127.0.0.2", port=server.server_address[1])
    the_bmc = _serve("127.0.0.1", _bmc_handler(link))
    try:
        with pytest.raises(bmc.BmcError, match=r"leaves the BMC|not a path on the BMC") as e:
            _read(the_bmc.server_address[1], monkeypatch)
    finally:
        the_bmc.shutdown()
        the_bmc.server_close()
    assert "\n" not in str(e.value)
    assert PASSWORD not in str(e.value)
    assert seen == []  # the other host was never asked, with or without credentials


def test_a_redirect_to_another_host_is_not_followed(
    other: tuple[ThreadingHTTPServer, list[dict[str, str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, seen = other
    away = f"http://127.0.0.2:{server.server_address[1]}/redfish/v1/Chassis/1"
    the_bmc = _serve("127.0.0.1", _redirecting(away))  # its chassis: "see the other host"
    try:
        with pytest.raises(bmc.BmcError, match="HTTP 302"):
            _read(the_bmc.server_address[1], monkeypatch)
    finally:
        the_bmc.shutdown()
        the_bmc.server_close()
    assert seen == []


def _redirecting(away: str) -> type[BaseHTTPRequestHandler]:
    class Bmc(_Other):
        seen: ClassVar[list[dict[str, str]]] = []

        def do_GET(self) -> None:
            if self.path == "/redfish/v1/Chassis":
                body = json.dumps({"Members": [{"@odata.id": "/redfish/v1/Chassis/1"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            self.send_response(302)
            self.send_header("Location", away)
            self.send_header("Content-Length", "0")
            self.end_headers()

    return Bmc
