"""Reproduce a chat from its log, as `daemon/report_replay.py` reproduces a report, with no call to the outside.

The scratch store gets the simulation events and the report's stream as they stood when the chat
opened, so the tools run again against the same simulation model; the LLM answers and the
interview results come from the chat's own events. The user's inputs (the `ChatStarted` and each
`ChatAsked`) are appended where the original received them, the chat runs after each, and the
replayed stream is compared with the original, step by step.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from simreportd.agent.chat.chat_runner import ChatRunner, ChatWriter
from simreportd.agent.llm.replay_provider import RecordedInterviews, ReplayProvider
from simreportd.agent.tools.simulation_tools import SimulationTools
from simreportd.analysis import recorded_reader
from simreportd.errors import NotFound
from simreportd.events import EventStore, NewEvent, SQLiteEventStore
from simreportd.events.codec import Recorded
from simreportd.events.models import (
    ChatLLMFailed,
    ChatLLMResponded,
    ChatStarted,
    ChatToolCalled,
    ChatToolObserved,
    DomainEvent,
)
from simreportd.events.streams import chat_stream, report_stream
from simreportd.projections.catalogue import projections
from simreportd.projections.runner import ProjectionRunner, views_path_for

from .report_replay import ReplayResult, copy_simulations, first_divergence, no_wait, tool_results

INPUTS = ("ChatStarted", "ChatAsked")  # the user's part of a chat; everything else is the runner's


class RecordedAnswers(ReplayProvider):
    """The chat's recorded LLM answers (and failures), served by call id and attempt."""

    def __init__(self, original: list[Recorded]) -> None:
        super().__init__([])
        for event in _events(original, ChatLLMResponded, ChatLLMFailed):
            answer = event.response if isinstance(event, ChatLLMResponded) else event.failure
            self.answers[(answer.call_id, answer.attempt)] = answer


class RecordedChatInterviews(RecordedInterviews):
    """The chat's interview_agents results, in order."""

    def __init__(self, original: list[Recorded]) -> None:
        super().__init__([])
        topics = {e.call.call_id: e.call.arguments.get("interview_topic") for e in _events(original, ChatToolCalled)}
        self.results = [(topics.get(e.observation.call_id), e.observation.result)
                        for e in _events(original, ChatToolObserved) if e.observation.tool == "interview_agents"]


def _events(original: list[Recorded], *types: type[DomainEvent]) -> Iterable[Any]:
    return (r.event for r in original if isinstance(r.event, types))


def _observed(original: list[Recorded]) -> list[str]:
    """What the tools answered the chat: they name the analysis it used."""
    return [e.observation.result for e in _events(original, ChatToolObserved)]


async def replay_chat(store: EventStore, chat_id: str, scratch: Path, vectors: Path | None = None) -> ReplayResult:
    """Re-run a chat in `scratch` and compare it with the original stream."""
    original = await store.read_stream(chat_stream(chat_id))
    if not original or not isinstance(started := original[0].event, ChatStarted):
        raise NotFound(f"no chat {chat_id!r}; `simreportd events --type ChatStarted` lists the chats")
    opened = original[0].position
    report = [r for r in await store.read_stream(report_stream(started.report_id)) if r.position < opened]
    async with SQLiteEventStore(scratch) as copy:
        await copy_simulations(store, copy, before=opened)
        await copy.append(report_stream(started.report_id), [NewEvent(r.event, r.event_id) for r in report],
                          expected_version=0)
        async with ProjectionRunner(copy, views_path_for(scratch), projections()) as views:
            await views.catch_up()
        tools = SimulationTools(views_path_for(scratch), RecordedChatInterviews(original),
                                reader=recorded_reader(tool_results(report) + _observed(original), vectors))
        provider = RecordedAnswers(original)
        runner = ChatRunner(copy, tools, lambda _: provider,
                            ChatWriter(started.provider, started.model, started.settings), sleep=no_wait)
        for recorded in original:
            if recorded.type in INPUTS:
                replayed = await copy.read_stream(chat_stream(chat_id))
                await copy.append(chat_stream(chat_id), [NewEvent(recorded.event, recorded.event_id)],
                                  expected_version=len(replayed))
                await runner.drive(chat_id)
        replayed = await copy.read_stream(chat_stream(chat_id))
    return ReplayResult(chat_id, len(original), first_divergence(original, replayed))
