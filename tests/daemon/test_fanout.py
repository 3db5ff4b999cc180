"""The broadcaster (daemon/server/fanout.py): what it reads of the log, and for whom."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from websockets.asyncio.client import connect

from simreportd.events import Position
from simreportd.events.models import PlatformFinished, PlatformStarted, RoundEnded, SimulationDiscovered

from ..conftest import TIMEOUT
from .test_server import Running, frames_until, server_config

pytestmark = pytest.mark.anyio
RUN = {"simulation_id": "s", "generation": 1}


def reads_by(module: str, store: Any, monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Every read of the log `store` is asked for from code in `module` (a file name), as it is asked."""
    reads: list[tuple[Any, ...]] = []
    read_all = store.read_all

    async def counted(*args: Any, **options: Any) -> Any:
        if sys._getframe(1).f_code.co_filename.endswith(module):
            reads.append(args)
        return await read_all(*args, **options)

    monkeypatch.setattr(store, "read_all", counted)
    return reads


async def test_nothing_is_read_for_nobody_and_a_later_session_still_gets_the_whole_progress(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async with Running(server_config(tmp_path), []) as r:
        store, fanout = r.daemon.store, r.daemon.server.fanout
        reads = reads_by("fanout.py", store, monkeypatch)
        appended = await store.append("simulation-s", [
            SimulationDiscovered(**RUN, folder=str(tmp_path)), PlatformStarted(**RUN, platform="twitter"),
            PlatformStarted(**RUN, platform="reddit"), RoundEnded(**RUN, platform="twitter", round=1),
            PlatformFinished(**RUN, platform="twitter", total_rounds=1, all_rounds_ran=True)])
        head = appended.positions[-1]
        with anyio.fail_after(TIMEOUT):
            while fanout.position < head:
                await anyio.sleep(0.01)
        alone = len(reads)
        async with connect(f"ws://{r.base}/ws") as ws:
            await ws.send(json.dumps({"op": "subscribe", "topics": ["notifications"], "after": None}))
            await frames_until(ws, "caught_up")
            await store.append("simulation-s", [RoundEnded(**RUN, platform="reddit", round=1)], expected_version=5)
            progress = (await frames_until(ws, "simulation_progress"))[-1]
            while "reddit" not in progress["rounds"]:  # at most a frame a second: the newest follows
                progress = (await frames_until(ws, "simulation_progress"))[-1]
    assert alone == 0 and head == Position(5)
    assert (progress["rounds"], progress["finished"]) == ({"twitter": 1, "reddit": 1}, ["twitter"])
