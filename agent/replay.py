"""The `replay` provider: serve a report's recorded LLM answers instead of calling a model.

Requests are matched by call id and attempt. A request the log never made is a
divergence: replay stops there rather than inventing an answer.
"""

from __future__ import annotations

from typing import Any

from simreportd.errors import LLMError, UnrecordedCall
from simreportd.events.codec import Recorded
from simreportd.events.models import LLMFailed, LLMRequested, LLMResponded

from .providers import Completion


class ReplayProvider:
    name = "replay"

    def __init__(self, original: list[Recorded]) -> None:
        self.answers: dict[tuple[str, int], LLMResponded | LLMFailed] = {}
        for recorded in original:
            event = recorded.event
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
        unlocked = [r.data for r in original if r.type == "InterviewUnlocked"]
        self.live = bool(unlocked and unlocked[0]["live_environment"])

    async def alive(self, simulation_id: str) -> bool:
        return self.live


class RecordedInterviews:
    """Serves the interview_agents results of the original run, in order: interviews are outside I/O too."""

    def __init__(self, original: list[Recorded]) -> None:
        self.results = [r.data["result"] for r in original
                        if r.type == "ToolObserved" and r.data["tool"] == "interview_agents"]

    async def report_interview(self, simulation_id: str, generation: int, topic: str, max_agents: int = 5) -> str:
        if not self.results:
            raise UnrecordedCall("the original run made no more interview_agents calls")
        return str(self.results.pop(0))
