"""The events of a report's stream, `report-<report_id>`: its request, every step of its agent, its verdict.

What each one means is in docs/events.md.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import DomainEvent, Platform, ToolProtocol


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


RULES_ADDED_LATER = frozenset({"name_tools", "min_citations", "down_wait_s"})


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
    down_wait_s: float = 0.0  # `[llm] down_wait_s` defaults to 60 for new reports
    tool_protocol: Literal["auto", "native", "text"] = "auto"
    temperature: float = 0.3
    max_tokens: int = 2048
    context_tokens: int = 0  # 0: not known; the agent then assumes 8192
    tools: tuple[str, ...] = ()
    parallel_sections: int = 1  # sections written at once (`[reports] parallel_sections`)
    mode: Literal["react", "guided", "auto"] = "react"  # `[agent] mode`: how sections are written
    drafts: int = 1  # `[agent] drafts`: guided drafts per section, the best supported kept
    response_format: Literal["off", "json_object", "json_schema"] = "off"  # guided drafts' structured output
    stance_labels: int = 0  # `[agent] stance_labels`: statements the model may label before the sections


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


CallPurpose = Literal["outline", "section", "interview", "chat", "probe", "stance_labels"]  # what a model call is for


class LLMRequested(ReportEvent):
    type: Literal["LLMRequested"] = "LLMRequested"
    call_id: str
    purpose: CallPurpose
    section_index: int = 0
    model: str
    params: dict[str, Any] = Field(default_factory=dict)
    protocol: ToolProtocol = "native"
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
    iteration: int | None = None  # the section's iteration the step belongs to (None: recorded before it was)


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
    iteration: int | None = None  # the section's iteration the step belongs to (None: recorded before it was)


class ToolProtocolChosen(ReportEvent):
    type: Literal["ToolProtocolChosen"] = "ToolProtocolChosen"
    protocol: ToolProtocol
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
    iteration: int | None = None  # the section's iteration the step belongs to (None: recorded before it was)


class ToolFailed(ReportEvent):
    type: Literal["ToolFailed"] = "ToolFailed"
    section_index: int
    call_id: str
    tool: str
    error: str
    iteration: int | None = None  # the section's iteration the step belongs to (None: recorded before it was)


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
    probe_findings: int = 0  # findings of the sheet (largest camp, leading platform, trigger's round) it stated


class DraftWritten(ReportEvent):
    """Guided mode: one draft of a section, checked; the best supported draft becomes the section."""

    type: Literal["DraftWritten"] = "DraftWritten"
    section_index: int
    draft: int  # 1-based
    call_id: str
    content: str  # the draft as kept by the claim check
    cited: list[int] = Field(default_factory=list)  # fact numbers of the sheet it cites
    claims: ClaimVerdict


class SampledStatement(BaseModel):
    """One statement a report asks the model to label: its citation id, author, round and text."""

    model_config = ConfigDict(frozen=True)
    ref: str
    agent_id: int
    round: int
    text: str  # cut to what a label needs (agent/report/stance_labels.py, MAX_TEXT)


class StatementsSampled(ReportEvent):
    """`[agent] stance_labels`: the statements the model is asked to label (every agent and round covered first)
    and the only answers it may give: the run's declared stances, checked to be plain words, and `none`."""

    type: Literal["StatementsSampled"] = "StatementsSampled"
    statements: list[SampledStatement]
    stances: list[str]
    total: int  # statements in the run, sampled or not
    batch_size: int


class StancesLabelled(ReportEvent):
    """One batch of sampled statements as the model labelled them, read strictly: `labels` by citation id (a
    stance of the run or `none`); `rejected` answers not taken, and `note` why, when a reply was unreadable."""

    type: Literal["StancesLabelled"] = "StancesLabelled"
    batch: int  # 0-based, in the order of StatementsSampled
    call_id: str | None = None  # the LLM call answered; None when the call failed for good
    labels: dict[str, str] = Field(default_factory=dict)
    rejected: int = 0
    note: str = ""


class ReportDeleted(ReportEvent):
    """A user deleted the report (MiroFish's `DELETE /api/report/<id>`): it is hidden from every view and
    its folder removed; its events stay in the log, which nothing erases."""

    type: Literal["ReportDeleted"] = "ReportDeleted"
    trigger: str = "http"


InterviewMode = Literal["live", "persona"]  # the running simulation's agent answered, or its persona in our model


class InterviewRequested(ReportEvent):
    type: Literal["InterviewRequested"] = "InterviewRequested"
    interview_id: str
    simulation_id: str
    agent_id: int
    question: str
    platform: Platform | None = None
    mode: InterviewMode = "persona"


class InterviewAnswered(ReportEvent):
    type: Literal["InterviewAnswered"] = "InterviewAnswered"
    interview_id: str
    agent_id: int
    answer: str
    mode: InterviewMode
    platform: Platform | None = None
