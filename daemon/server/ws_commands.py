"""What a websocket client may ask besides subscribing: a report, an interview, a chat, a CLI command's work.

Each command's answer (and, for a chat, its steps as they happen) goes to `reply`, the
asking session's queue; an error the client can act on is an `error` frame, never a close.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from starlette.requests import HTTPConnection

from simreportd.daemon import actions
from simreportd.daemon.chat_answers import answer_frame, chat_target, step_frame
from simreportd.daemon.host import Host
from simreportd.errors import SimreportdError
from simreportd.events.models import ChatEvent

from .protocol import Chat, GenerateReport, HandedOver, Interview, ProtocolError

Reply = Callable[[dict[str, Any]], None]


def client_address(connection: HTTPConnection) -> str:
    """Who a request or websocket is from, for the per-client limits (the peer's address)."""
    return connection.client.host if connection.client else "unknown"


async def perform(daemon: Host, command: GenerateReport | Interview | Chat | HandedOver | ProtocolError,
                  reply: Reply, client: str) -> None:
    """Do one command and `reply` with its frames; our errors become `error` frames. Chats and interviews
    pass the daemon's gates for `client` (a refusal is an error frame `limit_reached`)."""
    try:
        if isinstance(command, ProtocolError):
            reply(command.frame())
        elif isinstance(command, Chat):
            with daemon.chat_gate.admit(client) if command.question is not None else nullcontext():
                await _chat(daemon, command, reply)
        elif isinstance(command, HandedOver):
            reply({"type": "command_result", "op": command.op, **await _handed_over(daemon, command)})
        elif isinstance(command, GenerateReport):
            report_id, standing = await daemon.reports.ensure(command.simulation_id, trigger="websocket")
            reply({"type": "report_status", "report_id": report_id, "simulation_id": command.simulation_id,
                   "status": {"new": "pending", "running": "generating"}.get(standing, standing)})
        else:
            with daemon.interview_gate.admit(client):
                reply(await _interview(daemon, command))
    except SimreportdError as exc:
        reply(ProtocolError(exc.code, str(exc)).frame())


async def _handed_over(daemon: Host, command: HandedOver) -> dict[str, Any]:
    """A CLI command's work, done here because this daemon holds the store."""
    if command.op == "ingest":
        return {"simulation_id": await actions.ingest_folder(daemon, Path(command.folder or ""))}
    if command.op == "request_report":
        report_id, standing = await actions.request_report(daemon, Path(command.folder or ""), bool(command.force),
                                                           command.provider, command.model)
        return {"report_id": report_id, "standing": standing}
    if command.op == "resume":
        overrides = actions.resume_overrides(command.max_tokens, command.timeout_s)
        note = await actions.resume_report(daemon, command.report_id or "", command.provider, command.model,
                                           overrides)
        return {"report_id": command.report_id, "note": note}
    if command.op == "fork":
        return {"report_id": await actions.fork(daemon, command.report_id or "", command.at or 0,
                                                command.provider, command.model)}
    rebuilt = await actions.rebuild(daemon)
    return {"before": rebuilt.before, "after": rebuilt.after, "position": rebuilt.position,
            "position_before": rebuilt.position_before}


async def _interview(daemon: Host, command: Interview) -> dict[str, Any]:
    answer = await daemon.interviews.ask(command.target, command.agent_id, command.question, command.platform)
    return {"type": "interview_answer", **answer}


async def _chat(daemon: Host, command: Chat, reply: Reply) -> None:
    """Open a chat (no question) or answer a question in it, its steps streamed as `chat_answer` frames."""
    chats = daemon.chats
    chat_id, report_id = await chat_target(chats, command.report_id, command.chat_id, "websocket")
    if command.question is None:
        reply({"type": "chat_opened", "chat_id": chat_id, "report_id": report_id})
        return

    async def step(event: ChatEvent) -> None:
        if (frame := step_frame(chat_id, event)) is not None:
            reply(frame)

    answered = await chats.ask(chat_id, command.question, command.history, on_event=step)
    reply(answer_frame(chat_id, report_id, answered))
