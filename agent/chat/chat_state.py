"""A chat's state: the fold of its `chat-<id>` stream into its turns, each one question and the steps taken to
answer it, and the conversation the next request continues (as agent/report/state.py is for a report)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simreportd.events.models import (
    ChatAnswered,
    ChatAsked,
    ChatLLMFailed,
    ChatLLMRequested,
    ChatLLMResponded,
    ChatReplyRejected,
    ChatStarted,
    ChatToolCalled,
    ChatToolFailed,
    ChatToolObserved,
    ChatTurnFailed,
    DomainEvent,
    LLMResponded,
    ReportRules,
    ToolCalled,
    ToolCallRequest,
    ToolObserved,
    ToolProtocol,
)

from ..report import prompts
from ..report.state import Conversation
from ..tools.toolspec import counts_as_evidence
from . import chat_prompts

CHAT_MIN_TOOLS = 1  # a chat answer checks the report against the simulation at least once


@dataclass
class Turn:
    """One question and the steps taken to answer it."""

    number: int
    question: str
    history: list[dict[str, str]] = field(default_factory=list)
    iterations: int = 0
    accepted: set[int] = field(default_factory=set)  # iterations whose reply led to a tool call
    rejected: int = 0
    tool_calls: list[ToolCallRequest] = field(default_factory=list)
    evidence_calls: int = 0
    used_tools: list[str] = field(default_factory=list)
    open_calls: list[ToolCalled] = field(default_factory=list)
    conflicts: int = 0
    grounding_rejections: int = 0
    tool_rejections: int = 0
    final_requested: bool = False
    overflows: int = 0
    answer: ChatAnswered | None = None
    failed: ChatTurnFailed | None = None

    @property
    def closed(self) -> bool:
        return self.answer is not None or self.failed is not None


@dataclass
class ChatState:
    """Fold of a `chat-<id>` stream."""

    chat_id: str
    version: int = 0
    started: ChatStarted | None = None
    turns: dict[int, Turn] = field(default_factory=dict)
    conversation: Conversation = field(default_factory=Conversation)
    observations: list[ToolObserved] = field(default_factory=list)  # every turn's: the chat's evidence
    llm_calls: int = 0

    @property
    def rules(self) -> ReportRules:
        assert self.started is not None
        return self.started.settings

    @property
    def protocol(self) -> ToolProtocol:
        return self.started.protocol if self.started else "native"

    @property
    def current(self) -> Turn | None:
        """The question being answered, if one is open."""
        last = self.turns.get(len(self.turns))
        return last if last is not None and not last.closed else None

    def apply(self, event: DomainEvent) -> None:
        self.version += 1
        if (handler := HANDLERS.get(type(event))) is not None:
            handler(self, event)

    def _on_started(self, e: ChatStarted) -> None:
        self.started = e

    def _on_asked(self, e: ChatAsked) -> None:
        self.turns[e.turn] = Turn(e.turn, e.question, e.history)
        if self.conversation.messages:
            self.conversation.pending.append(chat_prompts.question_message(e.turn, e.question))

    def _on_requested(self, e: ChatLLMRequested) -> None:
        c, request = self.conversation, e.request
        turn = self.turns.get(e.turn)
        if c.awaiting is not None and turn is not None:  # the server refused the outstanding one as too long
            turn.overflows += 1
        if request.fresh:
            c.replace([])
        for message in request.messages_added:
            c.add(message)
        c.pending, c.awaiting, c.attempts, c.failures, c.last_failure = [], request, 0, 0, None
        self.llm_calls += 1
        if turn is not None and not request.tools:
            turn.final_requested = True

    def _on_failed(self, e: ChatLLMFailed) -> None:
        c = self.conversation
        c.attempts, c.last_failure = e.failure.attempt, e.failure
        c.failures += 1

    def _on_responded(self, e: ChatLLMResponded) -> None:
        c, response = self.conversation, e.response
        c.attempts, c.awaiting, c.unread, c.last_failure = response.attempt, None, response, None
        c.add(assistant_message(response))
        c.native_ids.update(t.id for t in response.tool_calls)
        if (turn := self.turns.get(e.turn)) is not None:
            turn.iterations += 1

    def _on_rejected(self, e: ChatReplyRejected) -> None:
        c, rejection = self.conversation, e.rejection
        c.unread = None
        for call_id in rejection.tool_call_ids:
            c.pending.append(self._result(call_id, "not executed", f"Not executed. {rejection.feedback}"))
        if rejection.feedback and not rejection.tool_call_ids:
            c.pending.append({"role": "user", "content": rejection.feedback})
        turn = self.turns[e.turn]
        turn.rejected += rejection.reason not in REPAIRS
        turn.conflicts += rejection.reason == "tool_and_final_answer"
        turn.grounding_rejections += rejection.reason == "ungrounded"
        turn.tool_rejections += rejection.reason == "too_few_tools"

    def _on_called(self, e: ChatToolCalled) -> None:
        self.conversation.unread = None
        turn = self.turns[e.turn]
        turn.accepted.add(e.call.iteration)
        turn.open_calls.append(e.call)
        turn.tool_calls.append(ToolCallRequest(id=e.call.call_id, name=e.call.tool, arguments=e.call.arguments))
        turn.evidence_calls += counts_as_evidence(e.call.tool)
        if e.call.tool not in turn.used_tools:
            turn.used_tools.append(e.call.tool)

    def _on_observed(self, e: ChatToolObserved) -> None:
        turn = self._close_call(e.turn, e.observation.call_id)
        self.observations.append(e.observation)
        self.conversation.pending.append(self._result(e.observation.call_id, e.observation.tool,
                                                      e.observation.result, turn))

    def _on_tool_failed(self, e: ChatToolFailed) -> None:
        turn = self._close_call(e.turn, e.failure.call_id)
        self.conversation.pending.append(self._result(e.failure.call_id, e.failure.tool,
                                                      f"Tool error: {e.failure.error}", turn))

    def _on_answered(self, e: ChatAnswered) -> None:
        self.turns[e.turn].answer = e
        self.conversation.unread = None

    def _on_turn_failed(self, e: ChatTurnFailed) -> None:
        self.turns[e.turn].failed = e
        self.conversation = Conversation()  # the next question starts over, restating the answered turns

    def _close_call(self, number: int, call_id: str) -> Turn:
        turn = self.turns[number]
        turn.open_calls = [c for c in turn.open_calls if c.call_id != call_id]
        return turn

    def _result(self, call_id: str, tool: str, result: str, turn: Turn | None = None) -> dict[str, Any]:
        """A tool result as the protocol wants it, with the turn's budget restated after it."""
        hint = ""
        if turn is not None:
            used = len(turn.tool_calls)
            hint = prompts.budget_hint([], used, self.rules.max_tool_calls, CHAT_MIN_TOOLS, turn.evidence_calls)
        content = prompts.observation(tool, result, hint)
        if self.protocol == "text" or call_id not in self.conversation.native_ids:
            return {"role": "user", "content": "Observation:\n" + content}
        return {"role": "tool", "tool_call_id": call_id, "content": content}


REPAIRS = frozenset({"hallucinated_observation", "echoed_prompt"})  # fixed in place: the reply still counts

HANDLERS: dict[type[DomainEvent], Callable[[ChatState, Any], None]] = {
    ChatStarted: ChatState._on_started, ChatAsked: ChatState._on_asked, ChatLLMRequested: ChatState._on_requested,
    ChatLLMFailed: ChatState._on_failed, ChatLLMResponded: ChatState._on_responded,
    ChatReplyRejected: ChatState._on_rejected, ChatToolCalled: ChatState._on_called,
    ChatToolObserved: ChatState._on_observed, ChatToolFailed: ChatState._on_tool_failed,
    ChatAnswered: ChatState._on_answered, ChatTurnFailed: ChatState._on_turn_failed,
}


def assistant_message(response: LLMResponded) -> dict[str, Any]:
    """A reply as the conversation keeps it: its text and its native tool calls."""
    message: dict[str, Any] = {"role": "assistant", "content": response.content}
    if response.tool_calls:
        message["tool_calls"] = [{"id": t.id, "type": "function", "function": {
            "name": t.name, "arguments": prompts.dumps(t.arguments)}} for t in response.tool_calls]
    return message


def fold(events: list[DomainEvent], chat_id: str) -> ChatState:
    """The state of a chat after these events of its stream."""
    state = ChatState(chat_id)
    for event in events:
        state.apply(event)
    return state
