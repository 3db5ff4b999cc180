"""Perform a chat's effects and append their results to its own stream, `chat-<chat_id>`.

The I/O half of `agent/chat/chat_core.py`: it folds the chat (and the report it is about), asks
`chat.decide` what to do, calls the LLM or a tool, appends the outcome and repeats until the
question is answered. The report's stream is only read. Killed mid-question, the next question
first finishes the one the log left open.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio

from simreportd.errors import ChatFailed, ChatLocked, LLMError, NotFound, ToolError
from simreportd.events import EventStore, caused
from simreportd.events.models import (
    ChatAnswered,
    ChatAsked,
    ChatEvent,
    ChatLLMFailed,
    ChatLLMResponded,
    ChatStarted,
    ChatToolFailed,
    ChatToolObserved,
    ChatTurnFailed,
    LLMFailed,
    LLMResponded,
    ReportRules,
    StancesLabelled,
    ToolFailed,
    ToolObserved,
    ToolProtocol,
)
from simreportd.events.streams import chat_stream, report_stream
from simreportd.projections.standing import standing_of

from ..llm import budget
from ..report import core, effects
from ..report.report_runner import Writers
from ..report.state import ReportState
from ..tools.simulation_tools import SimulationTools
from . import chat_core as chat
from . import chat_state

log = logging.getLogger("simreportd.agent.chat")

OnEvent = Callable[[ChatEvent], Awaitable[None]]


@dataclass(frozen=True)
class ChatWriter:
    """Who answers new chats and under which rules: `[llm]`'s writer, `[agent]`'s budget."""

    provider: str
    model: str
    settings: ReportRules


CHAT_ID_PREFIX = "chat_"
NO_REPORT = ""  # the report_id of a chat about a simulation that has no completed report


def new_chat_id() -> str:
    return CHAT_ID_PREFIX + uuid.uuid4().hex[:12]


class ChatRunner:
    """Opens chats on completed reports (or on a simulation alone) and answers their questions, one question at
    a time per chat."""

    def __init__(self, store: EventStore, tools: SimulationTools, writers: Writers, writer: ChatWriter,
                 sleep: Callable[[float], Awaitable[None]] = anyio.sleep) -> None:
        self.store, self.tools, self.writers, self.writer, self.sleep = store, tools, writers, writer, sleep
        self._locks: dict[str, anyio.Lock] = {}

    async def open(self, report_id: str, surface: str) -> str:
        """A new chat about `report_id`, refused (saying what to do) unless the report has completed."""
        report = await self._report(report_id)
        request = report.request
        assert request is not None
        w = self.writer
        same_writer = (request.provider, request.model) == (w.provider, w.model)
        protocol = report.protocol if same_writer and report.protocol else None
        return await self._start(report_id, request.simulation_id, request.generation, protocol, surface)

    async def open_on_simulation(self, simulation_id: str, generation: int, surface: str) -> str:
        """A new chat about a run that has no completed report (MiroFish's chat needs only the simulation): its
        grounds are the run's planning context and what the tools find, with no report text (`NO_REPORT`)."""
        return await self._start(NO_REPORT, simulation_id, generation, None, surface)

    async def _start(self, report_id: str, simulation_id: str, generation: int, protocol: ToolProtocol | None,
                     surface: str) -> str:
        w = self.writer
        chat_id = new_chat_id()
        started = ChatStarted(chat_id=chat_id, report_id=report_id, simulation_id=simulation_id, generation=generation,
                              provider=w.provider, model=w.model,
                              protocol=protocol or ("text" if w.settings.tool_protocol == "text" else "native"),
                              settings=await self._sized(w), surface=surface)
        await self.store.append(chat_stream(chat_id), caused([started], correlation_id=chat_id), expected_version=0)
        log.debug("chat %s opened on %s (%s)", chat_id, f"report {report_id}" if report_id else simulation_id, surface)
        return chat_id

    async def _sized(self, w: ChatWriter) -> ReportRules:
        """The rules with the context size known: `[llm] context_tokens`, else what the server says, else 8192."""
        if w.settings.context_tokens:
            return w.settings
        ask = getattr(self.writers(w.provider), "context_window", None)
        size = (await ask(w.model) if ask else None) or budget.DEFAULT_CONTEXT_TOKENS
        return w.settings.model_copy(update={"context_tokens": size})

    async def about(self, chat_id: str) -> ChatStarted:
        """How a chat began: its report, simulation and writer (NotFound when there is no such chat)."""
        first = await self.store.read_stream(chat_stream(chat_id), limit=1)
        if not first or not isinstance(first[0].event, ChatStarted):
            raise NotFound(f"no chat {chat_id!r}; open one with `simreportd chat REPORT_ID`")
        return first[0].event

    async def ask(self, chat_id: str, question: object, history: object = None,
                  on_event: OnEvent | None = None) -> ChatAnswered:
        """Answer one question in the chat; ChatFailed when it could not be answered (the chat goes on)."""
        text, earlier = chat.check_question(question), chat.check_history(history)
        async with self._locks.setdefault(chat_id, anyio.Lock()):
            state = await self.drive(chat_id)  # a question a stop left open is finished first
            number = len(state.turns) + 1
            await self._append(state, [ChatAsked(chat_id=chat_id, turn=number, question=text, history=earlier)])
            state = await self.drive(chat_id, on_event)
        turn = state.turns[number]
        if turn.answer is None:
            raise ChatFailed(turn.failed.error if turn.failed else "the question was left unanswered")
        return turn.answer

    async def drive(self, chat_id: str, on_event: OnEvent | None = None) -> chat_state.ChatState:
        """Run the chat until its open question (if any) is answered or given up; return its state."""
        history = await self.store.read_stream(chat_stream(chat_id))
        if not history:
            raise NotFound(f"no chat {chat_id!r}; open one with `simreportd chat REPORT_ID`")
        state = chat_state.fold([r.event for r in history], chat_id)
        assert state.started is not None
        report = await self._grounds(state.started)
        while not isinstance(effect := chat.decide(state, report), effects.Stop):
            try:
                events = await self._perform(state, effect)
            except Exception as exc:  # unexpected: logged once, and the question is given up, saying why
                log.exception("chat %s: unexpected error performing %s", chat_id, type(effect).__name__)
                turn = state.current.number if state.current else 0
                events = [ChatTurnFailed(chat_id=chat_id, turn=turn, error=f"{type(exc).__name__}: {exc}")]
            await self._append(state, events)
            for event in events:
                if on_event is not None:
                    await on_event(event)
        return state

    async def _append(self, state: chat_state.ChatState, events: list[ChatEvent]) -> None:
        with anyio.CancelScope(shield=True):  # an answer paid for is recorded, even when stopping
            await self.store.append(chat_stream(state.chat_id), caused(events, correlation_id=state.chat_id),
                                    expected_version=state.version)
        for event in events:
            state.apply(event)

    async def _grounds(self, started: ChatStarted) -> ReportState:
        """What the chat is about: its report, or for a chat on a simulation alone an empty report holding the
        run's planning context (what a report's planning would have gathered)."""
        if started.report_id:
            return await self._report(started.report_id)
        grounds = ReportState(NO_REPORT)
        grounds.context = await self.tools.context(started.simulation_id, started.generation)
        return grounds

    async def _report(self, report_id: str) -> ReportState:
        events = await self.store.read_stream(report_stream(report_id))
        if not events:
            raise NotFound(f"no report {report_id!r}; `simreportd status` lists the reports")
        report = core.fold([r.event for r in events], report_id)
        if not report.report_completed:
            standing = standing_of([r.event for r in events], report_id).described()
            raise ChatLocked(f"report {report_id} {standing}; a chat opens once it completes: "
                             "ask again then")
        return report

    async def _perform(self, s: chat_state.ChatState, effect: chat.ChatEffect) -> list[ChatEvent]:
        assert s.started is not None
        turn = s.current.number if s.current else 0
        if isinstance(effect, effects.Emit):
            return [e for e in effect.events if isinstance(e, ChatEvent)]
        if isinstance(effect, effects.CallLLM):
            return [await self._call_llm(s, effect, turn)]
        if isinstance(effect, effects.RunTool):
            return [await self._run_tool(s, effect, turn)]
        raise TypeError(f"unknown effect {effect!r}")

    async def _call_llm(self, s: chat_state.ChatState, effect: effects.CallLLM, turn: int) -> ChatEvent:
        assert s.started is not None
        if effect.delay_s > 0:
            await self.sleep(effect.delay_s)
        request = effect.request
        started = time.perf_counter()
        try:
            completion = await self.writers(s.started.provider).complete(request, effect.messages, effect.attempt)
        except LLMError as exc:
            return ChatLLMFailed(chat_id=s.chat_id, turn=turn, failure=LLMFailed(
                report_id=request.report_id, call_id=request.call_id, attempt=effect.attempt, kind=exc.kind,
                message=exc.message, status_code=exc.status_code, retry_after_s=exc.retry_after_s,
                retryable=exc.retryable, tools_refused=exc.tools_refused))
        return ChatLLMResponded(chat_id=s.chat_id, turn=turn, latency_ms=_since(started), response=LLMResponded(
            report_id=request.report_id, call_id=request.call_id, attempt=effect.attempt, content=completion.content,
            tool_calls=completion.tool_calls, usage=completion.usage, finish_reason=completion.finish_reason))

    async def _labels(self, report_id: str) -> dict[str, str]:
        """The stances the report's model gave statements, so a chat reads the camps as its report did."""
        if not report_id:
            return {}
        recorded = await self.store.read_stream(report_stream(report_id), types=[StancesLabelled.TYPE])
        batches = sorted((r.event for r in recorded if isinstance(r.event, StancesLabelled)), key=lambda e: e.batch)
        return {ref: stance for batch in batches for ref, stance in batch.labels.items()}

    async def _run_tool(self, s: chat_state.ChatState, effect: effects.RunTool, turn: int) -> ChatEvent:
        assert s.started is not None
        call, started = effect.call, time.perf_counter()
        try:
            result = await self.tools.run(call.tool, call.arguments, s.started.simulation_id, s.started.generation,
                                          labels=await self._labels(s.started.report_id))
        except ToolError as exc:
            return ChatToolFailed(chat_id=s.chat_id, turn=turn, failure=ToolFailed(
                report_id=call.report_id, section_index=turn, call_id=call.call_id, tool=call.tool, error=str(exc)))
        return ChatToolObserved(chat_id=s.chat_id, turn=turn, latency_ms=_since(started), observation=ToolObserved(
            report_id=call.report_id, section_index=turn, call_id=call.call_id, tool=call.tool, result=result))


def _since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def chat_settings(report_rules: ReportRules) -> ReportRules:
    """A chat's rules: the report's budget per question, with the chat's own minimum of tool calls."""
    return report_rules.model_copy(update={"min_tool_calls": chat_state.CHAT_MIN_TOOLS})
