"""Domain events: one pydantic model per event type, joined in one discriminated union.

The model holds an event's `data`; the store adds position, stream, version and the
timestamps. `SCHEMA_VERSION` says which shape a model writes; `upcast` (below) lifts
older stored shapes to the current one before they are validated.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

Platform = Literal["twitter", "reddit"]


class DomainEvent(BaseModel):
    """Base of every event model: frozen, strict about unknown keys."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    SCHEMA_VERSION: ClassVar[int] = 1

    @property
    def type_name(self) -> str:
        return type(self).__name__


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
    simulator's line itself (version `LINE_VERSION`, docs/events.md#agent-actions), which `acted_fields` reads
    into these fields and `acted_action` into what a fold needs."""

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


def acted_action(data: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """`(action_type, action_args)` of an `AgentActed`'s stored data of either version: the line's, as
    ingest checked them (a type in capitals, arguments an object)."""
    return data["action_type"].upper(), data.get("action_args") or {}


def acted_fields(data: dict[str, Any]) -> dict[str, Any]:
    """The model's fields from an `AgentActed`'s stored data of either version; a line's `source` without its
    file (all but the last action of a batch) is left out, as the model's needs the file."""
    kind, args = acted_action(data)
    source = data.get("source")
    timestamp = data.get("timestamp")
    return {"simulation_id": data["simulation_id"], "generation": data["generation"], "platform": data["platform"],
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


# --- report stream: report-<report_id> --------------------------------------------------------


class ReportEvent(DomainEvent):
    report_id: str


class UnsupportedSentence(BaseModel):
    """One sentence of a text and the claims in it (figures, names, terms) its evidence does not hold."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    sentence: str
    claims: list[str]


class ClaimVerdict(BaseModel):
    """The claim check of one text (docs/formats.md#claim-check): sentences, claims and which are unsupported."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    sentences: int = 0
    claims: int = 0
    supported: int = 0
    unsupported: list[UnsupportedSentence] = Field(default_factory=list)  # removed from the text as kept
    repetitive: bool = False
    mostly_unsupported: bool = False
    cut: bool = False  # the text ran to the length limit


class OutlineSection(BaseModel):
    model_config = ConfigDict(frozen=True)
    title: str
    description: str = ""


class RunSoFar(BaseModel):
    """How much of a still-running simulation a partial report saw: last round per platform, actions."""

    model_config = ConfigDict(frozen=True)
    rounds: dict[str, int]
    actions: int


RULES_ADDED_LATER = frozenset({"name_tools", "min_citations"})


class ReportRules(BaseModel):
    """The rules a report keeps for its whole life, built once from `[agent]` and `[llm]` and recorded
    in its ReportRequested: changing the configuration later never changes how a report is replayed.
    The defaults are the configuration's; they fill keys that events recorded by older versions lack.
    Rules added later (RULES_ADDED_LATER) default to off instead: what the versions before them did."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    min_tool_calls: int = 3
    max_tool_calls: int = 5
    max_iterations: int = 5  # accepted steps per section
    max_rejections: int = 4  # rejected replies per section, counted apart (unless mirofish_budget)
    mirofish_budget: bool = False
    name_tools: bool = False  # `[agent] name_tools` defaults to true for new reports
    min_citations: int = 0  # `[agent] min_citations` defaults to 1 for new reports
    conflict_retries: int = 2
    outline_retries: int = 2
    max_retries: int = 4
    retry_backoff_s: float = 1.0
    tool_protocol: Literal["auto", "native", "text"] = "auto"
    temperature: float = 0.3
    max_tokens: int = 2048
    context_tokens: int = 0  # 0: not known; the agent then assumes 8192
    tools: tuple[str, ...] = ()
    parallel_sections: int = 1  # sections written at once (`[reports] parallel_sections`)
    mode: Literal["react", "guided", "auto"] = "react"  # `[agent] mode`: how sections are written
    drafts: int = 1  # `[agent] drafts`: guided drafts per section, the best supported kept
    response_format: Literal["off", "json_object", "json_schema"] = "off"  # guided drafts' structured output


class ReportRequested(ReportEvent):
    type: Literal["ReportRequested"] = "ReportRequested"
    simulation_id: str
    generation: int
    trigger: str = "auto"
    provider: str = "offline"
    model: str = ""
    settings: ReportRules = Field(default_factory=ReportRules)
    forked_from: str | None = None
    partial: RunSoFar | None = None  # set when the run had not completed: the report says it is partial


class PlanningStarted(ReportEvent):
    type: Literal["PlanningStarted"] = "PlanningStarted"


class ContextGathered(ReportEvent):
    type: Literal["ContextGathered"] = "ContextGathered"
    context: dict[str, Any]


class OutlinePlanned(ReportEvent):
    """v2: `sections` became `[{title, description}]` (v1 stored bare titles)."""

    SCHEMA_VERSION: ClassVar[int] = 2
    type: Literal["OutlinePlanned"] = "OutlinePlanned"
    title: str
    summary: str
    sections: list[OutlineSection]
    fallback: bool = False
    claims: ClaimVerdict | None = None  # the summary's claim check; its unsupported sentences are removed


class SectionStarted(ReportEvent):
    type: Literal["SectionStarted"] = "SectionStarted"
    section_index: int
    title: str


class LLMRequested(ReportEvent):
    type: Literal["LLMRequested"] = "LLMRequested"
    call_id: str
    purpose: Literal["outline", "section", "interview", "chat", "probe"]
    section_index: int = 0
    model: str
    params: dict[str, Any] = Field(default_factory=dict)
    protocol: Literal["native", "text"] = "native"
    tools: list[str] = Field(default_factory=list)
    messages_added: list[dict[str, Any]]
    fingerprint: str
    fresh: bool = False  # the messages start a conversation of their own (a section's forced last word)


class ToolCallRequest(BaseModel):
    model_config = ConfigDict(frozen=True)
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class TokenUsage(BaseModel):
    model_config = ConfigDict(frozen=True)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False


class LLMResponded(ReportEvent):
    type: Literal["LLMResponded"] = "LLMResponded"
    call_id: str
    attempt: int
    content: str = ""
    tool_calls: list[ToolCallRequest] = Field(default_factory=list)
    usage: TokenUsage = TokenUsage()
    latency_ms: float = 0.0
    finish_reason: str | None = None


class LLMFailed(ReportEvent):
    type: Literal["LLMFailed"] = "LLMFailed"
    call_id: str
    attempt: int
    kind: str
    message: str
    status_code: int | None = None
    retry_after_s: float | None = None
    retryable: bool = True
    tools_refused: bool = False


class ToolProtocolChosen(ReportEvent):
    type: Literal["ToolProtocolChosen"] = "ToolProtocolChosen"
    protocol: Literal["native", "text"]
    reason: str


class ContextCompacted(ReportEvent):
    """Older turns of the conversation were shortened so the next request fits `target_tokens`."""

    type: Literal["ContextCompacted"] = "ContextCompacted"
    section_index: int
    target_tokens: int
    before_tokens: int
    after_tokens: int
    reason: str


class ThoughtRecorded(ReportEvent):
    type: Literal["ThoughtRecorded"] = "ThoughtRecorded"
    section_index: int
    iteration: int
    text: str


class ToolCalled(ReportEvent):
    type: Literal["ToolCalled"] = "ToolCalled"
    section_index: int
    iteration: int
    call_id: str
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    repeat_of: str | None = None  # an identical earlier call: its result is restated, not new evidence


class ToolObserved(ReportEvent):
    type: Literal["ToolObserved"] = "ToolObserved"
    section_index: int
    call_id: str
    tool: str
    result: str
    latency_ms: float = 0.0


class ToolFailed(ReportEvent):
    type: Literal["ToolFailed"] = "ToolFailed"
    section_index: int
    call_id: str
    tool: str
    error: str


RejectionReason = Literal[
    "too_few_tools",
    "tool_and_final_answer",
    "hallucinated_observation",
    "raw_tool_call_as_content",
    "tool_budget_spent",
    "no_action",
    "unknown_tool",
    "empty_section",
    "invalid_outline",
    "ungrounded",
    "length_cut",
    "echoed_prompt",
    "unsupported_claims",
    "mechanical_arguments",
]


class ResponseRejected(ReportEvent):
    type: Literal["ResponseRejected"] = "ResponseRejected"
    section_index: int
    iteration: int
    call_id: str
    reason: RejectionReason
    detail: str = ""
    feedback: str = ""
    tool_call_ids: list[str] = Field(default_factory=list)


class SectionCompleted(ReportEvent):
    type: Literal["SectionCompleted"] = "SectionCompleted"
    section_index: int
    title: str
    content: str
    forced: bool = False
    tool_calls: int = 0
    iterations: int = 0
    ungrounded_quotes: int = 0
    grounded_quotes: int = 0
    rejections: dict[str, int] = Field(default_factory=dict)
    problems: list[str] = Field(default_factory=list)  # the [agent] rules this section does not meet
    claims: ClaimVerdict | None = None  # the claim check; sentences it lists were removed from `content`
    draft: int = 0  # guided mode: which draft was kept (1-based), 0 for a ReACT section


class ReportCompleted(ReportEvent):
    type: Literal["ReportCompleted"] = "ReportCompleted"
    title: str
    sections_total: int
    status: Literal["completed", "completed_degraded"] = "completed"
    problems: list[str] = Field(default_factory=list)


class InterviewUnlocked(ReportEvent):
    type: Literal["InterviewUnlocked"] = "InterviewUnlocked"
    simulation_id: str
    live_environment: bool


class ReportFailed(ReportEvent):
    type: Literal["ReportFailed"] = "ReportFailed"
    stage: str
    error: str
    resumable: bool = True


class ReportResumed(ReportEvent):
    type: Literal["ReportResumed"] = "ReportResumed"
    reason: str = "resume"
    overrides: dict[str, Any] = Field(default_factory=dict)  # LLM settings changed from here on


class WriterChanged(ReportEvent):
    """A user chose to continue the report with another provider or model (`resume --provider/--model`)."""

    type: Literal["WriterChanged"] = "WriterChanged"
    provider: str
    model: str
    previous_provider: str
    previous_model: str
    context_tokens: int | None = None  # the new writer's context, when [llm] context_tokens leaves it to the writer


class ReportForked(ReportEvent):
    """The end of the history a fork shares with `forked_from` (its events up to position `at`)."""

    type: Literal["ReportForked"] = "ReportForked"
    forked_from: str
    at: int
    provider: str
    model: str


class WritingModeChosen(ReportEvent):
    """`[agent] mode = "auto"`: the mode the sections are written in, chosen by a probe of the model."""

    type: Literal["WritingModeChosen"] = "WritingModeChosen"
    mode: Literal["react", "guided"]
    reason: str
    probe_claims: int = 0  # claims in the probe's answer
    probe_supported: int = 0  # of them, supported by the probe's fact sheet
    probe_cited: int = 0  # facts of the sheet the answer cited


class DraftWritten(ReportEvent):
    """Guided mode: one draft of a section, checked; the best supported draft becomes the section."""

    type: Literal["DraftWritten"] = "DraftWritten"
    section_index: int
    draft: int  # 1-based
    call_id: str
    content: str  # the draft as kept by the claim check
    cited: list[int] = Field(default_factory=list)  # fact numbers of the sheet it cites
    claims: ClaimVerdict


class ReportDeleted(ReportEvent):
    """A user deleted the report (MiroFish's `DELETE /api/report/<id>`): it is hidden from every view and
    its folder removed; its events stay in the log, which nothing erases."""

    type: Literal["ReportDeleted"] = "ReportDeleted"
    trigger: str = "http"


class InterviewRequested(ReportEvent):
    type: Literal["InterviewRequested"] = "InterviewRequested"
    interview_id: str
    simulation_id: str
    agent_id: int
    question: str
    platform: Platform | None = None
    mode: Literal["live", "persona"] = "persona"


class InterviewAnswered(ReportEvent):
    type: Literal["InterviewAnswered"] = "InterviewAnswered"
    interview_id: str
    agent_id: int
    answer: str
    mode: Literal["live", "persona"]
    platform: Platform | None = None


# --- chat stream: chat-<chat_id> ----------------------------------------------------------------
# A conversation about a completed report. Its steps are report-shaped events (an LLM request, a tool
# call...) wrapped in chat types, so no read model of reports ever folds them; measured latencies sit
# on the wrapper, where replay leaves them out of the comparison.


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
    protocol: Literal["native", "text"]
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
