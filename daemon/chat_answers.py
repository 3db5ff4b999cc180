"""The daemon's side of chats: who answers them (from the configuration), and the shapes their answers take
on each surface (the websocket's `chat_answer` frames, MiroFish's `POST /api/report/chat` reply)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from simreportd.agent.chat.chat_core import check_history, check_question
from simreportd.agent.chat.chat_runner import ChatRunner, ChatWriter, chat_settings
from simreportd.agent.report.report_runner import settings_for
from simreportd.agent.tools.toolspec import REPORT_TOOLS
from simreportd.errors import NotFound, SimreportdError, UsageError
from simreportd.events.models import ChatAnswered, ChatEvent, ChatLLMRequested, ChatToolCalled
from simreportd.projections import report_queries, simulation_queries
from simreportd.projections.runner import ProjectionRunner
from simreportd.projections.sqlite import reading
from simreportd.projections.standing import mirofish_status

from .client_json import checked
from .config import Config
from .writers import model_for


def chat_writer(config: Config) -> ChatWriter:
    """New chats are answered by `[llm]`'s writer, with `[agent]`'s budget per question."""
    provider = config.llm.resolved_provider()
    settings = chat_settings(settings_for(config.agent, config.llm, REPORT_TOOLS))
    return ChatWriter(provider, model_for(config.llm, provider), settings)


def answer_fields(answered: ChatAnswered) -> dict[str, Any]:
    """An answer with its tool calls, sources and grounding verdict, as every surface shows it."""
    return {"turn": answered.turn, "answer": answered.answer,
            "tool_calls": [{"name": c.name, "parameters": c.arguments} for c in answered.tool_calls],
            "sources": answered.sources,
            "grounding": {"grounded_quotes": answered.grounded_quotes, "ungrounded_quotes": answered.ungrounded_quotes,
                          "unknown_ids": answered.unknown_ids, "forced": answered.forced},
            "no_evidence": answered.no_evidence,
            "unsupported": [u.model_dump() for u in answered.claims.unsupported] if answered.claims else []}


def step_frame(chat_id: str, event: ChatEvent) -> dict[str, Any] | None:
    """A `chat_answer` frame (not `done` yet) for a step worth showing while the answer is worked out."""
    if isinstance(event, ChatToolCalled):
        step = {"kind": "tool_call", "tool": event.call.tool, "arguments": event.call.arguments}
    elif isinstance(event, ChatLLMRequested):
        step = {"kind": "thinking", "call_id": event.request.call_id}
    else:
        return None
    return {"type": "chat_answer", "chat_id": chat_id, "turn": event.turn, "done": False, "step": step}


def answer_frame(chat_id: str, report_id: str, answered: ChatAnswered) -> dict[str, Any]:
    """The last `chat_answer` frame of a question: `done`, with the answer."""
    return {"type": "chat_answer", "chat_id": chat_id, "report_id": report_id, "done": True, **answer_fields(answered)}


def mirofish_reply(chat_id: str, report_id: str, answered: ChatAnswered) -> dict[str, Any]:
    """MiroFish's `POST /api/report/chat` reply: `{success, data: {response, tool_calls, sources}}` (and ours)."""
    fields = answer_fields(answered)
    return {"success": True, "data": {"response": fields.pop("answer"), "chat_id": chat_id, "report_id": report_id or None,
                                      **fields}}


async def chat_target(chats: ChatRunner, report_id: str | None, chat_id: str | None, surface: str) -> tuple[str, str]:
    """(chat id, report id): the chat named, checked against the report named, or a new chat on the report."""
    if chat_id:
        about = (await chats.about(chat_id)).report_id
        if report_id and report_id != about:
            raise UsageError(f"chat {chat_id} is about report {about}, not {report_id}")
        return chat_id, about
    if not report_id:
        raise UsageError("name the report to chat about (report_id) or an open chat (chat_id)")
    return await chats.open(report_id, surface), report_id


async def chat_request(chats: ChatRunner, views: ProjectionRunner, body: bytes) -> tuple[int, dict[str, Any]]:
    """`POST /api/report/chat` in MiroFish's shape: `{simulation_id, message, chat_history}` in, `{success, data}` out."""
    try:
        try:
            request = json.loads(body or b"null")
        except (ValueError, UnicodeDecodeError) as exc:
            raise UsageError(f"the body is not JSON: {exc}") from exc
        except RecursionError:
            raise UsageError("the body nests its JSON too deep") from None
        if not isinstance(checked(request), dict):
            raise UsageError("send a JSON object: {\"simulation_id\", \"message\", \"chat_history\"}")
        if any(not isinstance(request.get(key), str | None) for key in ("report_id", "chat_id")):
            raise UsageError("report_id and chat_id, when given, are strings")
        message = check_question(request.get("message", request.get("question")))
        history = check_history(request.get("chat_history"))
        if request.get("report_id") or request.get("chat_id"):
            chat_id, report_id = await chat_target(chats, request.get("report_id"), request.get("chat_id"), "http")
        else:
            chat_id, report_id = await _simulation_chat(chats, views, request.get("simulation_id"))
        answered = await chats.ask(chat_id, message, history)
    except SimreportdError as exc:
        return HTTP_STATUS.get(exc.code, 400 if exc.exit_code == 2 else 500), \
            {"success": False, "error": str(exc), "code": exc.code}
    return 200, mirofish_reply(chat_id, report_id, answered)


HTTP_STATUS = {"not_found": 404, "chat_locked": 409, "chat_failed": 502}


async def _simulation_chat(chats: ChatRunner, views: ProjectionRunner, simulation_id: object) -> tuple[str, str]:
    """(chat id, report id) of a new chat on the simulation: on its newest report if that completed, else on the
    simulation alone (MiroFish's chat needs no report; the report id is then empty)."""
    if not isinstance(simulation_id, str) or not simulation_id:
        raise UsageError("Please provide simulation_id (or report_id)")

    def latest(path: Path) -> tuple[str, int, dict[str, Any] | None] | None:
        with reading(path) as conn:  # a simulation is named by its folder or by its config's simulation_id
            found = simulation_queries.resolve(conn, simulation_id)
            newest = simulation_queries.latest_generation(conn, found) if found else None
            return (found, newest[0], report_queries.latest_report(conn, found)) if found and newest else None

    found = await views.in_thread(latest, views.path)
    if found is None:
        raise NotFound(f"no simulation {simulation_id}: it has no report, and its folder is not under [watch] roots "
                       "or not ingested yet")
    simulation, generation, report = found
    if report is not None and mirofish_status(report["status"]) == "completed":
        return await chats.open(str(report["report_id"]), "http"), str(report["report_id"])
    return await chats.open_on_simulation(simulation, generation, "http"), ""
