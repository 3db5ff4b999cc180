"""Perform the core's effects and append their results (docs/architecture.md#sans-io-core-and-runner).

The runner is the only part of the agent that waits, calls out or reads the clock. It
folds the report stream, asks `core.decide` what to do, does it, appends the outcome,
and repeats. Killed at any moment, it is restarted by folding the stream again: only an
effect whose result was not yet appended is performed a second time.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import anyio

from simreportd.agent.report import core, effects
from simreportd.errors import LLMError, StoreFull, ToolError
from simreportd.events import EventStore, NewEvent, caused
from simreportd.events.models import (
    ContextGathered,
    DomainEvent,
    InterviewAnswered,
    InterviewRequested,
    InterviewUnlocked,
    LLMFailed,
    LLMResponded,
    OutlinePlanned,
    ReportCompleted,
    ReportFailed,
    ReportRules,
    SectionCompleted,
    StatementsSampled,
    ToolFailed,
    ToolObserved,
)
from simreportd.events.streams import report_stream

from ..llm.providers import LLMProvider
from ..tools.simulation_tools import SimulationTools
from .stance_labels import BATCH
from .state import ReportState

log = logging.getLogger("simreportd.agent.report.report_runner")
outcome_log = logging.getLogger("simreportd.agent.report.report_runner.outcome")  # a report's end: commands that print
# it themselves (their progress and `finish`) raise this one's level, so the reader is told once
FULL_RETRY_FIRST_S, FULL_RETRY_MAX_S = 0.5, 10.0  # backoff of an outcome waiting for disk space


class Environment(Protocol):
    async def alive(self, simulation_id: str) -> bool:
        """Whether the simulation's environment can answer live interviews now."""
        ...


Writers = Callable[[str], LLMProvider]  # the provider for the writer name a report records (`offline`, `openai`)
Outcome = list[DomainEvent]  # what one effect produced, appended as one batch


class Sequencer(Protocol):
    def choose(self, version: int, ready: list[Outcome], waiting: int) -> int | None:
        """Which ready outcome to append at stream `version`, or None to wait for one of `waiting` more."""
        ...


class ArrivalOrder:
    """Live runs append outcomes as they arrive."""

    def choose(self, version: int, ready: list[Outcome], waiting: int) -> int | None:
        return 0


class ReportRunner:
    """Drives one report to completion, failure, or a stop, with the writer its events name.

    The core says what every lane (planning, or each open section) needs next; the runner
    performs the effects of idle lanes concurrently inside its task group and appends each
    outcome, in the order the sequencer picks, as the single writer of the report's stream.
    """

    def __init__(self, store: EventStore, tools: SimulationTools, writers: Writers,
                 environment: Environment, sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
                 sequencer: Sequencer | None = None) -> None:
        self.store, self.tools, self.writers, self.environment = store, tools, writers, environment
        self.sleep = sleep  # replay passes a no-op: recorded retries need no waiting
        self.sequencer = sequencer or ArrivalOrder()  # replay passes the original's order

    async def run(self, report_id: str) -> ReportState:
        """Run the report until the core says stop and no effect is in flight; return its final state."""
        history = await self.store.read_stream(report_stream(report_id))
        state = core.fold([r.event for r in history], report_id)
        self._ids = (history[0].event_id, history[-1].event_id) if history else ("", None)
        send, receive = anyio.create_memory_object_stream[tuple[int, Outcome]](max_buffer_size=64)
        busy: set[int] = set()  # lanes with an effect in flight
        ready: list[tuple[int, Outcome]] = []  # outcomes received, not appended yet
        first = True
        async with anyio.create_task_group() as group, send, receive:
            while True:
                steps = core.next_effects(state)
                if first and not isinstance(steps[0], effects.Stop):
                    log_start(state)
                    first = False
                if (emit := next((e for e in steps if isinstance(e, effects.Emit)), None)) is not None:
                    await self._record(state, list(emit.events))
                    continue
                for effect in steps:
                    if not isinstance(effect, effects.Stop) and effects.lane(effect) not in busy:
                        busy.add(effects.lane(effect))
                        group.start_soon(self._perform_into, send.clone(), state, effect)
                        if isinstance(effect, effects.GatherContext) and "simulation_analytics" in state.tools:
                            group.start_soon(self.tools.warm, effect.simulation_id, effect.generation)
                if not busy:
                    break
                lane, outcome = await self._next_outcome(state.version, ready, receive, len(busy))
                busy.discard(lane)
                await self._record(state, outcome)
        return state

    async def _next_outcome(self, version: int, ready: list[tuple[int, Outcome]], receive: Any,
                            in_flight: int) -> tuple[int, Outcome]:
        """The outcome to append next: as they arrive, or in the order the sequencer wants (replay)."""
        while True:
            if ready and (choice := self.sequencer.choose(version, [o for _, o in ready],
                                                          in_flight - len(ready))) is not None:
                return ready.pop(choice)
            ready.append(await receive.receive())

    async def _perform_into(self, send: Any, state: ReportState, effect: effects.Effect) -> None:
        """Perform one effect and hand its outcome to the loop; an unexpected error is a resumable failure."""
        async with send:
            try:
                events = await self._perform(state, effect)
            except Exception as exc:  # unexpected: logged once here, and a resumable terminal event
                log.exception("report %s: unexpected error performing %s", state.report_id, type(effect).__name__)
                events = [ReportFailed(report_id=state.report_id, stage=type(effect).__name__, resumable=True,
                                       error=f"{type(exc).__name__}: {exc}")]
            await send.send((effects.lane(effect), events))

    async def _record(self, state: ReportState, events: Outcome) -> None:
        """Append an outcome (even when stopping: an LLM answer is paid for) and fold it."""
        request_id, last_id = self._ids
        recorded = caused(events, correlation_id=request_id, causation_id=last_id)
        await self._append_when_room(state, recorded)
        self._ids = (request_id, recorded[-1].event_id)
        for event in events:
            state.apply(event)
            log_step(state, event)

    async def _append_when_room(self, state: ReportState, recorded: list[NewEvent]) -> None:
        """Append the outcome; while the disk is full, try again with backoff until there is room, so a report
        stuck on a full disk goes on by itself once space is freed. Each try is shielded (an answer is paid for);
        the waits between them are not, so a stopping daemon does not wait for the disk."""
        delay = FULL_RETRY_FIRST_S
        while True:
            try:
                with anyio.CancelScope(shield=True):
                    await self.store.append(report_stream(state.report_id), recorded, expected_version=state.version)
                return
            except StoreFull as exc:
                if delay == FULL_RETRY_FIRST_S:  # one line per stall, not one per try
                    log.warning("report %s waits for disk space (%s); it goes on by itself once there is room",
                                state.report_id, exc)
            await anyio.sleep(delay)
            delay = min(delay * 2, FULL_RETRY_MAX_S)

    async def _perform(self, s: ReportState, effect: effects.Effect) -> list[DomainEvent]:
        if isinstance(effect, effects.Emit):
            return list(effect.events)
        if isinstance(effect, effects.GatherContext):
            context = await self.tools.context(effect.simulation_id, effect.generation)
            return [ContextGathered(report_id=s.report_id, context=context)]
        if isinstance(effect, effects.SampleStatements):
            chosen, total = await self.tools.sample(effect.simulation_id, effect.generation, effect.cap)
            return [StatementsSampled(report_id=s.report_id, statements=chosen, stances=list(effect.stances),
                                      total=total, batch_size=BATCH)]
        if isinstance(effect, effects.CallLLM):
            return [await self._call_llm(s, effect)]
        if isinstance(effect, effects.RunTool):
            return await self._run_tool(s, effect)
        if isinstance(effect, effects.UnlockInterviews):
            live = await self.environment.alive(effect.simulation_id)
            return [InterviewUnlocked(report_id=s.report_id, simulation_id=effect.simulation_id,
                                      live_environment=live)]
        raise TypeError(f"unknown effect {effect!r}")

    async def _call_llm(self, s: ReportState, effect: effects.CallLLM) -> DomainEvent:
        if effect.delay_s > 0:
            await self.sleep(effect.delay_s)
        request = effect.request
        assert s.request is not None
        iteration = s.lane(request.section_index).requests  # the request opened it: the lane has counted it
        started = time.perf_counter()
        try:
            completion = await self.writers(s.request.provider).complete(request, effect.messages, effect.attempt)
        except LLMError as exc:
            log.debug("report %s: %s attempt %d failed: %s", s.report_id, request.call_id, effect.attempt, exc)
            return LLMFailed(report_id=s.report_id, call_id=request.call_id, attempt=effect.attempt, kind=exc.kind,
                             message=exc.message, status_code=exc.status_code, retry_after_s=exc.retry_after_s,
                             retryable=exc.retryable, tools_refused=exc.tools_refused, iteration=iteration)
        return LLMResponded(report_id=s.report_id, call_id=request.call_id, attempt=effect.attempt,
                            content=completion.content, tool_calls=completion.tool_calls, usage=completion.usage,
                            latency_ms=round((time.perf_counter() - started) * 1000, 3),
                            finish_reason=completion.finish_reason, iteration=iteration)

    async def _run_tool(self, s: ReportState, effect: effects.RunTool) -> list[DomainEvent]:
        call = effect.call
        assert s.request is not None
        started = time.perf_counter()
        try:
            result = await self.tools.run(call.tool, call.arguments, s.request.simulation_id, s.request.generation,
                                          labels=s.labels)
        except ToolError as exc:
            return [ToolFailed(report_id=s.report_id, section_index=call.section_index, call_id=call.call_id,
                               tool=call.tool, error=str(exc), iteration=call.iteration)]
        observed = ToolObserved(report_id=s.report_id, section_index=call.section_index, call_id=call.call_id,
                                tool=call.tool, result=result, iteration=call.iteration,
                                latency_ms=round((time.perf_counter() - started) * 1000, 3))
        return [*interview_events(s, call.call_id, result), observed] if call.tool == "interview_agents" \
            else [observed]


def log_start(state: ReportState) -> None:
    """A report starts, or continues after a stop: said once, when there is work to do."""
    request = state.request
    if request is None:
        return
    how = "continues" if state.version > 1 else "started"
    log.info("report %s %s: simulation %s generation %d, %s%s", state.report_id, how, request.simulation_id,
             request.generation, request.provider, f" ({request.model})" if request.model else "")


def log_step(state: ReportState, event: DomainEvent) -> None:
    """The milestones of a report as they happen: outline, each section, the end."""
    total = len(state.outline.sections) if state.outline else 0
    if isinstance(event, OutlinePlanned):
        log.info("report %s: outline planned: %s (%d sections)", state.report_id, event.title, total)
    elif isinstance(event, SectionCompleted):
        log.info("report %s: section %d/%d written: %s", state.report_id, event.section_index, total, event.title)
    elif isinstance(event, ReportCompleted) and event.problems:
        outcome_log.warning("report %s completed degraded: %s", state.report_id, "; ".join(event.problems))
    elif isinstance(event, ReportCompleted):
        log.info("report %s completed", state.report_id)
    elif isinstance(event, ReportFailed):
        outcome_log.warning("report %s failed during %s: %s", state.report_id, event.stage, event.error)


def interview_events(s: ReportState, call_id: str, result: str) -> list[DomainEvent]:
    """Every question and answer of an interview_agents call, recorded with the mode that answered."""
    assert s.request is not None
    events: list[DomainEvent] = []
    for n, item in enumerate(json.loads(result).get("interviews", []), 1):
        interview_id = f"{call_id}-{n}"
        events.append(InterviewRequested(report_id=s.report_id, interview_id=interview_id,
                                         simulation_id=s.request.simulation_id, agent_id=item["agent_id"],
                                         question=item["question"], mode=item["mode"]))
        events.append(InterviewAnswered(report_id=s.report_id, interview_id=interview_id, agent_id=item["agent_id"],
                                        answer=item["answer"], mode=item["mode"], platform=item.get("platform")))
    return events


def settings_for(agent: Any, llm: Any, tools: tuple[str, ...], parallel_sections: int = 1,
                 provider: str | None = None) -> ReportRules:
    """The rules a report keeps for its whole life, from `[agent]` and `[llm]`; recorded in its ReportRequested.

    `provider` is the report's writer (`[llm]`'s by default). The offline writer is not probed under `auto`: it
    is the engine itself, and writes as react does."""
    offline = (provider or llm.resolved_provider()) == "offline"
    return ReportRules(
        min_tool_calls=agent.min_tool_calls, max_tool_calls=agent.max_tool_calls, max_iterations=agent.max_iterations,
        max_rejections=agent.max_rejections, mirofish_budget=agent.mirofish_budget, name_tools=agent.name_tools,
        min_citations=agent.min_citations, conflict_retries=agent.conflict_retries,
        outline_retries=agent.outline_retries, max_retries=llm.max_retries,
        retry_backoff_s=llm.retry_backoff_s, down_wait_s=llm.down_wait_s, tool_protocol=llm.tool_protocol,
        temperature=llm.temperature,
        max_tokens=llm.max_tokens, context_tokens=llm.context_tokens, tools=tools, parallel_sections=parallel_sections,
        mode="react" if offline and agent.mode == "auto" else agent.mode, drafts=agent.drafts,
        response_format=agent.response_format, stance_labels=agent.stance_labels)
