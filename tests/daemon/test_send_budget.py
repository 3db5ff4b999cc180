"""`[server] send_buffer_mb`: what all websocket clients together may hold in the daemon, with real sockets.

Each client's own bounds (QUEUE_FRAMES, UNSENT_BYTES, HISTORY_BYTES) add up to more than a daemon should
hold when hundreds of clients subscribe and stop reading; the shared budget disconnects the clients that
hold the most (4008, as any client too slow), one log line per period for all of them.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from simreportd.daemon.server import fanout
from simreportd.events.models import ContextGathered

from ..conftest import TIMEOUT
from ..stories.test_edge import Collected, collecting
from .test_server import Running, frames_until, server_config

pytestmark = pytest.mark.anyio


@pytest.fixture
def fanout_log() -> Iterator[Collected]:
    with collecting("simreportd.daemon.server.fanout") as handler:
        yield handler


async def stalled(base: str) -> ClientConnection:
    """A subscriber, caught up, whose socket takes little and who will not read again: what it is sent piles up."""
    host, port = base.split(":")
    tiny = socket.socket()
    tiny.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16_384)  # no autotuning: the kernel cannot soak it up
    tiny.connect((host, int(port)))
    ws = await connect(f"ws://{base}/ws", max_queue=1, sock=tiny, compression=None)
    await ws.send(json.dumps({"op": "subscribe", "topics": ["events"]}))
    await frames_until(ws, "caught_up")
    return ws


async def test_clients_that_stop_reading_are_closed_when_all_together_hold_more_than_the_send_buffer(
        tmp_path: Path, small_sim: Path, monkeypatch: pytest.MonkeyPatch, fanout_log: Collected) -> None:
    monkeypatch.setattr(fanout, "UNSENT_BYTES", 1 << 40)  # no client's own bound: only the shared one closes
    monkeypatch.setattr(fanout, "QUEUE_FRAMES", 1 << 20)
    async with Running(server_config(tmp_path, send_buffer_mb=1), [small_sim]) as r:
        slow = [await stalled(r.base) for _ in range(3)]
        async with connect(f"ws://{r.base}/ws", compression=None) as fast:
            await fast.send(json.dumps({"op": "subscribe", "topics": ["events"]}))
            await frames_until(fast, "caught_up")
            received = 0
            for batch in range(20):  # 20 MB to each client: more than the kernel's socket buffers hold
                events = [ContextGathered(report_id="budget", context={"blob": "x" * 100_000})] * 10
                await r.daemon.store.append("report-budget", events)
                while received < (batch + 1) * 10:
                    json.loads(await asyncio.wait_for(fast.recv(), TIMEOUT))
                    received += 1
            codes = []
            for ws in slow:
                with pytest.raises(ConnectionClosed) as closed:
                    while True:
                        await asyncio.wait_for(ws.recv(), TIMEOUT)
                codes.append(closed.value.rcvd.code if closed.value.rcvd else None)
    assert received == 200 and codes == [fanout.SLOW_CLIENT] * 3
    lines = [record.getMessage() for record in fanout_log.records]
    assert len(lines) == 1 and "send_buffer_mb = 1" in lines[0] and "did not read" in lines[0], lines


async def test_compression_keeps_no_context_between_messages(tmp_path: Path, small_sim: Path) -> None:
    """permessage-deflate is agreed without context takeover either way: no zlib state is kept per connection."""
    async with Running(server_config(tmp_path), [small_sim]) as r, connect(f"ws://{r.base}/ws") as ws:
        agreed = ws.response.headers["Sec-WebSocket-Extensions"]
        await ws.send(json.dumps({"op": "subscribe", "topics": ["events"]}))
        frames = await frames_until(ws, "caught_up", limit=5000)
    assert "server_no_context_takeover" in agreed and "client_no_context_takeover" in agreed
    assert frames[-1]["type"] == "caught_up"
