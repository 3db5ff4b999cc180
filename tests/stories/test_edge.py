"""The server's edge over real HTTP and websockets on 127.0.0.1: CORS for listed origins, state-changing requests
refused from other origins and without a JSON body, connection limits, a busy port, the request-head deadline."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from simreportd.daemon.server import connections

from ..conftest import PYTHON, TIMEOUT, write_config
from ..daemon.test_server import Running, frames_until, server_config

pytestmark = pytest.mark.anyio

FRONTEND = "http://localhost:3000"  # MiroFish's dev server


@pytest.fixture
async def running(tmp_path: Path, small_sim: Path) -> AsyncIterator[Running]:
    async with Running(server_config(tmp_path, allowed_origins=[FRONTEND]), [small_sim]) as r:
        yield r


def request(method: str, path: str, host: str, *headers: str, body: str = "") -> bytes:
    """A raw HTTP/1.1 request that closes the connection after the answer."""
    length = [f"Content-Length: {len(body.encode())}"] if body or method in ("POST", "DELETE") else []
    head = [f"{method} {path} HTTP/1.1", f"Host: {host}", *headers, *length, "Connection: close"]
    return ("\r\n".join(head) + "\r\n\r\n" + body).encode()


async def raw(base: str, data: bytes) -> tuple[int, dict[str, str], str]:
    """Send a raw request; the status, the headers (names lower-case) and the body of the answer."""
    host, port = base.split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(data)
    answer = (await asyncio.wait_for(reader.read(), TIMEOUT)).decode(errors="replace")
    writer.close()
    head, _, body = answer.partition("\r\n\r\n")
    status_line, *lines = head.split("\r\n")
    headers = {name.lower(): value for name, value in (line.split(": ", 1) for line in lines)}
    return int(status_line.split()[1]), headers, body


CHAT = json.dumps({"simulation_id": "sim_nowhere", "message": "Who was most active?"})


async def test_a_listed_origin_gets_preflights_and_cors_answers(running: Running) -> None:
    status, preflight, _ = await raw(running.base, request(
        "OPTIONS", "/api/report/chat", running.base, f"Origin: {FRONTEND}", "Access-Control-Request-Method: POST",
        "Access-Control-Request-Headers: content-type,authorization"))
    assert status == 200 and preflight["access-control-allow-origin"] == FRONTEND
    assert {"GET", "POST", "DELETE"} <= set(preflight["access-control-allow-methods"].split(", "))
    assert {"content-type", "authorization"} <= set(preflight["access-control-allow-headers"].lower().split(", "))
    status, headers, body = await raw(running.base, request("GET", "/api/reports", running.base, f"Origin: {FRONTEND}"))
    assert status == 200 and headers["access-control-allow-origin"] == FRONTEND and "reports" in json.loads(body)
    status, headers, body = await raw(running.base, request(
        "POST", "/api/report/chat", running.base, f"Origin: {FRONTEND}", "Content-Type: application/json", body=CHAT))
    assert status == 404 and headers["access-control-allow-origin"] == FRONTEND  # answered: no such simulation
    assert json.loads(body)["success"] is False and "has no report" in json.loads(body)["error"]


async def test_a_post_or_delete_from_an_unlisted_origin_is_refused(running: Running) -> None:
    evil = "Origin: http://evil.example"
    status, preflight, _ = await raw(running.base, request(
        "OPTIONS", "/api/report/chat", running.base, evil, "Access-Control-Request-Method: POST"))
    assert "access-control-allow-origin" not in preflight
    status, headers, body = await raw(running.base, request(
        "POST", "/api/report/chat", running.base, evil, "Content-Type: application/json", body=CHAT))
    assert status == 403 and "access-control-allow-origin" not in headers
    assert json.loads(body)["success"] is False and "allowed_origins" in json.loads(body)["error"]
    status, _, body = await raw(running.base, request("DELETE", "/api/reports/r1", running.base, evil))
    assert status == 403 and json.loads(body)["error"] == "forbidden_origin"
    same_site = f"Origin: http://{running.base}"  # the dashboard's own page
    status, _, _ = await raw(running.base, request(
        "POST", "/api/report/chat", running.base, same_site, "Content-Type: application/json", body=CHAT))
    assert status == 404


@pytest.mark.parametrize("kind", ["text/plain", "application/x-www-form-urlencoded", None])
async def test_a_post_whose_body_is_not_json_is_refused_415(running: Running, kind: str | None) -> None:
    headers = [f"Content-Type: {kind}"] if kind else []
    status, _, body = await raw(running.base, request("POST", "/api/report/chat", running.base, *headers, body=CHAT))
    assert status == 415 and json.loads(body)["success"] is False and "application/json" in json.loads(body)["error"]


class Collected(logging.Handler):
    """The records of one logger, whatever the propagation settings of the process."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def collecting(logger_name: str) -> Iterator[Collected]:
    """The warnings one logger of ours writes, for the length of the block."""
    handler, logger = Collected(), logging.getLogger(logger_name)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


@pytest.fixture
def edge_log() -> Iterator[Collected]:
    with collecting("simreportd.daemon.server.edge") as handler:
        yield handler


async def test_connections_beyond_the_per_client_limit_get_503_and_1013_and_one_log_line(
        tmp_path: Path, small_sim: Path, edge_log: Collected) -> None:
    async with Running(server_config(tmp_path, max_connections_per_client=2), [small_sim]) as r:
        async with connect(f"ws://{r.base}/ws") as one, connect(f"ws://{r.base}/ws") as two:
            for ws in (one, two):
                await ws.send(json.dumps({"op": "subscribe"}))
                await frames_until(ws, "caught_up")
            status, _, body = await raw(r.base, request("GET", "/healthz", r.base))
            async with connect(f"ws://{r.base}/ws") as third:
                with pytest.raises(ConnectionClosed) as closed:
                    await asyncio.wait_for(third.recv(), TIMEOUT)
            again, _, _ = await raw(r.base, request("GET", "/api/report/r1/progress", r.base))
        async with asyncio.timeout(TIMEOUT):  # once the two are closed, the client may connect again
            while (await raw(r.base, request("GET", "/healthz", r.base)))[0] != 200:
                await asyncio.sleep(0.05)
    assert status == 503 and "max_connections_per_client" in json.loads(body)["message"] and again == 503
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013
    assert len(edge_log.records) == 1 and "max_connections_per_client" in edge_log.records[0].getMessage()


async def test_a_client_that_sends_no_complete_request_head_in_time_is_answered_408(
        running: Running, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connections, "REQUEST_TIMEOUT_S", 0.2)
    host, port = running.base.split(":")
    answers = []
    for partial in (b"", b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"):  # silent, then a head never finished
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(partial)
        answers.append(await asyncio.wait_for(reader.read(), TIMEOUT))  # to the end: the server closed it
        writer.close()
    status, _, _ = await raw(running.base, request("GET", "/healthz", running.base))  # a prompt one is answered
    assert all(a.startswith(b"HTTP/1.1 408 ") for a in answers) and status == 200


def test_a_busy_port_exits_2_with_one_line_naming_the_key(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = write_config(tmp_path, '[log]\nlevel = "WARNING"\n').read_text().replace("port = 0", f"port = {port}")
        (tmp_path / "config.toml").write_text(config)
        done = subprocess.run([PYTHON, "-m", "simreportd", "-c", str(tmp_path / "config.toml"), "run"],
                              capture_output=True, text=True, timeout=TIMEOUT * 2)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "[server] port" in lines[0] and str(port) in lines[0] and "already in use" in lines[0]


async def test_a_full_server_makes_room_by_closing_the_oldest_idle_socket(tmp_path: Path, small_sim: Path) -> None:
    """Sockets that never send a request (slowloris) fill the server; a client that asks is still answered:
    the oldest idle socket is closed (408) to make room, and only when none is idle is a newcomer refused."""
    async with Running(server_config(tmp_path, max_connections=3), [small_sim]) as r:
        host, port = r.base.split(":")
        idle = [await asyncio.open_connection(host, int(port)) for _ in range(3)]
        status, _, _ = await raw(r.base, request("GET", "/healthz", r.base))
        evicted = await asyncio.wait_for(idle[0][0].read(), TIMEOUT)
        for _, writer in idle:
            writer.close()
    assert status == 200 and evicted.startswith(b"HTTP/1.1 408")


async def test_websockets_leave_the_http_reserve_free_for_plain_requests(
        tmp_path: Path, small_sim: Path, edge_log: Collected) -> None:
    """Subscribers may hold max_connections minus http_reserve: one more is closed with 1013, and a plain
    request still finds a place, even when idle sockets fill the reserve (the oldest is closed for it)."""
    async with Running(server_config(tmp_path, max_connections=4, http_reserve=2), [small_sim]) as r:
        async with connect(f"ws://{r.base}/ws") as one, connect(f"ws://{r.base}/ws") as two:
            for ws in (one, two):
                await ws.send(json.dumps({"op": "subscribe"}))
                await frames_until(ws, "caught_up")
            async with connect(f"ws://{r.base}/ws") as third:
                with pytest.raises(ConnectionClosed) as closed:
                    await asyncio.wait_for(third.recv(), TIMEOUT)
            host, port = r.base.split(":")
            idle = [await asyncio.open_connection(host, int(port)) for _ in range(2)]
            status, _, _ = await raw(r.base, request("GET", "/api/reports", r.base))
            for _, writer in idle:
                writer.close()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013 and status == 200
    assert "http_reserve" in closed.value.rcvd.reason
    assert len(edge_log.records) == 1 and "http_reserve" in edge_log.records[0].getMessage()
