"""The broadcaster's work per read of the log: frames chosen and serialized once per kind of subscription.

A read of N events for C clients used to cost N x C frame serializations, all while the event loop
waited (the commits behind it too): at 100 clients a read of 500 events held the loop half a second,
and the next read grew. Now the clients of one kind of subscription share one serialized copy.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.frames import Frame

from simreportd.daemon.server import fanout
from simreportd.events.models import ContextGathered

from ..conftest import TIMEOUT
from ..daemon.test_server import Running, frames_until, server_config
from ..processes import await_until

pytestmark = pytest.mark.anyio

CLIENTS, EVENTS = 6, 40


@pytest.fixture
async def running(tmp_path: Path, small_sim: Path) -> AsyncIterator[Running]:
    async with Running(server_config(tmp_path), [small_sim]) as r:
        yield r


async def test_a_read_of_the_log_is_serialized_once_for_all_clients_of_one_subscription(
        running: Running, monkeypatch: pytest.MonkeyPatch) -> None:
    serialized = 0
    serialize = Frame.serialize

    def counting(self: Frame, **kwargs: object) -> bytes:
        nonlocal serialized
        serialized += 1
        return serialize(self, **kwargs)  # type: ignore[arg-type]

    url = f"ws://{running.base}/ws"
    plain = [connect(url, compression=None) for _ in range(CLIENTS // 2)]  # both kinds of connection
    deflate = [connect(url) for _ in range(CLIENTS - len(plain))]
    clients = [await c.__aenter__() for c in plain + deflate]
    try:
        for ws in clients:
            await ws.send(json.dumps({"op": "subscribe", "topics": ["events"]}))
            await frames_until(ws, "caught_up", limit=5000)
        monkeypatch.setattr(Frame, "serialize", counting)
        await running.daemon.store.append("report-one-read", [ContextGathered(report_id="one-read", context={"n": n})
                                                              for n in range(EVENTS)])
        received = [[json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT)) for _ in range(EVENTS)] for ws in clients]
    finally:
        for c in plain + deflate:
            await c.__aexit__(None, None, None)
    assert all(r == received[0] for r in received)
    assert [f["data"]["context"]["n"] for f in received[0]] == list(range(EVENTS))
    assert serialized <= 2 * EVENTS, f"{serialized} frames serialized for {EVENTS} events to {CLIENTS} clients"


async def test_a_crowd_subscribing_from_the_start_reads_its_history_a_few_at_a_time(
        running: Running, monkeypatch: pytest.MonkeyPatch) -> None:
    """Many subscribers from position 0 at once: at most HISTORY_READERS pages are read and encoded together
    (the rest wait their turn), so the event loop keeps time for plain requests; every one is caught up."""
    store, reading, most = running.daemon.store, 0, 0
    read_all = store.read_all

    async def counted(*args: object, **kwargs: object) -> object:
        nonlocal reading, most
        if sys._getframe(1).f_code.co_name != "_catch_up":  # the broadcaster's and the read models' own reads
            return await read_all(*args, **kwargs)  # type: ignore[arg-type]
        reading += 1
        most = max(most, reading)
        try:
            await asyncio.sleep(0.01)  # a read takes a while in its worker thread: reads overlap
            return await read_all(*args, **kwargs)  # type: ignore[arg-type]
        finally:
            reading -= 1

    monkeypatch.setattr(store, "read_all", counted)
    url = f"ws://{running.base}/ws"
    crowd = [connect(url, compression=None) for _ in range(3 * fanout.HISTORY_READERS)]
    clients = [await c.__aenter__() for c in crowd]
    try:
        for ws in clients:
            await ws.send(json.dumps({"op": "subscribe", "topics": ["events"], "after": 0}))
        caught = [await frames_until(ws, "caught_up", limit=20_000) for ws in clients]
    finally:
        for c in crowd:
            await c.__aexit__(None, None, None)
    assert len(caught) == len(clients) and 1 < most <= fanout.HISTORY_READERS, most


async def test_while_no_client_is_connected_the_broadcaster_offers_nothing_and_a_later_client_misses_nothing(
        running: Running, monkeypatch: pytest.MonkeyPatch) -> None:
    offered: list[int] = []
    offer = fanout.Fanout._offer

    async def noted(self: fanout.Fanout, batch: list) -> None:
        offered.extend(r.position for r in batch)
        await offer(self, batch)

    monkeypatch.setattr(fanout.Fanout, "_offer", noted)
    alone = await running.daemon.store.append("report-alone", [ContextGathered(report_id="alone", context={"n": n})
                                                               for n in range(EVENTS)])
    broadcaster = running.daemon.server.fanout
    await await_until(lambda: broadcaster.position >= alone.positions[-1], "the broadcaster to pass them")
    async with connect(f"ws://{running.base}/ws") as ws:
        await ws.send(json.dumps({"op": "subscribe", "topics": ["events"], "after": alone.positions[0] - 1}))
        history = await frames_until(ws, "caught_up")
        later = await running.daemon.store.append("report-alone", [ContextGathered(report_id="alone", context={})])
        live = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))  # the broadcaster has passed the others
    assert [f["position"] for f in history if f["type"] == "event"] == list(alone.positions)
    assert live["position"] == later.positions[0]
    assert not set(alone.positions) & set(offered)  # read for nobody: never offered
