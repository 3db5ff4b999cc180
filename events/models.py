"""Domain events: one pydantic model per event type, joined in one discriminated union.

The model holds an event's `data`; the store adds position, stream, version and the
timestamps. `SCHEMA_VERSION` says which shape a model writes; `events/codec.py` (`upcast`) lifts
older stored shapes to the current one before they are validated. This module holds the simulation
stream's events and the catalogue of all of them (`AnyEvent`, `EVENT_TYPES`); the report's and the chat's
live in `report_events.py` and `chat_events.py` and are importable from here too.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from .base import DomainEvent, Platform, ToolProtocol
from .chat_events import (
    ChatAnswered,
    ChatAsked,
    ChatEvent,
    ChatLLMFailed,
    ChatLLMRequested,
    ChatLLMResponded,
    ChatReplyRejected,
    ChatStarted,
    ChatToolCalled,
    ChatToolFailed,
    ChatToolObserved,
    ChatTurnFailed,
)
from .report_events import (
    RULES_ADDED_LATER,
    CallPurpose,
    ClaimVerdict,
    ContextCompacted,
    ContextGathered,
    DraftWritten,
    InterviewAnswered,
    InterviewMode,
    InterviewRequested,
    InterviewUnlocked,
    LLMFailed,
    LLMRequested,
    LLMResponded,
    OutlinePlanned,
    OutlineSection,
    PlanningStarted,
    RejectionReason,
    ReportCompleted,
    ReportDeleted,
    ReportEvent,
    ReportFailed,
    ReportForked,
    ReportRequested,
    ReportResumed,
    ReportRules,
    ResponseRejected,
    RunSoFar,
    SampledStatement,
    SectionCompleted,
    SectionStarted,
    StancesLabelled,
    StatementsSampled,
    ThoughtRecorded,
    TokenUsage,
    ToolCalled,
    ToolCallRequest,
    ToolFailed,
    ToolObserved,
    ToolProtocolChosen,
    UnsupportedSentence,
    WriterChanged,
    WritingModeChosen,
)
from .streams import simulation_id_of


class Source(BaseModel):
    """Where in an input file a simulation event came from: the tail position is a fold of these."""

    model_config = ConfigDict(frozen=True)
    file: str
    ino: int
    head: str
    offset: int
    end: int
    tail: str | None = None  # hash of the file's bytes just before `end` (docs/architecture.md#ingest: same inode, same head)


# --- simulation stream: simulation-<simulation_id> ------------------------------------------


class SimulationEvent(DomainEvent):
    simulation_id: str
    generation: int


class SimulationDiscovered(SimulationEvent):
    type: Literal["SimulationDiscovered"] = "SimulationDiscovered"
    folder: str
    requirement: str = ""
    config: dict[str, Any] = Field(default_factory=dict)
    agents: list[dict[str, Any]] = Field(default_factory=list)


class SimulationGenerationStarted(SimulationEvent):
    type: Literal["SimulationGenerationStarted"] = "SimulationGenerationStarted"
    folder: str
    reason: str
    requirement: str = ""
    config: dict[str, Any] = Field(default_factory=dict)
    agents: list[dict[str, Any]] = Field(default_factory=list)


class PlatformStarted(SimulationEvent):
    type: Literal["PlatformStarted"] = "PlatformStarted"
    platform: Platform
    agents_count: int | None = None
    source: Source | None = None


class RoundStarted(SimulationEvent):
    type: Literal["RoundStarted"] = "RoundStarted"
    platform: Platform
    round: int
    simulated_hour: int | None = None
    source: Source | None = None


class AgentActed(SimulationEvent):
    """An agent's action. Built as a model its data is these fields (schema version 1); ingest stores the
    simulator's line itself (docs/events.md#agent-actions): with `generation` and `platform` in front (version
    `ACTION_VERSION`; its stream names the simulation), or, for the last action of a batch and a line that names
    our keys itself, with `simulation_id`, `generation`, `platform` and `source` (version `LINE_VERSION`, every
    action before it). `acted_fields` reads either into these fields and `acted_action` into what a fold needs."""

    type: Literal["AgentActed"] = "AgentActed"
    platform: Platform
    round: int
    agent_id: int
    agent_name: str = ""
    action_type: str
    action_args: dict[str, Any] = Field(default_factory=dict)
    timestamp: str | None = None
    success: bool = True
    source: Source | None = None

    LINE_VERSION: ClassVar[int] = 2
    ACTION_VERSION: ClassVar[int] = 3


def acted_action(data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """`(action_type, action_args)` of an `AgentActed`'s stored data of either version: the line's, as
    ingest checked them (a type in capitals, arguments an object)."""
    return data["action_type"].upper(), data.get("action_args") or {}


def acted_simulation(data: dict[str, Any], stream: str) -> str:
    """The simulation an `AgentActed` of `stream` belongs to: its data's (version 2), else its stream's (3)."""
    simulation_id = data.get("simulation_id")
    return simulation_id if simulation_id is not None else simulation_id_of(stream)


def acted_fields(data: dict[str, Any], stream: str) -> dict[str, Any]:
    """The model's fields from an `AgentActed`'s stored data of any version, stored in `stream` (which names the
    simulation of version 3's data); a line's `source` without its file (version 2 but the last action of a
    batch) is left out, as the model's needs the file."""
    kind, args = acted_action(data)
    source = data.get("source")
    timestamp = data.get("timestamp")
    return {"simulation_id": acted_simulation(data, stream), "generation": data["generation"],
            "platform": data["platform"],
            "round": data["round"], "agent_id": data["agent_id"], "agent_name": str(data.get("agent_name") or ""),
            "action_type": kind, "action_args": args, "timestamp": None if timestamp is None else str(timestamp),
            "success": data.get("success") is not False,
            "source": source if source is not None and "file" in source else None}


class AgentInterviewed(SimulationEvent):
    """An agent's answer to an interview in the live environment, read from the simulator's database (a
    `trace` row of action `interview`): an interview of the run, never an action of a round."""

    type: Literal["AgentInterviewed"] = "AgentInterviewed"
    platform: Platform
    agent_id: int
    agent_name: str = ""
    prompt: str = ""
    response: str = ""
    interview_id: str = ""
    timestamp: str | None = None
    source: Source | None = None


class RoundEnded(SimulationEvent):
    type: Literal["RoundEnded"] = "RoundEnded"
    platform: Platform
    round: int
    actions_count: int | None = None
    source: Source | None = None


class PlatformFinished(SimulationEvent):
    type: Literal["PlatformFinished"] = "PlatformFinished"
    platform: Platform
    total_rounds: int
    total_actions: int | None = None
    all_rounds_ran: bool
    source: Source | None = None


class SimulationCompleted(SimulationEvent):
    type: Literal["SimulationCompleted"] = "SimulationCompleted"
    platforms: list[Platform]
    all_rounds_ran: bool


class EnvironmentStatusChanged(SimulationEvent):
    type: Literal["EnvironmentStatusChanged"] = "EnvironmentStatusChanged"
    status: Literal["alive", "stopped", "stale"]
    twitter_available: bool = False
    reddit_available: bool = False
    pid: int | None = None


class IngestRejected(SimulationEvent):
    """Bad input: a run of consecutive bad lines of one file (`lines` of them, bytes `offset` to `end`, the first
    one's `reason` and `excerpt`, a few more in `excerpts`), or a file or part of a setup file left out."""

    type: Literal["IngestRejected"] = "IngestRejected"
    file: str
    offset: int
    reason: str
    excerpt: str
    source: Source | None = None  # of the run's last line: where ingest goes on
    lines: int = 1
    end: int | None = None  # the byte after the run (None: recorded before runs were, one line)
    excerpts: list[str] = Field(default_factory=list)


class IngestFailed(SimulationEvent):
    """A whole check of the folder failed unexpectedly; ingest tries it again after `retry_in_s`."""

    type: Literal["IngestFailed"] = "IngestFailed"
    error: str
    failures: int  # consecutive failures of this folder so far
    retry_in_s: float


AnyEvent = Annotated[
    Union[
        SimulationDiscovered,
        SimulationGenerationStarted,
        PlatformStarted,
        RoundStarted,
        AgentActed,
        AgentInterviewed,
        RoundEnded,
        PlatformFinished,
        SimulationCompleted,
        EnvironmentStatusChanged,
        IngestRejected,
        IngestFailed,
        ReportRequested,
        PlanningStarted,
        ContextGathered,
        OutlinePlanned,
        SectionStarted,
        LLMRequested,
        LLMResponded,
        LLMFailed,
        ToolProtocolChosen,
        ContextCompacted,
        ThoughtRecorded,
        ToolCalled,
        ToolObserved,
        ToolFailed,
        ResponseRejected,
        SectionCompleted,
        ReportCompleted,
        InterviewUnlocked,
        ReportFailed,
        ReportResumed,
        WriterChanged,
        ReportForked,
        ReportDeleted,
        WritingModeChosen,
        DraftWritten,
        StatementsSampled,
        StancesLabelled,
        InterviewRequested,
        InterviewAnswered,
        ChatStarted,
        ChatAsked,
        ChatLLMRequested,
        ChatLLMResponded,
        ChatLLMFailed,
        ChatToolCalled,
        ChatToolObserved,
        ChatToolFailed,
        ChatReplyRejected,
        ChatAnswered,
        ChatTurnFailed,
    ],
    Field(discriminator="type"),
]

EVENT_ADAPTER: TypeAdapter[AnyEvent] = TypeAdapter(AnyEvent)
EVENT_TYPES: dict[str, type[DomainEvent]] = {
    cls.__name__: cls for cls in AnyEvent.__origin__.__args__  # type: ignore[attr-defined]
}

# Every model is importable from here, whichever module defines it.
__all__ = [
    "AgentActed",
    "AgentInterviewed",
    "AnyEvent",
    "CallPurpose",
    "ChatAnswered",
    "ChatAsked",
    "ChatEvent",
    "ChatLLMFailed",
    "ChatLLMRequested",
    "ChatLLMResponded",
    "ChatReplyRejected",
    "ChatStarted",
    "ChatToolCalled",
    "ChatToolFailed",
    "ChatToolObserved",
    "ChatTurnFailed",
    "ClaimVerdict",
    "ContextCompacted",
    "ContextGathered",
    "DomainEvent",
    "DraftWritten",
    "SampledStatement",
    "StancesLabelled",
    "StatementsSampled",
    "EVENT_ADAPTER",
    "EVENT_TYPES",
    "EnvironmentStatusChanged",
    "IngestFailed",
    "IngestRejected",
    "InterviewAnswered",
    "InterviewMode",
    "InterviewRequested",
    "InterviewUnlocked",
    "LLMFailed",
    "LLMRequested",
    "LLMResponded",
    "OutlinePlanned",
    "OutlineSection",
    "PlanningStarted",
    "Platform",
    "PlatformFinished",
    "PlatformStarted",
    "RULES_ADDED_LATER",
    "RejectionReason",
    "ReportCompleted",
    "ReportDeleted",
    "ReportEvent",
    "ReportFailed",
    "ReportForked",
    "ReportRequested",
    "ReportResumed",
    "ReportRules",
    "ResponseRejected",
    "RoundEnded",
    "RoundStarted",
    "RunSoFar",
    "SectionCompleted",
    "SectionStarted",
    "SimulationCompleted",
    "SimulationDiscovered",
    "SimulationEvent",
    "SimulationGenerationStarted",
    "Source",
    "ThoughtRecorded",
    "TokenUsage",
    "ToolCallRequest",
    "ToolCalled",
    "ToolFailed",
    "ToolObserved",
    "ToolProtocol",
    "ToolProtocolChosen",
    "UnsupportedSentence",
    "WriterChanged",
    "WritingModeChosen",
]
