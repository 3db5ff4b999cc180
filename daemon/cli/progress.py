"""Print a report's progress on a terminal as its events arrive."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TextIO

from simreportd.events import CaughtUp, EventStore
from simreportd.events.codec import Recorded
from simreportd.events.models import (
    AgentActed,
    ContextCompacted,
    InterviewUnlocked,
    LLMFailed,
    OutlinePlanned,
    PlanningStarted,
    ReportCompleted,
    ReportFailed,
    ReportForked,
    ReportRequested,
    ReportResumed,
    ResponseRejected,
    RoundEnded,
    SectionCompleted,
    SectionStarted,
    SimulationCompleted,
    SimulationDiscovered,
    SimulationGenerationStarted,
    ToolCalled,
    ToolProtocolChosen,
    WriterChanged,
)
from simreportd.events.streams import report_stream, simulation_stream

DONE = (InterviewUnlocked, ReportFailed)
CONTINUED = (ReportResumed, ReportForked)


async def follow_report(store: EventStore, report_id: str, out: TextIO) -> None:
    """Print one line per meaningful step until the report completes or fails (a failure that was
    resumed since, or a fork's copy of one, is history: it does not end the following)."""
    total, ended, live, failure = 0, False, False, ""
    async for item in store.subscribe(streams=[report_stream(report_id)]):
        if isinstance(item, CaughtUp):
            live = True
        else:
            event = item.event
            total = len(event.sections) if isinstance(event, OutlinePlanned) else total
            failed = event if isinstance(event, LLMFailed) else None
            again = failed is not None and failed.message == failure  # said once, counted after
            failure = failed.message if failed is not None else failure
            line = f"        attempt {failed.attempt} failed the same way" if failed and again else describe(item, total)
            if line:
                print(line, file=out, flush=True)
            ended = isinstance(event, DONE) or (ended and not isinstance(event, CONTINUED))
        if ended and live:
            return


async def follow_run(store: EventStore, simulation_id: str, out: TextIO) -> None:
    """Print a running simulation's rounds as they are ingested; return once its newest generation completes."""
    generation, last_round, actions, completed, live = 0, 0, 0, False, False
    async for item in store.subscribe(streams=[simulation_stream(simulation_id)]):
        if isinstance(item, CaughtUp):
            if completed:
                return
            live = True
            print(f"Simulation {simulation_id} is still running ({last_round} rounds, {actions} actions so far); "
                  "waiting for it to complete. Ctrl-C stops waiting; `--now` reports on what is there.",
                  file=out, flush=True)
            continue
        if item.type == AgentActed.TYPE:  # most of the stream: counted without reading its data
            actions += 1
            continue
        event = item.event
        if isinstance(event, SimulationDiscovered | SimulationGenerationStarted):
            generation, last_round, actions, completed = event.generation, 0, 0, False
        elif isinstance(event, RoundEnded) and event.round > last_round:
            last_round = event.round
            if live:
                print(f"  round {last_round} ingested ({actions} actions so far)", file=out, flush=True)
        elif isinstance(event, SimulationCompleted) and event.generation == generation:
            completed = True
            if live:
                print(f"Simulation {simulation_id} completed: {last_round} rounds, {actions} actions.",
                      file=out, flush=True)
                return


def describe(recorded: Recorded, total: int) -> str | None:
    d, t = recorded.data, recorded.type
    lines: dict[str, Callable[[], str]] = {
        ReportRequested.TYPE: lambda: f"Report {d['report_id']} for {d['simulation_id']} (generation "
                                      f"{d['generation']}, {writer(d)})",
        PlanningStarted.TYPE: lambda: "Planning the outline...",
        OutlinePlanned.TYPE: lambda: f"Outline: {d['title']} ({len(d['sections'])} sections"
                                     + (", derived from the data)" if d.get("fallback") else ")"),
        SectionStarted.TYPE: lambda: f"  [{d['section_index']}/{total}] writing: {d['title']}",
        ToolCalled.TYPE: lambda: f"        {d['tool']}({json.dumps(d['arguments'], ensure_ascii=False)[1:-1]})",
        ResponseRejected.TYPE: lambda: f"        rejected: {d['reason']}",
        LLMFailed.TYPE: lambda: f"        LLM call failed (attempt {d['attempt']}): {d['kind']}: {d['message'][:300]}",
        SectionCompleted.TYPE: lambda: f"  [{d['section_index']}/{total}] {'degraded' if d.get('problems') else 'ready'}:"
                                       f" {d['title']} ({d['tool_calls']} tool calls)",
        ReportCompleted.TYPE: lambda: "Report completed." if not d.get("problems") else
                                      f"Report completed, degraded: {len(d['problems'])} problem(s).",
        ToolProtocolChosen.TYPE: lambda: f"Tool protocol: {d['protocol']} ({d['reason']})",
        ContextCompacted.TYPE: lambda: f"        context shortened: {d['before_tokens']} -> {d['after_tokens']} tokens "
                                       f"({d['reason']})",
        ReportFailed.TYPE: lambda: f"Report failed during {d['stage']}: {d['error']}",
        ReportResumed.TYPE: lambda: "Resuming from the last recorded step...",
        WriterChanged.TYPE: lambda: f"Continuing with {writer(d)} instead of "
                                    f"{writer({'provider': d['previous_provider'], 'model': d['previous_model']})}",
        ReportForked.TYPE: lambda: f"Forked from {d['forked_from']} at position {d['at']}; continuing with {writer(d)}",
    }
    return lines[t]() if t in lines else None


def writer(d: dict[str, object]) -> str:
    """`openai model 'gpt-x'`, or the provider alone when its model says nothing more."""
    return f"{d['provider']} model {d['model']!r}" if d.get("model") and d["provider"] == "openai" else str(d["provider"])
