"""A CLI command's work done in this process, on a Daemon of the command's own: no daemon holds the store.

`LocalExecutor` is one of the two `Executor`s (executor.py); the other hands the work to the running daemon
(handover.py). Both do it through `daemon/actions.py`, as the server does for a handed-over command.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio

from simreportd.agent.chat.chat_runner import ChatRunner
from simreportd.agent.report.state import ReportState
from simreportd.daemon import actions
from simreportd.daemon.chat_answers import answer_frame, step_frame
from simreportd.daemon.rebuild import Rebuilt
from simreportd.daemon.reports import auto_report_id, run_key_of
from simreportd.daemon.service import Daemon
from simreportd.errors import SimreportdError, UsageError
from simreportd.events import EventStore
from simreportd.events.models import AgentActed, ChatEvent, SimulationCompleted
from simreportd.events.streams import simulation_stream
from simreportd.projections.standing import COMPLETED, Standing

from .executor import Frame, OnStep
from .progress import follow_report, follow_run, standing_in


class LocalExecutor:
    """The command's work on `daemon`, a Daemon this process opened for it."""

    writes_at_once = False  # a report nobody waits for here is written when `simreportd run` starts
    served_at: str | None = None  # no daemon serves the store: this command holds it

    def __init__(self, daemon: Daemon, lifetime: contextlib.AsyncExitStack) -> None:
        self.daemon, self._lifetime, self._running = daemon, lifetime, False

    async def _run_in_background(self) -> None:
        """Start the daemon's background work (the fold, exports) once, for the rest of the command (`lifetime`):
        a report written after an ingest is folded by the fold child that folded the ingest, not by a second
        one started behind it (at 1M actions the first was stopped still 400k events behind)."""
        if not self._running:
            await self._lifetime.enter_async_context(running(self.daemon))
            self._running = True

    async def ingest(self, folder: Path, until_complete: bool) -> str:
        await self._run_in_background()  # the read models are folded (by a child process) while the folder is read
        simulation_id = await actions.ingest_folder(self.daemon, folder)
        if until_complete:
            await wait_for_run(self.daemon, simulation_id)
        return simulation_id

    async def request_report(self, folder: Path, force: bool, provider: str | None, model: str | None,
                             written_now: bool) -> tuple[str, str]:
        return await actions.request_report(self.daemon, folder, force, provider, model, now=written_now)

    async def request_demo_report(self, folder: Path, provider: str | None, model: str | None) -> tuple[str, str]:
        """The demo's report is its run's automatic one: the report `simreportd run` would write, written once."""
        await self.daemon.watcher.rescan()
        simulation_id = self.daemon.watcher.simulation_id_of(folder)
        generation = await completed_generation(self.daemon.store, simulation_id)
        report_id = auto_report_id(simulation_id, generation, await run_key_of(self.daemon.store, simulation_id))
        if (await self.state(report_id)).status in COMPLETED:
            return report_id, "completed"
        writer = await actions.report_writer(self.daemon.config.llm, provider, model, simulation_id)
        await self.daemon.reports.request(simulation_id, generation, trigger="auto", report_id=report_id, writer=writer)
        return report_id, "new"

    async def resume(self, report_id: str, provider: str | None, model: str | None,
                     overrides: dict[str, Any]) -> str:
        return await actions.resume_report(self.daemon, report_id, provider, model, overrides)

    async def fork(self, report_id: str, at: int, provider: str | None, model: str | None) -> str:
        return await actions.fork(self.daemon, report_id, at, provider, model)

    async def rebuild(self) -> Rebuilt:
        return await actions.rebuild(self.daemon)

    async def interview(self, target: str, agent_id: int, question: str, platform: str | None) -> dict[str, Any]:
        return await self.daemon.interviews.ask(target, agent_id, question, platform)

    async def export(self, report_id: str, into: Path) -> Path:
        return await self.daemon.exporter.export(report_id, into)

    async def follow(self, report_id: str) -> Standing:
        await self._run_in_background()
        await written_here(self.daemon, report_id)
        return await self.state(report_id)

    async def state(self, report_id: str) -> Standing:
        return await standing_in(self.daemon.store, report_id)

    def asker(self, report_id: str, chat_id: str | None) -> HereAsker:
        return HereAsker(self.daemon.chats, report_id, chat_id)


class HereAsker:
    """A chat run in this process, which holds the store."""

    def __init__(self, chats: ChatRunner, report_id: str, chat_id: str | None) -> None:
        self.chats, self.report_id, self.chat_id = chats, report_id, chat_id

    async def open(self) -> str:
        if self.chat_id is None:
            self.chat_id = await self.chats.open(self.report_id, "cli")
        elif (await self.chats.about(self.chat_id)).report_id != self.report_id:
            raise UsageError(f"chat {self.chat_id} is not about report {self.report_id}")
        return self.chat_id

    async def ask(self, question: str, on_step: OnStep) -> Frame:
        assert self.chat_id is not None
        chat_id = self.chat_id

        async def step(event: ChatEvent) -> None:
            if (frame := step_frame(chat_id, event)) is not None:
                on_step(frame)

        answered = await self.chats.ask(chat_id, question, on_event=step)
        return answer_frame(chat_id, self.report_id, answered)


@contextlib.asynccontextmanager
async def running(daemon: Daemon, ingest: bool = False, follow: bool = False) -> AsyncIterator[Daemon]:
    """The daemon's background work (projections, exports) for the length of a command. Unless `follow`, its
    scheduler runs only the reports the command asks for: the automatic report of a completed run, or another
    report left unfinished in the store, is `simreportd run`'s work, not a side effect of `resume`.
    An error of ours raised by the command comes out as itself (its one-line message), not in a group.
    A daemon whose work already runs (a server in the same process) is used as it is."""
    if daemon.running:
        yield daemon
        return
    with our_error_as_itself():
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(functools.partial(daemon.run, ingest, follow=follow))
            yield daemon
            tasks.cancel_scope.cancel()


@contextlib.contextmanager
def our_error_as_itself() -> Iterator[None]:
    """An error of ours raised in a task group comes out as itself (its one-line message), not in a group."""
    try:
        yield
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1 and isinstance(group.exceptions[0], SimreportdError):
            raise group.exceptions[0] from None
        raise


async def generate(daemon: Daemon, report_id: str) -> ReportState:
    """Run one report here, printing its progress, until it completes or fails."""
    async with running(daemon):
        return await written_here(daemon, report_id)


async def written_here(daemon: Daemon, report_id: str) -> ReportState:
    """Run one report in this process, whose background work runs, printing its progress until it completes or
    fails; its folder is written from read models that hold all of it."""
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(follow_report, daemon.store, report_id, sys.stderr)
        state = await daemon.reports.wait(report_id)
        await daemon.views.wait_for(await daemon.store.last_position(), timeout=600)
        await daemon.exporter.export(report_id)
        tasks.cancel_scope.cancel()
    return state


async def wait_for_run(daemon: Daemon, simulation_id: str) -> None:
    """Keep ingesting the folder, printing its rounds, until the simulation completes."""
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(daemon.watcher.run)
        await follow_run(daemon.store, simulation_id, sys.stderr)
        tasks.cancel_scope.cancel()


async def completed_generation(store: EventStore, simulation_id: str) -> int:
    """The latest generation of a simulation that has completed."""
    completed = [r.event.generation async for r in store.iter_stream(simulation_stream(simulation_id))
                 if r.type != AgentActed.TYPE and isinstance(r.event, SimulationCompleted)]  # actions: not decoded
    if completed:
        return completed[-1]
    raise UsageError(f"simulation {simulation_id} has not completed; is its folder complete?")
