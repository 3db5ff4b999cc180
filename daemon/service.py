"""Wire the daemon together: store, read models, export, ingest, report scheduling."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from anyio import TASK_STATUS_IGNORED
from anyio.abc import TaskStatus

from simreportd.agent.chat.chat_runner import ChatRunner
from simreportd.agent.report.report_runner import ReportRunner
from simreportd.agent.tools.simulation_tools import SimulationTools
from simreportd.daemon.ingest.snapshots import snapshots_path_for
from simreportd.daemon.ingest.watcher import Watcher
from simreportd.daemon.interviews.interviewer import Interviewer
from simreportd.errors import AlreadyRunning, StoreReplaced
from simreportd.events.codec import Recorded
from simreportd.events.positions import Position
from simreportd.events.streams import is_report_stream, report_id_of
from simreportd.projections.catalogue import projections
from simreportd.projections.report import ReportView
from simreportd.projections.runner import ProjectionRunner, views_path_for

from .chat_answers import chat_writer
from .config import Config, LLMConfig
from .exporter import Exporter
from .fold_child import ChildSpec, FoldChild
from .gates import CallBudget, Gate, Regenerations
from .healing_snapshots import HealingSnapshots
from .leases import leases_for
from .lock import StoreLock
from .reports import ReportScheduler
from .systemd import notify, watchdog_interval
from .writers import Writers

if TYPE_CHECKING:
    from simreportd.daemon.server.app import Server

log = logging.getLogger("simreportd.daemon.service")
FINAL_FOLD_EVENTS, FINAL_FOLD_TIMEOUT_S = 5000, 5.0  # more is folded at the next start, not at a stop
START_EXTENSION_S = 30  # each EXTEND_TIMEOUT_USEC while folding before READY=1 (sent every third of it)
STORE_CHECK_S = 1.0  # how often an idle daemon checks that its store is still the one it opened


class Daemon:
    """Everything `simreportd run` runs; an async context manager, then `run()`.

    Entering it takes the store's lock (one writer per store), then opens the store and the
    read models; leaving it closes them in reverse order, after every task `run()` started
    has returned: each resource is closed by its owner once its users are gone.
    """

    def __init__(self, config: Config, folders: Sequence[Path] = (), command: str = "run") -> None:
        self.config, self.folders, self.command = config, list(folders), command
        self.server: Server | None = None
        self.serving: anyio.Event | None = None  # set once `run(serve=True)` listens (made in __aenter__)
        self.lock = StoreLock(config.store.path)
        self._stack = contextlib.AsyncExitStack()
        self.running = False  # `run()` is under way: its background work has one owner at a time

    async def __aenter__(self) -> Daemon:
        self.serving = anyio.Event()
        try:
            await self._open()
        except BaseException:
            await self._stack.aclose()
            raise
        return self

    async def _open(self) -> None:
        c = self.config
        self.lock.acquire(self.command)
        self._stack.callback(self.lock.release)
        self.store = await self._stack.enter_async_context(c.store.open())
        self.leases = await self._stack.enter_async_context(leases_for(c.store))
        views_path = views_path_for(c.store.path)
        self.views = await self._stack.enter_async_context(ProjectionRunner(self.store, views_path, projections()))
        limiter = self.views.limiter
        self.exporter = Exporter(views_path, c.reports.output_dir, limiter)
        self.views.listen(self._export_batch, ReportView.types)
        await self._while_starting(self.views.catch_up)
        limits = c.limits  # what clients may spend on model calls (daemon/gates.py)
        self.budget = CallBudget(limits.model_calls_per_minute)
        self._use_writers(c.llm)
        self.interviews = Interviewer(self.store, views_path, self.provider, c.llm.model, c.interview.timeout_s,
                                      limiter, c.interview.probe_s)
        self.runner = ReportRunner(self.store, SimulationTools(views_path, self.interviews, limiter,
                                                                   c.embeddings.reader(c.store.path)), self.writers,
                                   self.interviews.environment)  # one verdict on the environment: it was asked
        self.chats = ChatRunner(self.store, self.runner.tools, self.writers, chat_writer(c))
        self.chat_gate = Gate("chat question", limits.chats_at_once, limits.chats_per_client, limits.chats_per_minute,
                              self.budget)
        self.interview_gate = Gate("interview", limits.interviews_at_once, limits.interviews_per_client,
                                   limits.interviews_per_minute, self.budget)
        self.regenerations = Regenerations(limits.regenerate_every_s, limits.regenerations_per_hour, self.budget)
        self.reports = ReportScheduler(self.store, self.views, self.runner, c, self.provider.name, self.leases)
        self.watcher = Watcher(self.store, c.watch.roots, self.folders, c.watch.rescan_seconds,
                               c.watch.max_line_bytes, self.leases, c.watch.follow_external_symlinks,
                               HealingSnapshots(snapshots_path_for(c.store.path)))

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    async def run(self, ingest: bool = True, ready: bool = False, serve: bool = False, follow: bool = True) -> None:
        """Fold, watch and report until cancelled; `serve` the websocket/HTTP port; with `ready`,
        tell systemd once the read models are caught up and the port is listening. Without
        `follow`, reports run only when asked for (a CLI command's own report). It runs once at a time: two runs
        would each start a fold child and a report scheduler over the same read models."""
        if self.running:
            raise AlreadyRunning("the daemon's background work is already running; use the running one")
        self.running = True
        try:
            await self._run(ingest, ready, serve, follow)
        finally:
            self.running = False

    async def _run(self, ingest: bool, ready: bool, serve: bool, follow: bool) -> None:
        async with contextlib.AsyncExitStack() as stack:
            if serve:
                from simreportd.daemon.server.app import Server  # the web stack only when serving (CLI commands do not)

                self.server = await stack.enter_async_context(Server(self, self.config.server))
                self.lock.advertise(f"http://{self.config.server.host}:{self.server.port}/")
                assert self.serving is not None
                self.serving.set()
            if ingest and ready:  # `simreportd run`, its port bound: name what it watches
                self.watcher.announce()
            try:
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(self._watch_store, name="store-identity")
                    tasks.start_soon(self._fold, name="projections")
                    tasks.start_soon(self.exporter.run, name="exporter")
                    tasks.start_soon(self.reports.run, follow, name="reports")
                    if ingest:
                        tasks.start_soon(self.watcher.run, name="watcher")
                    if ready:
                        tasks.start_soon(self._supervise, name="systemd")
            except BaseExceptionGroup as group:
                raise replaced_or(group) from None
            finally:
                await self._write_folders_before_stopping()

    async def _write_folders_before_stopping(self) -> None:
        """Fold what the fold child left (when it is little: a report's last steps) and write the folders still
        due, so a daemon stopped just after a report completed leaves its folder complete."""
        with anyio.CancelScope(shield=True), anyio.move_on_after(FINAL_FOLD_TIMEOUT_S):
            try:
                if await self.store.last_position() - self.views.position <= FINAL_FOLD_EVENTS:
                    await self.views.catch_up()
            except Exception:
                log.exception("folding the last events before stopping failed; the next start folds them")
        await self.exporter.flush()

    async def _fold(self) -> None:
        """Keep the read models folded: in a child process unless `[service] fold` says inline."""
        c = self.config
        if c.service.fold == "inline":
            await self.views.run()
            return
        spec = ChildSpec(store=c.store, views=self.views.path, log=c.log, journal="JOURNAL_STREAM" in os.environ)
        await FoldChild(self.views, spec, c.service.stop_timeout_s).run()

    async def _watch_store(self) -> None:
        """Stop the daemon with StoreReplaced (exit 1, for its supervisor) once its store is not the one it
        opened, even while nothing is appended (each group commit checks too)."""
        while True:
            await anyio.sleep(STORE_CHECK_S)
            await self.store.check_identity(every_s=0)

    async def _supervise(self) -> None:
        """READY=1 once the read models are caught up, then STATUS and WATCHDOG from the event loop."""
        head = await self.store.last_position()
        await self._while_starting(lambda: self.views.wait_for(head, timeout=3600))
        notify("READY=1", f"STATUS={await self.status_line()}")
        interval = watchdog_interval() or 10.0
        while True:
            await anyio.sleep(interval)
            notify("WATCHDOG=1", f"STATUS={await self.status_line()}")

    async def _while_starting(self, fold: Callable[[], Awaitable[object]]) -> None:
        """Run `fold`, which the daemon waits for before it is ready; meanwhile keep extending systemd's start
        timeout and say how far the read models are: a new read-model schema folds the whole log again,
        minutes for millions of events, and TimeoutStartSec would kill the daemon in a loop."""
        head = await self.store.last_position()
        async with anyio.create_task_group() as tasks:
            await tasks.start(self._tell_folding_progress, head)
            failed = await _failure_of(fold)
            tasks.cancel_scope.cancel()
        if failed is not None:
            raise failed  # as itself: outside the task group, not wrapped in an ExceptionGroup

    async def _tell_folding_progress(self, head: Position, *, task_status: TaskStatus[None] = TASK_STATUS_IGNORED) -> None:
        behind = self._tell_folding(head)
        task_status.started()  # the first word is out before the fold's first page
        while behind:
            await anyio.sleep(START_EXTENSION_S / 3)
            behind = self._tell_folding(head)

    def _tell_folding(self, head: Position) -> bool:
        """While the read models are behind `head`: extend systemd's start timeout, say how far they are."""
        if self.views.position >= head:
            return False
        notify(f"EXTEND_TIMEOUT_USEC={START_EXTENSION_S * 1_000_000}",
               f"STATUS=folding the read models: {self.views.position:,} of {head:,} events")
        return True

    async def status_line(self) -> str:
        running = self.reports.running()
        serving = f", serving http://{self.config.server.host}:{self.server.port}/" if self.server else ""
        return (f"{len(self.watcher.ingestors)} simulations watched, {running} reports running, "
                f"position {await self.store.last_position()}{serving}")

    def reload(self, config: Config) -> list[str]:
        """Take a new config.toml (SIGHUP): roots, logging, LLM and agent settings; say what needs a restart."""
        old, self.config = self.config, config
        self.watcher.roots, self.watcher.rescan_seconds = list(config.watch.roots), config.watch.rescan_seconds
        self.reports.config = config
        self.chats.writer = chat_writer(config)
        if config.llm != old.llm:
            self._use_writers(config.llm)
            self.runner.writers, self.interviews.provider, self.chats.writers = self.writers, self.provider, self.writers
            self.reports.provider_name = self.provider.name
        return [f"[{name}] changes take effect after a restart" for name in ("store", "server")
                if getattr(config, name) != getattr(old, name)]

    def _use_writers(self, llm: LLMConfig) -> None:
        """Writers from `[llm]`; `provider` is the one `[llm]` names, for new reports and interviews."""
        self.writers = Writers(llm, self.budget)
        self._stack.push_async_callback(self.writers.close)
        self.provider = self.writers(llm.resolved_provider())

    async def _export_batch(self, batch: list[Recorded]) -> None:
        self.exporter.changed(report_id_of(r.stream) for r in batch if is_report_stream(r.stream))


def replaced_or(group: BaseExceptionGroup) -> BaseException:
    """The StoreReplaced a task group raised, as itself (the CLI says it in one line), else the group: once the
    store is gone, whatever else failed failed because of it."""
    found: BaseException | None = group.split(StoreReplaced)[0]
    while isinstance(found, BaseExceptionGroup):
        found = found.exceptions[0]
    return found if found is not None else group


async def _failure_of(work: Callable[[], Awaitable[object]]) -> Exception | None:
    """Await `work`; return the error it raised instead of raising it (cancellation still propagates)."""
    try:
        await work()
    except Exception as exc:
        return exc
    return None
