"""Every step event carries its iteration; the trace nests steps by it, and a store written before steps
carried it decodes and folds to the same trace (projections/trace.py, report_queries.trace)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from simreportd.agent.llm.replay_provider import decided
from simreportd.events import SQLiteEventStore
from simreportd.events.codec import Recorded, encode
from simreportd.events.models import (
    DomainEvent,
    LLMFailed,
    LLMRequested,
    LLMResponded,
    OutlinePlanned,
    OutlineSection,
    PlanningStarted,
    ReportRequested,
    SectionCompleted,
    SectionStarted,
    ToolCalled,
    ToolFailed,
    ToolObserved,
)
from simreportd.events.streams import report_stream
from simreportd.projections import report_queries
from simreportd.projections.catalogue import projections
from simreportd.projections.trace import TraceView

R = {"report_id": "r1"}
STEPPED = (LLMResponded, LLMFailed, ToolObserved, ToolFailed)


def request(n: int, section: int = 1) -> LLMRequested:
    return LLMRequested(**R, call_id=f"llm-{n}", purpose="section", section_index=section, model="m",
                        fingerprint="f" * 64, messages_added=[{"role": "user", "content": "go"}])


WRITTEN: list[DomainEvent] = [
    ReportRequested(**R, simulation_id="s", generation=1), PlanningStarted(**R),
    OutlinePlanned(**R, title="T", summary="S", sections=[OutlineSection(title="One")]),
    SectionStarted(**R, section_index=1, title="One"),
    request(1), LLMFailed(**R, call_id="llm-1", attempt=1, kind="timeout", message="slow", iteration=1),
    LLMResponded(**R, call_id="llm-1", attempt=2, content="call", iteration=1),
    ToolCalled(**R, section_index=1, iteration=1, call_id="t1", tool="search"),
    ToolObserved(**R, section_index=1, call_id="t1", tool="search", result="found", iteration=1),
    request(2), LLMResponded(**R, call_id="llm-2", attempt=1, content="again", iteration=2),
    ToolCalled(**R, section_index=1, iteration=2, call_id="t2", tool="stats"),
    ToolFailed(**R, section_index=1, call_id="t2", tool="stats", error="no", iteration=2),
    request(3), LLMResponded(**R, call_id="llm-3", attempt=1, content="Final Answer: x", iteration=3),
    SectionCompleted(**R, section_index=1, title="One", content="x"),
]


def recorded(events: list[DomainEvent], old: bool = False) -> list[Recorded]:
    """As stored; `old`: as a store written before step events carried their iteration."""
    out = []
    for i, e in enumerate(events, 1):
        data = encode(e)
        if old and isinstance(e, STEPPED):
            shape = json.loads(data)
            del shape["iteration"]
            data = json.dumps(shape)
        out.append(Recorded(i, "report-r1", i, e.type_name, e.SCHEMA_VERSION, f"id-{i}", "2026-01-01T00:00:00Z", data))
    return out


def traced(events: list[Recorded]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    for each in projections():
        conn.executescript(each.schema)
    view = TraceView()
    for r in (r for r in events if r.type in view.types):
        for sql, params in view.apply(r):
            conn.execute(sql, params)
    return conn


def test_an_old_step_event_without_its_iteration_still_decodes() -> None:
    old = [r for r in recorded(WRITTEN, old=True) if r.type in {cls.TYPE for cls in STEPPED}]
    assert len(old) == 6 and all("iteration" not in json.loads(r.raw_data) for r in old)
    assert all(r.event.iteration is None for r in old)
    assert [decided(r.event) for r in old] == [decided(r.event) for r in recorded(WRITTEN)
                                               if r.type in {cls.TYPE for cls in STEPPED}]  # replays as before


def test_an_old_store_folds_to_the_same_trace_as_one_whose_steps_carry_their_iteration() -> None:
    new = report_queries.trace(traced(recorded(WRITTEN)), "r1")
    old = report_queries.trace(traced(recorded(WRITTEN, old=True)), "r1")
    assert new is not None and new == old


def test_the_trace_nests_steps_by_section_and_the_iteration_they_carry() -> None:
    found = report_queries.trace(traced(recorded(WRITTEN)), "r1")
    assert found is not None
    [outline, section] = found["sections"]
    assert outline["section_index"] == 0 and [i["iteration"] for i in outline["iterations"]] == [0]
    kinds = {i["iteration"]: [s["kind"] for s in i["steps"]] for i in section["iterations"]}
    assert kinds == {0: ["section"], 1: ["llm_request", "llm_failed", "llm_response", "tool_call", "observation"],
                     2: ["llm_request", "llm_response", "tool_call", "tool_failed"],
                     3: ["llm_request", "llm_response", "final_answer"]}


def test_a_carried_iteration_is_the_one_the_trace_shows() -> None:
    moved = [e.model_copy(update={"iteration": 7}) if isinstance(e, ToolObserved) else e for e in WRITTEN]
    found = report_queries.trace(traced(recorded(moved)), "r1")
    assert found is not None
    [observation] = [s for i in found["sections"][1]["iterations"] for s in i["steps"] if s["kind"] == "observation"]
    assert observation["iteration"] == 7
    assert report_queries.trace(traced([]), "r1") is None


@pytest.mark.anyio
async def test_the_runner_gives_each_step_the_iteration_of_the_request_or_call_it_answers(
        scripted_report: tuple[Path, str]) -> None:
    store_path, report_id = scripted_report  # written through the scripted model server
    async with SQLiteEventStore(store_path) as store:
        events = [r.event for r in await store.read_stream(report_stream(report_id))]
    calls = {e.call_id: e.iteration for e in events if isinstance(e, ToolCalled)}
    steps = [e for e in events if isinstance(e, STEPPED)]
    assert steps and all(e.iteration is not None for e in steps)
    tools = [e for e in events if isinstance(e, ToolObserved | ToolFailed)]
    assert tools and all(e.iteration == calls[e.call_id] for e in tools)
    answered = [e for e in events if isinstance(e, LLMResponded)]
    assert max(e.iteration or 0 for e in answered) > 1  # a section's later replies are its later iterations
