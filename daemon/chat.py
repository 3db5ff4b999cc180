"""The daemon's side of chats: who answers them (from the configuration), and the shapes their answers take
on each surface (the websocket's `chat_answer` frames, MiroFish's `POST /api/report/chat` reply)."""

from __future__ import annotations

from typing import Any

from simreportd.agent.chat_runner import ChatWriter, chat_settings
from simreportd.agent.runner import settings_for
from simreportd.agent.toolspec import REPORT_TOOLS
from simreportd.events.models import ChatAnswered, ChatEvent, ChatLLMRequested, ChatToolCalled

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
                          "unknown_ids": answered.unknown_ids, "forced": answered.forced}}


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
    return {"success": True, "data": {"response": fields.pop("answer"), "chat_id": chat_id, "report_id": report_id,
                                      **fields}}
