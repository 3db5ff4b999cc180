"""The server's answers to hostile requests (docs/protocol.md#security): DNS rebinding, methods, doubled headers, big numbers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from simreportd.daemon.config import ServerConfig
from simreportd.daemon.server.edge import host_allowed

from ..conftest import TIMEOUT
from ..in_process import InProcess, in_process_config
from .test_server import Running, frames_until, server_config

pytestmark = pytest.mark.anyio


@pytest.fixture
async def running(tmp_path: Path, small_sim: Path) -> AsyncIterator[Running]:
    async with Running(server_config(tmp_path, allowed_hosts=["reports.example.org"]), [small_sim]) as r:
        yield r


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[InProcess]:
    """The app in this process: what the edge answers needs no socket (nor a simulation)."""
    async with InProcess(in_process_config(tmp_path), []) as a:
        yield a


async def raw(base: str, request: str) -> tuple[int, dict[str, str], str]:
    """Send one raw HTTP request; the status, headers and body of the answer."""
    host, port = base.split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(request.replace("\n", "\r\n").encode() + b"\r\n")
    await writer.drain()
    answer = (await asyncio.wait_for(reader.read(), TIMEOUT)).decode(errors="replace")
    writer.close()
    head, _, body = answer.partition("\r\n\r\n")
    status_line, *lines = head.split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    return int(status_line.split()[1]), headers, body


def get(path: str, host: str, *extra: str) -> str:
    return "\n".join([f"GET {path} HTTP/1.1", f"Host: {host}", *extra, "Connection: close", ""])


async def test_a_rebound_host_is_refused_on_http_and_websockets(running: Running) -> None:
    port = running.base.split(":")[1]
    status, _, body = await raw(running.base, get("/api/reports", f"evil.com:{port}"))
    assert status == 403 and "allowed_hosts" in body
    upgrade = get("/ws", f"evil.com:{port}", f"Origin: http://evil.com:{port}", "Upgrade: websocket",
                  "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13")
    status, _, _ = await raw(running.base, upgrade.replace("Connection: close", "Connection: Upgrade"))
    assert status == 403
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "reports.example.org"):
        assert (await raw(running.base, get("/api/reports", host)))[0] == 200, host


@pytest.mark.parametrize("method", ["HEAD", "OPTIONS", "POST", "PUT", "DELETE", "TRACE"])
async def test_other_methods_than_get_are_answered_405_with_allow(app: InProcess, method: str) -> None:
    answer = await app.request(method, "/api/reports")
    assert answer.status == 405 and answer.headers.get("Allow") == "GET"


@pytest.mark.parametrize("header", [("Host", "127.0.0.1"), ("Authorization", "Bearer x")])
async def test_a_doubled_host_or_authorization_header_is_a_400(app: InProcess, header: tuple[str, str]) -> None:
    answer = await app.request("GET", "/healthz", raw_headers=[header, header])
    assert answer.status == 400 and "more than one" in answer.text


@pytest.mark.parametrize("path", ["/api/report/r1/agent-log?from_line=" + "1" * 23,
                                  "/api/report/r1/section/" + "9" * 5000])
async def test_absurd_numbers_in_a_request_are_a_400(app: InProcess, path: str) -> None:
    """In MiroFish's error shape on its routes (`{success: false, error}`), with our code beside it."""
    body = (answer := await app.get(path)).json()
    assert answer.status == 400 and body["code"] == "bad_request" and body["success"] is False


@pytest.mark.parametrize("after", [10**23, 10**9])
async def test_subscribing_after_a_position_out_of_range_gets_an_error_frame(running: Running, after: int) -> None:
    async with connect(f"ws://{running.base}/ws") as ws:
        await ws.send(json.dumps({"op": "subscribe", "after": after}))
        [frame] = await frames_until(ws, "error")
        assert frame["code"] == "bad_after"


def test_the_host_allow_list_takes_loopback_the_configured_host_and_allowed_hosts() -> None:
    config = ServerConfig(host="10.0.0.5", token="t", allowed_hosts=["Reports.Example.org", "other:81"])
    allowed = ["localhost:8765", "127.0.0.2", "[::1]:1", "10.0.0.5:8765", "reports.example.org:443", "other:81"]
    assert all(host_allowed(h, config) for h in allowed)
    assert not any(host_allowed(h, config) for h in ["evil.com", "other:82", "10.0.0.6", "", "127.0.0.1.evil.com"])
    assert host_allowed("anything", ServerConfig(host="0.0.0.0", token="t"))  # wildcard, no list: the token guards
