"""Replay and rebuild speed. Run by hand: `pip install -e ".[bench]" && python bench/replay.py`.

1. A report of about 1,000 steps (5 sections of 47 tool calls each, an instant scripted
   model, real tools on a real simulation model) is replayed with `replay_report`: the time
   of the whole reproduction, scratch store and model rebuild included.
2. `rebuild` of the read models over a log of simulation events, in events per second,
   beside the eventsourcing package's select + decode rate over the same events.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from eventsourcing.persistence import StoredEvent  # noqa: E402
from eventsourcing.sqlite import SQLiteApplicationRecorder, SQLiteDatastore  # noqa: E402
from ingest import write_big_folder  # noqa: E402  (bench/ingest.py)

from agent import NoEnvironment, ScriptedModel  # noqa: E402  (bench/agent.py)
from simreportd.agent.report.report_runner import ReportRunner, settings_for  # noqa: E402
from simreportd.agent.tools.simulation_tools import SimulationTools  # noqa: E402
from simreportd.agent.tools.toolspec import REPORT_TOOLS  # noqa: E402
from simreportd.daemon.config import AgentConfig, Config  # noqa: E402
from simreportd.daemon.ingest.ingestor import SimulationIngestor  # noqa: E402
from simreportd.daemon.report_replay import replay_report  # noqa: E402
from simreportd.events import SQLiteEventStore  # noqa: E402
from simreportd.events.models import AgentActed, ReportRequested, acted_fields  # noqa: E402
from simreportd.events.streams import report_stream  # noqa: E402
from simreportd.projections.catalogue import projections  # noqa: E402
from simreportd.projections.runner import ProjectionRunner, views_path_for  # noqa: E402
from simreportd.simulator.simulate import simulate  # noqa: E402

TOOLS = tuple(t for t in REPORT_TOOLS if t != "interview_agents")


class LongModel(ScriptedModel):
    """Calls the tools round-robin until 47 calls, then writes the section."""

    async def complete(self, request, messages, attempt):  # type: ignore[no-untyped-def]
        from simreportd.agent.llm.providers import Completion
        from simreportd.events.models import ToolCallRequest

        if request.purpose == "outline":
            return await super().complete(request, messages, attempt)
        used = sum(1 for m in messages if m["role"] == "tool")
        if request.tools and used < 47:
            name = TOOLS[used % len(TOOLS)]
            return Completion("", [ToolCallRequest(id=f"t{used}", name=name, arguments={"query": "proctoring"})])
        return Completion("The section, from the evidence above.")


async def replay_bench(tmp: Path) -> None:
    folder = tmp / "sims" / "sim_r"
    simulate(folder, agents=20, rounds=8, seed=7)
    config = Config().model_copy(update={"agent": AgentConfig(max_tool_calls=47, max_iterations=50)})
    async with SQLiteEventStore(tmp / "events.sqlite3") as store:
        await SimulationIngestor(store, folder).check()
        async with ProjectionRunner(store, views_path_for(store.path), projections()) as views:
            await views.catch_up()
        settings = settings_for(config.agent, config.llm, TOOLS)
        await store.append(report_stream("long"), [ReportRequested(
            report_id="long", simulation_id="sim_r", generation=1, provider="scripted", model="m",
            settings=settings)], expected_version=0)
        model = LongModel()
        runner = ReportRunner(store, SimulationTools(views_path_for(store.path)), lambda _: model, NoEnvironment())
        state = await runner.run("long")
        assert state.report_completed, state.failed
        started = time.perf_counter()
        result = await replay_report(store, "long", tmp / "scratch.sqlite3")
        elapsed = time.perf_counter() - started
    verdict = "0 divergences" if result.divergence is None else f"diverged at {result.divergence.position}"
    print(f"replay of a {result.steps}-step report   {elapsed:.2f} s ({verdict}; goal: under 1 s)")


async def rebuild_bench(tmp: Path, actions: int) -> None:
    folder = tmp / "sim_big"
    write_big_folder(folder, actions)
    async with SQLiteEventStore(tmp / "big.sqlite3") as store:
        await SimulationIngestor(store, folder).check()
        events = await store.last_position()
        async with ProjectionRunner(store, views_path_for(store.path), projections()) as views:
            started = time.perf_counter()
            await views.rebuild()
            rebuild = events / (time.perf_counter() - started)
        started, position = time.perf_counter(), 0
        while batch := await store.read_all(position, 1000):
            for recorded in batch:
                recorded.event  # noqa: B018
            position = batch[-1].position
        ours_read = events / (time.perf_counter() - started)
        recorder = SQLiteApplicationRecorder(SQLiteDatastore(str(tmp / "es.sqlite3")))
        recorder.create_table()
        rows = await store.read_all(0, events)
        originators = {stream: uuid.uuid5(uuid.NAMESPACE_URL, stream) for stream in {r.stream for r in rows}}
        es_events = [StoredEvent(originators[r.stream], r.version, r.type, r.raw_data.encode()) for r in rows]
    for start in range(0, len(es_events), 1000):
        recorder.insert_events(es_events[start:start + 1000])
    started, start, n = time.perf_counter(), 1, 0
    while batch := recorder.select_notifications(start, 1000):
        for notification in batch:
            AgentActed.model_validate({**acted_fields(json.loads(notification.state), "simulation-x"),
                                       "type": "AgentActed"}) \
                if notification.topic == "AgentActed" else json.loads(notification.state)
        start, n = batch[-1].id + 1, n + len(batch)
    es_read = n / (time.perf_counter() - started)
    print(f"rebuild of every read model        {rebuild:,.0f} events/s over {events:,} events")
    print(f"read_all + decode (simreportd)     {ours_read:,.0f} events/s")
    print(f"select + decode (eventsourcing)    {es_read:,.0f} events/s "
          f"(rebuild / eventsourcing read = {rebuild / es_read:.2f}; goal 1.5)")


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        await replay_bench(Path(tmp))
        await rebuild_bench(Path(tmp), int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)


if __name__ == "__main__":
    asyncio.run(main())
