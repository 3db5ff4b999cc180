"""`simreportd chat REPORT_ID`: ask follow-up questions about a completed report.

Interactive when stdin is a terminal, one question per line otherwise. Each answer goes to
stdout; the steps taken for it (tool calls) and its sources go to stderr. With a daemon running,
every question travels as the websocket op `chat`; without one, the chat runs here.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import anyio

from simreportd.agent.chat_runner import ChatRunner
from simreportd.daemon.chat import answer_frame, step_frame
from simreportd.daemon.config import Config
from simreportd.daemon.lock import Holder
from simreportd.daemon.service import Daemon
from simreportd.errors import ChatFailed, HandoverFailed, SimreportdError, UsageError
from simreportd.events.models import ChatEvent

from .handover import running_daemon, send

Frame = dict[str, Any]
OnStep = Callable[[Frame], None]
EXIT_WORDS = frozenset({"exit", "quit", ":q"})


class Asker(Protocol):
    async def open(self) -> str:
        """Open (or check) the chat; its id."""
        ...

    async def ask(self, question: str, on_step: OnStep) -> Frame:
        """The `chat_answer` frame that is `done`, for one question."""
        ...


class HereAsker:
    """The chat runs in this process, which holds the store."""

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


class DaemonAsker:
    """The running daemon holds the store: each question is a websocket op `chat`."""

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


async def chat(args: argparse.Namespace, config: Config) -> int:
    if holder := running_daemon(config):
        return await converse(DaemonAsker(holder, config, args.report_id, args.chat))
    async with Daemon(config, command="chat") as daemon:
        return await converse(HereAsker(daemon.chats, args.report_id, args.chat))


async def converse(asker: Asker) -> int:
    """Every question in turn; exit 0 when all were answered, 1 when one could not be, 2 for a bad one."""
    chat_id = await asker.open()
    interactive = sys.stdin.isatty()
    say(f"Chat {chat_id}: ask about the report" + (" (an empty line or Ctrl-D ends it)" if interactive else ""))
    worst = 0
    async for question in questions(interactive):
        try:
            frame = await asker.ask(question, show_step)
        except ChatFailed as exc:
            say(f"simreportd: error: {exc}")
            worst = max(worst, 1)
            continue
        except SimreportdError as exc:
            if exc.exit_code != 2:
                raise
            say(f"simreportd: {exc}")
            worst = 2
            continue
        show_answer(frame)
    say(f"Chat {chat_id} is recorded in its own stream: simreportd events --stream chat-{chat_id}; "
        f"simreportd replay {chat_id} --verify reproduces it")
    return worst


async def questions(interactive: bool) -> AsyncIterator[str]:
    """The questions on stdin: prompted when it is a terminal (an empty line ends), else one per line."""
    while True:
        if interactive:
            print("you> ", end="", file=sys.stderr, flush=True)
        line = await anyio.to_thread.run_sync(sys.stdin.readline)
        if not line or (interactive and line.strip().lower() in EXIT_WORDS | {""}):
            return
        if line.strip():
            yield line.rstrip("\n")


def show_step(frame: Frame) -> None:
    step = frame.get("step") or {}
    if step.get("kind") == "tool_call":
        args = ", ".join(f"{k}={v!r}" for k, v in sorted((step.get("arguments") or {}).items()))
        say(f"  {step.get('tool')}({args})")


def show_answer(frame: Frame) -> None:
    print(frame["answer"], end="\n\n", flush=True)
    grounding = frame.get("grounding") or {}
    flagged = len(grounding.get("ungrounded_quotes") or []) + len(grounding.get("unknown_ids") or [])
    say(f"  [turn {frame.get('turn')}: {len(frame.get('tool_calls') or [])} tool call(s); sources: "
        f"{', '.join(frame.get('sources') or []) or 'none'}; {grounding.get('grounded_quotes', 0)} grounded quote(s)"
        + (f"; {flagged} quote(s) or id(s) not found in the evidence, flagged" if flagged else "") + "]")
    if frame.get("no_evidence"):
        say("  WARNING: this answer rests on no evidence from the simulation: check it before relying on it")
    if unsupported := frame.get("unsupported"):
        say(f"  {len(unsupported)} sentence(s) with figures or names not in the evidence were removed")


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
