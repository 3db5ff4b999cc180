"""The events of a chat's stream, `chat-<chat_id>`: a conversation about a completed report.

Its steps are report-shaped events (an LLM request, a tool call...) wrapped in chat types, so no read model of
reports ever folds them; measured latencies sit on the wrapper, where replay leaves them out of the comparison.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import DomainEvent, ToolProtocol
from .report_events import (
    ClaimVerdict,
    LLMFailed,
    LLMRequested,
    LLMResponded,
    ReportRules,
    ResponseRejected,
    ToolCalled,
    ToolCallRequest,
    ToolFailed,
    ToolObserved,
)


class ChatEvent(DomainEvent):
    chat_id: str
    turn: int = 0  # the question this step belongs to (1-based); 0 before the first


class ChatStarted(ChatEvent):
    type: Literal["ChatStarted"] = "ChatStarted"
    report_id: str
    simulation_id: str
    generation: int
    provider: str
    model: str
    protocol: ToolProtocol
    settings: ReportRules
    surface: str = "cli"  # where the chat was opened: cli, websocket, http


class ChatAsked(ChatEvent):
    type: Literal["ChatAsked"] = "ChatAsked"
    question: str
    history: list[dict[str, str]] = Field(default_factory=list)  # earlier turns a client sent (MiroFish chat_history)


class ChatLLMRequested(ChatEvent):
    type: Literal["ChatLLMRequested"] = "ChatLLMRequested"
    request: LLMRequested


class ChatLLMResponded(ChatEvent):
    type: Literal["ChatLLMResponded"] = "ChatLLMResponded"
    response: LLMResponded
    latency_ms: float = 0.0


class ChatLLMFailed(ChatEvent):
    type: Literal["ChatLLMFailed"] = "ChatLLMFailed"
    failure: LLMFailed


class ChatToolCalled(ChatEvent):
    type: Literal["ChatToolCalled"] = "ChatToolCalled"
    call: ToolCalled


class ChatToolObserved(ChatEvent):
    type: Literal["ChatToolObserved"] = "ChatToolObserved"
    observation: ToolObserved
    latency_ms: float = 0.0


class ChatToolFailed(ChatEvent):
    type: Literal["ChatToolFailed"] = "ChatToolFailed"
    failure: ToolFailed


class ChatReplyRejected(ChatEvent):
    type: Literal["ChatReplyRejected"] = "ChatReplyRejected"
    rejection: ResponseRejected


class ChatAnswered(ChatEvent):
    """A turn's answer with its verdict: what it cites from the evidence, and what the evidence lacks."""

    type: Literal["ChatAnswered"] = "ChatAnswered"
    answer: str
    tool_calls: list[ToolCallRequest] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)  # the ids the answer cites that the tools returned
    grounded_quotes: int = 0
    ungrounded_quotes: list[str] = Field(default_factory=list)
    unknown_ids: list[str] = Field(default_factory=list)
    forced: bool = False
    claims: ClaimVerdict | None = None  # the claim check; sentences it lists were removed from `answer`
    no_evidence: bool = False  # no tool read the simulation for it, or it states nothing its evidence holds


class ChatTurnFailed(ChatEvent):
    type: Literal["ChatTurnFailed"] = "ChatTurnFailed"
    error: str
