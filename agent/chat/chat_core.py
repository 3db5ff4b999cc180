"""Chat with a completed report, sans I/O: the chat's state is a fold of its `chat-<id>` stream (chat_state.py), and
`decide(chat, report)` returns the next effect, as `core.decide` does for a report.

A chat is one conversation across its questions. Each question is a turn run like a report section:
tool calls within `[agent]`'s budget (at least `CHAT_MIN_TOOLS`), replies read by the same
interpreter, the answer checked by the same grounding check against every tool result of the report
and of the chat, sent back once when it quotes what the evidence lacks, then flagged and recorded
with its verdict. The report's own state is an input (its text, its context, its evidence): a chat
never writes to the report's stream.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from simreportd.errors import UsageError
from simreportd.events.models import (
    ChatAnswered,
    ChatEvent,
    ChatLLMRequested,
    ChatReplyRejected,
    ChatToolCalled,
    ChatTurnFailed,
    ClaimVerdict,
    LLMRequested,
    LLMResponded,
    RejectionReason,
    ResponseRejected,
    ToolCalled,
    ToolCallRequest,
)

from ..checks import claims, grounding
from ..findings.facts import Facts
from ..llm import budget
from ..offline import offline_chat
from ..report import guided, prompts
from ..report.effects import CallLLM, Emit, RunTool, Stop
from ..report.interpret import clean_body, is_raw_tool_call, read_reply, strip_echoes
from ..report.llm_calls import fingerprint
from ..report.state import ReportState
from ..tools.toolspec import counts_as_evidence
from . import chat_prompts
from .chat_state import CHAT_MIN_TOOLS, ChatState, Turn

MAX_QUESTION = 4000  # characters of one question
MAX_HISTORY = 40  # earlier turns a client may send along (MiroFish's chat_history), each at most MAX_QUESTION
REPORT_SHARE = 0.4  # of the prompt budget the report's text may take in the opening
EARLIER_TURNS = 6  # answered turns restated when a chat's conversation starts over
OVERFLOW_RETRIES = 2  # requests the server refused as too long, shrunk and asked again, per turn

ChatEffect = Emit | CallLLM | RunTool | Stop


def check_question(question: object, what: str = "chat") -> str:
    """The question (of a chat, or of an interview), or a UsageError that says what a question must be."""
    if not isinstance(question, str) or not question.strip():
        raise UsageError(f"a{'n' if what[0] in 'aeiou' else ''} {what} question must be a non-empty string")
    if len(question) > MAX_QUESTION:
        raise UsageError(f"the question has {len(question)} characters; ask in at most {MAX_QUESTION}")
    if "\x00" in question:
        raise UsageError("the question holds a NUL character")
    return question.strip()


def check_history(history: object) -> list[dict[str, str]]:
    """A client's chat history as `[{role, content}]` (user or assistant turns), or a UsageError."""
    if history is None:
        return []
    if not isinstance(history, list) or len(history) > MAX_HISTORY:
        raise UsageError(f"chat_history must be a list of at most {MAX_HISTORY} {{role, content}} objects")
    out = []
    for item in history:
        if not isinstance(item, dict) or item.get("role") not in ("user", "assistant") \
                or not isinstance(item.get("content"), str) or len(item["content"]) > MAX_QUESTION:
            raise UsageError("each chat_history item must be {\"role\": \"user\"|\"assistant\", \"content\": string "
                             f"of at most {MAX_QUESTION} characters}}")
        out.append({"role": item["role"], "content": item["content"]})
    return out


# --- deciding -------------------------------------------------------------------------------------


def decide(s: ChatState, report: ReportState) -> ChatEffect:
    """The next step of the chat `s` about `report` (a completed report's fold)."""
    if s.started is None:
        return Stop("no ChatStarted in this stream")
    turn = s.current
    if turn is None:
        return Stop("answered")
    if turn.open_calls:
        return RunTool(turn.open_calls[0])
    if (effect := _llm_step(s, turn, report)) is not None:
        return effect
    if report.mode == "guided":
        return _guided(s, turn, report)
    c = s.conversation
    if c.unread is not None:
        return Emit(tuple(_read_reply(s, turn, report, c.unread)))
    if not c.messages:
        return _emit(s, turn, _request(s, turn, _opening(s, turn, report), list(s.rules.tools), fresh=True))
    if turn.final_requested or _spent(s, turn):
        added = c.pending if turn.final_requested else [*c.pending, chat_prompts.answer_now(s.protocol)]
        return _emit(s, turn, _request(s, turn, added, []))
    return _emit(s, turn, _request(s, turn, c.pending, list(s.rules.tools), named=_named_tool(s, turn)))


def _guided(s: ChatState, turn: Turn, report: ReportState) -> ChatEffect:
    """A chat on a report written guided (a small model): the engine makes the question's tool calls and answers
    it; the model only phrases that answer from its numbered sheet, and the claim check drops what the answer does
    not support (docs/formats.md#claim-check). The model's kept sentences stand over the engine's answer."""
    assert s.started is not None
    planned = offline_chat.tool_calls(turn.question)
    if len(turn.tool_calls) < len(planned):
        name, args = planned[len(turn.tool_calls)]
        return Emit((ChatToolCalled(chat_id=s.chat_id, turn=turn.number, call=ToolCalled(
            report_id=s.started.report_id, section_index=turn.number, iteration=0,
            call_id=f"chat-t{turn.number}-g{len(turn.tool_calls) + 1}", tool=name, arguments=args)),))
    engine, facts = _engine_answer(s, turn, report)
    if (reply := s.conversation.unread) is not None:
        body, _, drafted = guided.draft(reply.content, facts, _evidence(s, report), engine, turn.question)
        return Emit(tuple(_answer(s, turn, report, body or guided.fallback(facts, engine), False, drafted)))
    requirement = str((report.context or {}).get("requirement", ""))
    added = guided.messages(turn.question, "", requirement, facts)
    return _emit(s, turn, _request(s, turn, added, [], fresh=True,
                                   extra={"response_format": guided.response_format(s.rules.response_format)}))


def _engine_answer(s: ChatState, turn: Turn, report: ReportState) -> tuple[str, list[str]]:
    """A guided turn's answer by the engine, from the turn's tool results, and the sheet the model phrases."""
    observed = guided.seen_by_tool([o for o in s.observations if o.section_index == turn.number])
    engine = offline_chat.answer(turn.question, Facts(observed, claims.background(report.context), turn.question,
                                                      set()), lead=False)
    return engine, guided.sheet(engine)


def _named_tool(s: ChatState, turn: Turn) -> str | None:
    """After a reply with no tool call while the turn has no evidence, the tool the next request must call:
    weak models answer from the report text alone otherwise (as report sections do, agent/report/core.py)."""
    if not s.rules.name_tools or s.protocol != "native" or turn.tool_rejections == 0 \
            or turn.evidence_calls >= CHAT_MIN_TOOLS:
        return None
    return next((t for t in s.rules.tools if counts_as_evidence(t) and t not in turn.used_tools), None)


def _llm_step(s: ChatState, turn: Turn, report: ReportState) -> ChatEffect | None:
    """While a request is outstanding: send it, retry it, shrink it, or give the turn up (a guided turn then
    answers with the engine's answer alone: the model only phrases it)."""
    c = s.conversation
    if c.awaiting is None:
        return None
    failure = c.last_failure
    if failure is None:
        return CallLLM(c.awaiting, c.messages, c.attempts + 1, 0.0)
    if failure.kind == "context_overflow" and turn.overflows < OVERFLOW_RETRIES:
        target = budget.estimate(c.messages, budget.DEFAULT_CHARS_PER_TOKEN) * 3 // 4
        shrunk = budget.compact(c.messages, target, budget.DEFAULT_CHARS_PER_TOKEN)
        return _emit(s, turn, _request(s, turn, shrunk, c.awaiting.tools, fresh=True, compacted=False))
    if not failure.retryable or c.failures > s.rules.max_retries:
        if report.mode == "guided":
            engine, facts = _engine_answer(s, turn, report)
            return Emit(tuple(_answer(s, turn, report, guided.fallback(facts, engine, guided.NO_MODEL), False)))
        return _emit(s, turn, ChatTurnFailed(chat_id=s.chat_id, turn=turn.number, error=(
            f"the model could not answer: {failure.kind}: {failure.message} (after {failure.attempt} attempt"
            f"{'s' * (failure.attempt != 1)}); ask again once the LLM server works")))
    delay = failure.retry_after_s if failure.retry_after_s is not None \
        else s.rules.retry_backoff_s * 2 ** (c.failures - 1)
    return CallLLM(c.awaiting, c.messages, c.attempts + 1, min(delay, 120.0))


def _spent(s: ChatState, turn: Turn) -> bool:
    rules = s.rules
    return len(turn.tool_calls) >= rules.max_tool_calls or len(turn.accepted) >= rules.max_iterations \
        or turn.rejected >= rules.max_rejections


def _opening(s: ChatState, turn: Turn, report: ReportState) -> list[dict[str, Any]]:
    """System prompt, then the report (shortened to its share of the budget), background and question."""
    rules = s.rules
    context = report.context or {}
    text = _report_text(s, report)
    background: dict[str, Any] = {k: context[k] for k in ("rounds", "platforms", "agents_count", "stances", "hot_topics",
                                          "scheduled_events") if k in context}
    earlier = [(t.question, budget.cut(t.answer.answer, 600)) for n, t in sorted(s.turns.items())
               if t.answer is not None and n < turn.number][-EARLIER_TURNS:]
    return [chat_prompts.system_message(s.protocol, list(rules.tools), CHAT_MIN_TOOLS, rules.max_tool_calls),
            chat_prompts.opening(report=text, requirement=str(context.get("requirement", "")), background=background,
                                 earlier=earlier, history=turn.history, turn=turn.number, question=turn.question)]


def _report_text(s: ChatState, report: ReportState) -> str:
    """The report, each section cut to its share of the prompt; a chat on a simulation alone says it has none."""
    if report.outline is None:
        return chat_prompts.NO_REPORT
    room = int(_prompt_target(s) * REPORT_SHARE * budget.DEFAULT_CHARS_PER_TOKEN)
    sections = [done for _, done in sorted(report.completed.items())]
    share = max(300, room // max(1, len(sections)))
    return "\n\n".join([f"# {report.outline.title}", report.outline.summary,
                         *(f"## {d.title}\n{budget.cut(d.content, share)}" for d in sections)])


def _prompt_target(s: ChatState) -> int:
    context = s.rules.context_tokens or budget.DEFAULT_CONTEXT_TOKENS
    return budget.prompt_budget(context, s.rules.max_tokens)


def _request(s: ChatState, turn: Turn, added: list[dict[str, Any]], tools: list[str], fresh: bool = False,
             compacted: bool = True, named: str | None = None, extra: dict[str, Any] | None = None) -> LLMRequested:
    """The next request; a conversation grown past the budget is sent again shortened, as a fresh one."""
    assert s.started is not None
    before = [] if fresh else s.conversation.messages
    messages = before + added
    cpt = budget.DEFAULT_CHARS_PER_TOKEN
    if compacted and budget.estimate(messages, cpt) > _prompt_target(s):
        messages, fresh = budget.compact(messages, _prompt_target(s), cpt), True
        added = messages
    context = s.rules.context_tokens or budget.DEFAULT_CONTEXT_TOKENS
    size = budget.estimate(messages, cpt)
    params: dict[str, Any] = {"temperature": s.rules.temperature,
                              "max_tokens": min(s.rules.max_tokens, max(64, context - size - context // 20))}
    if tools and s.protocol == "native" and named is not None:
        params["tool_choice"] = {"type": "function", "function": {"name": named}}
    elif tools and s.protocol == "native" and s.rules.tool_protocol == "auto":
        params["tool_choice"] = "auto"
    params.update({k: v for k, v in (extra or {}).items() if v is not None})
    model = s.started.model or s.started.provider
    return LLMRequested(report_id=s.started.report_id, call_id=f"chat-llm-{s.llm_calls + 1}", purpose="chat",
                        section_index=turn.number, model=model, params=params, protocol=s.protocol,
                        tools=tools, messages_added=added, fresh=fresh,
                        fingerprint=fingerprint(model, params, s.protocol, tools, messages))


def _emit(s: ChatState, turn: Turn, event: LLMRequested | ChatTurnFailed) -> Emit:
    if isinstance(event, LLMRequested):
        return Emit((ChatLLMRequested(chat_id=s.chat_id, turn=turn.number, request=event),))
    return Emit((event,))


# --- reading a reply ------------------------------------------------------------------------------


def _read_reply(s: ChatState, turn: Turn, report: ReportState, response: LLMResponded) -> list[ChatEvent]:
    reply = read_reply(response.content, response.tool_calls, response.call_id, s.protocol)
    reject = _rejecter(s, turn, response.call_id)
    events: list[ChatEvent] = []
    if reply.stripped_observation:
        events.append(reject("hallucinated_observation", "", detail="removed tool results the model wrote itself"))
    if turn.final_requested:
        return events + _answer(s, turn, report, reply.final if reply.final is not None else reply.thought, True)
    calls, final = reply.tool_calls, reply.final
    if response.finish_reason == "length" and not calls:
        return events + [reject("length_cut", prompts.cut_off(s.rules.max_tokens))]
    if calls and final is not None:
        ids = [c.id for c in calls]
        if turn.conflicts < s.rules.conflict_retries:
            return events + [reject("tool_and_final_answer", prompts.choose_one(), ids)]
        events.append(reject("tool_and_final_answer", "Only the first tool call of that reply was executed.", ids[1:]))
        calls, final = calls[:1], None
    if calls:
        return events + _tool_calls(s, turn, calls, reject)
    if final is not None:
        return events + _final(s, turn, report, final, reject)
    return events + [reject("no_action", "Rejected: no tool call and no answer. Call a tool, or answer the question.")]


Rejecter = Callable[..., ChatReplyRejected]


def _rejecter(s: ChatState, turn: Turn, call_id: str) -> Rejecter:
    def reject(reason: RejectionReason, feedback: str, ids: list[str] | None = None,
               detail: str = "") -> ChatReplyRejected:
        assert s.started is not None
        return ChatReplyRejected(chat_id=s.chat_id, turn=turn.number, rejection=ResponseRejected(
            report_id=s.started.report_id, section_index=turn.number, iteration=turn.iterations, call_id=call_id,
            reason=reason, detail=detail, feedback=feedback, tool_call_ids=ids or []))
    return reject


def _tool_calls(s: ChatState, turn: Turn, calls: list[ToolCallRequest], reject: Rejecter) -> list[ChatEvent]:
    assert s.started is not None
    events: list[ChatEvent] = []
    remaining = s.rules.max_tool_calls - len(turn.tool_calls)
    for call in calls:
        if call.name not in s.rules.tools:
            events.append(reject("unknown_tool", prompts.unknown_tool(call.name, list(s.rules.tools)), [call.id],
                                 detail=call.name))
        elif remaining <= 0:
            events.append(reject("tool_budget_spent", "The tool budget is spent: answer now.", [call.id]))
        else:
            remaining -= 1
            events.append(ChatToolCalled(chat_id=s.chat_id, turn=turn.number, call=ToolCalled(
                report_id=s.started.report_id, section_index=turn.number, iteration=turn.iterations,
                call_id=call.id, tool=call.name, arguments=call.arguments)))
    return events


def _final(s: ChatState, turn: Turn, report: ReportState, final: str, reject: Rejecter) -> list[ChatEvent]:
    """An answer, accepted once it used the tools and cites only what the evidence holds (one chance to fix it)."""
    body = _body(final)
    if is_raw_tool_call(body):
        return [reject("raw_tool_call_as_content", prompts.wrong_format(s.protocol), detail=body[:200])]
    if not body:
        return [reject("empty_section", "Rejected: the answer is empty (or only repeated the instructions).")]
    if turn.evidence_calls < CHAT_MIN_TOOLS and turn.tool_rejections < 1:
        return [reject("too_few_tools", chat_prompts.too_few_tools(turn.evidence_calls, CHAT_MIN_TOOLS))]
    check = _check(s, report, body)
    if not check.ok and turn.grounding_rejections < 1:
        return [reject("ungrounded", check.feedback().replace("section", "answer"), detail=check.feedback()[:500])]
    return _answer(s, turn, report, final, False)


def _body(text: str) -> str:
    return strip_echoes(clean_body(text or ""), chat_prompts.ECHOES)[0]


def _answer(s: ChatState, turn: Turn, report: ReportState, text: str, forced: bool,
            drafted: ClaimVerdict | None = None) -> list[ChatEvent]:
    """The turn's answer with its verdict (with a guided draft's, `drafted`, taken before its unsupported
    sentences were dropped); an unusable one says so and lists the evidence instead."""
    body = _body(text)
    if not body or is_raw_tool_call(body):
        results = [o for o in s.observations if o.section_index == turn.number]
        evidence = "\n".join(f"- {o.tool}: {o.result[:300]}" for o in results) or "- (no evidence)"
        body = f"_The model gave no usable answer to this question; the evidence it gathered:_\n\n{evidence}"
    verdict = claims.check(body, _evidence(s, report))
    kept = claims.keep(body, verdict) or body  # nothing supported: the answer stands, flagged as without evidence
    if drafted is not None:
        verdict = verdict.model_copy(update={"unsupported": drafted.unsupported + verdict.unsupported})
    check = _check(s, report, kept)
    cited = sorted(set(grounding.CITATION.findall(kept)) - set(check.unknown_ids))
    no_evidence = verdict.supported == 0 or (turn.evidence_calls == 0 and not cited)
    return [ChatAnswered(chat_id=s.chat_id, turn=turn.number, answer=grounding.mark(kept, check),
                         tool_calls=turn.tool_calls, sources=cited,
                         grounded_quotes=check.quotes - len(check.ungrounded_quotes),
                         ungrounded_quotes=check.ungrounded_quotes, unknown_ids=check.unknown_ids, forced=forced,
                         claims=verdict, no_evidence=no_evidence)]


def _evidence(s: ChatState, report: ReportState) -> claims.Evidence:
    """What an answer may state: every tool result of the report and of this chat, and the run's context."""
    observations = [o for sec in report.sections.values() for o in sec.observations] + s.observations
    return claims.of_observations(observations, claims.background(report.context))


def _check(s: ChatState, report: ReportState, body: str) -> grounding.Grounding:
    """Quotes must occur in a tool result of the report or of this chat; ids must be ids the tools returned."""
    results = [o.result for sec in report.sections.values() for o in sec.observations] + \
        [o.result for o in s.observations]
    return grounding.check(body, results, grounding.ids_in(results))

