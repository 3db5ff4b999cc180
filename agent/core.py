"""The sans-I/O report agent: from the folded state, decide the next effect (DESIGN.md section 1, rule 3).

Like python-websockets' protocol objects, nothing here touches a socket, a file, a
clock or a random source: `decide(state)` returns either events to append (decisions
that need no outside world) or one effect for the runner to perform (call the LLM, run
a tool, gather context, check the environment). The runner appends what came back,
folds it, and asks again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from simreportd.events.models import (
    DomainEvent,
    LLMRequested,
    LLMResponded,
    OutlinePlanned,
    OutlineSection,
    PlanningStarted,
    ReportCompleted,
    ReportFailed,
    ResponseRejected,
    SectionCompleted,
    SectionStarted,
    ThoughtRecorded,
    ToolCalled,
    ToolProtocolChosen,
)

from . import grounding, prompts
from .interpret import Reply, clean_body, is_raw_tool_call, parse_outline, read_reply
from .outline import fallback_outline
from .state import ReportState, SectionState, message_bytes


@dataclass(frozen=True)
class Emit:
    """Append these events; no outside world needed."""

    events: tuple[DomainEvent, ...]


@dataclass(frozen=True)
class GatherContext:
    simulation_id: str
    generation: int


@dataclass(frozen=True)
class CallLLM:
    """Send `messages` for the recorded request `request`, after waiting `delay_s`."""

    request: LLMRequested
    messages: list[dict[str, Any]]
    attempt: int
    delay_s: float


@dataclass(frozen=True)
class RunTool:
    call: ToolCalled


@dataclass(frozen=True)
class UnlockInterviews:
    simulation_id: str


@dataclass(frozen=True)
class Stop:
    reason: str


Effect = Emit | GatherContext | CallLLM | RunTool | UnlockInterviews | Stop


def fold(events: list[DomainEvent], report_id: str) -> ReportState:
    """The state of a report after these events of its stream."""
    state = ReportState(report_id)
    for event in events:
        state.apply(event)
    return state


def decide(s: ReportState) -> Effect:
    """The next step of the report whose state is `s`."""
    if s.request is None:
        return Stop("no ReportRequested in this stream")
    if s.failed is not None:
        return Stop("failed")
    if s.report_completed:
        return Stop("completed") if s.unlocked else UnlockInterviews(s.request.simulation_id)
    if not s.planning_started:
        return _emit(PlanningStarted(report_id=s.report_id))
    if s.protocol is None:
        wanted = s.request.settings.get("tool_protocol", "auto")
        protocol = "text" if wanted == "text" else "native"
        return _emit(ToolProtocolChosen(report_id=s.report_id, protocol=protocol,
                                        reason=f"tool_protocol = {wanted}" + (", native first" if wanted == "auto" else "")))
    if s.context is None:
        return GatherContext(s.request.simulation_id, s.request.generation)
    if s.outline is None:
        return _plan(s)
    section = s.current
    if section is None:
        index = len(s.completed) + 1
        if index > len(s.outline.sections):
            return _emit(ReportCompleted(report_id=s.report_id, title=s.outline.title,
                                         sections_total=len(s.outline.sections)))
        return _emit(SectionStarted(report_id=s.report_id, section_index=index,
                                    title=s.outline.sections[index - 1].title))
    return _write_section(s, section)


# --- LLM calls --------------------------------------------------------------------------------


def _llm_step(s: ReportState, stage: str) -> Effect | None:
    """While a request is outstanding: send it, retry it, switch protocol, or give up resumably."""
    c = s.conversation
    if c.awaiting is None:
        return None
    failure = c.last_failure
    if failure is None:
        return CallLLM(c.awaiting, c.messages, c.attempts + 1, 0.0)
    if failure.tools_refused and s.request and s.request.settings.get("tool_protocol") == "auto" \
            and s.protocol == "native":
        return _emit(ToolProtocolChosen(report_id=s.report_id, protocol="text",
                                        reason=f"the server refused tools: {failure.message[:200]}"))
    if not failure.retryable or c.failures > s.limits.get("max_retries", 3):
        return _emit(ReportFailed(report_id=s.report_id, stage=stage, resumable=True,
                                  error=f"{failure.kind}: {failure.message} (after {c.failures} attempt(s))"))
    backoff = float(s.request.settings.get("retry_backoff_s", 1.0)) if s.request else 1.0
    delay = failure.retry_after_s if failure.retry_after_s is not None else backoff * 2 ** (c.failures - 1)
    return CallLLM(c.awaiting, c.messages, c.attempts + 1, min(delay, 120.0))


def _request(s: ReportState, purpose: str, index: int, added: list[dict[str, Any]], tools: list[str]) -> LLMRequested:
    assert s.request is not None
    settings = s.request.settings
    params = {"temperature": settings.get("temperature", 0.3), "max_tokens": settings.get("max_tokens", 2048)}
    model = s.request.model or s.request.provider
    protocol = s.protocol or "native"
    digest = s.conversation.digest.copy()  # the messages so far are hashed already, as they were folded
    for message in added:
        digest.update(message_bytes(message))
    return LLMRequested(report_id=s.report_id, call_id=f"llm-{s.llm_calls + 1}", purpose=purpose,  # type: ignore[arg-type]
                        section_index=index, model=model, params=params, protocol=protocol,  # type: ignore[arg-type]
                        tools=tools, messages_added=added,
                        fingerprint=_seal(model, params, protocol, tools, digest.hexdigest()))


def fingerprint(model: str, params: dict[str, Any], protocol: str, tools: list[str],
                messages: list[dict[str, Any]]) -> str:
    """SHA-256 of everything that decides what the model is asked: recomputable from the log.

    The messages are hashed one by one, in order, so the fold can keep the running hash and a
    request costs what it adds, not the whole conversation again.
    """
    digest = hashlib.sha256()
    for message in messages:
        digest.update(message_bytes(message))
    return _seal(model, params, protocol, tools, digest.hexdigest())


def _seal(model: str, params: dict[str, Any], protocol: str, tools: list[str], messages_digest: str) -> str:
    header = json.dumps({"model": model, "params": params, "protocol": protocol, "tools": tools,
                         "messages": messages_digest}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(header.encode()).hexdigest()


# --- planning -------------------------------------------------------------------------------------


def _plan(s: ReportState) -> Effect:
    c = s.conversation
    if (effect := _llm_step(s, "planning")) is not None:
        return effect
    if c.unread is not None:
        return Emit(tuple(_read_outline(s, c.unread)))
    assert s.context is not None
    added = c.pending if c.messages else prompts.outline_messages(s.context.get("requirement", ""), s.context)
    return _emit(_request(s, "outline", 0, added, []))


def _read_outline(s: ReportState, response: LLMResponded) -> list[DomainEvent]:
    outline = parse_outline(response.content)
    if not isinstance(outline, str):
        return [OutlinePlanned(report_id=s.report_id, title=outline.title, summary=outline.summary,
                               sections=outline.sections)]
    rejected = ResponseRejected(report_id=s.report_id, section_index=0, iteration=s.conversation.requests,
                                call_id=response.call_id, reason="invalid_outline", detail=outline,
                                feedback=prompts.outline_feedback(outline))
    if s.outline_rejections < s.limits.get("outline_retries", 2):
        return [rejected]
    assert s.context is not None
    title, summary, sections = fallback_outline(s.context)
    return [rejected, OutlinePlanned(report_id=s.report_id, title=title, summary=summary, fallback=True,
                                     sections=[OutlineSection(**x) for x in sections])]


# --- sections -------------------------------------------------------------------------------------


def _write_section(s: ReportState, section: SectionState) -> Effect:
    c = s.conversation
    if section.open_calls:
        return RunTool(section.open_calls[0])
    if (effect := _llm_step(s, f"section {section.index}")) is not None:
        return effect
    if c.unread is not None:
        return Emit(tuple(_read_section_reply(s, section, c.unread)))
    added = c.pending if c.messages else _section_opening(s, section)
    spent = section.tool_calls >= s.limits.get("max_tool_calls", 5) \
        or section.iterations >= s.limits.get("max_iterations", 5)
    if spent and not section.final_requested:
        final = {"role": "user", "content": prompts.forced_final(s.protocol or "native")}
        return _emit(_request(s, "section", section.index, added + [final], []))
    return _emit(_request(s, "section", section.index, added, list(s.tools)))


def _section_opening(s: ReportState, section: SectionState) -> list[dict[str, Any]]:
    assert s.outline is not None and s.context is not None
    previous = [(done.title, done.content) for i, done in sorted(s.completed.items()) if i < section.index]
    background = {k: s.context[k] for k in ("rounds", "platforms", "agents_count", "stances", "hot_topics",
                                             "scheduled_events") if k in s.context}
    return prompts.section_messages(
        requirement=s.context.get("requirement", ""), background=background, title=s.outline.title, summary=s.outline.summary,
        outline=[x.model_dump() for x in s.outline.sections], index=section.index, previous=previous,
        protocol=s.protocol or "native", tools=list(s.tools), min_tools=s.limits.get("min_tool_calls", 3),
        max_tools=s.limits.get("max_tool_calls", 5))


def _read_section_reply(s: ReportState, section: SectionState, response: LLMResponded) -> list[DomainEvent]:
    reply = read_reply(response.content, response.tool_calls, response.call_id, s.protocol or "native")
    base = {"report_id": s.report_id, "section_index": section.index, "iteration": section.iterations,
            "call_id": response.call_id}
    events: list[DomainEvent] = []
    if reply.stripped_observation:
        events.append(ResponseRejected(**base, reason="hallucinated_observation",
                                       detail="removed tool results the model wrote itself"))
    if section.final_requested:
        return events + _forced_completion(s, section, reply, base)
    calls, final = reply.tool_calls, reply.final
    if calls and final is not None:
        ids = [c.id for c in calls]
        if section.conflicts < s.limits.get("conflict_retries", 2):
            return events + [ResponseRejected(**base, reason="tool_and_final_answer", tool_call_ids=ids,
                                              feedback=prompts.choose_one())]
        events.append(ResponseRejected(**base, reason="tool_and_final_answer", tool_call_ids=ids[1:],
                                       detail="truncated to the first tool call",
                                       feedback="Only the first tool call of that reply was executed."))
        calls, final = calls[:1], None
    if calls:
        return events + _tool_calls(s, section, reply.thought, calls, base)
    if final is not None:
        return events + _final_answer(s, section, final, base)
    return events + [ResponseRejected(**base, reason="no_action", feedback=(
        "Rejected: no tool call and no final answer. Call a tool, or write 'Final Answer:' and the section."))]


def _tool_calls(s: ReportState, section: SectionState, thought: str, calls: list, base: dict) -> list[DomainEvent]:
    events: list[DomainEvent] = []
    if thought:
        events.append(ThoughtRecorded(report_id=s.report_id, section_index=section.index,
                                      iteration=section.iterations, text=thought))
    remaining = s.limits.get("max_tool_calls", 5) - section.tool_calls
    for call in calls:
        if call.name not in s.tools:
            events.append(ResponseRejected(**base, reason="unknown_tool", tool_call_ids=[call.id],
                                           detail=call.name, feedback=f"Unknown tool {call.name!r}. "
                                           f"Available tools: {', '.join(s.tools)}."))
        elif remaining <= 0:
            events.append(ResponseRejected(**base, reason="tool_budget_spent", tool_call_ids=[call.id],
                                           feedback="The tool budget is spent: write the final answer."))
        else:
            remaining -= 1
            events.append(ToolCalled(report_id=s.report_id, section_index=section.index,
                                     iteration=section.iterations, call_id=call.id, tool=call.name,
                                     arguments=call.arguments))
    return events


def _final_answer(s: ReportState, section: SectionState, final: str, base: dict) -> list[DomainEvent]:
    minimum = s.limits.get("min_tool_calls", 3)
    if section.tool_calls < minimum:
        unused = [t for t in s.tools if t not in section.used_tools]
        return [ResponseRejected(**base, reason="too_few_tools",
                                 feedback=prompts.too_few_tools(section.tool_calls, minimum, unused))]
    body = clean_body(final)
    if is_raw_tool_call(body):
        return [ResponseRejected(**base, reason="raw_tool_call_as_content", detail=body[:200], feedback=(
            "Rejected: that is a tool call written as text, not a section. Call the tool properly, or "
            "write the section."))]
    if not body:
        return [ResponseRejected(**base, reason="empty_section", feedback="Rejected: the section text is empty.")]
    check = grounding.check(body, [o.result for o in section.observations], s.known_ids())
    if not check.ok and section.grounding_rejections < 1:  # one chance to fix it, then it is marked
        return [ResponseRejected(**base, reason="ungrounded", detail=check.feedback()[:500],
                                 feedback=check.feedback())]
    return [_completed(s, section, body, forced=False)]


def _forced_completion(s: ReportState, section: SectionState, reply: Reply, base: dict) -> list[DomainEvent]:
    """The last word of a section: take the text if it is usable, else summarise the evidence."""
    body = clean_body(reply.final if reply.final is not None else reply.thought)
    if body and not is_raw_tool_call(body):
        return [_completed(s, section, body, forced=True)]
    reason = "raw_tool_call_as_content" if body else "empty_section"
    evidence = "\n".join(f"- {o.tool}: {o.result[:300]}" for o in section.observations) or "- (no evidence)"
    fallback = f"_The model gave no usable text for this section; the evidence it gathered:_\n\n{evidence}"
    return [ResponseRejected(**base, reason=reason, detail="forced final answer unusable; evidence kept"),  # type: ignore[arg-type]
            _completed(s, section, fallback, forced=True)]


def _completed(s: ReportState, section: SectionState, body: str, forced: bool) -> SectionCompleted:
    """The section, with any quote the evidence does not hold flagged in place and counted."""
    check = grounding.check(body, [o.result for o in section.observations], s.known_ids())
    return SectionCompleted(report_id=s.report_id, section_index=section.index, title=section.title,
                            content=grounding.mark(body, check), forced=forced, tool_calls=section.tool_calls,
                            iterations=section.iterations,
                            ungrounded_quotes=len(check.ungrounded_quotes) + len(check.unknown_ids))


def _emit(*events: DomainEvent) -> Emit:
    return Emit(tuple(events))
