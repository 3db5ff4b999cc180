"""Reproduce a report from its log, and fork one (docs/architecture.md#replay-rebuild-and-fork).

Replay copies the report's simulation events and the start of its stream into a scratch
store, rebuilds the simulation model there, and runs the same runner with the `replay`
provider: tools run again against the rebuilt model; LLM answers, interview results and the
environment's liveness come from the log, so nothing calls out. The replayed stream is then
compared with the original, event by event; the original stream is never touched.

What is compared is the report's *writing*: its stream up to its `InterviewUnlocked`, the
runner's last step. Interviews that users ask afterwards land in the same stream but are
activity after completion, not steps of the writing, so they never disturb a replay.
Decisions a user took during the writing are inputs, served from the log at the point the
original received them: `ReportResumed` and `WriterChanged`. A fork replays from its own
events: its copy of the shared history (up to its `ReportForked`) is checked against the
report it came from, and every step after it is run again.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from simreportd.agent.llm.replay_provider import (
    RecordedEnvironment,
    RecordedInterviews,
    RecordedOrder,
    ReplayProvider,
    decided,
)
from simreportd.agent.report.report_runner import ReportRunner
from simreportd.agent.tools.simulation_tools import SimulationTools
from simreportd.analysis import recorded_reader
from simreportd.errors import NotFound, UsageError
from simreportd.events import EventStore, NewEvent, SQLiteEventStore
from simreportd.events.codec import Recorded
from simreportd.events.models import (
    EVENT_TYPES,
    InterviewUnlocked,
    LLMFailed,
    LLMRequested,
    ReportCompleted,
    ReportFailed,
    ReportForked,
    ReportRequested,
    ReportResumed,
    ToolObserved,
    WriterChanged,
)
from simreportd.events.positions import Position
from simreportd.events.streams import report_stream, simulation_stream
from simreportd.projections.catalogue import projections
from simreportd.projections.runner import ProjectionRunner, views_path_for

COPY_BATCH = 5000  # events copied per append when a replay builds its scratch store
INPUTS = (ReportResumed.TYPE, WriterChanged.TYPE)  # a user's decisions during the writing, not the runner's steps
REDONE_BY_A_FORK = (LLMRequested.TYPE, LLMFailed.TYPE, ReportFailed.TYPE, ReportCompleted.TYPE, InterviewUnlocked.TYPE)


@dataclass(frozen=True)
class Divergence:
    position: Position
    version: int
    expected: dict[str, Any]
    actual: dict[str, Any] | None
    why: str = ""

    @property
    def reason(self) -> str:
        """What the difference means, in one line."""
        e, a = self.expected, self.actual or {}
        if self.why:
            return self.why
        if e.get("type") == LLMRequested.TYPE == a.get("type"):
            if e["fingerprint"] == a["fingerprint"]:
                return "the recorded request no longer matches its own fingerprint: the event was altered"
            return f"the request differs: fingerprint {e['fingerprint'][:12]} expected, {a['fingerprint'][:12]} now"
        if e.get("type") == ToolObserved.TYPE == a.get("type"):
            return f"the tool {e['tool']} returns something else against the rebuilt simulation model"
        return f"the step differs: {e.get('type')} expected, {a.get('type', 'nothing')} now"


@dataclass(frozen=True)
class ReplayResult:
    report_id: str
    steps: int
    divergence: Divergence | None


def tool_results(events: list[Recorded]) -> list[str]:
    """What the tools answered in these events: they name the analysis the original used."""
    return [e.result for r in events if isinstance(e := r.event, ToolObserved)]


def writing(events: list[Recorded]) -> list[Recorded]:
    """A report stream's writing: up to its first InterviewUnlocked; what follows came after completion."""
    end = next((i for i, r in enumerate(events) if r.type == InterviewUnlocked.TYPE), len(events) - 1)
    return events[:end + 1]


def shared_history(events: list[Recorded]) -> list[Recorded]:
    """The events a replay starts from: the ReportRequested, or for a fork everything up to its ReportForked."""
    end = max((i for i, r in enumerate(events) if r.type == ReportForked.TYPE), default=0)
    return events[:end + 1]


async def replay_report(store: EventStore, report_id: str, scratch: Path,
                        tamper: Callable[[Path], None] | None = None, vectors: Path | None = None) -> ReplayResult:
    """Re-run a completed report in `scratch` and compare it with the original stream."""
    original = writing(await store.read_stream(report_stream(report_id)))
    if not original:
        raise NotFound(f"no report {report_id!r}; `simreportd status` lists the reports")
    if not any(r.type == ReportCompleted.TYPE for r in original):
        raise UsageError(f"report {report_id} has not completed (last event {original[-1].type}); "
                              "replay reproduces completed reports")
    seed = shared_history(original)
    if (copied := await check_shared(store, seed)) is not None:
        return ReplayResult(report_id, len(original), copied)
    async with SQLiteEventStore(scratch) as copy:
        await copy_simulations(store, copy, before=original[0].position)
        await _copy(copy, report_stream(report_id), seed)
        async with ProjectionRunner(copy, views_path_for(scratch), projections()) as views:
            await views.catch_up()
        if tamper is not None:
            tamper(views_path_for(scratch))
        rerun = original[len(seed):]
        provider = ReplayProvider(rerun)
        tools = SimulationTools(views_path_for(scratch), RecordedInterviews(rerun),
                                reader=recorded_reader(tool_results(original), vectors))
        runner = ReportRunner(copy, tools,
                              lambda _: provider, RecordedEnvironment(rerun), sleep=no_wait,
                              sequencer=RecordedOrder(original))
        replayed = await run_with_inputs(copy, runner, report_id, original)
    return ReplayResult(report_id, len(original), first_divergence(original, replayed))


async def copy_simulations(store: EventStore, copy: EventStore, before: Position) -> None:
    """Every simulation's events the report could see, not only its own: search ranks (FTS5 bm25)
    weigh each match against the whole index, so the other simulations shape a tool's results too."""
    for stream, _, _ in await store.stream_summaries():
        if not stream.startswith(simulation_stream("")):
            continue
        copied = 0
        while chunk := [r for r in await store.read_stream(stream, copied, limit=COPY_BATCH) if r.position < before]:
            await _copy(copy, stream, chunk, copied)  # a batch at a time: a run of a million actions does not fit
            copied = chunk[-1].version


async def run_with_inputs(copy: EventStore, runner: ReportRunner, report_id: str,
                          original: list[Recorded]) -> list[Recorded]:
    """Run the report; where it stops and the original received a user's decision next, append it and go on."""
    stream = report_stream(report_id)
    while True:
        await runner.run(report_id)
        replayed = await copy.read_stream(stream)
        inputs = []
        for recorded in original[len(replayed):]:
            if recorded.type not in INPUTS:
                break
            inputs.append(NewEvent(recorded.event, recorded.event_id))
        if not inputs:
            return replayed
        await copy.append(stream, inputs, expected_version=len(replayed))


async def check_shared(store: EventStore, seed: list[Recorded]) -> Divergence | None:
    """A fork's copy of the shared history must be the parent's events, step for step; else where it is not."""
    if len(seed) < 2:
        return None
    marker = seed[-1].event
    assert isinstance(marker, ReportForked)
    parent = await store.read_stream(report_stream(marker.forked_from))
    for copied in seed[1:-1]:  # the ReportRequested names the fork's writer; the marker is the fork's own
        source = parent[copied.version - 1] if copied.version <= len(parent) else None
        expected = {**_decided(source), "report_id": copied.event.report_id} if source else {}  # type: ignore[attr-defined]
        if source is None or source.type != copied.type or expected != _decided(copied):
            return Divergence(copied.position, copied.version, {"type": source.type if source else "(nothing)",
                                                                **expected},
                              {"type": copied.type, **_decided(copied)},
                              why=f"the history shared with {marker.forked_from} differs from that report's events")
    return None


def first_divergence(original: list[Recorded], replayed: list[Recorded]) -> Divergence | None:
    """The first event where the replay differs from the original, ignoring measured latencies."""
    for i, expected in enumerate(original):
        actual = replayed[i] if i < len(replayed) else None
        if actual is None or actual.type != expected.type or _decided(actual) != _decided(expected):
            return Divergence(expected.position, expected.version, {"type": expected.type, **_decided(expected)},
                              {"type": actual.type, **_decided(actual)} if actual else None)
    if len(replayed) > len(original):
        extra = replayed[len(original)]
        return Divergence(original[-1].position, extra.version, {"type": "(end of the original)"},
                          {"type": extra.type, **_decided(extra)})
    return None


def _decided(recorded: Recorded) -> dict[str, Any]:
    return decided(recorded.event)


async def fork_report(store: EventStore, report_id: str, at: Position, provider: str, model: str) -> str:
    """A new report sharing the original's writing up to position `at`, to continue live; return its id."""
    original = writing(await store.read_stream(report_stream(report_id)))
    if not original:
        raise NotFound(f"no report {report_id!r}; `simreportd status` lists the reports")
    first, last = original[0].position, original[-1].position
    if not first <= at <= last:
        raise UsageError(f"position {at} is outside report {report_id}, which was written at positions {first} to "
                         f"{last}; pass --at between them (`simreportd events --stream {report_stream(report_id)}` "
                         "lists its steps)")
    prefix = [r for r in original if r.position <= at]
    while prefix[-1].type in REDONE_BY_A_FORK:
        prefix.pop()  # an unanswered or failed request is asked again, by the new writer; completion is redone
    new_id = "report_" + uuid.uuid4().hex[:12]
    events = []
    for recorded in prefix:
        data = {**recorded.event.model_dump(mode="json", exclude={"type"}), "report_id": new_id}
        if recorded.type == ReportRequested.TYPE:
            data.update(forked_from=report_id, trigger="fork", provider=provider, model=model)
        events.append(EVENT_TYPES[recorded.type].model_validate(data))
    events.append(ReportForked(report_id=new_id, forked_from=report_id, at=at, provider=provider, model=model))
    await store.append(report_stream(new_id), events, expected_version=0)
    return new_id


async def _copy(store: EventStore, stream: str, events: list[Recorded], version: int = 0) -> None:
    """Append `events` to `stream` of the copy, which is at `version`, as they were (ids kept)."""
    for start in range(0, len(events), COPY_BATCH):
        chunk = events[start:start + COPY_BATCH]
        await store.append(stream, [NewEvent(r.event, r.event_id) for r in chunk], expected_version=version + start)


async def no_wait(seconds: float) -> None:
    """A retry pause that does not wait: a replay serves recorded answers, so there is nothing to wait for."""
    await anyio.sleep(0)
