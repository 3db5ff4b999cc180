"""Writing a section: the next request, the tools its reply calls, guided drafts, and when to ask for the last word."""

from __future__ import annotations

from typing import Any

from simreportd.agent.checks import claims
from simreportd.agent.llm import budget
from simreportd.agent.report import arguments, guided, prompts
from simreportd.events.models import (
    DomainEvent,
    DraftWritten,
    LLMResponded,
    ResponseRejected,
    ThoughtRecorded,
    ToolCalled,
    ToolCallRequest,
    ToolObserved,
    ToolProtocolChosen,
)

from ..findings.plan import kind_of
from .effects import Effect, Emit, RunTool, emit
from .interpret import read_reply
from .llm_calls import context_tokens, prompt_target, request, step
from .state import ReportState, SectionState
from .verdicts import completed, final_answer, forced_completion, section_evidence

IGNORED_TOOLS_FALLBACK = 2  # `auto`: replies that ignore offered tools before switching to the text protocol
LAST_WORD_OVERHEAD = 700  # tokens of a forced final request besides the evidence: instructions, requirement


def write_section(s: ReportState, section: SectionState) -> Effect:
    """The next step of an open section: its tool call, its LLM request, or what its reply decides."""
    c = s.lane(section.index)
    if section.open_calls:
        return RunTool(section.open_calls[0])
    if (effect := step(s, section.index, f"section {section.index}")) is not None:
        return effect
    if s.mode == "guided":
        return _guided(s, section)
    if c.unread is not None and _tools_ignored(s):
        return emit(ToolProtocolChosen(report_id=s.report_id, protocol="text", reason=(
            f"the server ignored the offered tools in {s.tools_ignored} replies (tool_protocol = auto)")))
    if c.unread is not None:
        return Emit(tuple(_read_section_reply(s, section, c.unread)))
    added = c.pending if c.messages else _section_opening(s, section)
    if section.final_requested:
        return emit(request(s, "section", section.index, added, []))
    if _spent(s, section):
        return emit(request(s, "section", section.index, _last_word_opening(s, section), [], fresh=True))
    return emit(request(s, "section", section.index, added, list(s.tools), _named_tool(s, section)))


def _sheet(s: ReportState, section: SectionState) -> tuple[str, list[str], list[tuple[str, dict[str, Any]]]]:
    """Guided mode: the engine's analysis of the section so far, its fact sheet and the tool calls it plans."""
    assert s.outline is not None
    outlined = s.outline.sections[section.index - 1]
    kind = kind_of(outlined.title, outlined.description)
    background = claims.background(s.context)
    seen = guided.seen_by_tool(section.observations)
    engine = guided.analysis(kind, seen, background)
    return engine, guided.sheet(engine), guided.plan(kind, background, seen)


def _guided(s: ReportState, section: SectionState) -> Effect:
    """A guided section: the engine's tool calls, then `[agent] drafts` drafts from the fact sheet, the best kept
    over the engine's whole analysis."""
    c = s.lane(section.index)
    engine, facts, planned = _sheet(s, section)
    if c.unread is not None:
        outlined = s.outline.sections[section.index - 1] if s.outline else None
        asked = " ".join((str((s.context or {}).get("requirement", "")), outlined.title if outlined else ""))
        body, cited, verdict = guided.draft(c.unread.content, facts, section_evidence(s, section), engine, asked)
        return emit(DraftWritten(report_id=s.report_id, section_index=section.index, draft=len(section.drafts) + 1,
                                 call_id=c.unread.call_id, content=body, cited=cited,
                                 claims=verdict.model_copy(update={"cut": c.unread.finish_reason == "length"})))
    if len(section.calls) < len(planned):
        name, args = planned[len(section.calls)]
        return emit(ToolCalled(report_id=s.report_id, section_index=section.index, iteration=0,
                               call_id=f"s{section.index}-g{len(section.calls) + 1}", tool=name, arguments=args))
    if len(section.drafts) < max(1, s.rules.drafts):
        assert s.outline is not None
        outlined = s.outline.sections[section.index - 1]
        added = guided.messages(outlined.title, outlined.description, str((s.context or {}).get("requirement", "")),
                                facts)
        return emit(request(s, "section", section.index, added, [], fresh=True,
                            extra={"response_format": guided.response_format(s.rules.response_format)}))
    chosen = guided.best([(d.draft, d.content, d.cited, d.claims) for d in section.drafts])
    if chosen is None:
        return emit(completed(s, section, guided.fallback(facts, engine), False, []))
    kept = section.drafts[chosen[0] - 1]
    return emit(completed(s, section, chosen[1], False, [], draft=chosen[0], drafted=kept.claims))


def _named_tool(s: ReportState, section: SectionState) -> str | None:
    """The tool the next request must call, once the model answered without one while evidence is short.

    Weak models write the section before gathering anything, whatever the prompt says; a named
    `tool_choice` makes the server return a call of that tool (OpenAI and vLLM by contract, llama.cpp by
    grammar) with arguments the model writes: the first tool the section has not used, as the rejection said.
    """
    if not s.rules.name_tools or s.protocol != "native" or section.rejected_replies == 0 \
            or section.evidence_calls >= s.rules.min_tool_calls:
        return None
    return section.next_tool(s.tools)


def _tools_ignored(s: ReportState) -> bool:
    """`auto`: the model keeps answering offered tools with prose; the text protocol is likelier to work.

    A call the model writes in its text (fenced JSON, tags) counts as a call: Qwen does that on llama.cpp,
    and switching it to the text protocol made it stop calling tools at all.
    """
    return s.rules.tool_protocol == "auto" and s.protocol == "native" and not s.tool_calls_seen \
        and s.tools_ignored >= IGNORED_TOOLS_FALLBACK


def _spent(s: ReportState, section: SectionState) -> bool:
    """Time for the forced final answer: tools, accepted steps or rejections used up.

    With `[agent] mirofish_budget` every reply counts against `max_iterations`, as in MiroFish.
    """
    rules = s.rules
    if section.tool_calls >= rules.max_tool_calls:
        return True
    if rules.mirofish_budget:
        return section.iterations >= rules.max_iterations
    return len(section.accepted) >= rules.max_iterations \
        or section.rejected_replies >= rules.max_rejections


def _last_word_opening(s: ReportState, section: SectionState) -> list[dict[str, Any]]:
    """The forced final answer, asked in a conversation of its own: the section's evidence, fitted to the
    context, and no tool-call turns to imitate (weak models kept writing calls after being told to stop)."""
    assert s.outline is not None and s.context is not None
    room = int((prompt_target(s, context_tokens(s)) - LAST_WORD_OVERHEAD) * s.chars_per_token)
    share = max(400, room // max(1, len(section.observations)))
    evidence = [(o.tool, budget.cut(o.result, share)) for o in section.observations]
    outlined = s.outline.sections[section.index - 1]
    return prompts.last_word_messages(requirement=s.context.get("requirement", ""), report_title=s.outline.title,
                                      title=outlined.title, description=outlined.description, evidence=evidence,
                                      protocol=s.protocol or "native")


def _section_opening(s: ReportState, section: SectionState) -> list[dict[str, Any]]:
    assert s.outline is not None and s.context is not None
    previous = None if s.rules.parallel_sections > 1 else \
        [(done.title, prompts.previous_section(done.content)) for i, done in sorted(s.completed.items()) if i < section.index]
    background: dict[str, Any] = {k: s.context[k] for k in ("rounds", "platforms", "agents_count", "stances", "hot_topics",
                                             "scheduled_events") if k in s.context}
    return prompts.section_messages(
        requirement=s.context.get("requirement", ""), background=background, title=s.outline.title, summary=s.outline.summary,
        outline=[x.model_dump() for x in s.outline.sections], index=section.index, previous=previous,
        protocol=s.protocol or "native", tools=list(s.tools), min_tools=s.rules.min_tool_calls,
        max_tools=s.rules.max_tool_calls)


def _read_section_reply(s: ReportState, section: SectionState, response: LLMResponded) -> list[DomainEvent]:
    reply = read_reply(response.content, response.tool_calls, response.call_id, s.protocol or "native")
    base: dict[str, Any] = {"report_id": s.report_id, "section_index": section.index, "iteration": section.iterations,
            "call_id": response.call_id}
    events: list[DomainEvent] = []
    if reply.stripped_observation:
        events.append(ResponseRejected(**base, reason="hallucinated_observation",
                                       detail="removed tool results the model wrote itself"))
    cut = response.finish_reason == "length"
    if section.final_requested:
        return events + forced_completion(s, section, reply, base, cut)
    calls, final = reply.tool_calls, reply.final
    if cut and not calls:
        return events + [ResponseRejected(**base, reason="length_cut", detail=(response.content or "")[-200:],
                                          feedback=prompts.cut_off(s.max_tokens))]
    if calls and final is not None:
        ids = [c.id for c in calls]
        if section.conflicts < s.rules.conflict_retries:
            return events + [ResponseRejected(**base, reason="tool_and_final_answer", tool_call_ids=ids,
                                              feedback=prompts.choose_one())]
        events.append(ResponseRejected(**base, reason="tool_and_final_answer", tool_call_ids=ids[1:],
                                       detail="truncated to the first tool call",
                                       feedback="Only the first tool call of that reply was executed."))
        calls, final = calls[:1], None
    if calls:
        return events + _tool_calls(s, section, reply.thought, calls, base)
    if final is not None:
        return events + final_answer(s, section, final, base)
    return events + [ResponseRejected(**base, reason="no_action", feedback=(
        "Rejected: no tool call and no final answer. Call a tool, or write 'Final Answer:' and the section."))]


def _tool_calls(s: ReportState, section: SectionState, thought: str, calls: list[ToolCallRequest],
                base: dict[str, Any]) -> list[DomainEvent]:
    events: list[DomainEvent] = []
    if thought:
        events.append(ThoughtRecorded(report_id=s.report_id, section_index=section.index,
                                      iteration=section.iterations, text=thought))
    remaining = s.rules.max_tool_calls - section.tool_calls
    earlier = list(section.calls)
    for call in calls:
        copy = arguments.mechanical(call.name, call.arguments, section.observations) if call.name in s.tools else None
        if call.name not in s.tools:
            events.append(ResponseRejected(**base, reason="unknown_tool", tool_call_ids=[call.id],
                                           detail=call.name, feedback=prompts.unknown_tool(call.name, list(s.tools))))
        elif remaining <= 0:
            events.append(ResponseRejected(**base, reason="tool_budget_spent", tool_call_ids=[call.id],
                                           feedback="The tool budget is spent: write the final answer."))
        elif copy is not None:
            events.append(ResponseRejected(**base, reason="mechanical_arguments", tool_call_ids=[call.id],
                                           detail=prompts.dumps(call.arguments)[:200], feedback=copy))
        else:
            remaining -= 1
            events += _tool_call(s, section, call, earlier)
    return events


def _tool_call(s: ReportState, section: SectionState, call: ToolCallRequest,
               earlier: list[ToolCalled]) -> list[DomainEvent]:
    """A call to perform; a repeat of an earlier identical call is answered here with a reminder."""
    repeat = arguments.repeat_of(call.name, call.arguments, earlier)
    called = ToolCalled(report_id=s.report_id, section_index=section.index, iteration=section.iterations,
                        call_id=call.id, tool=call.name, arguments=call.arguments,
                        repeat_of=repeat.call_id if repeat is not None else None)
    earlier.append(called)
    if repeat is None:
        return [called]
    return [called, ToolObserved(report_id=s.report_id, section_index=section.index, call_id=call.id,
                                 tool=call.name, result=arguments.reminder(repeat), iteration=called.iteration)]
