"""Hand a CLI command's work over to the daemon that holds the store (docs/architecture.md#one-writer-per-store).

The daemon's lock file names the URL it serves; the command is sent there as one websocket
op (`ingest`, `request_report`, `resume`, `fork`, `rebuild`, `interview`, `chat`), and the daemon answers with
one `command_result` (or `error`) frame. The CLI then follows the report in the shared log.
`HandedOverExecutor` is one of the two `Executor`s (executor.py); the other works here (local.py).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
from websockets.asyncio.client import connect
from websockets.exceptions import WebSocketException

from simreportd.daemon import actions
from simreportd.daemon.config import Config
from simreportd.daemon.exporter import Exporter
from simreportd.daemon.lock import Holder, read_holder
from simreportd.daemon.rebuild import Rebuilt
from simreportd.errors import ChatFailed, HandoverFailed
from simreportd.projections.runner import views_path_for
from simreportd.projections.standing import Standing

from .executor import Frame, OnStep
from .progress import follow_report, follow_run, standing_in

ANSWERS = ("command_result", "interview_answer", "chat_opened")
ANSWER_TIMEOUT_S = 600.0  # an interview answered by a slow model may take minutes


def running_daemon(config: Config) -> Holder | None:
    """The daemon that holds the store and serves a port, if there is one."""
    holder = read_holder(config.store.path)
    return holder if holder is not None and holder.url else None


async def send(holder: Holder, config: Config, message: dict[str, Any],
               on_frame: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Send one op to the daemon; return its answer (`command_result`, `interview_answer`, `chat_opened` or the
    `chat_answer` that is `done`); `on_frame` sees the frames before it (a chat's steps)."""
    url = urlsplit(holder.url or "")
    headers = {"Authorization": f"Bearer {config.server.token}"} if config.server.token else {}
    try:
        with anyio.fail_after(ANSWER_TIMEOUT_S):
            async with connect(f"ws://{url.netloc}/ws", additional_headers=headers, max_size=None) as ws:
                await ws.send(json.dumps(message))
                async for text in ws:
                    frame = json.loads(text)
                    if frame.get("type") == "error":
                        raise HandoverFailed(f"the running daemon refused: {frame.get('message')}", frame.get("code"))
                    if frame.get("type") in ANSWERS or (frame.get("type") == "chat_answer" and frame.get("done")):
                        return dict(frame)
                    if on_frame is not None:
                        on_frame(frame)
    except (OSError, WebSocketException, TimeoutError) as exc:
        raise HandoverFailed(f"the daemon {holder.describe()} holds the store but did not answer at {holder.url} "
                             f"({exc or type(exc).__name__}); check that it runs, or stop it") from exc
    raise HandoverFailed(f"the daemon at {holder.url} closed the connection without an answer")


class HandedOverExecutor:
    """The command's work sent to the daemon `holder` that holds the store; reports are followed in the shared log."""

    writes_at_once = True  # the running daemon writes what it is asked for

    def __init__(self, holder: Holder, config: Config) -> None:
        self.holder, self.config = holder, config
        self.served_at = holder.url

    async def _send(self, message: dict[str, Any]) -> dict[str, Any]:
        return await send(self.holder, self.config, message)

    async def ingest(self, folder: Path, until_complete: bool) -> str:
        simulation_id = str((await self._send({"op": "ingest", "folder": str(folder)}))["simulation_id"])
        if until_complete:
            async with self.config.store.open() as store:
                await follow_run(store, simulation_id, sys.stderr)
        return simulation_id

    async def request_report(self, folder: Path, force: bool, provider: str | None, model: str | None,
                             written_now: bool) -> tuple[str, str]:
        frame = await self._send({"op": "request_report", "folder": str(folder), "force": force,
                                  **writer_flags(provider, model)})
        return str(frame["report_id"]), str(frame.get("standing", "new"))

    async def request_demo_report(self, folder: Path, provider: str | None, model: str | None) -> tuple[str, str]:
        await actions.report_writer(self.config.llm, provider, model, folder.name)
        print(f"Handing over to the daemon {self.holder.describe()}", file=sys.stderr, flush=True)
        return await self.request_report(folder, False, provider, model, True)

    async def resume(self, report_id: str, provider: str | None, model: str | None,
                     overrides: dict[str, Any]) -> str:
        frame = await self._send({"op": "resume", "report_id": report_id, "provider": provider, "model": model,
                                  **overrides})
        return str(frame["note"])

    async def fork(self, report_id: str, at: int, provider: str | None, model: str | None) -> str:
        frame = await self._send({"op": "fork", "report_id": report_id, "at": at, "provider": provider,
                                  "model": model})
        return str(frame["report_id"])

    async def rebuild(self) -> Rebuilt:
        print(f"Rebuilding inside the daemon {self.holder.describe()}", file=sys.stderr, flush=True)
        frame = await self._send({"op": "rebuild"})
        return Rebuilt(frame["before"], frame["after"], frame["position"], frame["position_before"])

    async def interview(self, target: str, agent_id: int, question: str, platform: str | None) -> dict[str, Any]:
        return await self._send({"op": "interview", "report_id" if target.startswith("report_") else "simulation_id":
                                 target, "agent_id": agent_id, "question": question, "platform": platform})

    async def export(self, report_id: str, into: Path) -> Path:
        """The daemon's read models are current: render them here, into `into` as this shell sees it."""
        return await Exporter(views_path_for(self.config.store.path), self.config.reports.output_dir).export(
            report_id, into)

    async def follow(self, report_id: str) -> Standing:
        print(f"The running daemon writes report {report_id}; following it here (Ctrl-C stops following, "
              "not the report)", file=sys.stderr, flush=True)
        async with self.config.store.open() as store:
            await follow_report(store, report_id, sys.stderr)
        return await self.state(report_id)

    async def state(self, report_id: str) -> Standing:
        async with self.config.store.open() as store:
            return await standing_in(store, report_id)

    def asker(self, report_id: str, chat_id: str | None) -> DaemonAsker:
        return DaemonAsker(self.holder, self.config, report_id, chat_id)


class DaemonAsker:
    """A chat the running daemon holds: each question is a websocket op `chat`."""

    def __init__(self, holder: Holder, config: Config, report_id: str, chat_id: str | None) -> None:
        self.holder, self.config, self.report_id, self.chat_id = holder, config, report_id, chat_id

    async def open(self) -> str:
        frame = await send(self.holder, self.config, {"op": "chat", "report_id": self.report_id,
                                                      "chat_id": self.chat_id})
        self.chat_id = str(frame["chat_id"])
        return self.chat_id

    async def ask(self, question: str, on_step: OnStep) -> Frame:
        try:
            return await send(self.holder, self.config, {"op": "chat", "report_id": self.report_id,
                                                         "chat_id": self.chat_id, "question": question}, on_step)
        except HandoverFailed as exc:
            if exc.code == "chat_failed":
                raise ChatFailed(str(exc).removeprefix("the running daemon refused: ")) from exc
            raise


def writer_flags(provider: str | None, model: str | None) -> dict[str, str]:
    """--provider/--model as a handed-over command's fields: only those given, so the daemon's [llm] fills the rest."""
    return {key: value for key, value in (("provider", provider), ("model", model)) if value}
