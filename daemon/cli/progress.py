"""Print a report's progress on a terminal as its events arrive."""

from __future__ import annotations

import json
from typing import TextIO

from simreportd.events import CaughtUp, EventStore
from simreportd.events.codec import Recorded
from simreportd.events.models import (
    AgentActed,
    ContextCompacted,
    LLMFailed,
    OutlinePlanned,
    PlanningStarted,
    ReportCompleted,
    ReportFailed,
    ReportForked,
    ReportRequested,
    ReportResumed,
    ResponseRejected,
    RoundEnded,
    SectionCompleted,
    SectionStarted,
    SimulationCompleted,
    SimulationDiscovered,
    SimulationGenerationStarted,
    ToolCalled,
    ToolProtocolChosen,
    WriterChanged,
)
from simreportd.events.streams import report_stream, simulation_stream
from simreportd.projections.standing import FOLDED, Standing, standing_of

CONTINUED = (ReportResumed, ReportForked)


async def standing_in(store: EventStore, report_id: str) -> Standing:
    """Where the report stands, from the events of its stream that move it (standing.py's rule)."""
    moves = await store.read_stream(report_stream(report_id), types=sorted(FOLDED))
    return standing_of((r.event for r in moves), report_id)


async def follow_report(store: EventStore, report_id: str, out: TextIO) -> None:
    """Print one line per meaningful step until the report has ended as standing.py says (a failure that was
    resumed since, or a fork's copy of one, is history: it does not end the following). What came before
    the last resume is not news: it is said as one line, where the report goes on."""
    lines, standing, live = Lines(), Standing(report_id), False
    history: list[Recorded] = []
    async for item in store.subscribe(streams=[report_stream(report_id)]):
        if isinstance(item, CaughtUp):
            if not live:
                for said in lines.of_history(history):
                    print(said, file=out, flush=True)
            live = True
        else:
            if live and (line := lines.of(item)):
                print(line, file=out, flush=True)
            elif not live:
                history.append(item)
            standing = standing.after(item.event)
        if standing.ended and live:
            return


class Lines:
    """The progress lines of a report's events, one at a time: a failure repeated is counted, not said again."""

    def __init__(self) -> None:
        self.standing = Standing()  # sections done of total, as standing.py counts them
        self.failure: str = ""
        self.titles: dict[int, str] = {}

    def of(self, item: Recorded) -> str | None:
        event = item.event
        self.standing = self.standing.after(event)
        if isinstance(event, OutlinePlanned):
            self.titles = {n: s.title for n, s in enumerate(event.sections, 1)}
        failed = event if isinstance(event, LLMFailed) else None
        again = failed is not None and failed.message == self.failure
        if failed is not None:
            self.failure = failed.message
        return f"        attempt {failed.attempt} failed the same way" if failed and again else describe(item, self.total)

    @property
    def total(self) -> int:
        return self.standing.sections_total

    @property
    def done(self) -> int:
        return self.standing.sections_done

    def of_history(self, history: list[Recorded]) -> list[str]:
        """The lines of the events recorded before following began: all of them, or, when the report was
        resumed (or forked), one line saying where it goes on and the lines since."""
        resumed = max((n for n, r in enumerate(history) if isinstance(r.event, CONTINUED)), default=None)
        if resumed is None:
            return [line for r in history if (line := self.of(r))]
        for r in history[:resumed + 1]:
            self.of(r)
        where = self.goes_on(history[resumed])
        return [where, *(line for r in history[resumed + 1:] if (line := self.of(r)))]

    def goes_on(self, resumed: Recorded) -> str:
        """Where a resumed report goes on: after how many of its sections, with which."""
        what = "Resuming" if isinstance(resumed.event, ReportResumed) else describe(resumed, self.total) or "Forked"
        if not self.total:
            return f"{what}: going on with the outline."
        if self.done >= self.total:
            return f"{what}: all {self.total} sections written; going on with the report's verdict."
        following = self.done + 1
        return (f"{what}: {self.done} of {self.total} sections written; going on with section {following}: "
                f"{self.titles.get(following, '')}")


async def follow_run(store: EventStore, simulation_id: str, out: TextIO) -> None:
    """Print a running simulation's rounds as they are ingested; return once its newest generation completes."""
    generation, last_round, actions, completed, live = 0, 0, 0, False, False
    async for item in store.subscribe(streams=[simulation_stream(simulation_id)]):
        if isinstance(item, CaughtUp):
            if completed:
                return
            live = True
            print(f"Simulation {simulation_id} is still running ({last_round} rounds, {actions} actions so far); "
                  "waiting for it to complete. Ctrl-C stops waiting; `--now` reports on what is there.",
                  file=out, flush=True)
            continue
        if item.type == AgentActed.TYPE:  # most of the stream: counted without reading its data
            actions += 1
            continue
        event = item.event
        if isinstance(event, SimulationDiscovered | SimulationGenerationStarted):
            generation, last_round, actions, completed = event.generation, 0, 0, False
        elif isinstance(event, RoundEnded) and event.round > last_round:
            last_round = event.round
            if live:
                print(f"  round {last_round} ingested ({actions} actions so far)", file=out, flush=True)
        elif isinstance(event, SimulationCompleted) and event.generation == generation:
            completed = True
            if live:
                print(f"Simulation {simulation_id} completed: {last_round} rounds, {actions} actions.",
                      file=out, flush=True)
                return


def describe(recorded: Recorded, total: int) -> str | None:
    """The progress line of one event of a report's stream, or None for a step not worth a line."""
    match recorded.event:
        case ReportRequested() as e:
            return f"Report {e.report_id} for {e.simulation_id} (generation {e.generation}, {writer(e.provider, e.model)})"
        case PlanningStarted():
            return "Planning the outline..."
        case OutlinePlanned() as e:
            return f"Outline: {e.title} ({len(e.sections)} sections" + (", derived from the data)" if e.fallback else ")")
        case SectionStarted() as e:
            return f"  [{e.section_index}/{total}] writing: {e.title}"
        case ToolCalled() as e:
            return f"        {e.tool}({json.dumps(e.arguments, ensure_ascii=False)[1:-1]})"
        case ResponseRejected() as e:
            return f"        rejected: {e.reason}"
        case LLMFailed() as e:
            return f"        LLM call failed (attempt {e.attempt}): {e.kind}: {e.message[:300]}"
        case SectionCompleted() as e:
            ready = "degraded" if e.problems else "ready"
            return f"  [{e.section_index}/{total}] {ready}: {e.title} ({e.tool_calls} tool calls)"
        case ReportCompleted() as e:
            return f"Report completed, degraded: {len(e.problems)} problem(s)." if e.problems else "Report completed."
        case ToolProtocolChosen() as e:
            return f"Tool protocol: {e.protocol} ({e.reason})"
        case ContextCompacted() as e:
            return f"        context shortened: {e.before_tokens} -> {e.after_tokens} tokens ({e.reason})"
        case ReportFailed() as e:
            return f"Report failed during {e.stage}: {e.error}"
        case ReportResumed():
            return "Resuming from the last recorded step..."
        case WriterChanged() as e:
            return f"Continuing with {writer(e.provider, e.model)} instead of {writer(e.previous_provider, e.previous_model)}"
        case ReportForked() as e:
            return f"Forked from {e.forked_from} at position {e.at}; continuing with {writer(e.provider, e.model)}"
    return None


def writer(provider: str, model: str) -> str:
    """`openai model 'gpt-x'`, or the provider alone when its model says nothing more."""
    return f"{provider} model {model!r}" if model and provider == "openai" else provider
