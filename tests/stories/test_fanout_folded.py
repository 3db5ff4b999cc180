"""A report's notification goes out once the read models include its event: a client that reads the report view when
told (the dashboard fetches the report at each frame) sees what the frame announced. Sent straight from the
log, the frame beat the fold, and the live dashboard stayed on a pending section once the report's last frames
had come (1 run in 4 with the fold inline)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import anyio
import pytest
from websockets.asyncio.client import ClientConnection, connect

from simreportd.daemon.server import fanout
from simreportd.events.models import ReportRequested
from simreportd.events.streams import report_stream

from ..conftest import TIMEOUT
from ..daemon.test_server import Running, frames_until, server_config

pytestmark = pytest.mark.anyio
HELD_S = 1.0  # how long the fold is held: a frame sent from the log alone comes in milliseconds


@pytest.mark.parametrize("fold", ["inline", "child"])
async def test_a_report_frame_waits_for_the_read_models_to_fold_its_event(
        tmp_path: Path, small_sim: Path, fold: str) -> None:
    config = server_config(tmp_path)
    config = config.model_copy(update={"service": config.service.model_copy(update={"fold": fold})})
    async with Running(config, [small_sim]) as r, connect(f"ws://{r.base}/ws") as ws:
        await ws.send(json.dumps({"op": "subscribe", "topics": ["notifications"], "after": None}))
        await frames_until(ws, "caught_up")
        views = r.daemon.views
        async with views._lock:  # the fold cannot move the read models meanwhile
            appended = await r.daemon.store.append(report_stream("r_held"), [
                ReportRequested(report_id="r_held", simulation_id="sim_small", generation=1)])
            position = appended.positions[-1]
            with anyio.move_on_after(HELD_S):
                early = json.loads(await ws.recv())
                pytest.fail(f"a frame came while the read models were at {views.position}, before {position}: {early}")
        frame = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
        seen_at = views.position
    assert frame["type"] == "report_status" and frame["position"] == position and seen_at >= position


async def test_a_stalled_fold_delays_one_batch_of_notifications_not_each(
        tmp_path: Path, small_sim: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once a wait for the fold has run out, later notifications go at once until the fold passes that point: a
    rebuild or a full disk holding the fold must not hold each live batch for FOLDED_WAIT_S in turn."""
    async with Running(server_config(tmp_path), [small_sim]) as r, connect(f"ws://{r.base}/ws") as ws:
        await ws.send(json.dumps({"op": "subscribe", "topics": ["notifications"], "after": None}))
        await frames_until(ws, "caught_up")
        async with r.daemon.views._lock:  # the fold stalls
            monkeypatch.setattr(fanout, "FOLDED_WAIT_S", 0.2)
            await frame_for(ws, await requested(r, "r_first"))  # after the wait ran out
            monkeypatch.setattr(fanout, "FOLDED_WAIT_S", 3600.0)  # a second wait would outlast the test
            second = await requested(r, "r_second")
            await frame_for(ws, second)
            assert r.daemon.views.position < second  # sent while the fold is still held
        await r.daemon.views.wait_for(second, timeout=TIMEOUT)  # the fold has passed the stall
        third = await requested(r, "r_third")
        await frame_for(ws, third)
        assert r.daemon.views.position >= third  # waited for the fold again


async def frame_for(ws: ClientConnection, position: int) -> dict:
    """The notification of the event at `position` (the daemon's own events for these reports may come between)."""
    while (frame := json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))).get("position") != position:
        pass
    return frame


async def requested(r: Running, report_id: str) -> int:
    appended = await r.daemon.store.append(report_stream(report_id), [
        ReportRequested(report_id=report_id, simulation_id="sim_small", generation=1)])
    return appended.positions[-1]


async def test_event_frames_do_not_wait_for_the_fold_while_no_client_takes_notifications(
        tmp_path: Path, small_sim: Path) -> None:
    async with Running(server_config(tmp_path), [small_sim]) as r, connect(f"ws://{r.base}/ws") as ws:
        await ws.send(json.dumps({"op": "subscribe", "topics": ["events"], "after": None}))
        await frames_until(ws, "caught_up")
        async with r.daemon.views._lock:  # the fold is held until the frame has come
            position = await requested(r, "r_events")
            frame = await frame_for(ws, position)
            assert r.daemon.views.position < position
            assert r.daemon.server.fanout.gave_up_at is None  # sent without waiting (FOLDED_WAIT_S) for the fold
    assert frame["type"] == "event" and frame["event_type"] == "ReportRequested"
