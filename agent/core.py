"""The sans-I/O report agent: from the folded state, decide the next effect (docs/architecture.md#sans-io-core-and-runner).

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

from simreportd.agent import arguments, budget, claims, grounding, guided, prompts
from simreportd.events.models import (
    ClaimVerdict,
    ContextCompacted,
    DomainEvent,
    DraftWritten,
    LLMFailed,
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
    ToolCallRequest,
    ToolObserved,
    ToolProtocolChosen,
    WritingModeChosen,
)

from .interpret import (
    Reply,
    clean_body,
    is_raw_tool_call,
    parse_outline,
    read_reply,
    strip_echoes,
)
from .outline import fallback_outline
from .state import Conversation, ReportState, SectionState, message_bytes
from .toolspec import openai_tools


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


IGNORED_TOOLS_FALLBACK = 2  # `auto`: replies that ignore offered tools before switching to the text protocol
LAST_WORD_OVERHEAD = 700  # tokens of a forced final request besides the evidence: instructions, requirement
FORCED_RETRIES = 1  # an unusable forced final answer is sent back this often before the evidence stands in


Effect = Emit | GatherContext | CallLLM | RunTool | UnlockInterviews | Stop


def fold(events: list[DomainEvent], report_id: str) -> ReportState:
    """The state of a report after these events of its stream."""
    state = ReportState(report_id)
    for event in events:
        state.apply(event)
    return state


def decide(s: ReportState) -> Effect:
    """The next step of the report whose state is `s` (the first lane's, when sections run in parallel)."""
    return next_effects(s)[0]


def next_effects(s: ReportState) -> list[Effect]:
    """The next step of every lane that has one, first lane first.

    Before the sections there is one lane (planning). With `parallel_sections = N`, up to N
    sections are open at once, each its own conversation: the runner performs their effects
    concurrently and appends each outcome as it comes; the fold routes it to its lane.
    """
    if s.request is None:
        return [Stop("no ReportRequested in this stream")]
    if s.failed is not None:
        return [Stop("failed")]
    if s.report_completed:
        return [Stop("completed") if s.unlocked else UnlockInterviews(s.request.simulation_id)]
    if not s.planning_started:
        return [_emit(PlanningStarted(report_id=s.report_id))]
    if s.protocol is None:
        wanted = s.rules.tool_protocol
        reason = f"tool_protocol = {wanted}" + (", native first" if wanted == "auto" else "")
        return [_emit(ToolProtocolChosen(report_id=s.report_id, protocol="text" if wanted == "text" else "native",
                                         reason=reason))]
    if s.context is None:
        return [GatherContext(s.request.simulation_id, s.request.generation)]
    if s.outline is None:
        return [_plan(s)]
    if s.rules.mode == "auto" and s.mode_chosen is None:
        return [_probe(s)]
    open_sections, index = s.open_sections, len(s.sections) + 1
    if len(open_sections) < s.rules.parallel_sections and index <= len(s.outline.sections):
        return [_emit(SectionStarted(report_id=s.report_id, section_index=index,
                                     title=s.outline.sections[index - 1].title))]
    if not open_sections:
        return [_emit(_report_completed(s))]
    return [_write_section(s, section) for section in open_sections]


def lane(effect: Effect) -> int:
    """The lane an effect belongs to: its section, or 0 for the report's own steps."""
    if isinstance(effect, CallLLM):
        return effect.request.section_index
    if isinstance(effect, RunTool):
        return effect.call.section_index
    return 0


# --- LLM calls --------------------------------------------------------------------------------


def _llm_step(s: ReportState, index: int, stage: str) -> Effect | None:
    """While lane `index` has a request outstanding: send it, retry it, shrink it, switch protocol, or give up
    resumably."""
    c = s.lane(index)
    if c.awaiting is None:
        return None
    failure = c.last_failure
    if failure is None:
        return CallLLM(c.awaiting, c.messages, c.attempts + 1, 0.0)
    if failure.tools_refused and s.rules.tool_protocol == "auto" and s.protocol == "native":
        return _emit(ToolProtocolChosen(report_id=s.report_id, protocol="text",
                                        reason=f"the server refused tools: {failure.message[:200]}"))
    if failure.kind == "context_overflow" and c.overflows < 3:
        return _emit(_shrink(s, c, failure))
    if not failure.retryable or c.failures > s.rules.max_retries:
        return _emit(ReportFailed(report_id=s.report_id, stage=stage, resumable=True, error=_failure_text(s, failure)))
    backoff = s.rules.retry_backoff_s
    delay = failure.retry_after_s if failure.retry_after_s is not None else backoff * 2 ** (c.failures - 1)
    return CallLLM(c.awaiting, c.messages, c.attempts + 1, min(delay, 120.0))


def _failure_text(s: ReportState, failure: LLMFailed) -> str:
    """The error of a failed report: what went wrong, how often, and what to change."""
    text = f"{failure.kind}: {failure.message} (after {failure.attempt} attempt{'s' * (failure.attempt != 1)})"
    if failure.kind == "context_overflow":
        text += (f"; the request does not fit the model's context even shortened: raise the server's context "
                 f"size and [llm] context_tokens, or resume with a lower --max-tokens (now {s.max_tokens})")
    return text


def _shrink(s: ReportState, c: Conversation, failure: LLMFailed) -> ContextCompacted:
    """The server said the request is too long: aim lower (at its own limit, if it said one) and ask again."""
    assert c.awaiting is not None
    sent = budget.estimate(c.messages, s.chars_per_token)
    limit = budget.server_limit(failure.message) or _context_tokens(s)
    target = min(_prompt_target(s, limit) - _tools_tokens(s, c.awaiting.tools), sent * 3 // 4)
    return _compaction(s, c.awaiting.section_index, c.messages, target,
                       f"the server refused the request as too long: {failure.message[:200]}")


def _compaction(s: ReportState, index: int, messages: list[dict[str, Any]], target: int,
                reason: str) -> ContextCompacted:
    after = budget.estimate(budget.compact(messages, target, s.chars_per_token), s.chars_per_token)
    return ContextCompacted(report_id=s.report_id, section_index=index, target_tokens=target,
                            before_tokens=budget.estimate(messages, s.chars_per_token), after_tokens=after,
                            reason=reason)


def _context_tokens(s: ReportState) -> int:
    return s.rules.context_tokens or budget.DEFAULT_CONTEXT_TOKENS


def _prompt_target(s: ReportState, context_tokens: int) -> int:
    return min(budget.prompt_budget(context_tokens, s.max_tokens), s.prompt_cap or context_tokens)


def _tools_tokens(s: ReportState, tools: list[str]) -> int:
    return int(len(prompts.dumps(openai_tools(tools))) / s.chars_per_token) if tools else 0


def _request(s: ReportState, purpose: str, index: int, added: list[dict[str, Any]], tools: list[str],
             named: str | None = None, fresh: bool = False,
             extra: dict[str, Any] | None = None) -> ContextCompacted | LLMRequested:
    """The next request, or first the compaction that makes it fit the context.

    `named` is a tool the reply must call; `fresh` makes `added` a conversation of its own.
    """
    assert s.request is not None
    c, context = s.lane(index), _context_tokens(s)
    before = [] if fresh else c.messages
    size = budget.estimate(before + added, s.chars_per_token) + _tools_tokens(s, tools)
    if before and added[:len(c.pending)] == c.pending and size > _prompt_target(s, context):
        movable = c.messages + c.pending  # the fold compacts these; the rest of `added` stays as it is
        target = _prompt_target(s, context) - (size - budget.estimate(movable, s.chars_per_token))
        compaction = _compaction(s, index, movable, target, "the conversation outgrew the context budget "
                                 f"([llm] context_tokens = {context})")
        if compaction.after_tokens < compaction.before_tokens:
            return compaction
    params: dict[str, Any] = {"temperature": s.rules.temperature,
                              "max_tokens": min(s.max_tokens, max(64, context - size - context // 20))}
    if tools and s.protocol == "native" and named is not None:
        params["tool_choice"] = {"type": "function", "function": {"name": named}}
    elif tools and s.protocol == "native" and s.rules.tool_protocol == "auto":
        params["tool_choice"] = "auto"  # some servers (llama.cpp's chatml-function-calling) ignore tools without it
    if "timeout_s" in s.overrides:
        params["timeout"] = s.overrides["timeout_s"]
    params.update({k: v for k, v in (extra or {}).items() if v is not None})
    model = s.request.model or s.request.provider
    protocol = s.protocol or "native"
    digest = hashlib.sha256() if fresh else c.digest.copy()  # the messages so far are hashed already
    for message in added:
        digest.update(message_bytes(message))
    return LLMRequested(report_id=s.report_id, call_id=f"llm-{s.llm_calls + 1}", purpose=purpose,  # type: ignore[arg-type]
                        section_index=index, model=model, params=params, protocol=protocol,  # type: ignore[arg-type]
                        tools=tools, messages_added=added, fresh=fresh,
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
    c = s.lane(0)
    if (effect := _llm_step(s, 0, "planning")) is not None:
        return effect
    if c.unread is not None:
        return Emit(tuple(_read_outline(s, c.unread)))
    assert s.context is not None
    if s.rules.mode == "guided":  # the engine plans, as it plans the tool calls: a model call saved
        title, summary, sections = guided.outline(s.context)
        return _emit(OutlinePlanned(report_id=s.report_id, title=title, summary=summary,
                                    sections=[OutlineSection(**x) for x in sections]))
    so_far = s.request.partial if s.request else None
    until = max(so_far.rounds.values(), default=0) if so_far else None
    added = c.pending if c.messages else prompts.outline_messages(s.context.get("requirement", ""), s.context, until)
    return _emit(_request(s, "outline", 0, added, []))


def _read_outline(s: ReportState, response: LLMResponded) -> list[DomainEvent]:
    """The outline, its summary held to the claim check; else a rejection, or the data's outline.

    An outline cut at the length limit falls back at once: a model that ran out of room once runs
    out again, and each attempt costs the whole limit (minutes on a CPU server).
    """
    assert s.context is not None
    outline = parse_outline(response.content)
    if not isinstance(outline, str):
        verdict = claims.check(outline.summary, claims.evidence([], s.context))
        return [OutlinePlanned(report_id=s.report_id, title=outline.title, sections=outline.sections,
                               summary=claims.keep(outline.summary, verdict), claims=verdict)]
    cut = response.finish_reason == "length"
    rejected = ResponseRejected(report_id=s.report_id, section_index=0, iteration=s.lane(0).requests,
                                call_id=response.call_id, reason="length_cut" if cut else "invalid_outline",
                                detail=outline, feedback=prompts.outline_feedback(outline))
    if s.outline_rejections < s.rules.outline_retries and not cut:
        return [rejected]
    title, summary, sections = fallback_outline(s.context)
    return [rejected, OutlinePlanned(report_id=s.report_id, title=title, summary=summary, fallback=True,
                                     sections=[OutlineSection(**x) for x in sections])]


# --- sections -------------------------------------------------------------------------------------


def _write_section(s: ReportState, section: SectionState) -> Effect:
    c = s.lane(section.index)
    if section.open_calls:
        return RunTool(section.open_calls[0])
    if (effect := _llm_step(s, section.index, f"section {section.index}")) is not None:
        return effect
    if s.mode == "guided":
        return _guided(s, section)
    if c.unread is not None and _tools_ignored(s):
        return _emit(ToolProtocolChosen(report_id=s.report_id, protocol="text", reason=(
            f"the server ignored the offered tools in {s.tools_ignored} replies (tool_protocol = auto)")))
    if c.unread is not None:
        return Emit(tuple(_read_section_reply(s, section, c.unread)))
    added = c.pending if c.messages else _section_opening(s, section)
    if section.final_requested:
        return _emit(_request(s, "section", section.index, added, []))
    if _spent(s, section):
        return _emit(_request(s, "section", section.index, _last_word_opening(s, section), [], fresh=True))
    return _emit(_request(s, "section", section.index, added, list(s.tools), _named_tool(s, section)))


def _sheet(s: ReportState, section: SectionState) -> tuple[str, list[str], list[tuple[str, dict[str, Any]]]]:
    """Guided mode: the section's kind, its fact sheet so far and the tool calls the engine plans for it."""
    assert s.outline is not None
    outlined = s.outline.sections[section.index - 1]
    kind = guided.kind_of(outlined.title, outlined.description)
    background = claims.background(s.context)
    seen = guided.seen_by_tool(section.observations)
    return kind, guided.sheet(kind, seen, background), guided.plan(kind, background, seen)


def _guided(s: ReportState, section: SectionState) -> Effect:
    """A guided section: the engine's tool calls, then `[agent] drafts` drafts from the fact sheet, the best kept."""
    c = s.lane(section.index)
    kind, facts, planned = _sheet(s, section)
    if c.unread is not None:
        body, cited, verdict = guided.draft(c.unread.content, facts, _evidence(s, section))
        return _emit(DraftWritten(report_id=s.report_id, section_index=section.index, draft=len(section.drafts) + 1,
                                  call_id=c.unread.call_id, content=body, cited=cited,
                                  claims=verdict.model_copy(update={"cut": c.unread.finish_reason == "length"})))
    if len(section.calls) < len(planned):
        name, args = planned[len(section.calls)]
        return _emit(ToolCalled(report_id=s.report_id, section_index=section.index, iteration=0,
                                call_id=f"s{section.index}-g{len(section.calls) + 1}", tool=name, arguments=args))
    if len(section.drafts) < max(1, s.rules.drafts):
        assert s.outline is not None
        outlined = s.outline.sections[section.index - 1]
        added = guided.messages(outlined.title, outlined.description, str((s.context or {}).get("requirement", "")),
                                facts)
        return _emit(_request(s, "section", section.index, added, [], fresh=True,
                              extra={"response_format": guided.response_format(s.rules.response_format)}))
    chosen = guided.best([(d.draft, d.content, d.cited, d.claims) for d in section.drafts])
    if chosen is None:
        return _emit(_completed(s, section, guided.fallback(facts), False, []))
    kept = section.drafts[chosen[0] - 1]
    return _emit(_completed(s, section, chosen[1], False, [], draft=chosen[0], drafted=kept.claims))


def _probe(s: ReportState) -> Effect:
    """`[agent] mode = "auto"`: one guided draft from the run's own statistics, measured by the claim check.

    A model that keeps every claim supported and cites the sheet may write freely (react); one that invents
    or ignores the sheet writes guided. The measurement is recorded, so a replay chooses the same.
    """
    assert s.context is not None
    c = s.lane(0)
    if (effect := _llm_step(s, 0, "probe")) is not None:
        return effect
    facts = guided.probe_facts(s.context)
    if c.unread is None:
        added = guided.messages("What the run was", "", str(s.context.get("requirement", "")), facts)
        return _emit(_request(s, "probe", 0, added, [], fresh=True,
                              extra={"response_format": guided.response_format(s.rules.response_format)}))
    body, cited, verdict = guided.draft(c.unread.content, facts, claims.evidence([], s.context))
    able = verdict.claims >= 2 and not verdict.unsupported and len(cited) >= 2
    return _emit(WritingModeChosen(report_id=s.report_id, mode="react" if able else "guided",
                                   probe_claims=verdict.claims, probe_supported=verdict.supported,
                                   probe_cited=len(cited), reason=(
                                       f"probe: {verdict.supported} of {verdict.claims} claims supported, "
                                       f"{len(cited)} facts cited, {len(verdict.unsupported)} sentence(s) unsupported")))


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
    room = int((_prompt_target(s, _context_tokens(s)) - LAST_WORD_OVERHEAD) * s.chars_per_token)
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
        return events + _forced_completion(s, section, reply, base, cut)
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
        return events + _final_answer(s, section, final, base)
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
                                 tool=call.name, result=arguments.reminder(repeat))]


def _body(s: ReportState, text: str, base: dict[str, Any]) -> tuple[str, list[DomainEvent]]:
    """Section text without our echoed instructions and stray markup; the repair is recorded."""
    body, echoed = strip_echoes(clean_body(text))
    if not echoed:
        return body, []
    return body, [ResponseRejected(**base, reason="echoed_prompt",
                                   detail="removed lines that repeat the daemon's instructions or markup")]


def _unusable(body: str) -> tuple[str, str] | None:
    """Why a section body cannot stand, as (reason, feedback), or None when it can."""
    if is_raw_tool_call(body):
        return "raw_tool_call_as_content", prompts.wrong_format("text")
    if not body:
        return "empty_section", "Rejected: the section text is empty (or only repeated the instructions)."
    return None


def _final_answer(s: ReportState, section: SectionState, final: str, base: dict[str, Any]) -> list[DomainEvent]:
    body, events = _body(s, final, base)
    if (problem := _unusable(body)) is not None:
        return events + [ResponseRejected(**base, reason=problem[0], detail=body[:200],  # type: ignore[arg-type]
                                          feedback=problem[1] if problem[0] == "empty_section"
                                          else prompts.wrong_format(s.protocol or "native"))]
    minimum = s.rules.min_tool_calls
    if section.evidence_calls < minimum:
        unused = section.unused(s.tools)
        return events + [ResponseRejected(**base, reason="too_few_tools",
                                          feedback=prompts.too_few_tools(section.evidence_calls, minimum, unused,
                                                                         s.protocol or "native", section.title))]
    check = grounding.check(body, [o.result for o in section.observations], s.known_ids())
    if not check.ok and section.grounding_rejections < 1:  # one chance to fix it, then it is marked
        return events + [ResponseRejected(**base, reason="ungrounded", detail=check.feedback()[:500],
                                          feedback=check.feedback())]
    verdict = claims.check(body, _evidence(s, section))
    if verdict.unsupported and section.claim_rejections < 1:  # one chance, then the sentences are removed
        return events + [ResponseRejected(**base, reason="unsupported_claims", detail=claims.feedback(verdict)[:500],
                                          feedback=claims.feedback(verdict))]
    return events + [_completed(s, section, body, False, events)]


def _evidence(s: ReportState, section: SectionState) -> claims.Evidence:
    """What a section may state: its own tool results and the background its prompt showed."""
    return claims.of_observations(section.observations, claims.background(s.context), s.known_ids())


def _forced_completion(s: ReportState, section: SectionState, reply: Reply, base: dict[str, Any],
                       cut: bool) -> list[DomainEvent]:
    """The last word of a section, validated like any other: sent back once, then the evidence stands in."""
    body, events = _body(s, reply.final if reply.final is not None else reply.thought, base)
    problem = _unusable(body) or (("length_cut", prompts.cut_off(s.max_tokens)) if cut else None)
    if problem is None:
        return events + [_completed(s, section, body, True, events)]
    if problem[0] == "length_cut" and section.forced_replies > FORCED_RETRIES:
        return events + [_completed(s, section, body, True, events, cut=True)]  # the model's own text, cut
    if section.forced_replies <= FORCED_RETRIES:
        return events + [ResponseRejected(**base, reason=problem[0], detail=body[:200],  # type: ignore[arg-type]
                                          feedback=problem[1] + " " + prompts.forced_final(s.protocol or "native"))]
    evidence = "\n".join(f"- {o.tool}: {o.result[:300]}" for o in section.observations) or "- (no evidence)"
    events.append(ResponseRejected(**base, reason=problem[0], detail="forced final answer unusable; evidence kept"))  # type: ignore[arg-type]
    return events + [_completed(s, section, f"{prompts.PLACEHOLDER}\n\n{evidence}", True, events)]


def _completed(s: ReportState, section: SectionState, written: str, forced: bool,
               repairs: list[DomainEvent], cut: bool = False, draft: int = 0,
               drafted: ClaimVerdict | None = None) -> SectionCompleted:
    """The section with its verdicts: sentences with unsupported claims removed (and listed), quotes the
    evidence lacks flagged in place, rules not met listed. A text mostly unsupported, looping or cut is not
    kept as written: what survives the claim check stands, or the evidence when nothing does.

    `repairs` are the rejections decided from the same reply, not folded yet but part of the verdict;
    `drafted` is a guided draft's verdict, taken before its unsupported sentences were removed.
    """
    placeholder = written.startswith(prompts.PLACEHOLDER)  # the evidence itself: nothing to check
    verdict = ClaimVerdict(cut=cut) if placeholder else \
        claims.check(written, _evidence(s, section)).model_copy(update={"cut": cut})
    body = claims.keep(written, verdict)
    if drafted is not None:
        verdict = drafted.model_copy(update={"unsupported": drafted.unsupported + verdict.unsupported})
    if verdict.repetitive:
        body = "\n".join(dict.fromkeys(body.split("\n")))
    if not body.strip() and not placeholder:
        evidence = "\n".join(f"- {o.tool}: {o.result[:300]}" for o in section.observations) or "- (no evidence)"
        body = f"{prompts.PLACEHOLDER}\n\n{evidence}"
    check = grounding.check(body, [o.result for o in section.observations], s.known_ids())
    rejections = dict(section.rejections)
    for event in repairs:
        if isinstance(event, ResponseRejected):
            rejections[event.reason] = rejections.get(event.reason, 0) + 1
    ungrounded = len(check.ungrounded_quotes) + len(check.unknown_ids)
    return SectionCompleted(report_id=s.report_id, section_index=section.index, title=section.title,
                            content=grounding.mark(body, check), forced=forced, tool_calls=section.tool_calls,
                            iterations=section.iterations, ungrounded_quotes=ungrounded,
                            grounded_quotes=check.quotes - len(check.ungrounded_quotes),
                            rejections=dict(sorted(rejections.items())), claims=verdict, draft=draft,
                            problems=_problems(s, section, body, check) + claims.problems(verdict, cut))


def _problems(s: ReportState, section: SectionState, body: str, check: grounding.Grounding) -> list[str]:
    """The [agent] rules a finished section does not meet: any one makes the report degraded."""
    problems = []
    minimum = s.rules.min_tool_calls
    if section.evidence_calls < minimum:
        problems.append(f"{section.evidence_calls} tool call(s), fewer than [agent] min_tool_calls = {minimum}")
    if body.startswith(prompts.PLACEHOLDER):
        problems.append("no usable text from the model: the gathered evidence stands in")
    if body.startswith(guided.NO_DRAFT):
        problems.append("no draft of the model survived the claim check: the facts from the data stand in")
    if ungrounded := len(check.ungrounded_quotes) + len(check.unknown_ids):
        problems.append(f"{ungrounded} quote(s) or id(s) not found in the evidence")
    if check.citations < s.rules.min_citations and not body.startswith(prompts.PLACEHOLDER):
        problems.append(f"cites {check.citations} quote(s) or id(s) from its evidence, fewer than "
                        f"[agent] min_citations = {s.rules.min_citations}")
    return problems


def _report_completed(s: ReportState) -> ReportCompleted:
    """The report's verdict: `completed` only when every section meets the rules."""
    assert s.outline is not None
    problems = ["outline derived from the data: the model gave no valid outline"] if s.outline.fallback else []
    if s.outline.claims is not None and s.outline.claims.unsupported:
        problems.append(f"summary: {len(s.outline.claims.unsupported)} sentence(s) with figures or names not in "
                        "the simulation's statistics, removed")
    problems += [f"section {i} ({done.title}): {p}" for i, done in sorted(s.completed.items()) for p in done.problems]
    return ReportCompleted(report_id=s.report_id, title=s.outline.title, sections_total=len(s.outline.sections),
                           status="completed_degraded" if problems else "completed", problems=problems)


def _emit(*events: DomainEvent) -> Emit:
    return Emit(tuple(events))
