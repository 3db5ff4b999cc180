"""The `replay` provider: serve a report's recorded LLM answers instead of calling a model.

Requests are matched by call id and attempt. A request the log never made is a
divergence: replay stops there rather than inventing an answer.
"""

from __future__ import annotations

from typing import Any

from simreportd.errors import LLMError, UnrecordedCall
from simreportd.events.codec import Recorded
from simreportd.events.models import (
    DomainEvent,
    InterviewUnlocked,
    LLMFailed,
    LLMRequested,
    LLMResponded,
    ToolCalled,
    ToolFailed,
    ToolObserved,
)

from .providers import Completion

VOLATILE = ("latency_ms",)  # measured, not decided: never part of a comparison
# Copied by the runner from the request or call a step answers, so it follows from the events before it;
# reports recorded before steps carried it have none, and replay them without a divergence.
COPIED = (LLMResponded, LLMFailed, ToolObserved, ToolFailed)  # their `iteration`


class ReplayProvider:
    name = "replay"

    def __init__(self, original: list[Recorded]) -> None:
        self.answers: dict[tuple[str, int], LLMResponded | LLMFailed] = {}
        for event in (recorded.event for recorded in original):
            if isinstance(event, LLMResponded | LLMFailed):
                self.answers[(event.call_id, event.attempt)] = event

    async def complete(self, request: LLMRequested, messages: list[dict[str, Any]], attempt: int) -> Completion:
        answer = self.answers.get((request.call_id, attempt))
        if answer is None:
            raise UnrecordedCall(f"the original run has no answer for {request.call_id} attempt {attempt}")
        if isinstance(answer, LLMFailed):
            raise LLMError(answer.kind, answer.message, status_code=answer.status_code,
                           retry_after_s=answer.retry_after_s, retryable=answer.retryable,
                           tools_refused=answer.tools_refused)
        return Completion(answer.content, answer.tool_calls, answer.usage, answer.finish_reason)


class RecordedEnvironment:
    """Answers `alive` the way the original run found it, so InterviewUnlocked replays the same."""

    def __init__(self, original: list[Recorded]) -> None:
        self.live = next((e.live_environment for r in original if isinstance(e := r.event, InterviewUnlocked)), False)

    async def alive(self, simulation_id: str) -> bool:
        return self.live


class RecordedInterviews:
    """Serves the interview_agents results of the original run: interviews are outside I/O too.

    A result is matched by its topic, first come first served: sections written in parallel ask in
    an order the original's appends need not follow.
    """

    def __init__(self, original: list[Recorded]) -> None:
        steps = [e for r in original if isinstance(e := r.event, ToolCalled | ToolObserved) and e.tool == "interview_agents"]
        topics = {e.call_id: e.arguments.get("interview_topic") for e in steps if isinstance(e, ToolCalled)}
        self.results = [(topics.get(e.call_id), e.result) for e in steps if isinstance(e, ToolObserved)]

    async def report_interview(self, simulation_id: str, generation: int, topic: str, max_agents: int = 5) -> str:
        if not self.results:
            raise UnrecordedCall("the original run made no more interview_agents calls")
        match = next((i for i, (asked, _) in enumerate(self.results) if asked == topic), 0)
        return str(self.results.pop(match)[1])


class RecordedOrder:
    """Appends outcomes in the order the original run appended them, so a replay compares event by event.

    Sections written in parallel finish in whatever order their answers came; the replay's answers
    come at once, so the runner waits for the one the original appended next.
    """

    def __init__(self, original: list[Recorded]) -> None:
        self.original = original

    def choose(self, version: int, ready: list[list[DomainEvent]], waiting: int) -> int | None:
        if version < len(self.original):
            expected = decided(self.original[version].event)
            for i, outcome in enumerate(ready):
                if outcome and decided(outcome[0]) == expected:
                    return i
        return None if waiting else 0  # nothing matches: a divergence, which the comparison reports


def decided(event: DomainEvent) -> dict[str, Any]:
    """What an event says, without what was measured rather than decided: the part a replay compares."""
    return event.model_dump(mode="json", exclude={"type", *VOLATILE, *(("iteration",) if isinstance(event, COPIED) else ())})
