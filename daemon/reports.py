"""Start, resume and finish reports: the process manager between ingest and the agent runner.

It follows the log: a `SimulationCompleted` asks for a report (once per generation, with
an id derived from the generation so two daemons cannot ask twice), and every
`ReportRequested` or `ReportResumed` gets a runner task. On start-up the same history
replay restarts every unfinished report: that is the whole crash recovery.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from simreportd.agent.llm.budget import DEFAULT_CONTEXT_TOKENS
from simreportd.agent.report import core
from simreportd.agent.report.report_runner import ReportRunner, settings_for
from simreportd.agent.report.state import ReportState
from simreportd.agent.tools.toolspec import REPORT_TOOLS
from simreportd.errors import (
    ConcurrencyConflict,
    NotFound,
    ReportElsewhere,
    ReportInterrupted,
    SchedulerStopped,
    UsageError,
    WaitTimeout,
)
from simreportd.events import CaughtUp, EventStore, NewEvent
from simreportd.events.ids import new_event_id
from simreportd.events.models import (
    EVENT_TYPES,
    AgentActed,
    DomainEvent,
    ReportCompleted,
    ReportFailed,
    ReportRequested,
    ReportResumed,
    RoundEnded,
    RunSoFar,
    SimulationCompleted,
    SimulationEvent,
    WriterChanged,
)
from simreportd.events.positions import Position
from simreportd.events.streams import report_stream, simulation_stream
from simreportd.projections import report_queries, simulation_queries
from simreportd.projections.runner import ProjectionRunner
from simreportd.projections.sqlite import reading
from simreportd.projections.standing import is_completed, standing_of

from .config import Config
from .leases import Leases, SoleNode
from .writers import check_writer, choose_writer, describe_writer, model_for

log = logging.getLogger("simreportd.daemon.reports")
SWEEP_SECONDS = 2.0  # how often unfinished reports of other nodes are checked for a lapsed lease
NAMED_WAIT_S = 10.0  # how long a name the read models do not know yet waits for them to fold the log


def auto_report_id(simulation_id: str, generation: int, run_key: str = "") -> str:
    """The one id the automatic report of a generation gets, whoever asks first. `run_key` (`run_key_of`) makes
    it this store's own: two stores with a run of the same name, writing into one output_dir, would otherwise
    give their reports one id, and one folder."""
    key = f"{simulation_id}:{generation}" + (f":{run_key}" if run_key else "")
    return "report_" + hashlib.sha256(key.encode()).hexdigest()[:12]


async def run_key_of(store: EventStore, simulation_id: str) -> str:
    """The id of the run's first event: the same for every node of a store, another in any other store."""
    first = await store.read_stream(simulation_stream(simulation_id), limit=1)
    return first[0].event_id if first else ""


@dataclass
class ReportRun:
    """One report's runner in this process: `finished` is set when it stops, with its state or error."""

    report_id: str
    finished: anyio.Event = field(default_factory=anyio.Event)
    state: ReportState | None = None
    error: BaseException | None = None
    elsewhere: bool = False  # another node holds the report's lease

    @property
    def running(self) -> bool:
        return not self.finished.is_set()


class ReportScheduler:
    """Owns the task group every report runner of this process lives in (docs/architecture.md#concurrency-and-ownership)."""

    def __init__(self, store: EventStore, views: ProjectionRunner, runner: ReportRunner, config: Config,
                 provider_name: str, leases: Leases | None = None) -> None:
        self.store, self.views, self.runner, self.config = store, views, runner, config
        self.provider_name, self.leases = provider_name, leases or SoleNode()
        self.runs: dict[str, ReportRun] = {}
        self.unfinished: dict[str, Position] = {}  # report id -> position of its last start, anywhere
        self._tasks: anyio.abc.TaskGroup | None = None
        self._started = anyio.Event()
        self._asking = anyio.Lock()  # one decision at a time on whether a run has its report
        self._writing = anyio.CapacityLimiter(config.reports.max_running)  # reports written at once; others wait
        self._asked: dict[tuple[str, int], tuple[str, bool]] = {}  # per run, the report this process last asked
        # for, and whether it is partial (asked before the run completed)

    async def run(self, follow: bool = True) -> None:
        """Run reports until cancelled; with `follow`, start them as their events arrive in the log."""
        try:
            async with anyio.create_task_group() as self._tasks:
                self._started.set()
                if follow:
                    self._tasks.start_soon(self._take_over_lapsed)
                    await self._follow()
                else:
                    await anyio.sleep_forever()
        finally:  # a later run (a command runs the daemon again) starts reports in its own task group
            self._tasks, self._started = None, anyio.Event()

    async def _follow(self) -> None:
        async for item in self.store.subscribe(
                types=[m.TYPE for m in (SimulationCompleted, ReportRequested, ReportResumed, ReportCompleted, ReportFailed)]):
            if isinstance(item, CaughtUp):
                continue
            event = item.event
            if isinstance(event, SimulationCompleted) and self.config.reports.auto:
                await self.views.wait_for(item.position, timeout=3600)  # the views know the run's reports so far
                async with self._asking:
                    if await self._current(event.simulation_id, event.generation, whole_run=True) is None:
                        await self._ask(event.simulation_id, event.generation, False, trigger="auto",
                                        report_id=auto_report_id(event.simulation_id, event.generation,
                                                                 await run_key_of(self.store, event.simulation_id)),
                                        caused_by=item.event_id)
            elif isinstance(event, ReportRequested | ReportResumed):
                self.unfinished[event.report_id] = item.position
                self.start(event.report_id, item.position)
            elif isinstance(event, ReportCompleted | ReportFailed):
                self.unfinished.pop(event.report_id, None)

    async def _take_over_lapsed(self) -> None:
        """Start the unfinished reports whose node died: their lease lapsed, ours to take."""
        while True:
            await anyio.sleep(SWEEP_SECONDS)
            for report_id, position in list(self.unfinished.items()):
                run = self.runs.get(report_id)
                if run is None or run.elsewhere:
                    self.start(report_id, position)

    async def ensure(self, simulation_id: str, force: bool = False, trigger: str = "cli",
                     writer: tuple[str, str] | None = None, admit: Callable[[], None] | None = None) -> tuple[str, str]:
        """The report of the simulation's newest run: (its id, `running` or `completed`) if it has one,
        else a new one's (id, `new`), written by `writer` (provider, model; default `[llm]`'s). With `force`
        a completed report is written again, if `admit` (the caller's limits) does not raise; a running one
        is never doubled, so many callers asking at once cost one report."""
        async with self._asking:
            simulation_id = await self.simulation_named(simulation_id)
            runs = await runs_so_far(self.store, simulation_id)
            if not runs:
                return await self.request(simulation_id, trigger=trigger), "new"  # says why it cannot
            generation = max(runs)
            found = await self._current(simulation_id, generation, whole_run=runs[generation] is None)
            if found is not None and (found[1] == "running" or not force):
                return found
            if found is not None and admit is not None:
                admit()
            forced = trigger + report_queries.FORCED if found is not None else trigger  # status tells it apart
            return await self._ask(simulation_id, generation, runs[generation] is not None, forced,
                                   writer=writer), "new"

    async def _ask(self, simulation_id: str, generation: int, partial: bool, trigger: str,
                   report_id: str | None = None, caused_by: str | None = None,
                   writer: tuple[str, str] | None = None) -> str:
        report_id = await self.request(simulation_id, generation, trigger, report_id, caused_by, writer=writer)
        self._asked[(simulation_id, generation)] = report_id, partial
        return report_id

    async def _current(self, simulation_id: str, generation: int, whole_run: bool) -> tuple[str, str] | None:
        """The run's newest report that is running or completed (a failed one is not its report; nor, once the
        run has completed, a partial one), from the views and from what this process has just asked for that
        the views may not have folded yet."""
        def newest(path: Path) -> dict[str, Any] | None:
            with reading(path) as conn:
                return report_queries.latest_report(conn, simulation_id, generation, whole_run)

        row = await self.views.in_thread(newest, self.views.path)
        asked, partial = self._asked.get((simulation_id, generation), (None, False))
        if asked is not None and not (whole_run and partial) and (row is None or row["report_id"] != asked):
            run = self.runs.get(asked)
            if run is None or run.running:
                return asked, "running"
            if run.state is not None and run.state.report_completed:
                return asked, "completed"
        if row is None or row["status"] == "failed":
            return None
        return row["report_id"], "completed" if is_completed(row) else "running"

    def running(self) -> int:
        """How many reports run in this process now."""
        return sum(1 for run in self.runs.values() if run.running)

    async def request(self, simulation_id: str, generation: int | None = None, trigger: str = "cli",
                      report_id: str | None = None, caused_by: str | None = None, *,
                      writer: tuple[str, str] | None = None) -> str:
        """Append a ReportRequested for the simulation's latest (or given) generation; return the id.

        Its id is the correlation id of every event of the report; `caused_by` names the event that
        asked for it (the run's SimulationCompleted), so a trace leads from the report back to the run.
        `writer` (provider, model) is the one a user asked for; by default `[llm]`'s.
        """
        simulation_id = await self.simulation_named(simulation_id)
        runs = await runs_so_far(self.store, simulation_id)  # from the log: the read models may lag behind
        if not runs:
            raise NotFound(f"no simulation {simulation_id!r} has been ingested; its folder is not under [watch] "
                           "roots or holds nothing readable yet (`simreportd report SIM_DIR` ingests one folder)")
        if generation is None:
            generation = max(runs)  # the newest
        report_id = report_id or "report_" + uuid.uuid4().hex[:12]
        llm = self.config.llm
        provider, model = writer or (self.provider_name, model_for(llm, self.provider_name))
        settings = settings_for(self.config.agent, llm, REPORT_TOOLS, self.config.reports.parallel_sections, provider)
        context = llm.context_tokens or await self._server_context(provider, model)
        settings = settings.model_copy(update={"context_tokens": context})
        event = ReportRequested(report_id=report_id, simulation_id=simulation_id, generation=generation,
                                trigger=trigger, provider=provider, model=model,
                                settings=settings, partial=runs.get(generation))
        try:
            request_id = new_event_id()
            meta = {"correlation_id": request_id, **({"causation_id": caused_by} if caused_by else {})}
            await self.store.append(report_stream(report_id), [NewEvent(event, request_id, meta)], expected_version=0)
        except ConcurrencyConflict:
            log.debug("report %s was already requested", report_id)
        return report_id

    async def simulation_named(self, given: str) -> str:
        """The id of the simulation `given` names: itself if the log has its stream, else the one the read models
        know by that name (its config's id or its folder's: docs/formats.md#simulation-ids), else `given`. A name
        the read models do not know yet is looked up again once they hold the whole log (at most NAMED_WAIT_S)."""
        if await self.store.read_stream(simulation_stream(given), limit=1):
            return given

        def named(path: Path) -> str | None:
            with reading(path) as conn:
                return simulation_queries.resolve(conn, given)

        if found := await self.views.in_thread(named, self.views.path):
            return found
        with contextlib.suppress(WaitTimeout):  # a name nothing goes by: NotFound says so where it matters
            await self.views.wait_for(await self.store.last_position(), timeout=NAMED_WAIT_S)
        return await self.views.in_thread(named, self.views.path) or given

    async def _server_context(self, provider: str, model: str) -> int:
        """`[llm] context_tokens = 0`: what the writer says its context is, else 8192; recorded with the report."""
        ask = getattr(self.runner.writers(provider), "context_window", None)
        return (await ask(model) if ask else None) or DEFAULT_CONTEXT_TOKENS

    async def resume(self, report_id: str, provider: str | None = None, model: str | None = None,
                     overrides: dict[str, Any] | None = None) -> str:
        """Let a failed report continue from its last recorded step, with its own writer unless a user
        asks for another (recorded as WriterChanged) and LLM settings overridden if asked (recorded in
        ReportResumed); return the line that tells the user which writer continues."""
        events = await self.store.read_stream(report_stream(report_id))
        if not events:
            raise NotFound(f"no report {report_id!r}; `simreportd status` lists the reports")
        state = core.fold([r.event for r in events], report_id)  # the fold decides: with sections in parallel,
        if state.report_completed:  # the others' answers are recorded after the one that failed
            raise UsageError(f"report {report_id} has completed; nothing to resume (`simreportd fork {report_id} "
                             "--at POSITION` writes it again from one of its steps)")
        if state.failed is None:
            standing = standing_of([r.event for r in events], report_id).described()
            raise UsageError(f"report {report_id} has not failed (it {standing}); nothing to resume")
        request = state.request
        assert request is not None
        own = (request.provider, request.model)
        writer = choose_writer(self.config.llm, provider, model, own)
        await check_writer(self.config.llm, writer, f"resume report {report_id}", own=writer == own,
                           fallback=f"continue with another writer: simreportd resume {report_id} --provider offline")
        resumed: list[DomainEvent] = [ReportResumed(report_id=report_id, overrides=overrides or {})]
        line = f"Resuming report {report_id} with {describe_writer(*own)}, the writer it was written with"
        if writer != own:
            context = None if self.config.llm.context_tokens else await self._server_context(*writer)
            resumed.insert(0, WriterChanged(report_id=report_id, provider=writer[0], model=writer[1],
                                            previous_provider=own[0], previous_model=own[1], context_tokens=context))
            line = (f"Resuming report {report_id} with {describe_writer(*writer)} instead of "
                    f"{describe_writer(*own)} (recorded as WriterChanged)")
        await self.store.append(report_stream(report_id), resumed, expected_version=events[-1].version)
        return line

    def start(self, report_id: str, position: Position) -> ReportRun:
        """Run the report in the scheduler's task group unless it is already running here."""
        run = self.runs.get(report_id)
        if run is None or not run.running:
            if self._tasks is None:
                raise SchedulerStopped("the report scheduler is not running; call start() inside run()")
            run = self.runs[report_id] = ReportRun(report_id)
            self._tasks.start_soon(self._run, run, position, name=report_id)
        return run

    async def wait(self, report_id: str) -> ReportState:
        """Wait for the report's runner here to stop; start it if needed."""
        events = await self.store.read_stream(report_stream(report_id))
        if not events:
            raise NotFound(f"no report {report_id!r}")
        await self._started.wait()
        run = self.start(report_id, events[-1].position)
        await run.finished.wait()
        if run.error is not None:
            raise run.error
        if run.elsewhere:
            raise ReportElsewhere(f"report {report_id} is being written by another daemon on this store; "
                                  "`simreportd status` shows which")
        if run.state is None:
            raise ReportInterrupted(f"report {report_id} stopped before it ended (its daemon is stopping); "
                                  f"`simreportd resume {report_id}` continues it")
        return run.state

    async def _run(self, run: ReportRun, position: Position) -> None:
        """One report: a failure is its own (recorded by the runner), never the other reports' or the daemon's."""
        lease = f"report:{run.report_id}"
        try:
            if not await self.leases.take(lease):
                run.elsewhere = True
                return
            await self.views.wait_for(position, timeout=3600)  # the tools need the simulation model this far
            async with self._writing:
                run.state = await self.runner.run(run.report_id)
        except Exception as exc:
            log.exception("report %s stopped by an unexpected error", run.report_id)
            run.error = exc
            return
        finally:
            run.finished.set()
            if not run.elsewhere:
                with anyio.CancelScope(shield=True):
                    await self.leases.release(lease)


MILESTONES = sorted(name for name, model in EVENT_TYPES.items()  # a simulation's events but its actions
                    if issubclass(model, SimulationEvent) and model is not AgentActed)


async def runs_so_far(store: EventStore, simulation_id: str) -> dict[int, RunSoFar | None]:
    """Per generation of the simulation: None once it completed, else how far it had got (a report on
    it is partial). Its actions, one event each, are read only to count those of a run still going."""
    stream = simulation_stream(simulation_id)
    completed: set[int] = set()
    rounds: dict[int, dict[str, int]] = {}
    starts: dict[int, int] = {}  # generation -> version of its first event (the actions after it are its own)
    async for recorded in store.iter_stream(stream, types=MILESTONES):
        event = recorded.event
        assert isinstance(event, SimulationEvent)  # MILESTONES holds simulation events only
        generation = event.generation
        starts.setdefault(generation, recorded.version)
        rounds.setdefault(generation, {})
        if isinstance(event, SimulationCompleted):
            completed.add(generation)
        elif isinstance(event, RoundEnded):
            rounds[generation][event.platform] = max(rounds[generation].get(event.platform, 0), event.round)
    running = sorted(set(rounds) - completed)
    actions = await _actions_by_generation(store, stream, starts, running[0]) if running else {}
    return {g: None if g in completed else RunSoFar(rounds=r, actions=actions.get(g, 0)) for g, r in rounds.items()}


async def _actions_by_generation(store: EventStore, stream: str, starts: dict[int, int], first: int) -> dict[int, int]:
    """How many actions each generation from `first` on recorded (an action belongs to the last generation
    begun before it)."""
    begun = sorted((version, generation) for generation, version in starts.items())
    counts: dict[int, int] = {}
    async for recorded in store.iter_stream(stream, starts[first], batch=5000, types=[AgentActed.TYPE]):
        generation = next(g for v, g in reversed(begun) if v < recorded.version)
        counts[generation] = counts.get(generation, 0) + 1
    return counts
