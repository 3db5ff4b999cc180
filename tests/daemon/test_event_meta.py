"""Causation and correlation ids in every event's meta: a trace can be followed across streams."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from simreportd.daemon.cli.local import running
from simreportd.daemon.service import Daemon
from simreportd.events import CaughtUp
from simreportd.events.streams import report_stream, simulation_stream

from ..conftest import TIMEOUT, make_config

pytestmark = pytest.mark.anyio


async def test_a_trace_leads_from_every_report_event_back_to_the_run_that_caused_it(
        tmp_path: Path, small_sim: Path) -> None:
    config = make_config(tmp_path, reports={"auto": True})
    async with Daemon(config, folders=[small_sim]) as daemon, running(daemon, ingest=True, follow=True):
        with anyio.fail_after(TIMEOUT * 4):
            async for item in daemon.store.subscribe(types=["InterviewUnlocked"]):
                if not isinstance(item, CaughtUp):
                    report_id = item.data["report_id"]
                    break
        run = await daemon.store.read_stream(simulation_stream("sim_small"))
        report = await daemon.store.read_stream(report_stream(report_id))

    batches = {r.meta["correlation_id"] for r in run}
    assert all(b.startswith("ingest-") for b in batches) and len(batches) < len(run)  # lines arrive in batches
    [completed] = [r for r in run if r.type == "SimulationCompleted"]
    request, *steps = report
    assert request.meta == {"correlation_id": request.event_id, "causation_id": completed.event_id}
    assert all(r.meta["correlation_id"] == request.event_id for r in steps)
    earlier = {request.event_id}
    for step in steps:  # each step answers one recorded before it in the same report
        assert step.meta["causation_id"] in earlier, step.type
        earlier.add(step.event_id)
