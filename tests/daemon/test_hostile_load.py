"""Hostile load, third round (docs/protocol.md#security): bad strings, smuggled requests, missing read models,
forced regeneration and spend, slow readers. Each attack over real sockets on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest
from websockets.asyncio.client import connect

from simreportd.agent.llm.providers import OpenAIProvider
from simreportd.daemon import client_json
from simreportd.daemon.gates import CallBudget
from simreportd.daemon.server import streaming
from simreportd.daemon.server.edge import forwarded_client, trusted
from simreportd.errors import LimitReached
from simreportd.events.models import LLMRequested
from simreportd.projections import report_queries
from simreportd.projections import runner as projection_runner
from simreportd.projections.sqlite import reading

from ..conftest import TIMEOUT, make_config
from ..fake_llm import FakeLLM
from .test_server import Running, server_config

pytestmark = pytest.mark.anyio
LONE = '"\\ud800"'  # a JSON string holding an unpaired surrogate


@pytest.fixture
async def running(tmp_path: Path, small_sim: Path) -> AsyncIterator[Running]:
    async with Running(server_config(tmp_path), [small_sim]) as r:
        yield r


async def exchange(base: str, request: bytes, source: str = "127.0.0.1") -> bytes:
    """Write `request` on one connection from `source` and read until the server closes it (or TIMEOUT)."""
    host, port = base.split(":")
    reader, writer = await asyncio.open_connection(host, int(port), local_addr=(source, 0))
    writer.write(request)
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(), TIMEOUT)
    finally:
        writer.close()


def post(path: str, body: str, *extra: str) -> bytes:
    head = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Content-Type: application/json",
            f"Content-Length: {len(body.encode())}", "Connection: close", *extra]
    return ("\r\n".join(head) + "\r\n\r\n" + body).encode()


def answer(raw: bytes) -> tuple[int, dict]:
    head, _, body = raw.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(dechunked(body) if b"transfer-encoding: chunked" in head.lower() else body)


def dechunked(body: bytes) -> bytes:
    """A chunked body's bytes (RFC 9112 section 7.1), without its chunk sizes."""
    out = b""
    while True:
        size, _, rest = body.partition(b"\r\n")
        if not int(size, 16):
            return out
        out, body = out + rest[:int(size, 16)], rest[int(size, 16) + 2:]


BAD_BODIES = [
    ("/api/report/generate", '{"simulation_id": @@, "force_regenerate": true}'),
    ("/api/report/generate/status", '{"task_id": @@}'),
    ("/api/report/chat", '{"simulation_id": "sim_small", "message": @@}'),
    ("/api/report/chat", '{"report_id": @@, "message": "hello"}'),
    ("/api/report/chat", '{"simulation_id": "sim_small", "message": "hi", "chat_history": [{"content": @@}]}'),
    ("/api/report/tools/search", '{"simulation_id": "sim_small", "query": @@}'),
    ("/api/report/tools/statistics", '{"graph_id": @@}'),
    ("/api/report/generate", '{@@: 1}'),
]
BAD_BODIES = [(path, body.replace("@@", LONE)) for path, body in BAD_BODIES]


async def test_lone_surrogates_in_a_body_are_a_400_in_mirofish_shape_with_one_log_line(
        running: Running, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_json.refusals, "logged_at", float("-inf"))
    caplog.set_level(logging.INFO)
    for path, body in BAD_BODIES:
        status, shape = answer(await exchange(running.base, post(path, body)))
        assert status == 400 and shape["success"] is False and "unpaired" in shape["error"], (path, body, shape)
    refusals = [r for r in caplog.records if r.name == client_json.log.name]
    assert len(refusals) == 1 and "unpaired surrogate" in refusals[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


@pytest.mark.parametrize("frame", [f.replace("@@", LONE) for f in [
    '{"op": "generate_report", "simulation_id": @@}',
    '{"op": "interview", "simulation_id": "sim_small", "agent_id": 1, "question": @@}',
    '{"op": "chat", "report_id": "r1", "question": @@}',
    '{"op": "chat", @@: "x"}',
]])
async def test_lone_surrogates_in_a_frame_get_an_error_frame_and_the_socket_stays_open(
        running: Running, frame: str) -> None:
    async with connect(f"ws://{running.base}/ws") as ws:
        await ws.send(frame)
        error = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
        assert error["type"] == "error" and error["code"] == "bad_text" and "unpaired" in error["message"]
        await ws.send('{"op": "nonsense"}')  # still served
        assert json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))["code"] == "unknown_op"


async def test_a_request_framed_both_ways_is_refused_and_what_follows_it_is_not_answered(running: Running) -> None:
    """RFC 9112 section 6.1: Content-Length and Transfer-Encoding together; the chunked body ends early and the
    bytes after it would be a second request on the same connection."""
    smuggled = "GET /api/reports HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    request = ("POST /api/report/generate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               f"Content-Length: {5 + len(smuggled)}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n{smuggled}")
    raw = await exchange(running.base, request.encode())
    assert raw.count(b"HTTP/1.1 ") == 1 and raw.startswith(b"HTTP/1.1 400 ")
    assert b"not both" in raw and b"Connection: close" in raw


async def test_reads_while_the_read_models_are_missing_are_a_503_rebuilding_with_retry_after(
        tmp_path: Path, small_sim: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The file deleted under a running daemon; its fold (inline, its idle file check put off) has not made it
    again yet, so every read meets the missing file."""
    monkeypatch.setattr(projection_runner, "FILE_CHECK_S", 3600.0)
    config = make_config(tmp_path, reports={"auto": False}, server={"port": 0}, service={"fold": "inline"})
    async with Running(config, [small_sim]) as running:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{running.daemon.views.path}{suffix}").unlink(missing_ok=True)
        for path in ("/healthz", "/metrics", "/api/reports", "/api/simulations", "/api/report/list",
                     "/api/report/r/agent-log", "/api/report/check/sim_small"):
            raw = await exchange(running.base, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                                 .encode())
            status, shape = answer(raw)
            assert status == 503 and b"Retry-After: 2" in raw and "rebuilt" in str(shape), (path, raw)
            assert (shape["success"] is False) if path.startswith("/api/report/") else shape["error"] == "rebuilding"
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


async def generate(running: Running, source: str) -> tuple[int, dict, bytes]:
    """MiroFish's Step 3: POST /api/report/generate with force_regenerate, as it always sends, from `source`."""
    raw = await exchange(running.base, post("/api/report/generate", json.dumps(
        {"simulation_id": "sim_small", "force_regenerate": True})), source)
    status, shape = answer(raw)
    if status == 200:  # written, and folded: the next ask finds it completed
        await running.daemon.reports.wait(shape["data"]["report_id"])
        await running.daemon.views.wait_for(await running.daemon.store.last_position(), timeout=TIMEOUT)
    return status, shape, raw


async def test_forced_regeneration_is_limited_per_client_and_per_simulation_with_a_429_naming_the_limit(
        tmp_path: Path, small_sim: Path) -> None:
    config = make_config(tmp_path, reports={"auto": False}, server={"port": 0},
                         limits={"regenerate_every_s": 3600, "regenerations_per_hour": 2})
    async with Running(config, [small_sim]) as running:
        await running.daemon.views.wait_for(await running.daemon.store.last_position(), timeout=TIMEOUT)
        first = await generate(running, "127.0.0.1")  # the first report is not a forced one
        forced = await generate(running, "127.0.0.1")
        assert forced[0] == 200, (first, forced)
        assert forced[1]["data"]["report_id"] != first[1]["data"]["report_id"]
        status, shape, raw = await generate(running, "127.0.0.1")
        assert status == 429 and "regenerate_every_s" in shape["error"] and b"Retry-After: " in raw
        assert shape["code"] == "limit_reached" and shape["success"] is False
        assert (await generate(running, "127.0.0.2"))[0] == 200  # another client: its own interval
        status, shape, _ = await generate(running, "127.0.0.3")
        assert status == 429 and "regenerations_per_hour" in shape["error"]
        await running.daemon.views.wait_for(await running.daemon.store.last_position(), timeout=TIMEOUT)
        listed = answer(await exchange(running.base, b"GET /api/report/list HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                                      b"Connection: close\r\n\r\n"))[1]
        assert listed["count"] == 3  # the first, and one forced by each of two clients


async def test_chats_and_forced_reports_are_refused_while_the_model_call_budget_is_spent(
        tmp_path: Path, small_sim: Path) -> None:
    """The budget is the daemon's own, spent here as its model calls spend it (each takes one)."""
    config = make_config(tmp_path, reports={"auto": False}, server={"port": 0},
                         limits={"model_calls_per_minute": 3, "regenerate_every_s": 0})
    async with Running(config, [small_sim]) as running:
        await running.daemon.views.wait_for(await running.daemon.store.last_position(), timeout=TIMEOUT)
        assert (await generate(running, "127.0.0.1"))[0] == 200
        for _ in range(3):
            await running.daemon.budget.acquire()
        status, shape = answer(await exchange(running.base, post("/api/report/chat", json.dumps(
            {"simulation_id": "sim_small", "message": "Who led the debate?"}))))
        assert status == 429 and "model_calls_per_minute" in shape["error"] and "3 calls a minute" in shape["error"]
        status, shape, _ = await generate(running, "127.0.0.2")
        assert status == 429 and "model_calls_per_minute" in shape["error"]


async def test_every_model_call_of_a_provider_takes_from_the_budget() -> None:
    budget = CallBudget(2)
    with FakeLLM() as llm:
        provider = OpenAIProvider(llm.base_url, "", 30.0, 2, budget=budget)
        try:
            for n in range(2):
                await provider.complete(LLMRequested(report_id="r", call_id=f"c{n}", model="m", purpose="section",
                                                     protocol="text", messages_added=[], fingerprint="f"),
                                        [{"role": "user", "content": "hi"}], 1)
        finally:
            await provider.close()
    with pytest.raises(LimitReached, match=r"model_calls_per_minute"):
        budget.check("chat questions")
    assert CallBudget(0).check("anything") is None  # 0: no budget


async def kept(base: str, source: str, forwarded_for: str) -> tuple[int, bytes, asyncio.StreamWriter]:
    """GET /healthz from `source` with X-Forwarded-For, on a connection kept open: (status, body, its writer)."""
    host, port = base.split(":")
    reader, writer = await asyncio.open_connection(host, int(port), local_addr=(source, 0))
    writer.write(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: {forwarded_for}\r\n\r\n".encode())
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), TIMEOUT)
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
    return int(head.split()[1]), await asyncio.wait_for(reader.readexactly(length), TIMEOUT), writer


async def test_the_client_is_the_one_a_trusted_proxy_forwards_and_only_a_trusted_one(
        tmp_path: Path, small_sim: Path) -> None:
    config = make_config(tmp_path, reports={"auto": False},
                         server={"port": 0, "trusted_proxies": ["127.0.0.1"], "max_connections_per_client": 2})
    async with Running(config, [small_sim]) as running:
        answers = [await kept(running.base, "127.0.0.1", "10.0.0.1") for _ in range(2)]
        answers.append(await kept(running.base, "127.0.0.1", "10.0.0.9, 10.0.0.1"))  # the left is the client's say
        answers.append(await kept(running.base, "127.0.0.1", "10.0.0.2"))
        answers += [await kept(running.base, "127.0.0.2", "10.0.0.3") for _ in range(3)]  # not a trusted peer
        try:
            assert [status for status, _, _ in answers] == [200, 200, 503, 200, 200, 200, 503]
            assert b"10.0.0.1 holds its limit of 2" in answers[2][1] and b"127.0.0.2 holds" in answers[6][1]
        finally:
            for _, _, writer in answers:
                writer.close()


async def test_the_logs_are_written_a_page_at_a_time_and_equal_the_logs(
        tmp_path: Path, small_sim: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages of about 1 KiB: the answers are made of many, and still are the logs, whole and in order."""
    monkeypatch.setattr(streaming, "PAGE_BYTES", 1024)
    config = make_config(tmp_path, reports={"auto": False}, server={"port": 0})
    async with Running(config, [small_sim]) as running:
        report_id = await running.daemon.reports.request(small_sim.name)
        await running.daemon.reports.wait(report_id)
        await running.daemon.views.wait_for(await running.daemon.store.last_position(), timeout=TIMEOUT)
        for kind in ("agent-log", "console-log"):
            def ask(path: str) -> bytes:
                return f"GET /api/report/{report_id}/{path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" \
                    .encode()
            status, whole = answer(await exchange(running.base, ask(f"{kind}/stream")))
            paged = answer(await exchange(running.base, ask(f"{kind}?from_line=0")))[1]["data"]
            assert status == 200 and whole["success"] is True and whole["data"]["logs"] == paged["logs"]
            assert whole["data"]["count"] == paged["total_lines"] == len(paged["logs"])
            assert len(json.dumps(paged["logs"])) > 3 * streaming.PAGE_BYTES, kind  # a few pages
            with reading(running.daemon.views.path) as conn:
                kept = {"agent-log": [json.loads(line) for line in report_queries.agent_log(conn, report_id)],
                        "console-log": report_queries.console_log(conn, report_id)}[kind]
            assert paged["logs"] == kept and paged["from_line"] == 0 and paged["has_more"] is False
            tail = answer(await exchange(running.base, ask(f"{kind}?from_line=2")))[1]["data"]
            assert tail == {**paged, "logs": kept[2:], "from_line": 2}
        status, empty = answer(await exchange(running.base, ask("agent-log/stream").replace(report_id.encode(), b"r0")))
        assert status == 200 and empty["data"] == {"logs": [], "count": 0}


@pytest.mark.parametrize(("headers", "client"), [
    ([("x-forwarded-for", "203.0.113.7")], "203.0.113.7"),
    ([("x-forwarded-for", "198.51.100.1, 203.0.113.7, 10.1.2.3")], "203.0.113.7"),  # 10.1.2.3: a listed proxy
    ([("x-forwarded-for", "not-an-address")], None),
    ([("forwarded", 'for="[2001:db8::1]:4711";proto=https, for=10.0.0.2')], "2001:db8::1"),
    ([("forwarded", "for=unknown")], None),
    ([], None),
])
def test_the_forwarded_client_is_the_right_most_address_not_a_listed_proxy(headers: list, client: str | None) -> None:
    raw = [(name.encode(), value.encode()) for name, value in headers]
    assert forwarded_client(raw, ["127.0.0.1", "10.0.0.0/8"]) == client
    assert trusted("10.9.9.9", ["10.0.0.0/8"]) and not trusted("10.9.9.9", []) and not trusted("x", ["10.0.0.0/8"])


async def test_a_reader_that_takes_nothing_is_dropped_and_one_log_line_says_so(
        running: Running, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A log of endless 200 KB lines, a client that reads none of it: once the socket buffers are full, the
    next page waits for WRITE_TIMEOUT_S (1 s here) and the connection is dropped."""
    def endless(conn: object, report_id: str, start: int) -> Iterator[str]:
        return (json.dumps({"line": n, "pad": "x" * 200_000}) for n in range(start, start + 10_000))

    monkeypatch.setitem(streaming.LOGS, "agent_log", (endless, str))
    monkeypatch.setattr(streaming, "WRITE_TIMEOUT_S", 1.0)
    monkeypatch.setattr(streaming.slow_readers, "logged_at", float("-inf"))
    before = streaming.Dropped.total
    host, port = running.base.split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    writer.transport.pause_reading()  # reads nothing
    writer.write(b"GET /api/report/r1/agent-log/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    with anyio.fail_after(TIMEOUT):
        while streaming.Dropped.total == before:
            await asyncio.sleep(0.05)
    writer.close()
    dropped = [r for r in caplog.records if r.name == streaming.log.name]
    assert len(dropped) == 1 and "dropped 1 reader(s)" in dropped[0].getMessage()
