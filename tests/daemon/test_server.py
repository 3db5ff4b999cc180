"""The websocket protocol and HTTP API with real clients on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import socket
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from simreportd.daemon.cli.local import generate
from simreportd.daemon.config import Config, ServerConfig
from simreportd.daemon.server import fanout as server_module
from simreportd.daemon.server.app import Server
from simreportd.daemon.service import Daemon
from simreportd.errors import ConfigError
from simreportd.events.models import ContextGathered

from ..conftest import TIMEOUT, make_config

pytestmark = pytest.mark.anyio


class Running:
    """A daemon serving on a free port, with its background work running."""

    def __init__(self, config: Config, folders: list[Path]) -> None:
        self.config, self.folders = config, folders

    async def __aenter__(self) -> Running:
        self.daemon = await Daemon(self.config, self.folders).__aenter__()
        await self.daemon.watcher.rescan()
        self.task = asyncio.create_task(self.daemon.run(ingest=False, serve=True))
        with anyio.fail_after(TIMEOUT):
            await self.daemon.serving.wait()
        self.base = f"127.0.0.1:{self.daemon.server.port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        ended = self.task.done()  # the background work stopped on its own: a test must not pass over that
        self.task.cancel()
        [outcome] = await asyncio.gather(self.task, return_exceptions=True)
        await self.daemon.__aexit__()
        if ended and isinstance(outcome, BaseException) and not isinstance(outcome, asyncio.CancelledError):
            raise AssertionError("the daemon's background work stopped before the test ended") from outcome


def server_config(tmp_path: Path, **server: object) -> Config:
    return make_config(tmp_path, reports={"auto": False}, server={"port": 0, **server})


@pytest.fixture
async def running(tmp_path: Path, small_sim: Path) -> AsyncIterator[Running]:
    async with Running(server_config(tmp_path), [small_sim]) as r:
        yield r


async def frames_until(ws, stop: str, limit: int = 500) -> list[dict]:
    out = []
    while len(out) < limit:
        frame = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
        out.append(frame)
        if frame["type"] == stop:
            return out
    raise AssertionError(f"no {stop} frame")


def http(url: str, headers: dict | None = None) -> tuple[int, dict | str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            body = response.read().decode()
            kind = response.headers["Content-Type"]
            return response.status, json.loads(body) if kind.startswith("application/json") else body
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


async def test_history_then_caught_up_then_live_notifications(running: Running) -> None:
    async with connect(f"ws://{running.base}/ws") as ws:
        await ws.send(json.dumps({"op": "subscribe", "topics": ["notifications"], "after": None}))
        assert (await frames_until(ws, "caught_up"))[-1]["type"] == "caught_up"
        await ws.send(json.dumps({"op": "generate_report", "simulation_id": "sim_small"}))
        frames = await frames_until(ws, "interview_unlocked")
    ready = [f for f in frames if f["type"] == "section_ready"]
    assert [f["section_index"] for f in ready] == list(range(1, ready[0]["sections_total"] + 1))
    assert all(f["simulation_id"] == "sim_small" and f["position"] > 0 for f in ready)
    statuses = [f["status"] for f in frames if f["type"] == "report_status" and "position" in f]
    assert statuses[0] == "pending" and statuses[-1] == "completed"


async def test_reconnecting_with_after_gets_exactly_what_was_missed_even_across_a_restart(
        tmp_path: Path, small_sim: Path) -> None:
    config = server_config(tmp_path)
    async with Running(config, [small_sim]) as r:
        report_id = await r.daemon.reports.request("sim_small")
        async with connect(f"ws://{r.base}/ws") as ws:
            await ws.send(json.dumps({"op": "subscribe", "topics": ["notifications"], "after": 0}))
            first = await frames_until(ws, "caught_up")
        await generate(r.daemon, report_id)
        everything = await r.daemon.store.read_all(0, 100_000)
    last = max(f["position"] for f in first if "position" in f)
    async with Running(config, [small_sim]) as r:  # a new daemon process would see the same log
        async with connect(f"ws://{r.base}/ws") as ws:
            await ws.send(json.dumps({"op": "subscribe", "topics": ["notifications"], "after": last}))
            missed = await frames_until(ws, "caught_up")
    sections = [f for f in missed if f["type"] == "section_ready"]
    completed = [e for e in everything if e.type == "SectionCompleted"]
    assert [f["position"] for f in sections] == [e.position for e in completed]
    assert all(f["position"] > last for f in missed if "position" in f and f["type"] != "caught_up")


async def test_filters_keep_other_reports_and_simulations_out(running: Running, tmp_path: Path) -> None:
    from simreportd.simulator.simulate import simulate

    simulate(tmp_path / "sims" / "sim_other", agents=8, rounds=3, seed=9)
    await running.daemon.watcher.check(tmp_path / "sims" / "sim_other")
    mine = await running.daemon.reports.request("sim_small")
    other = await running.daemon.reports.request("sim_other")
    await asyncio.gather(generate(running.daemon, mine), generate(running.daemon, other))
    for flt, allowed in (({"report_id": mine}, {mine}), ({"simulation_id": "sim_other"}, {other})):
        async with connect(f"ws://{running.base}/ws") as ws:
            await ws.send(json.dumps({"op": "subscribe", "topics": ["notifications", "events"], "filter": flt}))
            frames = await frames_until(ws, "caught_up", limit=5000)
        reports = {f.get("report_id") or f.get("data", {}).get("report_id") for f in frames} - {None}
        assert reports == allowed
    assert any(f["type"] == "event" and f["stream"] == "simulation-sim_other" for f in frames)


async def test_bad_frames_get_error_frames_and_the_connection_stays_open(running: Running) -> None:
    async with connect(f"ws://{running.base}/ws") as ws:
        cases = ["{nope", json.dumps([1]), json.dumps({"op": "dance"}),
                 json.dumps({"op": "subscribe", "topics": ["gossip"]}),
                 json.dumps({"op": "subscribe", "filter": {"report_id": 3}}),
                 json.dumps({"op": "subscribe", "after": -1}),
                 json.dumps({"op": "generate_report", "simulation_id": "sim_nowhere"}),
                 json.dumps({"op": "interview", "report_id": "r", "agent_id": "x", "question": "?"}),
                 json.dumps({"op": []}), '{"op": "subscribe", "x": ' + "[" * 5000 + "]" * 5000 + "}",
                 json.dumps({"op": "interview", "report_id": "r", "agent_id": 2**70, "question": "?"}),
                 json.dumps({"op": "interview", "report_id": "r", "agent_id": 1, "question": " "}),
                 json.dumps({"op": "fork", "report_id": "r", "at": 2**70})]
        codes = []
        for case in cases:
            await ws.send(case)
            codes.append(json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))["code"])
        assert codes == ["bad_json", "bad_message", "unknown_op", "bad_topics", "bad_filter", "bad_after",
                         "not_found", "bad_request", "bad_message", "bad_json", "usage", "usage", "bad_request"]
        await ws.send("x" * (server_module.MAX_MESSAGE + 1))
        with pytest.raises(ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), TIMEOUT)
        assert closed.value.rcvd.code == 1009


async def test_token_is_required_on_http_and_websockets_when_configured(tmp_path: Path, small_sim: Path) -> None:
    async with Running(server_config(tmp_path, token="s3cret"), [small_sim]) as r:
        status, _ = await asyncio.to_thread(http, f"http://{r.base}/api/reports")
        assert status == 401
        status, body = await asyncio.to_thread(http, f"http://{r.base}/api/reports",
                                               {"Authorization": "Bearer s3cret"})
        assert status == 200 and body["reports"] == []
        with pytest.raises(InvalidStatus) as refused:
            async with connect(f"ws://{r.base}/ws"):
                pass
        assert refused.value.response.status_code == 401
        async with connect(f"ws://{r.base}/ws?token=s3cret") as ws:
            await ws.send(json.dumps({"op": "subscribe"}))
            assert (await frames_until(ws, "caught_up"))[-1]["type"] == "caught_up"


async def test_a_foreign_origin_is_refused_and_an_allowed_one_accepted(tmp_path: Path, small_sim: Path) -> None:
    config = server_config(tmp_path, allowed_origins=["https://dash.example"])
    async with Running(config, [small_sim]) as r:
        with pytest.raises(InvalidStatus) as refused:
            async with connect(f"ws://{r.base}/ws", origin="https://evil.example"):
                pass
        assert refused.value.response.status_code == 403
        async with connect(f"ws://{r.base}/ws", origin="https://dash.example") as ws:
            await ws.send(json.dumps({"op": "subscribe"}))
            await frames_until(ws, "caught_up")


def test_exposing_the_server_without_a_token_is_refused() -> None:
    with pytest.raises(ConfigError, match="token"):
        Server(object(), ServerConfig(host="0.0.0.0"))


async def test_a_client_that_stops_reading_is_dropped_without_delaying_a_reader(
        running: Running, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_module, "QUEUE_FRAMES", 20)
    host, port = running.base.split(":")
    tiny = socket.socket()
    tiny.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16_384)  # no autotuning: the kernel cannot soak it up
    tiny.connect((host, int(port)))
    async with connect(f"ws://{running.base}/ws", max_queue=1, sock=tiny, compression=None) as slow, \
            connect(f"ws://{running.base}/ws", compression=None) as fast:  # no deflate: the bytes are real
        for ws in (slow, fast):
            await ws.send(json.dumps({"op": "subscribe", "topics": ["events"]}))
            await frames_until(ws, "caught_up")
        big = {"blob": "x" * 100_000}  # 20 MB in all: more than the kernel's socket buffers hold
        received = 0
        for batch in range(20):
            await running.daemon.store.append("report-flood", [ContextGathered(report_id="flood", context=big)] * 10)
            while received < (batch + 1) * 10:
                json.loads(await asyncio.wait_for(fast.recv(), TIMEOUT))
                received += 1
        assert received == 200
        with pytest.raises(ConnectionClosed) as closed:
            while True:
                await asyncio.wait_for(slow.recv(), TIMEOUT)
        assert closed.value.rcvd.code == server_module.SLOW_CLIENT


async def test_the_interview_op_is_refused_before_unlock_and_answered_after(running: Running) -> None:
    report_id = await running.daemon.reports.request("sim_small")
    async with connect(f"ws://{running.base}/ws") as ws:
        ask = json.dumps({"op": "interview", "report_id": report_id, "agent_id": 1, "question": "Still with us?"})
        await ws.send(ask)
        refused = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
        await generate(running.daemon, report_id)
        await ws.send(ask)
        answer = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
    assert refused["type"] == "error" and refused["code"] == "locked"
    assert answer["type"] == "interview_answer" and answer["mode"] == "persona" and answer["agent_id"] == 1


async def test_every_client_gets_the_same_frames_small_ones_sent_plain_big_ones_compressed(running: Running) -> None:
    from simreportd.daemon.server.deflate import MIN_COMPRESSED, SmallFramesPlain

    async with connect(f"ws://{running.base}/ws") as one, connect(f"ws://{running.base}/ws") as two:
        for ws in (one, two):
            await ws.send(json.dumps({"op": "subscribe", "topics": ["events"]}))
            await frames_until(ws, "caught_up", limit=5000)
        small, big = {"n": 1}, {"blob": "the same words again " * 500}
        await running.daemon.store.append("report-sizes", [ContextGathered(report_id="sizes", context=c)
                                                           for c in (small, big)])
        received = [[await asyncio.wait_for(ws.recv(), TIMEOUT) for _ in range(2)] for ws in (one, two)]
        sent = [s.sink.extensions for s in running.daemon.server.fanout.sessions]
    assert received[0] == received[1] and [json.loads(f)["data"]["context"] for f in received[0]] == [small, big]
    assert len(received[0][0].encode()) < MIN_COMPRESSED < len(received[0][1].encode())
    assert all(isinstance(e, SmallFramesPlain) for extensions in sent for e in extensions) and len(sent) == 2


def test_only_frames_of_a_kilobyte_or_more_are_compressed() -> None:
    from websockets.frames import Frame, Opcode

    from simreportd.daemon.server.deflate import SmallFramesPlain

    deflate = SmallFramesPlain(False, False, 12, 12)
    small, big = (deflate.encode(Frame(Opcode.TEXT, b"x" * n)) for n in (100, 5000))
    assert not small.rsv1 and small.data == b"x" * 100
    assert big.rsv1 and len(big.data) < 100


async def test_a_burst_reaches_every_client_once_and_in_order_however_it_is_batched(running: Running) -> None:
    """Live frames go out a read of the log at a time, history and replies through a queue: a client that
    joins mid-burst still sees every position once, in order, like one that was there before it."""
    async def positions(ws, count: int) -> list[int]:  # noqa: ANN001
        out: list[int] = []
        while len(out) < count:
            frame = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
            if frame["type"] == "event" and frame["stream"] == "report-burst":
                out.append(frame["position"])
        return out

    async def burst(n: int) -> None:
        for _ in range(n):
            await running.daemon.store.append("report-burst", [ContextGathered(report_id="burst", context={})])

    async with connect(f"ws://{running.base}/ws") as early, connect(f"ws://{running.base}/ws") as late:
        await early.send(json.dumps({"op": "subscribe", "topics": ["events"]}))
        await frames_until(early, "caught_up", limit=5000)
        start = await running.daemon.store.last_position()
        first = asyncio.gather(burst(150), burst(150))
        await asyncio.sleep(0)
        await late.send(json.dumps({"op": "subscribe", "topics": ["events"], "after": start}))
        await first
        seen_early, seen_late = await positions(early, 300), await positions(late, 300)
    assert seen_early == seen_late == sorted(set(seen_early)) and len(seen_early) == 300
