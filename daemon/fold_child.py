"""Fold the read models in a child process, so that ingest and folding each get a core.

Both are Python on a hot path and one interpreter runs one thread of Python at a time:
in one process a big ingest and the fold it feeds take about the sum of their times, in
two about the longer of them (bench/all.py). The read-model file already allows more than
one folder (each batch reads the checkpoint in its own transaction, docs/architecture.md#read-models),
so the child is just another folder of the same file, and killing either process
at any moment loses nothing.

The parent owns the child (docs/architecture.md#the-fold-child): it starts it inside its task group, tells
it each commit so it need not poll, and takes in each batch it folds (`take_folded`: the
listeners and waiters see what they would have seen). It stops the child by closing its
stdin, and folds in its own process if the child cannot start or dies. The protocol is
one line per message:

- parent -> child: the spec (`ChildSpec`, JSON), then the log's head after each commit (an integer);
- child -> parent: a `ChildReport` (JSON) after each batch, or when a problem starts or ends.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process
from anyio.streams.buffered import BufferedByteReceiveStream
from pydantic import BaseModel

from simreportd.errors import SimreportdError, WaitTimeout
from simreportd.events import EventLog, EventStore
from simreportd.events.positions import Position
from simreportd.projections.catalogue import projections
from simreportd.projections.runner import ProjectionRunner

from .config import LogConfig, StoreConfig
from .interpreter import tune_gc
from .logs import setup_logging

log = logging.getLogger("simreportd.daemon.fold_child")

COMMAND = [sys.executable, "-m", "simreportd.daemon.fold_child"]
LINE_LIMIT = 65_536  # bytes in one message: a position and a problem's text
REPORT_EVERY_S = 1.0  # how often the child looks at its problem when no batch was folded
# The child is told the head at most this often: each wake-up costs it a read, a fold and a commit of the read
# models (~2 ms of CPU), so at 200 commits a second, told each one, it took the cores the websocket clients
# needed; told every 50 ms it folds the same events in fewer batches (bench/notify.py, docs/benchmarks.md).
TELL_EVERY_S = 0.05


class ChildSpec(BaseModel):
    """What the child needs to fold the same log into the same read models as its parent."""

    store: StoreConfig
    views: Path
    log: LogConfig
    journal: bool = False


class ChildReport(BaseModel):
    """What the child says after each batch: how far it folded, and why it cannot fold now (or None)."""

    position: Position
    problem: str | None = None


class FoldChild:
    """The parent's side: runs a child that folds, until cancelled (`run`)."""

    def __init__(self, views: ProjectionRunner, spec: ChildSpec, stop_timeout_s: float) -> None:
        self.views, self.spec, self.stop_timeout_s = views, spec, stop_timeout_s

    async def run(self) -> None:
        """Fold in a child process; if it cannot start or it ends, fold in this one."""
        try:
            process = await anyio.open_process(COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                               stderr=None)
        except OSError as exc:
            log.warning("cannot start a process to fold the read models (%s); folding in this one", exc)
        else:
            try:
                await self._follow(process)
            finally:
                with anyio.CancelScope(shield=True):
                    await self._stop(process)
            level = logging.INFO if process.returncode == 0 else logging.WARNING  # 0: it was asked to stop
            log.log(level, "the process folding the read models ended (exit code %s); folding in this one",
                    process.returncode)
        await self.views.run()

    async def _follow(self, process: Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        try:
            await process.stdin.send(self.spec.model_dump_json().encode() + b"\n")
        except (anyio.BrokenResourceError, OSError):
            return
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_tell_commits, self.views.store, process.stdin)
            await self._take_reports(process.stdout)
            tasks.cancel_scope.cancel()

    async def _take_reports(self, stdout: ByteReceiveStream) -> None:
        """Take in each batch the child reports, until it closes its stdout."""
        lines = BufferedByteReceiveStream(stdout)
        while True:
            try:
                report = ChildReport.model_validate_json(await lines.receive_until(b"\n", LINE_LIMIT))
            except (anyio.IncompleteRead, anyio.EndOfStream, anyio.BrokenResourceError):
                return
            except (ValueError, anyio.DelimiterNotFound):  # a ValidationError is a ValueError
                log.error("the process folding the read models sent a message it should not have")
                return
            await self.views.take_folded()
            self.views.problem = report.problem  # after: the child's word on the file is the last

    async def _stop(self, process: Process) -> None:
        """Close the child's stdin and give it `stop_timeout_s` / 2 to finish its batch; past that it is killed."""
        with anyio.move_on_after(self.stop_timeout_s / 2):
            await process.aclose()  # closes stdin (the child's signal to stop), then waits; killed if cancelled


async def _tell_commits(store: EventStore, stdin: ByteSendStream) -> None:
    """Send the log's head to the child after each commit: it wakes at once instead of at its next poll."""
    position = await store.last_position()
    while True:
        try:
            position = await store.wait_for(Position(position + 1), timeout=3600)  # the head in hand: no read
        except WaitTimeout:
            continue
        try:
            await stdin.send(f"{position}\n".encode())
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return  # the child is gone: the reader sees its stdout end
        await anyio.sleep(TELL_EVERY_S)  # the commits meanwhile are told as one head


# --- the child's side ---------------------------------------------------------------------------------


def main() -> int:
    """Fold until stdin ends or SIGTERM comes; Ctrl-C in a terminal is for the parent, which stops us."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    line = sys.stdin.buffer.readline()
    if not line.strip():
        return 0  # the parent stopped before it sent the spec: nothing to fold, nothing to say
    spec = ChildSpec.model_validate_json(line)
    setup_logging(spec.log.level, spec.log.format, spec.journal)
    tune_gc()
    try:
        anyio.run(_fold, spec, backend="asyncio")
    except SimreportdError as exc:  # the store gone or unusable: the parent says why it stops, or folds itself
        log.error("%s", exc)
        return 1
    return 0


async def _fold(spec: ChildSpec) -> None:
    async with spec.store.open(create=False) as store, ProjectionRunner(store, spec.views, projections()) as views:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_hear_commits, store, tasks.cancel_scope)
            tasks.start_soon(_stop_on_sigterm, tasks.cancel_scope)
            tasks.start_soon(_report, views, tasks.cancel_scope)
            await views.run()


async def _hear_commits(store: EventLog, scope: anyio.CancelScope) -> None:
    """Wake the fold at each head the parent sends; stop when the parent closes stdin (or is gone)."""
    fd, pending = sys.stdin.fileno(), b""
    os.set_blocking(fd, False)
    while True:
        await anyio.wait_readable(fd)
        try:
            chunk = os.read(fd, 65_536)
        except BlockingIOError:
            continue
        if not chunk:
            scope.cancel()
            return
        *lines, pending = (pending + chunk).split(b"\n")
        if lines and lines[-1].strip().isdigit():
            store.appended_elsewhere(Position(int(lines[-1])))


async def _stop_on_sigterm(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM) as signals:
        async for _ in signals:
            scope.cancel()
            return


async def _report(views: ProjectionRunner, scope: anyio.CancelScope) -> None:
    """Tell the parent each new position and each change of problem; stop if it stops listening."""
    last: tuple[int, str | None] | None = None
    while True:
        now = (views.position, views.problem)
        if now != last:
            try:
                sys.stdout.buffer.write(ChildReport(position=now[0], problem=now[1]).model_dump_json().encode() + b"\n")
                sys.stdout.buffer.flush()
            except (BrokenPipeError, OSError):
                scope.cancel()
                return
            last = now
        try:
            await views.wait_for(Position(views.position + 1), timeout=REPORT_EVERY_S)
        except WaitTimeout:
            pass


if __name__ == "__main__":
    sys.exit(main())
