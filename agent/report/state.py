"""The report agent's whole state as a fold of its stream (docs/architecture.md#the-two-rules).

Outline, current section, iteration, tool count, used tools and the conversation are all
derived here from events; nothing else is kept. After a crash the runner folds the
stream again and `core.decide` picks up exactly where the log stops.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from simreportd.agent.checks import grounding
from simreportd.agent.llm import budget
from simreportd.agent.report import prompts
from simreportd.agent.report.interpret import read_reply
from simreportd.agent.tools.toolspec import counts_as_evidence
from simreportd.events.models import (
    ContextCompacted,
    ContextGathered,
    DomainEvent,
    DraftWritten,
    InterviewUnlocked,
    LLMFailed,
    LLMRequested,
    LLMResponded,
    OutlinePlanned,
    PlanningStarted,
    ReportCompleted,
    ReportFailed,
    ReportForked,
    ReportRequested,
    ReportResumed,
    ReportRules,
    ResponseRejected,
    SectionCompleted,
    SectionStarted,
    StancesLabelled,
    StatementsSampled,
    ThoughtRecorded,
    ToolCalled,
    ToolFailed,
    ToolObserved,
    ToolProtocol,
    ToolProtocolChosen,
    WriterChanged,
    WritingModeChosen,
)


def message_bytes(message: dict[str, Any]) -> bytes:
    """One message in canonical JSON, newline-terminated: the unit the fingerprint's running hash takes."""
    return json.dumps(message, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


@dataclass
class Conversation:
    """One LLM conversation (the outline, or one section): messages sent, and those waiting to be sent."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    digest: Any = field(default_factory=hashlib.sha256)  # running hash of `messages`, for fingerprints

    def add(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self.digest.update(message_bytes(message))
    pending: list[dict[str, Any]] = field(default_factory=list)
    awaiting: LLMRequested | None = None
    attempts: int = 0  # the last attempt number of the outstanding request (never reused)
    failures: int = 0  # consecutive failures since the request or the last resume
    last_failure: LLMFailed | None = None
    unread: LLMResponded | None = None
    requests: int = 0
    overflows: int = 0  # requests the server refused as longer than its context
    native_ids: set[str] = field(default_factory=set)  # tool calls the server sent as tool_calls

    def replace(self, messages: list[dict[str, Any]]) -> None:
        """Swap in a compacted conversation, rehashing it for the fingerprints."""
        self.messages, self.digest = [], hashlib.sha256()
        for message in messages:
            self.add(message)


@dataclass
class SectionState:
    index: int
    title: str
    iterations: int = 0
    tool_calls: int = 0
    evidence_calls: int = 0  # the calls that count toward [agent] min_tool_calls (not `calculate`)
    used_tools: list[str] = field(default_factory=list)
    conflicts: int = 0
    grounding_rejections: int = 0
    claim_rejections: int = 0
    calls: list[ToolCalled] = field(default_factory=list)  # every call performed or answered, in order
    drafts: list[DraftWritten] = field(default_factory=list)  # guided mode: the drafts written so far
    open_calls: list[ToolCalled] = field(default_factory=list)
    final_requested: bool = False
    forced_replies: int = 0  # replies to the forced final request
    observations: list[ToolObserved] = field(default_factory=list)
    returned_ids: set[str] = field(default_factory=set)  # the ids in `observations`, read once as each arrives
    accepted: set[int] = field(default_factory=set)  # iterations whose reply led to a tool call
    rejections: dict[str, int] = field(default_factory=dict)

    def unused(self, tools: tuple[str, ...]) -> list[str]:
        """The tools the section has not called yet that would count toward [agent] min_tool_calls."""
        return [t for t in tools if t not in self.used_tools and counts_as_evidence(t)]

    def next_tool(self, tools: tuple[str, ...]) -> str | None:
        """The tool to name when evidence is short: the first unused one that counts, else the first that counts."""
        return next(iter(self.unused(tools) or [t for t in tools if counts_as_evidence(t)]), None)

    @property
    def rejected_replies(self) -> int:
        """Replies that led to nothing but a rejection: they count against [agent] max_rejections."""
        return self.iterations - len(self.accepted) - self.forced_replies


@dataclass
class ReportState:
    """Fold of a `report-<id>` stream."""

    report_id: str
    version: int = 0
    request: ReportRequested | None = None
    planning_started: bool = False
    context: dict[str, Any] | None = None
    outline: OutlinePlanned | None = None
    outline_rejections: int = 0
    protocol: ToolProtocol | None = None
    sections: dict[int, SectionState] = field(default_factory=dict)
    completed: dict[int, SectionCompleted] = field(default_factory=dict)
    conversations: dict[int, Conversation] = field(default_factory=lambda: {0: Conversation()})  # by lane
    call_lanes: dict[str, int] = field(default_factory=dict)  # LLM call id -> the lane that asked it
    llm_calls: int = 0
    report_completed: bool = False
    verdict: ReportCompleted | None = None
    unlocked: bool = False
    failed: ReportFailed | None = None
    rules: ReportRules = field(default_factory=ReportRules)  # from ReportRequested: kept for the report's life
    overrides: dict[str, Any] = field(default_factory=dict)  # LLM settings changed by `resume`
    tools_ignored: int = 0  # replies to native requests offering tools that held no tool call in any form
    tool_calls_seen: bool = False  # a reply to such a request held one (native, tagged or JSON in the text)
    chars_per_token: float = budget.DEFAULT_CHARS_PER_TOKEN
    prompt_cap: int | None = None  # lowered when the server refused a request as too long
    mode_chosen: WritingModeChosen | None = None  # `[agent] mode = "auto"`: the probe's verdict
    sampled: StatementsSampled | None = None  # `[agent] stance_labels`: the statements the model labels
    labelled: dict[int, StancesLabelled] = field(default_factory=dict)  # by batch

    @property
    def mode(self) -> str:
        """How sections are written: `[agent] mode`, or for `auto` what the probe chose (react until then)."""
        if self.rules.mode != "auto":
            return self.rules.mode
        return self.mode_chosen.mode if self.mode_chosen is not None else "react"

    @property
    def labels(self) -> dict[str, str]:
        """The stances the model labelled statements with, by citation id (none without `[agent] stance_labels`)."""
        return {ref: stance for batch in sorted(self.labelled) for ref, stance in self.labelled[batch].labels.items()}

    @property
    def tools(self) -> tuple[str, ...]:
        return self.rules.tools

    @property
    def max_tokens(self) -> int:
        """The completion limit as it stands now: the rules', unless a resume overrode it."""
        return int(self.overrides.get("max_tokens", self.rules.max_tokens))

    @property
    def open_sections(self) -> list[SectionState]:
        """Sections started and not completed, in order: one at a time, or up to `parallel_sections`."""
        return [s for i, s in sorted(self.sections.items()) if i not in self.completed]

    @property
    def current(self) -> SectionState | None:
        """The first open section."""
        return next(iter(self.open_sections), None)

    @property
    def conversation(self) -> Conversation:
        """The first open lane's conversation: the current section's, else the outline's."""
        section = self.current
        return self.conversations[section.index if section is not None else 0]

    def lane(self, index: int) -> Conversation:
        """The conversation of lane `index`: 0 is the outline's, n is section n's (each section its own)."""
        return self.conversations.setdefault(index, Conversation())

    def _section(self, index: int) -> SectionState | None:
        """Section `index` while it is open; the outline's lane (0) and finished sections have none."""
        return self.sections.get(index) if index not in self.completed else None

    def apply(self, event: DomainEvent) -> None:
        """Fold one event; unknown types (interviews, notifications) only move the version."""
        self.version += 1
        if (handler := HANDLERS.get(type(event))) is not None:
            handler(self, event)

    def _on_ReportRequested(self, e: ReportRequested) -> None:
        self.request = e
        self.rules = e.settings

    def _on_PlanningStarted(self, e: PlanningStarted) -> None:
        self.planning_started = True

    def _on_ContextGathered(self, e: ContextGathered) -> None:
        self.context = e.context

    def _on_OutlinePlanned(self, e: OutlinePlanned) -> None:
        self.outline = e
        self.conversations[0] = Conversation()

    def _on_ToolProtocolChosen(self, e: ToolProtocolChosen) -> None:
        """Every open conversation restarts in the new protocol, and so do open sections, budgets and all.

        A request still in flight in another lane is abandoned: its answer, when it comes, is not awaited.
        """
        self.protocol = e.protocol
        self.conversations[0] = Conversation()
        for section in self.open_sections:
            self.sections[section.index] = SectionState(section.index, section.title)
            self.conversations[section.index] = Conversation()

    def _on_ContextCompacted(self, e: ContextCompacted) -> None:
        c = self.lane(e.section_index)
        if c.awaiting is not None:  # the server refused the outstanding request: it is abandoned
            c.awaiting, c.last_failure, c.failures = None, None, 0
            c.overflows += 1
            self.prompt_cap = min(self.prompt_cap or e.target_tokens, e.target_tokens)
        both = budget.compact(c.messages + c.pending, e.target_tokens, self.chars_per_token)
        c.replace(both[:len(c.messages)])
        c.pending = both[len(c.messages):]

    def _on_SectionStarted(self, e: SectionStarted) -> None:
        self.sections[e.section_index] = SectionState(e.section_index, e.title)
        self.conversations[e.section_index] = Conversation()

    def _on_LLMRequested(self, e: LLMRequested) -> None:
        c = self.lane(e.section_index)
        self.call_lanes[e.call_id] = e.section_index
        if e.fresh:
            c.replace([])
        for message in e.messages_added:
            c.add(message)
        c.pending, c.awaiting, c.attempts, c.failures, c.last_failure = [], e, 0, 0, None
        c.requests += 1
        self.llm_calls += 1
        section = self.sections.get(e.section_index)
        if section is not None and not e.tools and e.purpose == "section":
            section.final_requested = True

    def _awaiting(self, call_id: str) -> Conversation | None:
        """The conversation waiting for this call's answer; None for an abandoned call (protocol switched)."""
        c = self.conversations.get(self.call_lanes.get(call_id, -1))
        return c if c is not None and c.awaiting is not None and c.awaiting.call_id == call_id else None

    def _on_LLMFailed(self, e: LLMFailed) -> None:
        if (c := self._awaiting(e.call_id)) is None:
            return
        c.attempts = e.attempt
        c.failures += 1
        c.last_failure = e

    def _on_LLMResponded(self, e: LLMResponded) -> None:
        if (c := self._awaiting(e.call_id)) is None:
            return
        lane = self.call_lanes[e.call_id]
        self._calibrate(c, e)
        offered = c.awaiting is not None and bool(c.awaiting.tools) and c.awaiting.protocol == "native"
        c.attempts = e.attempt
        c.awaiting, c.unread, c.last_failure = None, e, None
        message: dict[str, Any] = {"role": "assistant", "content": e.content}
        if e.tool_calls:
            message["tool_calls"] = [
                {"id": t.id, "type": "function", "function": {"name": t.name, "arguments": prompts.dumps(t.arguments)}}
                for t in e.tool_calls]
        c.add(message)
        c.native_ids.update(t.id for t in e.tool_calls)
        if offered:
            called = bool(read_reply(e.content, e.tool_calls, e.call_id, "native").tool_calls)
            self.tools_ignored += not called
            self.tool_calls_seen |= called
        if (section := self._section(lane)) is not None:
            section.iterations += 1
            section.forced_replies += section.final_requested

    def _calibrate(self, c: Conversation, e: LLMResponded) -> None:
        """Learn the server's characters per token from the usage it reports (never from estimates)."""
        if c.awaiting is not None and not e.usage.estimated and e.usage.prompt_tokens > 0:
            chars = sum(len(str(m.get("content") or "")) for m in c.messages)
            self.chars_per_token = min(5.0, max(2.0, chars / e.usage.prompt_tokens))

    def _on_ThoughtRecorded(self, e: ThoughtRecorded) -> None:
        self.lane(e.section_index).unread = None

    def _on_ResponseRejected(self, e: ResponseRejected) -> None:
        c = self.lane(e.section_index)
        c.unread = None
        for tool_call_id in e.tool_call_ids:
            c.pending.append(self._result_message(e.section_index, tool_call_id, "not executed",
                                                  f"Not executed. {e.feedback}"))
        if e.feedback and not e.tool_call_ids:
            c.pending.append({"role": "user", "content": e.feedback})
        if e.reason == "invalid_outline":
            self.outline_rejections += 1
        elif (section := self._section(e.section_index)) is not None:
            section.rejections[e.reason] = section.rejections.get(e.reason, 0) + 1
            section.conflicts += e.reason == "tool_and_final_answer"
            section.grounding_rejections += e.reason == "ungrounded"
            section.claim_rejections += e.reason == "unsupported_claims"

    def _on_ToolCalled(self, e: ToolCalled) -> None:
        self.lane(e.section_index).unread = None
        section = self.sections[e.section_index]
        section.open_calls.append(e)
        section.calls.append(e)
        section.accepted.add(e.iteration)
        section.tool_calls += 1
        section.evidence_calls += counts_as_evidence(e.tool) and e.repeat_of is None
        if e.tool not in section.used_tools:
            section.used_tools.append(e.tool)

    def _on_ToolObserved(self, e: ToolObserved) -> None:
        if (section := self._close_call(e.section_index, e.call_id)) is None:
            return
        section.observations.append(e)
        section.returned_ids |= grounding.ids_in([e.result])
        self.lane(e.section_index).pending.append(
            self._result_message(e.section_index, e.call_id, e.tool, e.result, section))

    def _on_ToolFailed(self, e: ToolFailed) -> None:
        if (section := self._close_call(e.section_index, e.call_id)) is None:
            return
        self.lane(e.section_index).pending.append(
            self._result_message(e.section_index, e.call_id, e.tool, f"Tool error: {e.error}", section))

    def _on_DraftWritten(self, e: DraftWritten) -> None:
        self.lane(e.section_index).unread = None
        if (section := self._section(e.section_index)) is not None:
            section.drafts.append(e)

    def _on_WritingModeChosen(self, e: WritingModeChosen) -> None:
        self.lane(0).unread = None
        self.mode_chosen = e

    def _on_StatementsSampled(self, e: StatementsSampled) -> None:
        self.sampled = e

    def _on_StancesLabelled(self, e: StancesLabelled) -> None:
        """A batch is done, answered or given up: its call, if still awaited, is abandoned."""
        self.labelled[e.batch] = e
        c = self.lane(0)
        c.unread, c.awaiting, c.last_failure, c.failures = None, None, None, 0

    def _on_SectionCompleted(self, e: SectionCompleted) -> None:
        self.completed[e.section_index] = e
        self.conversations.pop(e.section_index, None)

    def _on_ReportCompleted(self, e: ReportCompleted) -> None:
        self.report_completed = True
        self.verdict = e

    def _on_InterviewUnlocked(self, e: InterviewUnlocked) -> None:
        self.unlocked = True

    def _on_ReportFailed(self, e: ReportFailed) -> None:
        self.failed = e

    def _on_ReportResumed(self, e: ReportResumed | ReportForked) -> None:
        self.failed = None
        if isinstance(e, ReportResumed):
            self.overrides.update(e.overrides)
        for c in self.conversations.values():
            c.overflows, c.failures, c.last_failure = 0, 0, None

    def _on_WriterChanged(self, e: WriterChanged) -> None:
        assert self.request is not None
        self.request = self.request.model_copy(update={"provider": e.provider, "model": e.model})
        if e.context_tokens:  # the offline writer after a server of 8,192 tokens: its conversations are not cut
            self.rules = self.rules.model_copy(update={"context_tokens": e.context_tokens})

    def known_ids(self) -> set[str]:
        """Ids any tool of this report returned: citing one of them is citing the simulation model."""
        return set().union(*(s.returned_ids for s in self.sections.values()))

    def _close_call(self, index: int, call_id: str) -> SectionState | None:
        """The section the call belonged to, call closed; None when a protocol switch abandoned the call."""
        section = self.sections[index]
        if not any(c.call_id == call_id for c in section.open_calls):
            return None
        section.open_calls = [c for c in section.open_calls if c.call_id != call_id]
        return section

    def _result_message(self, lane: int, call_id: str, tool: str, result: str,
                        section: SectionState | None = None) -> dict[str, Any]:
        """A tool result as the protocol wants it, with the budget hint restated after it."""
        hint = ""
        if section is not None:
            hint = prompts.budget_hint(section.unused(self.tools), section.tool_calls, self.rules.max_tool_calls,
                                       self.rules.min_tool_calls, section.evidence_calls)
        if self.protocol == "text" or call_id not in self.lane(lane).native_ids:  # a call written as text
            return {"role": "user", "content": "Observation:\n" + prompts.observation(tool, result, hint)}
        return {"role": "tool", "tool_call_id": call_id, "content": prompts.observation(tool, result, hint)}


HANDLERS: dict[type[DomainEvent], Callable[[ReportState, Any], None]] = {
    ReportRequested: ReportState._on_ReportRequested,
    PlanningStarted: ReportState._on_PlanningStarted,
    ContextGathered: ReportState._on_ContextGathered,
    OutlinePlanned: ReportState._on_OutlinePlanned,
    ToolProtocolChosen: ReportState._on_ToolProtocolChosen,
    ContextCompacted: ReportState._on_ContextCompacted,
    SectionStarted: ReportState._on_SectionStarted,
    LLMRequested: ReportState._on_LLMRequested,
    LLMFailed: ReportState._on_LLMFailed,
    LLMResponded: ReportState._on_LLMResponded,
    ThoughtRecorded: ReportState._on_ThoughtRecorded,
    ResponseRejected: ReportState._on_ResponseRejected,
    ToolCalled: ReportState._on_ToolCalled,
    ToolObserved: ReportState._on_ToolObserved,
    ToolFailed: ReportState._on_ToolFailed,
    SectionCompleted: ReportState._on_SectionCompleted,
    ReportCompleted: ReportState._on_ReportCompleted,
    InterviewUnlocked: ReportState._on_InterviewUnlocked,
    ReportFailed: ReportState._on_ReportFailed,
    ReportResumed: ReportState._on_ReportResumed,
    ReportForked: ReportState._on_ReportResumed,  # a fork continues live from the end of its shared history
    WriterChanged: ReportState._on_WriterChanged,
    DraftWritten: ReportState._on_DraftWritten,
    WritingModeChosen: ReportState._on_WritingModeChosen,
    StatementsSampled: ReportState._on_StatementsSampled,
    StancesLabelled: ReportState._on_StancesLabelled,
}
