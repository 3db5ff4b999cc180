"""What a crowd of websocket clients leaves in the daemon once it has gone, with a real server and real clients.

Memory figures (RSS before, during and after a flood) are bench/abuse.py's; here, what must hold whatever the
allocator: the server's own sets are rebuilt at their size once the crowd has left, Python's type cache lets
go of the names looked up meanwhile, and the broadcaster keeps nothing of a read of the log once it has
offered it (what lived on from the flood pinned allocator arenas or pages).
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
from pathlib import Path

import pytest
from websockets.asyncio.client import connect

from simreportd.daemon.server import app
from simreportd.daemon.server.fanout import Session
from simreportd.daemon.server.protocol import EventFrames
from simreportd.events.models import ContextGathered

from ..conftest import TIMEOUT
from ..daemon.test_server import Running, frames_until, server_config
from ..processes import await_until

pytestmark = pytest.mark.anyio
CROWD = 150  # websockets: more than app.TRIM_AFTER_PEAK, so their leaving counts as a crowd gone


async def test_the_server_s_sets_and_the_type_cache_give_back_what_a_crowd_left(
        tmp_path: Path, small_sim: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app, "TRIM_EVERY_S", 0.05)
    monkeypatch.setattr(app, "TRIM_CHECKS", 200)  # 10 s of checks after the crowd left (the daemon: 30 s)
    async with Running(server_config(tmp_path, max_connections_per_client=CROWD + 10), [small_sim]) as r:
        server = r.daemon.server
        assert server is not None and server._uvicorn is not None
        state = server._uvicorn.server_state
        grown = {"connections": state.connections, "tasks": state.tasks, "sessions": server.fanout.sessions}
        empty = sys.getsizeof(set())
        name = "".join(["made_", "in_the_crowd"])  # a string made at run time, as a header's or a key's
        kept = sys.getrefcount(name)
        getattr(Session, name, None)  # Python's type attribute cache keeps the names it looked up
        assert sys.getrefcount(name) > kept
        crowd = [await connect(f"ws://{r.base}/ws") for _ in range(CROWD)]
        for ws in crowd:
            await ws.send(json.dumps({"op": "subscribe", "topics": ["notifications"], "after": 0}))
        await await_until(lambda: len(server.fanout.sessions) == CROWD, "the crowd to subscribe")
        assert min(sys.getsizeof(s) for s in grown.values()) > empty  # grown tables while the crowd is here
        await asyncio.gather(*(ws.close() for ws in crowd))
        await await_until(lambda: all(sys.getsizeof(s) == empty for s in grown.values()), "the sets to shrink")
        assert {key: sys.getsizeof(s) for key, s in grown.items()} == dict.fromkeys(grown, empty)
        assert sys.getrefcount(name) == kept  # the cache no longer holds what was looked up meanwhile
        async with connect(f"ws://{r.base}/ws") as ws:  # the same sets, still in use
            await ws.send(json.dumps({"op": "subscribe", "topics": ["notifications"]}))
            await frames_until(ws, "caught_up")
            assert len(server.fanout.sessions) == 1 and state.connections is grown["connections"]


def event_frames_alive() -> int:
    gc.collect()
    return sum(isinstance(o, EventFrames) for o in gc.get_objects())


async def test_the_broadcaster_keeps_nothing_of_a_read_it_has_offered(tmp_path: Path, small_sim: Path) -> None:
    async with Running(server_config(tmp_path), [small_sim]) as r, connect(f"ws://{r.base}/ws") as ws:
        await ws.send(json.dumps({"op": "subscribe", "topics": ["events"]}))
        await frames_until(ws, "caught_up")
        await r.daemon.store.append("report-kept", [ContextGathered(report_id="kept", context={"n": 1})] * 3)
        live = [json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT)) for _ in range(3)]
        await await_until(lambda: event_frames_alive() == 0, "the frames to be let go")
        assert [f["event_type"] for f in live] == [ContextGathered.TYPE] * 3 and event_frames_alive() == 0
