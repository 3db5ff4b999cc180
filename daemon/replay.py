"""Reproduce a report from its log, and fork one (DESIGN.md section 7).

Replay copies the report's simulation events and its ReportRequested into a scratch
store, rebuilds the simulation model there, and runs the same runner with the `replay`
provider: tools run again against the rebuilt model, LLM answers come from the log.
The replayed stream is then compared with the original, event by event; the original
stream is never touched.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from simreportd.agent.replay import RecordedEnvironment, RecordedInterviews, ReplayProvider
from simreportd.agent.runner import ReportRunner, report_stream
from simreportd.agent.tools import SimulationTools
from simreportd.events.codec import Recorded
from simreportd.events.errors import NotFound, UsageError
from simreportd.events.models import EVENT_TYPES, ReportRequested, ReportResumed
from simreportd.events.store import EventStore, NewEvent
from simreportd.projections.catalogue import projections
from simreportd.projections.runner import ProjectionRunner, views_path_for

from .ingest import simulation_stream

VOLATILE = ("latency_ms",)  # measured, not decided: never part of a comparison


@dataclass(frozen=True)
class Divergence:
    position: int
    version: int
    expected: dict[str, Any]
    actual: dict[str, Any] | None

    @property
    def reason(self) -> str:
        """What the difference means, in one line."""
        e, a = self.expected, self.actual or {}
        if e.get("type") == "LLMRequested" == a.get("type"):
            if e["fingerprint"] == a["fingerprint"]:
                return "the recorded request no longer matches its own fingerprint: the event was altered"
            return f"the request differs: fingerprint {e['fingerprint'][:12]} expected, {a['fingerprint'][:12]} now"
        if e.get("type") == "ToolObserved" == a.get("type"):
            return f"the tool {e['tool']} returns something else against the rebuilt simulation model"
        return f"the step differs: {e.get('type')} expected, {a.get('type', 'nothing')} now"


@dataclass(frozen=True)
class ReplayResult:
    report_id: str
    steps: int
    divergence: Divergence | None


async def replay_report(store: EventStore, report_id: str, scratch: Path,
                        tamper: Callable[[Path], None] | None = None) -> ReplayResult:
    """Re-run a completed report in `scratch` and compare it with the original stream."""
    original = await store.read_stream(report_stream(report_id))
    if not original:
        raise NotFound(f"no report {report_id!r}; `simreportd status` lists the reports")
    if not any(r.type == "ReportCompleted" for r in original):
        raise UsageError(f"report {report_id} has not completed (last event {original[-1].type}); "
                              "replay reproduces completed reports")
    request = original[0].event
    assert isinstance(request, ReportRequested)
    async with EventStore(scratch) as copy:
        simulation = await store.read_stream(simulation_stream(request.simulation_id))
        await _copy(copy, simulation_stream(request.simulation_id),
                    [r for r in simulation if r.position < original[0].position])  # what the report could see
        await _copy(copy, report_stream(report_id), original[:1])
        async with ProjectionRunner(copy, views_path_for(scratch), projections()) as views:
            await views.catch_up()
        if tamper is not None:
            tamper(views_path_for(scratch))
        tools = SimulationTools(views_path_for(scratch), RecordedInterviews(original))
        runner = ReportRunner(copy, tools, ReplayProvider(original),
                              RecordedEnvironment(original), sleep=_no_wait)
        await runner.run(report_id)
        replayed = await copy.read_stream(report_stream(report_id))
    return ReplayResult(report_id, len(original), first_divergence(original, replayed))


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
    data = recorded.event.model_dump(mode="json", exclude={"type"})
    return {k: v for k, v in data.items() if k not in VOLATILE}


async def fork_report(store: EventStore, report_id: str, at: int, provider: str, model: str) -> str:
    """A new report sharing the original's events up to `at`, to continue live; return its id."""
    original = await store.read_stream(report_stream(report_id))
    if not original:
        raise NotFound(f"no report {report_id!r}; `simreportd status` lists the reports")
    prefix = [r for r in original if r.position <= at]
    if not prefix:
        raise UsageError(f"position {at} is before report {report_id} began (at {original[0].position})")
    while prefix[-1].type in ("LLMRequested", "ReportCompleted", "InterviewUnlocked"):
        prefix.pop()  # an unanswered request is asked again, by the new model; completion is redone
    new_id = "report_" + uuid.uuid4().hex[:12]
    events = []
    for recorded in prefix:
        data = {**recorded.event.model_dump(mode="json", exclude={"type"}), "report_id": new_id}
        if recorded.type == "ReportRequested":
            data.update(forked_from=report_id, trigger="fork", provider=provider, model=model)
        events.append(EVENT_TYPES[recorded.type].model_validate(data))
    if any(r.type == "ReportFailed" for r in prefix):
        events.append(ReportResumed(report_id=new_id, reason=f"forked from {report_id} at {at}"))
    await store.append(report_stream(new_id), events, expected_version=0)
    return new_id


async def _copy(store: EventStore, stream: str, events: list[Recorded]) -> None:
    for start in range(0, len(events), 5000):
        chunk = events[start:start + 5000]
        await store.append(stream, [NewEvent(r.event, r.event_id) for r in chunk], expected_version=start)


async def _no_wait(seconds: float) -> None:
    await anyio.sleep(0)
